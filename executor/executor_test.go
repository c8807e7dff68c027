package executor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// received is what a test server saw of one request.
type received struct {
	method string
	host   string
	header http.Header
	body   string
	length int64
}

// setup starts a loopback server with handler and returns it with a fresh
// Executor. Both are closed when the test ends.
func setup(t testing.TB, handler http.HandlerFunc) (*Executor, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	e := New(Options{})
	t.Cleanup(e.Close)
	return e, srv
}

// recorder returns a handler that sends each request it gets on the
// returned channel and answers 200.
func recorder() (http.HandlerFunc, <-chan received) {
	ch := make(chan received, 64)
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ch <- received{method: r.Method, host: r.Host, header: r.Header.Clone(), body: string(body), length: r.ContentLength}
	}, ch
}

func receive(t *testing.T, ch <-chan received) received {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the server received no request")
		return received{}
	}
}

func testRequest(url string) Request {
	return Request{Method: http.MethodPost, URL: url, BodyTemplate: `{"run_id":"{{run_id}}"}`, Vars: testVars()}
}

func TestDeliverResponse(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16000 bytes
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantStatus string
		wantHTTP   int
		wantBody   string
		wantErr    string
	}{
		{"200", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") },
			StatusSuccess, 200, "ok", ""},
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
			StatusSuccess, 204, "", ""},
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom: disk full", 500) },
			StatusFailed, 500, "boom: disk full\n", "HTTP 500 Internal Server Error"},
		{"503", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) },
			StatusFailed, 503, "", "HTTP 503 Service Unavailable"},
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			StatusFailed, 404, "404 page not found\n", "HTTP 404 Not Found"},
		{"unknown status", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(599) },
			StatusFailed, 599, "", "HTTP 599"},
		{"redirect followed", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/" {
				http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
				return
			}
			io.WriteString(w, "moved "+r.Method)
		}, StatusSuccess, 200, "moved POST", ""},
		{"body truncated at 4 KiB", func(w http.ResponseWriter, r *http.Request) { w.Write(big) },
			StatusSuccess, 200, string(big[:4096]), ""},
		{"body of exactly 4 KiB", func(w http.ResponseWriter, r *http.Request) { w.Write(big[:4096]) },
			StatusSuccess, 200, string(big[:4096]), ""},
		{"invalid UTF-8 kept", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte{0xff, 'a', 0xfe}) },
			StatusSuccess, 200, "\xffa\xfe", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, srv := setup(t, tt.handler)
			out := e.Deliver(t.Context(), testRequest(srv.URL+"/"))
			if out.Status != tt.wantStatus || out.HTTPStatus != tt.wantHTTP || out.Error != tt.wantErr {
				t.Errorf("Deliver = {%s %d %q}, want {%s %d %q}", out.Status, out.HTTPStatus, out.Error,
					tt.wantStatus, tt.wantHTTP, tt.wantErr)
			}
			if out.Body != tt.wantBody {
				t.Errorf("Body = %q (%d bytes), want %d bytes", trim(out.Body), len(out.Body), len(tt.wantBody))
			}
		})
	}
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func TestDeliverClock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var calls atomic.Int64
	now := func() time.Time { return t0.Add(time.Duration(calls.Add(1)) * time.Second) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	e := New(Options{Now: now})
	t.Cleanup(e.Close)
	out := e.Deliver(t.Context(), testRequest(srv.URL))
	if out.Status != StatusSuccess || !out.Started.Equal(t0.Add(time.Second)) || !out.Finished.After(out.Started) {
		t.Errorf("Deliver = {%s Started:%v Finished:%v}, want SUCCESS from the injected clock", out.Status, out.Started, out.Finished)
	}
}

func TestDeliverConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	e := New(Options{})
	t.Cleanup(e.Close)
	out := e.Deliver(t.Context(), testRequest("http://"+addr+"/hook"))
	if out.Status != StatusFailed || out.HTTPStatus != 0 {
		t.Errorf("Deliver = {%s %d}, want {FAILED 0}", out.Status, out.HTTPStatus)
	}
	if !strings.HasPrefix(out.Error, "dial tcp "+addr) || !strings.Contains(out.Error, "connection refused") {
		t.Errorf("Error = %q, want dial tcp %s: ... connection refused", out.Error, addr)
	}
}

// setupBlocked is setup with a handler that signals arrived and then
// blocks until the client goes away or the test ends. With writeFirst it
// sends the status and part of the body before blocking.
func setupBlocked(t *testing.T, opts Options, writeFirst bool) (*Executor, *httptest.Server, <-chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // at EOF the server watches the connection and cancels r.Context()
		if writeFirst {
			w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
		}
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: Close waits for the handler
	e := New(opts)
	t.Cleanup(e.Close)
	return e, srv, arrived
}

func TestDeliverTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		writeFirst bool // the timeout hits while reading the body
		wantHTTP   int
	}{
		{"before the response", false, 0},
		{"while reading the body", true, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, srv, _ := setupBlocked(t, Options{}, tt.writeFirst)
			req := testRequest(srv.URL)
			req.Timeout = 100 * time.Millisecond
			out := e.Deliver(t.Context(), req)
			if out.Status != StatusTimeout || out.Error != "timed out after 100ms" || out.HTTPStatus != tt.wantHTTP {
				t.Errorf("Deliver = {%s %d %q}, want {TIMEOUT %d \"timed out after 100ms\"}",
					out.Status, out.HTTPStatus, out.Error, tt.wantHTTP)
			}
		})
	}
}

func TestDeliverDefaultTimeout(t *testing.T) {
	t.Parallel()
	e, srv, _ := setupBlocked(t, Options{DefaultTimeout: 50 * time.Millisecond}, false)
	out := e.Deliver(t.Context(), testRequest(srv.URL))
	if out.Status != StatusTimeout || out.Error != "timed out after 50ms" {
		t.Errorf("Deliver = {%s %q}, want {TIMEOUT \"timed out after 50ms\"}", out.Status, out.Error)
	}
}

func TestDeliverCanceled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		writeFirst bool
		cause      error
		wantErr    string
	}{
		{"before the response", false, nil, "canceled: context canceled"},
		{"while reading the body", true, nil, "canceled: context canceled"},
		{"with a cause", false, errors.New("scheduler shutting down"), "canceled: scheduler shutting down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, srv, arrived := setupBlocked(t, Options{}, tt.writeFirst)
			ctx, cancel := context.WithCancelCause(t.Context())
			go func() {
				<-arrived
				cancel(tt.cause)
			}()
			req := testRequest(srv.URL)
			req.Timeout = time.Minute
			out := e.Deliver(ctx, req)
			if out.Status != StatusCanceled || out.Error != tt.wantErr {
				t.Errorf("Deliver = {%s %q}, want {CANCELED %q}", out.Status, out.Error, tt.wantErr)
			}
		})
	}
}

func TestDeliverInvalidRequest(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	e, srv := setup(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	tests := []struct {
		name    string
		req     Request
		wantErr string
	}{
		{"no scheme", Request{URL: "://nope"}, `invalid URL: missing protocol scheme`},
		{"bad escape", Request{URL: "http://h/%zz"}, `invalid URL: invalid URL escape "%zz"`},
		{"control character", Request{URL: "http://h/\x7f\n"}, `invalid URL: net/url: invalid control character in URL`},
		{"credentials not echoed", Request{URL: "http://user:s3cret@h/%zz"}, `invalid URL: invalid URL escape "%zz"`},
		{"ftp", Request{URL: "ftp://example.com/x"}, `invalid URL: the scheme is "ftp", not http or https`},
		{"relative", Request{URL: "/hook"}, `invalid URL: the scheme is "", not http or https`},
		{"no host", Request{URL: "http:///hook"}, `invalid URL: no host`},
		{"empty", Request{}, `invalid URL: the scheme is "", not http or https`},
		{"bad method", Request{Method: "BAD METHOD", URL: srv.URL}, `invalid method "BAD METHOD"`},
		{"unknown variable", Request{URL: srv.URL, BodyTemplate: "{{nope}}"},
			`render body: unknown variable "nope"`},
		{"bad header", Request{URL: srv.URL, Headers: map[string]string{"X-Bad": "a\nb"}},
			`invalid header field value for "X-Bad"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := e.Deliver(t.Context(), tt.req)
			if out.Status != StatusFailed || !strings.Contains(out.Error, tt.wantErr) || strings.Contains(out.Error, "s3cret") {
				t.Errorf("Deliver = {%s %q}, want {FAILED %q}", out.Status, out.Error, tt.wantErr)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests, want 0", n)
	}
}

var traceparentRE = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01$`)

func TestDeliverHeaders(t *testing.T) {
	t.Parallel()
	handler, got := recorder()
	e, srv := setup(t, handler)
	req := testRequest(srv.URL)
	req.Vars.ScheduledTime = time.Date(2026, 1, 2, 4, 4, 5, 123000000, time.FixedZone("CET", 3600))
	req.Headers = map[string]string{
		"x-custom":       "kept",
		"Authorization":  "Bearer t0ken",
		"host":           "tenant.example",
		"content-length": "9999",
	}
	var spans []string
	for range 2 {
		if out := e.Deliver(t.Context(), req); out.Status != StatusSuccess {
			t.Fatalf("Deliver = {%s %q}", out.Status, out.Error)
		}
		r := receive(t, got)
		want := map[string]string{
			"X-Sundial-Run-Id":         "42",
			"X-Sundial-Task-Id":        "7",
			"X-Sundial-Scheduled-Time": "2026-01-02T03:04:05.123Z",
			"X-Sundial-Attempt":        "3",
			"X-Sundial-Delivery":       "2",
			"X-Sundial-Trigger":        "SCHEDULE",
			"Idempotency-Key":          "7-1767323045",
			"User-Agent":               "Sundial/1",
			"Content-Type":             "application/json",
			"X-Custom":                 "kept",
			"Authorization":            "Bearer t0ken",
		}
		for k, v := range want {
			if g := r.header.Values(k); len(g) != 1 || g[0] != v {
				t.Errorf("header %s = %q, want [%q]", k, g, v)
			}
		}
		m := traceparentRE.FindStringSubmatch(r.header.Get("Traceparent"))
		if m == nil || m[1] != req.Vars.TraceID || m[2] == "0000000000000000" {
			t.Errorf("traceparent = %q, want 00-%s-<span id>-01", r.header.Get("Traceparent"), req.Vars.TraceID)
		} else {
			spans = append(spans, m[2])
		}
		// Host and Content-Length are reserved: a task stored before they
		// were does not send them.
		if r.host != srv.Listener.Addr().String() || r.method != "POST" || r.body != `{"run_id":"42"}` || r.length != 15 {
			t.Errorf("request = {host:%q %s body:%q length:%d}, want {%s POST {\"run_id\":\"42\"} 15}",
				r.host, r.method, r.body, r.length, srv.Listener.Addr())
		}
	}
	if len(spans) == 2 && spans[0] == spans[1] {
		t.Errorf("two deliveries share the span id %s", spans[0])
	}
}

func TestDeliverTaskCannotSpoofHeaders(t *testing.T) {
	t.Parallel()
	handler, got := recorder()
	e, srv := setup(t, handler)
	req := testRequest(srv.URL)
	req.Vars.TraceID = "" // a fresh trace id is made, for the body too
	req.BodyTemplate = "{{trace_id}}"
	req.Headers = map[string]string{
		"X-Sundial-Run-Id":         "1",
		"x-sundial-task-id":        "1",
		"X-SUNDIAL-SCHEDULED-TIME": "1999-01-01T00:00:00Z",
		"x-sundial-attempt":        "1",
		"x-sundial-delivery":       "1",
		"x-sundial-trigger":        "MANUAL",
		"idempotency-key":          "spoofed",
		"traceparent":              "00-11111111111111111111111111111111-2222222222222222-01",
		"user-agent":               "curl/8",
	}
	if out := e.Deliver(t.Context(), req); out.Status != StatusSuccess {
		t.Fatalf("Deliver = {%s %q}", out.Status, out.Error)
	}
	r := receive(t, got)
	want := map[string]string{
		"X-Sundial-Run-Id":         "42",
		"X-Sundial-Task-Id":        "7",
		"X-Sundial-Scheduled-Time": "2026-01-02T03:04:05Z",
		"X-Sundial-Attempt":        "3",
		"X-Sundial-Delivery":       "2",
		"X-Sundial-Trigger":        "SCHEDULE",
		"Idempotency-Key":          "7-1767323045",
		"User-Agent":               "Sundial/1",
	}
	for k, v := range want {
		if g := r.header.Values(k); len(g) != 1 || g[0] != v {
			t.Errorf("header %s = %q, want [%q]", k, g, v)
		}
	}
	tp := r.header.Values("Traceparent")
	if len(tp) != 1 || !traceparentRE.MatchString(tp[0]) || strings.Contains(tp[0], "1111") {
		t.Errorf("traceparent = %q, want a fresh one", tp)
	} else if m := traceparentRE.FindStringSubmatch(tp[0]); r.body != m[1] {
		t.Errorf("body {{trace_id}} = %q, want the traceparent's trace id %s", r.body, m[1])
	}
}

func TestDeliverContentType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		method  string
		tmpl    string
		headers map[string]string
		want    string // "" means no Content-Type
	}{
		{"json object", "POST", `{"run_id":{{run_id}}}`, nil, "application/json"},
		{"json array", "PUT", `[1, 2]`, nil, "application/json"},
		{"json scalar", "PATCH", `{{run_id}}`, nil, "application/json"},
		{"text", "POST", `run {{run_id}}`, nil, "text/plain; charset=utf-8"},
		{"broken json", "POST", `{"a":`, nil, "text/plain; charset=utf-8"},
		{"task's own", "POST", `<run>{{run_id}}</run>`, map[string]string{"content-type": "application/xml"}, "application/xml"},
		{"task's own over json", "POST", `{}`, map[string]string{"Content-Type": "application/vnd.api+json"}, "application/vnd.api+json"},
		{"empty body", "POST", ``, nil, ""},
		{"empty body with the task's", "POST", ``, map[string]string{"Content-Type": "application/json"}, ""},
		{"get without body", "GET", ``, nil, ""},
		{"delete with body", "DELETE", `{"id":1}`, nil, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			handler, got := recorder()
			e, srv := setup(t, handler)
			req := Request{Method: tt.method, URL: srv.URL, BodyTemplate: tt.tmpl, Headers: tt.headers, Vars: testVars()}
			if out := e.Deliver(t.Context(), req); out.Status != StatusSuccess {
				t.Fatalf("Deliver = {%s %q}", out.Status, out.Error)
			}
			r := receive(t, got)
			if g := r.header.Values("Content-Type"); tt.want == "" && len(g) != 0 || tt.want != "" && (len(g) != 1 || g[0] != tt.want) {
				t.Errorf("Content-Type = %q, want %q", g, tt.want)
			}
			if tt.tmpl == "" && (r.body != "" || r.length != 0) {
				t.Errorf("body = %q, length %d; want none", r.body, r.length)
			}
		})
	}
}

func TestDeliverRetryAfter(t *testing.T) {
	t.Parallel()
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := date.Add(time.Hour) // the executor's clock, used when there is no Date
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"absent", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"120"}}, 120 * time.Second},
		{"http-date from Date", http.Header{
			"Date":        {date.Format(http.TimeFormat)},
			"Retry-After": {date.Add(90 * time.Second).Format(http.TimeFormat)},
		}, 90 * time.Second},
		{"http-date from now", http.Header{
			"Date":        nil, // the server sends no Date
			"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)},
		}, 30 * time.Second},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header()[k] = v
				}
				w.WriteHeader(http.StatusTooManyRequests)
			}))
			t.Cleanup(srv.Close)
			e := New(Options{Now: func() time.Time { return now }})
			t.Cleanup(e.Close)
			out := e.Deliver(t.Context(), testRequest(srv.URL))
			if out.Status != StatusFailed || out.HTTPStatus != 429 || out.RetryAfter != tt.want {
				t.Errorf("Deliver = {%s %d RetryAfter:%v}, want {FAILED 429 %v}", out.Status, out.HTTPStatus, out.RetryAfter, tt.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		value, date string
		want        time.Duration
	}{
		{"", "", 0},
		{"0", "", 0},
		{"5", "", 5 * time.Second},
		{" 5 ", "", 5 * time.Second},
		{"1.5", "", 0},
		{"-5", "", 0},
		{"5s", "", 0},
		{"99999999999999999999999", "", time.Duration(maxRetryAfter) * time.Second},
		{"Fri, 02 Jan 2026 03:05:05 GMT", "", time.Minute},
		{"Fri, 02 Jan 2026 03:05:05 GMT", "Fri, 02 Jan 2026 03:00:05 GMT", 5 * time.Minute},
		{"Fri, 02 Jan 2026 03:05:05 GMT", "not a date", time.Minute},
		{"Friday, 02-Jan-26 03:05:05 GMT", "", time.Minute}, // RFC 850
		{"Fri Jan  2 03:05:05 2026", "", time.Minute},       // ANSI C asctime
		{"Fri, 02 Jan 2026 03:00:00 GMT", "", 0},            // in the past
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.value, tt.date, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q, %q) = %v, want %v", tt.value, tt.date, got, tt.want)
		}
	}
}

func TestDeliverReusesConnection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		bodySize int
	}{
		{"small body", 2},
		{"4 KiB body", 4096},
		{"body drained", 40 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := bytes.Repeat([]byte("x"), tt.bodySize)
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Write(body)
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			e := New(Options{})
			t.Cleanup(e.Close)
			for i := range 50 {
				req := testRequest(srv.URL)
				req.Vars.RunID = int64(i)
				if out := e.Deliver(t.Context(), req); out.Status != StatusSuccess {
					t.Fatalf("delivery %d = {%s %q}", i, out.Status, out.Error)
				}
			}
			if n := conns.Load(); n != 1 {
				t.Errorf("50 deliveries opened %d connections, want 1", n)
			}
		})
	}
}

func TestTraceIDs(t *testing.T) {
	t.Parallel()
	hex := regexp.MustCompile(`^[0-9a-f]+$`)
	seen := map[string]bool{}
	for range 100 {
		tr, sp := NewTraceID(), string(appendSpanID(nil))
		if len(tr) != 32 || !hex.MatchString(tr) || !validTraceID(tr) || len(sp) != 16 || !hex.MatchString(sp) {
			t.Fatalf("NewTraceID, appendSpanID = %q, %q; want 32 and 16 lowercase hex characters", tr, sp)
		}
		if seen[tr] || seen[sp] {
			t.Fatalf("id repeated: %q %q", tr, sp)
		}
		seen[tr], seen[sp] = true, true
	}
	for _, s := range []string{"", "00000000000000000000000000000000", "4BF92F3577B34DA6A3CE929D0E0E4736", "4bf92f3577b34da6a3ce929d0e0e473"} {
		if validTraceID(s) {
			t.Errorf("validTraceID(%q) = true", s)
		}
	}
}

func BenchmarkDeliver(b *testing.B) {
	e, srv := setup(b, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	})
	req := testRequest(srv.URL + "/hook")
	req.Headers = map[string]string{"Authorization": "Bearer t0ken"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if out := e.Deliver(ctx, req); out.Status != StatusSuccess {
				b.Errorf("Deliver = {%s %q}", out.Status, out.Error)
				return
			}
		}
	})
}
