package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

// TestUncleanPathsUnderAPI: a path under /api/ that is not clean is a JSON
// 404 naming the clean path, for every method; no redirect, and nothing is
// done on the path it would have been cleaned to.
func TestUncleanPathsUnderAPI(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("kept", nil))
	for _, c := range []struct{ method, path, clean string }{
		{http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d/../%d", tk.ID, tk.ID), fmt.Sprintf("/api/v1/tasks/%d", tk.ID)},
		{http.MethodGet, "//api/v1/tasks", "/api/v1/tasks"},
		{http.MethodGet, "/api/v1//tasks", "/api/v1/tasks"},
		{http.MethodGet, "/api/v1/./tasks", "/api/v1/tasks"},
		{http.MethodDelete, fmt.Sprintf("/api/v1/tasks/x/../%d", tk.ID), fmt.Sprintf("/api/v1/tasks/%d", tk.ID)},
		{http.MethodPost, "/api/v1/tasks/./", "/api/v1/tasks/"},
		{http.MethodGet, "/api/v1/nope/..", "/api/v1"},
		{http.MethodGet, "/x/../api/v1/tasks", "/api/v1/tasks"},
	} {
		rec := b.do(t, c.method, c.path, nil)
		wantError(t, rec, http.StatusNotFound, errorDetail{Code: sundial.ENotFound,
			Message: fmt.Sprintf("no such endpoint: %s %s; paths are taken as sent, not cleaned: the path meant is likely %s",
				c.method, c.path, c.clean)})
		if loc := rec.Header().Get("Location"); loc != "" {
			t.Errorf("%s %s: Location %q, want no redirect", c.method, c.path, loc)
		}
	}
	b.get(t, tk.ID) // the DELETE did not reach the task

	// Outside /api/ too: every answer of the listener is JSON.
	rec := b.do(t, http.MethodGet, "//healthz", nil)
	wantError(t, rec, http.StatusNotFound, errorDetail{Code: sundial.ENotFound,
		Message: "no such endpoint: GET //healthz; paths are taken as sent, not cleaned: the path meant is likely /healthz"})
}

// TestAsteriskTarget: the request target * (OPTIONS *, or an HTTP/2
// preface on an HTTP/1 listener) is a JSON 404, not a redirect.
func TestAsteriskTarget(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	for _, method := range []string{http.MethodOptions, http.MethodGet, "PRI"} {
		req, err := http.NewRequest(method, "/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.RequestURI, req.URL.Path = "*", "*"
		rec := httptest.NewRecorder()
		b.srv.Handler().ServeHTTP(rec, req)
		wantError(t, rec, http.StatusNotFound, errorDetail{Code: sundial.ENotFound, Message: "no such endpoint: " + method + " *"})
	}
}

// TestBodyLimits: each endpoint's 413 names its limit, and a batch takes
// more than a single task.
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("limits", nil))
	pad := func(n int) string { return `{"description":"` + strings.Repeat("x", n) + `"}` }
	for _, c := range []struct {
		method, path, body, message string
	}{
		{http.MethodPost, "/api/v1/tasks", pad(1 << 20), "request body is larger than 1 MiB, the limit of POST /api/v1/tasks"},
		{http.MethodPut, taskPath(tk.ID), pad(1 << 20), "request body is larger than 1 MiB, the limit of PUT /api/v1/tasks/{id}"},
		{http.MethodPost, "/api/v1/tasks:batch", pad(16 << 20), "request body is larger than 16 MiB, the limit of POST /api/v1/tasks:batch"},
		{http.MethodPost, "/api/v1/runs/1/progress", pad(128 << 10), "request body is larger than 128 KiB, the limit of POST /api/v1/runs/{id}/progress"},
	} {
		if strings.HasSuffix(c.path, "/progress") {
			r, tok := waitingRun(t, b, "POST")
			c.path = fmt.Sprintf("/api/v1/runs/%d/progress", r.ID)
			resp := b.callback(t, c.method, c.path, map[string]string{"X-Sundial-Callback-Token": tok}, c.body)
			var got errorBody
			_ = json.NewDecoder(resp.Body).Decode(&got)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || got.Error.Message != c.message {
				t.Errorf("%s %s: %d %q, want 413 %q", c.method, c.path, resp.StatusCode, got.Error.Message, c.message)
			}
			continue
		}
		wantError(t, b.do(t, c.method, c.path, c.body), http.StatusRequestEntityTooLarge,
			errorDetail{Code: sundial.ETooLarge, Message: c.message})
	}
	// A batch of 2 MiB is within its limit.
	var items []string
	for i := range 2 {
		items = append(items, fmt.Sprintf(`{"name":"big-%d","cron_expr":"0 * * * * *","target_url":"https://example.com/hook","body_template":%q}`,
			i, strings.Repeat("y", 60<<10)))
	}
	body := `{"tasks":[` + strings.Join(items, ",") + `]` + string(bytes.Repeat([]byte(" "), 2<<20)) + `}`
	want(t, b.do(t, http.MethodPost, "/api/v1/tasks:batch", body), http.StatusOK, nil)
}
