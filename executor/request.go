package executor

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// Request is one delivery of a run: an HTTP call and the values its body
// and headers are rendered from.
type Request struct {
	Method       string            // GET, POST, PUT, PATCH, DELETE, HEAD; empty means GET
	URL          string            // http or https
	Headers      map[string]string // the task's own headers; reserved ones (sundial.ReservedHeader) are not sent
	BodyTemplate string            // rendered with Render
	Timeout      time.Duration     // for the whole call; 0 means the executor's default
	Vars         Vars
	// Redirects is which redirects the call follows; "" is same_origin.
	Redirects sundial.RedirectPolicy
	// SigningSecret, a Standard Webhooks secret ("whsec_..."), signs the
	// call (webhook-id, webhook-timestamp, webhook-signature); "" for none.
	SigningSecret string
	// Bearer, an OIDC ID token, is sent as Authorization: Bearer; "" for none.
	Bearer string
}

// sundialHeaders is how many headers newRequest may set besides the task's:
// Content-Type, the nine Sundial headers, the three of ASYNC runs, the
// three of a signature and Authorization.
const sundialHeaders = 17

// newRequest builds the HTTP request of req, bound to ctx. A missing or
// malformed trace id is replaced by a fresh one, in the body and headers
// alike.
func (e *Executor) newRequest(ctx context.Context, req *Request) (*http.Request, error) {
	if !validTraceID(req.Vars.TraceID) {
		req.Vars.TraceID = NewTraceID()
	}
	body, err := RenderMax(req.BodyTemplate, req.Vars, e.maxBody)
	if err != nil {
		return nil, errors.New("render body: " + sundial.ErrorMessage(err))
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, req.URL, r)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			return nil, fmt.Errorf("invalid URL: %w", ue.Err) // not echoed: it may hold credentials
		}
		return nil, err
	}
	if s := hreq.URL.Scheme; s != "http" && s != "https" {
		return nil, fmt.Errorf("invalid URL: the scheme is %q, not http or https", hreq.URL.Scheme)
	}
	if hreq.URL.Host == "" {
		return nil, errors.New("invalid URL: no host")
	}

	// One backing array for all the header values, one string for all the
	// formatted ones: a handful of allocations instead of two dozen.
	h := make(http.Header, len(req.Headers)+sundialHeaders)
	vals := make([]string, 0, len(req.Headers)+sundialHeaders)
	set := func(key, value string) {
		vals = append(vals, value)
		h[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	for k, v := range req.Headers {
		k = http.CanonicalHeaderKey(k)
		if _, reserved := sundial.ReservedHeader(k); reserved {
			// Refused at create (sundial.CheckHeaders); a task stored
			// before its header was reserved does not send it either.
			continue
		}
		if k == "Content-Type" && body == "" {
			continue
		}
		set(k, v)
	}
	if body != "" && h["Content-Type"] == nil {
		if json.Valid([]byte(body)) {
			set("Content-Type", "application/json")
		} else {
			set("Content-Type", "text/plain; charset=utf-8")
		}
	}

	v := &req.Vars
	var buf [192]byte
	b := strconv.AppendInt(buf[:0], v.RunID, 10)
	iRun := len(b)
	b = strconv.AppendInt(b, v.TaskID, 10)
	iTask := len(b)
	b = v.ScheduledTime.UTC().AppendFormat(b, time.RFC3339Nano)
	iTime := len(b)
	b = strconv.AppendInt(b, int64(v.Attempt), 10)
	iAttempt := len(b)
	b = strconv.AppendInt(b, int64(v.Delivery), 10)
	iDelivery := len(b)
	b = append(b, "00-"...)
	b = append(b, v.TraceID...)
	b = append(b, '-')
	b = appendSpanID(b)
	b = append(b, "-01"...)
	s := string(b)

	set("X-Sundial-Run-Id", s[:iRun])
	set("X-Sundial-Task-Id", s[iRun:iTask])
	set("X-Sundial-Scheduled-Time", s[iTask:iTime])
	set("X-Sundial-Attempt", s[iTime:iAttempt])
	set("X-Sundial-Delivery", s[iAttempt:iDelivery])
	set("X-Sundial-Trigger", v.Trigger)
	if v.NodeID != "" {
		set("X-Sundial-Node", v.NodeID)
	}
	if v.CallbackURL != "" {
		set("X-Sundial-Callback-Url", v.CallbackURL)
	}
	if v.CallbackToken != "" {
		set("X-Sundial-Callback-Token", v.CallbackToken)
	}
	if len(v.Checkpoint) > 0 {
		set("X-Sundial-Checkpoint", compactJSON(v.Checkpoint))
	}
	set("Idempotency-Key", v.IdempotencyKey)
	set("Traceparent", s[iDelivery:])
	set("User-Agent", e.userAgent)
	if req.SigningSecret != "" {
		key, err := sundial.SigningKey(req.SigningSecret)
		if err != nil {
			return nil, errors.New("the task's signing_secret is not valid base64") // never echoed
		}
		ts := strconv.FormatInt(e.now().Unix(), 10)
		set("Webhook-Id", v.IdempotencyKey)
		set("Webhook-Timestamp", ts)
		set("Webhook-Signature", Sign(key, v.IdempotencyKey, ts, body))
	}
	if req.Bearer != "" {
		set("Authorization", "Bearer "+req.Bearer)
	}
	hreq.Header = h
	return hreq, nil
}

// Sign is the Standard Webhooks signature of a delivery: "v1," and the
// base64 of the HMAC-SHA256, under key, of id, timestamp and body joined by
// dots.
func Sign(key []byte, id, timestamp, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write([]byte(body))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// compactJSON returns raw without insignificant white space, so that it
// fits on one header line (JSON escapes line breaks inside strings).
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// Prepared is a delivery's HTTP request as it would go out: method, URL,
// headers and rendered body.
type Prepared struct {
	Method string
	URL    string
	Header http.Header
	Body   string
}

// Prepare builds the request of req as Deliver would send it, without
// sending it: the body rendered, the task's headers but the reserved ones,
// and Sundial's. The traceparent's span id and a signature's timestamp are
// those of this call; a delivery makes its own.
func (e *Executor) Prepare(req Request) (Prepared, error) {
	hreq, err := e.newRequest(context.Background(), &req)
	if err != nil {
		return Prepared{}, err
	}
	var body []byte
	if hreq.Body != nil {
		body, _ = io.ReadAll(hreq.Body) // a strings.Reader: never fails
	}
	return Prepared{Method: hreq.Method, URL: req.URL, Header: hreq.Header, Body: string(body)}, nil
}
