package sundial

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Limits on a task's headers.
const (
	MaxHeaders        = 64       // headers of one task
	MaxHeaderValueLen = 8 << 10  // bytes of one value
	MaxHeadersLen     = 32 << 10 // bytes of every name and value together
)

// reservedHeaders are the headers a task may not set, by canonical name:
// the request's own framing and routing (Host, Content-Length and the
// hop-by-hop headers of RFC 9110 section 7.6.1), and the headers Sundial
// sends itself. ReservedHeader adds the X-Sundial- and webhook- prefixes.
var reservedHeaders = map[string]string{
	"Host":              "it is the target_url's host",
	"Content-Length":    "it is the rendered body's length",
	"Transfer-Encoding": "it is a hop-by-hop header",
	"Connection":        "it is a hop-by-hop header",
	"Keep-Alive":        "it is a hop-by-hop header",
	"Proxy-Connection":  "it is a hop-by-hop header",
	"Te":                "it is a hop-by-hop header",
	"Trailer":           "it is a hop-by-hop header",
	"Upgrade":           "it is a hop-by-hop header",
	"Idempotency-Key":   "Sundial sends its own, the same for every delivery of one fire",
	"Traceparent":       "Sundial sends its own, a new trace for each delivery",
}

// ReservedHeader reports whether a task may not set the header name (in
// any case), and why. The check at create and the executor, which drops a
// reserved header of a task stored before it was reserved, both ask it.
func ReservedHeader(name string) (why string, reserved bool) {
	name = http.CanonicalHeaderKey(name)
	if why, ok := reservedHeaders[name]; ok {
		return why, true
	}
	switch {
	case strings.HasPrefix(name, "X-Sundial-"):
		return "the X-Sundial- headers are Sundial's own", true
	case strings.HasPrefix(name, "Webhook-"):
		return "the webhook- headers are those of Standard Webhooks signatures, which Sundial sends", true
	}
	return "", false
}

// CheckHeaders refuses a task's headers when there are more than
// MaxHeaders, a value is longer than MaxHeaderValueLen, they are longer
// than MaxHeadersLen in all, a name or value breaks the HTTP grammar (RFC
// 9110: a name is a token, a value has no control character but tab), a
// name is reserved (ReservedHeader), or two names differ only in case. The
// error names the first offending header in name order.
func CheckHeaders(h map[string]string) error {
	if len(h) > MaxHeaders {
		return Errorf(EInvalid, "headers", "%d headers; a task has at most %d", len(h), MaxHeaders)
	}
	names := make([]string, 0, len(h))
	total := 0
	for k, v := range h {
		names = append(names, k)
		total += len(k) + len(v)
	}
	slices.Sort(names)
	canonical := make(map[string]string, len(h))
	for _, k := range names {
		v := h[k]
		bad := func(format string, args ...any) error {
			return &Error{Code: EInvalid, Field: "headers", Token: k, Message: fmt.Sprintf(format, args...)}
		}
		if !ValidHeaderName(k) {
			return bad("%q is not a valid HTTP header name: a name is made of letters, digits and !#$%%&'*+-.^_`|~", k)
		}
		if why, ok := ReservedHeader(k); ok {
			return bad("header %s is reserved and cannot be set by a task: %s", http.CanonicalHeaderKey(k), why)
		}
		if len(v) > MaxHeaderValueLen {
			return bad("the value of header %s is %d bytes; at most %d", k, len(v), MaxHeaderValueLen)
		}
		if i := invalidHeaderValueAt(v); i >= 0 {
			return bad("the value of header %s has a control character (byte 0x%02x at offset %d); only tab and visible characters are allowed", k, v[i], i)
		}
		c := http.CanonicalHeaderKey(k)
		if prev, ok := canonical[c]; ok {
			return bad("headers %q and %q are the same header; give it once", prev, k)
		}
		canonical[c] = k
	}
	if total > MaxHeadersLen {
		return Errorf(EInvalid, "headers", "the headers are %d bytes in all (names and values); at most %d", total, MaxHeadersLen)
	}
	return nil
}

// ValidHeaderName reports whether name is an RFC 9110 token, the grammar
// of a header field name.
func ValidHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// invalidHeaderValueAt returns the offset of the first byte of v that an
// RFC 9110 field value cannot hold (a control character other than tab,
// or DEL), or -1. Bytes from 0x80 up are obs-text, allowed.
func invalidHeaderValueAt(v string) int {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return i
		}
	}
	return -1
}
