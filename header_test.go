package sundial

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheckHeaders(t *testing.T) {
	t.Parallel()
	many := func(n, valueLen int) map[string]string {
		h := map[string]string{}
		for i := range n {
			h[fmt.Sprintf("X-H%03d", i)] = strings.Repeat("v", valueLen)
		}
		return h
	}
	tests := []struct {
		name      string
		headers   map[string]string
		wantToken string // "" with wantMsg: an error without a token
		wantMsg   string // "" means valid
	}{
		{"none", nil, "", ""},
		{"ordinary", map[string]string{"Authorization": "Bearer x", "content-type": "application/xml", "X-Team": "ops\tday"}, "", ""},
		{"obs-text value", map[string]string{"X-Name": "caf\xc3\xa9"}, "", ""},
		{"user agent is the task's to try (Sundial's wins)", map[string]string{"User-Agent": "me"}, "", ""},
		{"64 headers", many(64, 10), "", ""},
		{"65 headers", many(65, 1), "", "65 headers; a task has at most 64"},
		{"value of 8 KiB", map[string]string{"X-A": strings.Repeat("v", 8<<10)}, "", ""},
		{"value over 8 KiB", map[string]string{"X-A": strings.Repeat("v", 8<<10+1)}, "X-A", "8193 bytes; at most 8192"},
		{"32 KiB in all", many(4, 8<<10-6), "", ""},
		{"over 32 KiB in all", many(5, 8<<10-6), "", "bytes in all (names and values); at most 32768"},
		{"empty name", map[string]string{"": "v"}, "", "is not a valid HTTP header name"},
		{"space in name", map[string]string{"Bad Name": "v"}, "Bad Name", "is not a valid HTTP header name"},
		{"colon in name", map[string]string{"X-A:": "v"}, "X-A:", "is not a valid HTTP header name"},
		{"line feed", map[string]string{"X-A": "a\nInjected: 1"}, "X-A", "control character (byte 0x0a at offset 1)"},
		{"carriage return", map[string]string{"X-A": "a\r"}, "X-A", "byte 0x0d"},
		{"NUL", map[string]string{"X-A": "\x00"}, "X-A", "byte 0x00"},
		{"DEL", map[string]string{"X-A": "a\x7f"}, "X-A", "byte 0x7f"},
		{"same header twice", map[string]string{"X-A": "1", "x-a": "2"}, "x-a", `headers "X-A" and "x-a" are the same header`},
		{"host", map[string]string{"host": "evil.example"}, "host", "header Host is reserved"},
		{"content-length", map[string]string{"Content-Length": "1"}, "Content-Length", "reserved"},
		{"transfer-encoding", map[string]string{"Transfer-Encoding": "chunked"}, "Transfer-Encoding", "hop-by-hop"},
		{"connection", map[string]string{"Connection": "close"}, "Connection", "hop-by-hop"},
		{"keep-alive", map[string]string{"keep-alive": "1"}, "keep-alive", "hop-by-hop"},
		{"proxy-connection", map[string]string{"Proxy-Connection": "1"}, "Proxy-Connection", "hop-by-hop"},
		{"te", map[string]string{"TE": "trailers"}, "TE", "header Te is reserved"},
		{"trailer", map[string]string{"Trailer": "X"}, "Trailer", "hop-by-hop"},
		{"upgrade", map[string]string{"Upgrade": "h2c"}, "Upgrade", "hop-by-hop"},
		{"idempotency-key", map[string]string{"Idempotency-Key": "x"}, "Idempotency-Key", "reserved"},
		{"traceparent", map[string]string{"traceparent": "x"}, "traceparent", "reserved"},
		{"webhook-signature", map[string]string{"webhook-signature": "v1,x"}, "webhook-signature", "Standard Webhooks"},
		{"x-sundial-callback-token", map[string]string{"X-Sundial-Callback-Token": "x"}, "X-Sundial-Callback-Token", "Sundial's own"},
		{"x-sundial in any case", map[string]string{"x-SUNDIAL-run-id": "1"}, "x-SUNDIAL-run-id", "reserved"},
		{"first in name order", map[string]string{"X-B": "\n", "X-A": "\n"}, "X-A", "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckHeaders(tt.headers)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("CheckHeaders = %v, want nil", err)
				}
				return
			}
			e, ok := err.(*Error)
			if !ok || e.Code != EInvalid || e.Field != "headers" || e.Token != tt.wantToken || !strings.Contains(e.Message, tt.wantMsg) {
				t.Fatalf("CheckHeaders = %#v, want invalid headers token %q message containing %q", err, tt.wantToken, tt.wantMsg)
			}
		})
	}
}

// FuzzHeaders: CheckHeaders never panics, and what it accepts is a header
// net/http sends unchanged and a task does not use to override Sundial.
func FuzzHeaders(f *testing.F) {
	for _, s := range [][2]string{{"X-A", "b"}, {"Host", "h"}, {"X-Sundial-Run-Id", "1"}, {"Bad Name", "v"},
		{"X-A", "a\r\nB: c"}, {"webhook-id", "x"}, {"X", "caf\xc3\xa9"}, {"", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		err := CheckHeaders(map[string]string{name: value})
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Field != "headers" || e.Code != EInvalid {
				t.Fatalf("CheckHeaders(%q: %q) = %v, want an invalid headers error", name, value, err)
			}
			return
		}
		if _, reserved := ReservedHeader(name); reserved {
			t.Fatalf("accepted the reserved header %q", name)
		}
		if len(value) > MaxHeaderValueLen || strings.ContainsAny(value, "\r\n\x00") || !ValidHeaderName(name) {
			t.Fatalf("accepted %q: %q", name, value)
		}
		for _, c := range []byte(name + value) {
			if c < ' ' && c != '\t' || c == 0x7f {
				t.Fatalf("accepted a control character in %q: %q", name, value)
			}
		}
	})
}
