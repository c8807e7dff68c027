package api

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
)

// rawExchange sends req as it is on a new connection to addr and reads the
// answer.
func rawExchange(t *testing.T, addr, req string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, body
}

// wantJSONError fails the test unless the answer is status with the JSON
// error shape of code, its message holding message.
func wantJSONError(t *testing.T, what string, resp *http.Response, body []byte, status int, code, message string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("%s: status %d, want %d; body %q", what, resp.StatusCode, status, body)
		return
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	var e errorBody
	if err := dec.Decode(&e); err != nil {
		t.Errorf("%s: body %q is not the error shape: %v", what, body, err)
		return
	}
	if e.Error.Code != code || e.Error.Message != message {
		t.Errorf("%s: error %+v, want code %s, message %q", what, e.Error, code, message)
	}
}

// TestListenerJSONErrors: the answers net/http writes itself to requests
// it cannot read are the JSON error shape on a Listener.
func TestListenerJSONErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: b.srv.Handler(), MaxHeaderBytes: 1 << 10, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()

	for _, c := range []struct {
		name, req     string
		status        int
		code, message string
	}{
		{"malformed request line", "GARBAGE\r\n\r\n", 400, sundial.EInvalid, "malformed HTTP request"},
		{"bad method", "G@T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, sundial.EInvalid, "malformed HTTP request"},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, sundial.EInvalid, "malformed HTTP request: missing required Host header"},
		{"bad header", "GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon\r\n\r\n", 400, sundial.EInvalid, "malformed HTTP request"},
		{"headers too large", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n",
			431, sundial.ETooLarge, "the request's header fields are too large"},
		{"HTTP/2.0 request line", "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505, sundial.EUnsupported,
			"HTTP version not supported: send HTTP/1.1: unsupported protocol version"},
		{"unsupported transfer encoding", "POST /api/v1/tasks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
			501, sundial.EUnsupported, "unsupported transfer encoding: send chunked or none"},
	} {
		resp, body := rawExchange(t, addr, c.req)
		wantJSONError(t, c.name, resp, body, c.status, c.code, c.message)
	}

	// Ordinary answers pass unchanged, on a connection that goes on.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for range 2 {
		if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "{\"status\":\"ok\"}\n" {
			t.Fatalf("healthz: %d %q", resp.StatusCode, body)
		}
	}
	// A malformed request after good ones on the same connection too.
	if _, err := io.WriteString(conn, "NOT HTTP\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	wantJSONError(t, "malformed after good requests", resp, body, 400, sundial.EInvalid, "malformed HTTP request")
}

// TestRewriteCanned: only net/http's own error answers, whole, are
// rewritten.
func TestRewriteCanned(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"400", "HTTP/1.1 400 Bad Request" + cannedHeaders + "400 Bad Request", true},
		{"400 with detail", "HTTP/1.1 400 Bad Request: missing required Host header" + cannedHeaders + "400 Bad Request: missing required Host header", true},
		{"501", "HTTP/1.1 501 Not Implemented" + cannedHeaders + "Unsupported transfer encoding", true},
		{"a handler's text answer", "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nDate: x\r\n\r\n400 Bad Request", false},
		{"other body", "HTTP/1.1 400 Bad Request" + cannedHeaders + "something else", false},
		{"a 200", "HTTP/1.1 200 OK" + cannedHeaders + "200 OK", false},
		{"HTTP/1.0", "HTTP/1.0 400 Bad Request" + cannedHeaders + "400 Bad Request", false},
		{"cut short", "HTTP/1.1 400 Bad Request" + cannedHeaders, false},
		{"a body chunk", "400 Bad Request", false},
		{"a JSON answer", "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n\r\n{}", false},
	} {
		out, ok := rewriteCanned([]byte(c.in))
		if ok != c.ok {
			t.Errorf("%s: rewritten %v, want %v", c.name, ok, c.ok)
			continue
		}
		if ok {
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(out))), nil)
			if err != nil {
				t.Errorf("%s: the rewrite is not an HTTP answer: %v\n%s", c.name, err, out)
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			if !json.Valid(body) || resp.Header.Get("Content-Type") != "application/json" || !resp.Close {
				t.Errorf("%s: rewrite %q", c.name, out)
			}
		}
	}
}

// pipeListener is a listener whose connections are the test's: each one
// sent on conns is accepted.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { close(l.closed); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

// TestLimitListener: with n connections open, Accept waits until one of
// them closes (closing it twice frees one slot), and Close ends a waiting
// Accept.
func TestLimitListener(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		inner := &pipeListener{conns: make(chan net.Conn, 10), closed: make(chan struct{})}
		ln := LimitListener(inner, 2)
		for range 3 {
			c, _ := net.Pipe()
			inner.conns <- c
		}
		accepted := make(chan net.Conn, 10)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					close(accepted)
					return
				}
				accepted <- c
			}
		}()
		synctest.Wait()
		if len(accepted) != 2 {
			t.Fatalf("%d connections accepted, want 2 (the limit) while 3 wait", len(accepted))
		}
		first := <-accepted
		first.Close()
		first.Close()
		synctest.Wait()
		if len(accepted) != 2 {
			t.Fatalf("after one close: %d accepted and open, want 2 (the second and the third)", len(accepted))
		}
		c, _ := net.Pipe()
		inner.conns <- c
		synctest.Wait()
		if len(accepted) != 2 {
			t.Fatalf("a second Close of one connection freed another slot: %d accepted and open", len(accepted))
		}
		ln.Close()
		synctest.Wait()
		for c := range accepted {
			c.Close()
		}
	})
	if LimitListener(nil, 0) != nil {
		t.Error("LimitListener(ln, 0) is not ln")
	}
}
