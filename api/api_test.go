package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// bundle is what a test needs: a server with a fixed clock and the log it
// writes.
type bundle struct {
	srv *Server
	log *bytes.Buffer
	now time.Time
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{
		log: new(bytes.Buffer),
		now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	b.srv = NewServer(Config{
		Logger: slog.New(slog.NewTextHandler(b.log, nil)),
		Now:    func() time.Time { return b.now },
	})
	return b
}

// do serves one request through the full handler.
func (b *bundle) do(t *testing.T, method, target, contentType string, body io.Reader) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, req)
	return rec
}

// errorOf decodes an error response, failing the test unless the body has
// exactly the documented shape.
func errorOf(t *testing.T, rec *httptest.ResponseRecorder) errorDetail {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	var body errorBody
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("decode error body: %v", err)
	}
	return body.Error
}

func TestRouterErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path string
		status             int
		code, message      string
		allow              string
	}{
		{
			name: "unknown api path", method: http.MethodGet, path: "/api/v1/nope",
			status: http.StatusNotFound, code: sundial.ENotFound,
			message: "no such endpoint: GET /api/v1/nope",
		},
		{
			name: "trailing slash", method: http.MethodGet, path: "/api/v1/cron/next/",
			status: http.StatusNotFound, code: sundial.ENotFound,
			message: "no such endpoint: GET /api/v1/cron/next/",
		},
		{
			name: "root", method: http.MethodGet, path: "/",
			status: http.StatusNotFound, code: sundial.ENotFound,
			message: "no such endpoint: GET /",
		},
		{
			name: "wrong method", method: http.MethodPost, path: "/api/v1/cron/next",
			status: http.StatusMethodNotAllowed, code: codeMethodNotAllowed,
			message: "method POST is not allowed on /api/v1/cron/next (allowed: GET, HEAD)",
			allow:   "GET, HEAD",
		},
		{
			name: "delete", method: http.MethodDelete, path: "/api/v1/cron/next",
			status: http.StatusMethodNotAllowed, code: codeMethodNotAllowed,
			message: "method DELETE is not allowed on /api/v1/cron/next (allowed: GET, HEAD)",
			allow:   "GET, HEAD",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			rec := b.do(t, tt.method, tt.path, "", nil)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.status, rec.Body)
			}
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
			got := errorOf(t, rec)
			want := errorDetail{Code: tt.code, Message: tt.message}
			if got != want {
				t.Errorf("error = %+v, want %+v", got, want)
			}
		})
	}
}

func TestHandle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Handle("GET /api/v1/ping", sundial.RoleViewer, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"pong": r.URL.Query().Get("x")})
	}))

	rec := b.do(t, http.MethodGet, "/api/v1/ping?x=1", "", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", rec.Code, rec.Body)
	}
	if got, want := rec.Body.String(), "{\"pong\":\"1\"}\n"; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	if got := rec.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}

	rec = b.do(t, http.MethodPut, "/api/v1/ping", "", nil)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("PUT: status %d, Allow %q; want 405 and GET, HEAD", rec.Code, rec.Header().Get("Allow"))
	}
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		err     error
		status  int
		want    errorDetail
		logged  string // substring the log must hold; "" means nothing logged
		private string // text the body must not hold
	}{
		{
			name:   "invalid with field and token",
			err:    &sundial.Error{Code: sundial.EInvalid, Message: "bad", Field: "expr", Token: "32"},
			status: http.StatusBadRequest,
			want:   errorDetail{Code: sundial.EInvalid, Message: "bad", Field: "expr", Token: "32"},
		},
		{
			name:   "not found",
			err:    sundial.Errorf(sundial.ENotFound, "", "no task %q", "x"),
			status: http.StatusNotFound,
			want:   errorDetail{Code: sundial.ENotFound, Message: `no task "x"`},
		},
		{
			name:   "conflict",
			err:    sundial.Errorf(sundial.EConflict, "name", "taken"),
			status: http.StatusConflict,
			want:   errorDetail{Code: sundial.EConflict, Message: "taken", Field: "name"},
		},
		{
			name:   "too large",
			err:    sundial.Errorf(sundial.ETooLarge, "", "big"),
			status: http.StatusRequestEntityTooLarge,
			want:   errorDetail{Code: sundial.ETooLarge, Message: "big"},
		},
		{
			name:   "unsupported",
			err:    sundial.Errorf(sundial.EUnsupported, "", "json only"),
			status: http.StatusUnsupportedMediaType,
			want:   errorDetail{Code: sundial.EUnsupported, Message: "json only"},
		},
		{
			name:   "unauthorized",
			err:    sundial.Errorf(sundial.EUnauthorized, "", "who are you"),
			status: http.StatusUnauthorized,
			want:   errorDetail{Code: sundial.EUnauthorized, Message: "who are you"},
		},
		{
			name:   "wrapped domain error",
			err:    fmt.Errorf("get task: %w", sundial.Errorf(sundial.ENotFound, "", "gone")),
			status: http.StatusNotFound,
			want:   errorDetail{Code: sundial.ENotFound, Message: "gone"},
		},
		{
			name:    "plain error",
			err:     errors.New("query tasks: database is locked at /var/lib/secret.db"),
			status:  http.StatusInternalServerError,
			want:    errorDetail{Code: sundial.EInternal, Message: "internal error"},
			logged:  "database is locked at /var/lib/secret.db",
			private: "secret",
		},
		{
			name:    "internal domain error",
			err:     sundial.Errorf(sundial.EInternal, "", "disk full on node-7"),
			status:  http.StatusInternalServerError,
			want:    errorDetail{Code: sundial.EInternal, Message: "internal error"},
			logged:  "disk full on node-7",
			private: "node-7",
		},
		{
			name:    "unknown code",
			err:     sundial.Errorf("teapot", "", "short and stout"),
			status:  http.StatusInternalServerError,
			want:    errorDetail{Code: sundial.EInternal, Message: "internal error"},
			logged:  "short and stout",
			private: "stout",
		},
		{
			name:   "client went away",
			err:    fmt.Errorf("list runs: %w", context.Canceled),
			status: http.StatusInternalServerError,
			want:   errorDetail{Code: sundial.EInternal, Message: "internal error"},
			// Logged at debug level only, which the test logger drops.
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			rec := httptest.NewRecorder()
			b.srv.writeError(rec, httptest.NewRequest(http.MethodGet, "/api/v1/tasks/x", nil), tt.err)

			if rec.Code != tt.status {
				t.Errorf("status = %d, want %d", rec.Code, tt.status)
			}
			body := rec.Body.String()
			if got := errorOf(t, rec); got != tt.want {
				t.Errorf("error = %+v, want %+v", got, tt.want)
			}
			if tt.private != "" && strings.Contains(body, tt.private) {
				t.Errorf("body %q reveals %q", body, tt.private)
			}
			log := b.log.String()
			switch {
			case tt.logged == "" && log != "":
				t.Errorf("logged %q, want nothing", log)
			case tt.logged != "" && !strings.Contains(log, tt.logged):
				t.Errorf("log %q does not hold %q", log, tt.logged)
			case tt.logged != "" && !strings.Contains(log, "path=/api/v1/tasks/x"):
				t.Errorf("log %q does not name the path", log)
			case tt.logged != "" && !strings.Contains(log, " err="):
				t.Errorf("log %q does not give the error under err, the key of every Go error", log)
			case tt.logged != "" && !strings.Contains(log, "component=api"):
				t.Errorf("log %q does not name its component", log)
			}
		})
	}
}

func TestWriteErrorOmitsEmptyFieldAndToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := httptest.NewRecorder()
	b.srv.writeError(rec, httptest.NewRequest(http.MethodGet, "/", nil), sundial.Errorf(sundial.ENotFound, "", "gone"))
	if got, want := rec.Body.String(), "{\"error\":{\"code\":\"not_found\",\"message\":\"gone\"}}\n"; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
}

func TestWriteJSONUnencodable(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, map[string]any{"f": func() {}})
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500", rec.Code)
	}
	if got := errorOf(t, rec); got != (errorDetail{Code: sundial.EInternal, Message: "internal error"}) {
		t.Errorf("error = %+v", got)
	}
}
