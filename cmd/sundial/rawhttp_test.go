package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeAnswersJSONOnly: every answer of a running node under /api/ is
// the JSON error shape, those net/http writes itself before any handler
// (a request it cannot read) and the mux's path cleaning included. The
// requests are sent as raw bytes on TCP.
func TestServeAnswersJSONOnly(t *testing.T) {
	t.Parallel()
	// The requests name the host x, which the node must then answer.
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--api.allowed_hosts", "x")
	addr := strings.TrimPrefix(n.url, "http://")

	for _, c := range []struct {
		name, req string
		status    int
		code      string
	}{
		{"malformed request line", "GARBAGE\r\n\r\n", 400, "invalid"},
		{"no Host", "GET /api/v1/tasks HTTP/1.1\r\n\r\n", 400, "invalid"},
		{"headers too large", "GET /api/v1/tasks HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20+8<<10) + "\r\n\r\n",
			431, "too_large"},
		{"bad HTTP version", "GET /api/v1/tasks HTTP/2.0\r\nHost: x\r\n\r\n", 505, "unsupported"},
		{"unsupported transfer encoding", "POST /api/v1/tasks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "unsupported"},
		{"unclean path", "GET /api/v1/tasks/2/../3 HTTP/1.1\r\nHost: x\r\n\r\n", 404, "not_found"},
		{"double slash", "GET //api/v1/tasks HTTP/1.1\r\nHost: x\r\n\r\n", 404, "not_found"},
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 404, "not_found"},
		{"GET *", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 404, "not_found"},
		{"unclean path outside the API", "GET //healthz HTTP/1.1\r\nHost: x\r\n\r\n", 404, "not_found"},
		{"malformed chunked body", "POST /api/v1/tasks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" +
			"Content-Type: application/json\r\n\r\nZZ\r\n", 400, "invalid"},
		{"JSON in another charset", "POST /api/v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json; charset=latin1\r\n" +
			"Content-Length: 2\r\n\r\n{}", 415, "unsupported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			// The server may answer before it has read all of a large
			// request: write aside, and read the answer meanwhile.
			go func() { _, _ = io.WriteString(conn, c.req) }()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("read answer: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("answer %d %q %q, want %d application/json", resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status)
			}
			dec := json.NewDecoder(strings.NewReader(string(body)))
			dec.DisallowUnknownFields()
			var e struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
					Field   string `json:"field"`
					Token   string `json:"token"`
				} `json:"error"`
			}
			if err := dec.Decode(&e); err != nil || e.Error.Code != c.code || e.Error.Message == "" {
				t.Fatalf("body %q: %+v (%v); want the error shape with code %s", body, e, err, c.code)
			}
		})
	}
}
