package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

// TestQueryUnknownParameter: every built-in route refuses a query
// parameter it does not read, naming it and listing those it reads, and
// the request changes nothing.
func TestQueryUnknownParameter(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("a", nil))
	run := b.insertRun(t, tk.ID, b.now(), sundial.RunScheduled)
	waiting, tok := waitingRun(t, b, "POST")
	none := " takes no query parameters"
	for _, tc := range []struct {
		method, path string
		body         any
		accepts      string // the end of the message
	}{
		{"GET", "/healthz", nil, none},
		{"GET", "/readyz", nil, none},
		{"GET", "/api/v1/cron/next?expr=*+*+*+*+*", nil, " accepts expr, tz, from, count, dst"},
		{"POST", "/api/v1/tasks", task("b", nil), none},
		{"POST", "/api/v1/tasks:batch", map[string]any{"tasks": []any{task("c", nil)}}, none},
		{"POST", "/api/v1/tasks:bulk", map[string]any{"action": "disable", "ids": []int64{tk.ID}}, none},
		{"GET", "/api/v1/tasks", nil, " accepts status, name, name_prefix, name_contains, request_id, biz_id, selector, limit, cursor, format, recent"},
		{"GET", taskPath(tk.ID), nil, none},
		{"PUT", taskPath(tk.ID), task("a", map[string]any{"version": 1, "description": "changed"}), none},
		{"DELETE", taskPath(tk.ID), nil, none},
		{"POST", taskPath(tk.ID, "/enable"), nil, none},
		{"POST", taskPath(tk.ID, "/disable"), nil, none},
		{"POST", taskPath(tk.ID, "/trigger"), nil, none},
		{"GET", taskPath(tk.ID, "/runs"), nil, " accepts status, trigger, selector, from, to, finished_after, finished_before, planned, dead_letter, limit, cursor"},
		{"GET", taskPath(tk.ID, "/upcoming"), nil, " accepts limit"},
		{"GET", "/api/v1/runs", nil, " accepts task_id, status, trigger, selector, from, to, finished_after, finished_before, planned, dead_letter, limit, cursor"},
		{"GET", runPath(run.ID, ""), nil, none},
		{"POST", runPath(run.ID, "/cancel"), nil, none},
		{"POST", runPath(run.ID, "/rerun"), nil, none},
		{"GET", runPath(waiting.ID, "/callback"), nil, " accepts status, message"},
		{"POST", runPath(waiting.ID, "/callback"), map[string]any{"status": "SUCCESS"}, none},
		{"PUT", runPath(waiting.ID, "/callback"), map[string]any{"status": "SUCCESS"}, none},
		{"POST", runPath(waiting.ID, "/progress"), map[string]any{"progress": 1}, none},
		{"GET", "/api/v1/nodes", nil, none},
		{"GET", "/api/v1/admin/compensation", nil, none},
		{"POST", "/api/v1/admin/compensation/trigger", nil, none},
	} {
		path, sep := tc.path, "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "bogus=1"
		route := tc.method + " " + tc.path
		if i := strings.Index(route, "?"); i >= 0 {
			route = route[:i]
		}
		route = strings.NewReplacer(
			taskPath(tk.ID), "/api/v1/tasks/{id}",
			runPath(run.ID, ""), "/api/v1/runs/{id}",
			runPath(waiting.ID, ""), "/api/v1/runs/{id}",
		).Replace(route)
		wantError(t, b.serveWithToken(t, tc.method, path, tc.body, tok), http.StatusBadRequest, errorDetail{Code: sundial.EInvalid, Field: "bogus",
			Message: `unknown query parameter "bogus"; ` + route + tc.accepts})
	}

	// Nothing changed.
	if got := b.get(t, tk.ID); got.Version != 1 || got.Status != sundial.TaskEnabled || got.Description != "" {
		t.Errorf("task after refused requests: version %d, status %s, description %q", got.Version, got.Status, got.Description)
	}
	tasks, err := b.store.TaskList(context.Background(), sundial.TaskListParams{})
	if err != nil || len(tasks) != 2 { // a, and the ASYNC task of the waiting run
		t.Errorf("tasks after refused requests: %d, %v; want 2", len(tasks), err)
	}
	for _, r := range []*sundial.Run{run, waiting} {
		got, err := b.store.RunGet(context.Background(), r.ID)
		if err != nil || got.Status != r.Status && !(r == waiting && got.Status == sundial.RunWaitingCallback) {
			t.Errorf("run %d after refused requests: %v %v", r.ID, got, err)
		}
	}
	runs, err := b.store.RunList(context.Background(), sundial.RunListParams{TaskID: tk.ID})
	if err != nil || len(runs) != 1 {
		t.Errorf("runs of task a after refused requests: %d, %v; want 1 (no trigger)", len(runs), err)
	}
	if b.sched.compRounds.Load() != 0 {
		t.Errorf("a compensation round was triggered")
	}

	// The examples, and biz_id, which belongs to tasks, on runs.
	for _, path := range []string{"/api/v1/tasks?nmae=hello", "/api/v1/runs?biz_id=order-1"} { //nolint:misspell // on purpose
		rec := b.do(t, http.MethodGet, path, nil)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("GET %s: status %d, want 400; body %s", path, rec.Code, rec.Body)
		}
	}

	// Routes registered by others check their own query.
	b.srv.Handle("GET /api/v1/extra", sundial.RoleViewer, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, r.URL.Query())
	}))
	want(t, b.do(t, http.MethodGet, "/api/v1/extra?anything=1", nil), http.StatusOK, nil)
}

// TestQueryMalformed: a parameter given twice, a name or value that is not
// valid UTF-8 or not well percent-encoded, and a ; separator are refused,
// naming the parameter.
func TestQueryMalformed(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("a", nil))
	for _, tc := range []struct {
		query string
		field string
		msg   string // a part of the message
	}{
		{"limit=1&limit=2", "limit", `query parameter "limit" is given more than once`},
		{"cursor=&cursor=", "cursor", "given more than once"},
		{"status=ENABLED&status=DISABLED", "status", "status=A,B"},
		{"name_prefix=%FF", "name_prefix", "not valid UTF-8"},
		{"name_contains=a%FF", "name_contains", "not valid UTF-8"},
		{"biz_id=a%C3", "biz_id", "not valid UTF-8"},
		{"%FF=1", "\uFFFD", "name is not valid UTF-8"},
		{"limit=%zz", "limit", "malformed value"},
		{"li%zzmit=1", "li%zzmit", "malformed query parameter name"},
		{"limit=1;cursor=x", "limit", "not ;"},
		{"=1", "", "a query parameter has no name"},
	} {
		path := "/api/v1/tasks?" + tc.query
		rec := b.do(t, http.MethodGet, path, nil)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("GET %s: status %d, want 400", path, rec.Code)
			continue
		}
		got := errorOf(t, rec)
		if got.Code != sundial.EInvalid || got.Field != tc.field || !strings.Contains(got.Message, tc.msg) {
			t.Errorf("GET %s: error %+v, want field %q and a message with %q", path, got, tc.field, tc.msg)
		}
	}
	// Empty pieces are no parameters, and a valid query passes.
	var list listResponse[*sundial.Task]
	want(t, b.do(t, http.MethodGet, "/api/v1/tasks?&limit=5&&name_prefix=%61&", nil), http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ID != tk.ID {
		t.Errorf("tasks = %v, want task a", list.Items)
	}
}

// TestQueryNoStore: the routes served without a database check their
// query too.
func TestQueryNoStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/healthz?verbose=1", "/api/v1/cron/next?expr=@daily&timezone=UTC"} {
		rec := b.do(t, http.MethodGet, path, "", nil)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("GET %s: status %d, want 400", path, rec.Code)
		}
	}
	if rec := b.do(t, http.MethodGet, "/api/v1/cron/next?expr=@daily&tz=UTC", "", nil); rec.Code != http.StatusOK {
		t.Errorf("cron/next with known parameters: status %d; body %s", rec.Code, rec.Body)
	}
}

// serve serves one request with the callback token of the waiting run
// tok; a non-nil body is sent as application/json.
func (b *storeBundle) serveWithToken(t *testing.T, method, path string, body any, tok string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Sundial-Callback-Token", tok)
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, req)
	return rec
}
