package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sundialhq/sundial"
)

// request is one request of these tests: a method, a path, a body (sent as
// contentType, application/json by default) and headers as name, value
// pairs.
type request struct {
	method, path, body, contentType string
	header                          []string
}

// send serves r through srv.
func send(t *testing.T, srv *Server, r request) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
	if r.body != "" {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(r.header); i += 2 {
		req.Header.Add(r.header[i], r.header[i+1])
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	return rec
}

// patch sends a merge patch of the task id.
func (b *storeBundle) patch(t *testing.T, id int64, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	return send(t, b.srv, request{method: http.MethodPatch, path: taskPath(id), body: body,
		contentType: mergePatchType, header: header})
}

// fieldsOf is a task's JSON object, less the fields named.
func fieldsOf(t *testing.T, tk *sundial.Task, less ...string) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(tk)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range less {
		delete(m, k)
	}
	return m
}

// TestTaskPatch: a merge patch changes the fields it gives and no other
// (the version grows by one, the audit log names the fields); null
// removes a field (it takes its default), and removes a member of an
// object; an object merges into the task's; a patch that changes nothing
// writes nothing.
func TestTaskPatch(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	orig := b.create(t, task("patch-me", map[string]any{
		"description": "the nightly report", "timezone": "Europe/Paris", "priority": 5,
		"headers": map[string]string{"X-Team": "ops", "X-Env": "prod"}, "params": map[string]any{"day": "mon", "n": 1},
		"retry_policy": map[string]any{"max_attempts": 3, "initial_backoff": "2s"},
	}))
	b.setNow(b.now().Add(time.Minute))

	var got sundial.Task
	rec := b.patch(t, orig.ID, `{"cron_expr":"0 0 4 * * *","headers":{"X-Env":null,"X-New":"1"},"params":{"n":2},`+
		`"retry_policy":{"max_attempts":5}}`)
	want(t, rec, http.StatusOK, &got)
	if tag := rec.Header().Get("ETag"); tag != fmt.Sprintf(`"%d-2"`, orig.ID) {
		t.Errorf("ETag = %q", tag)
	}
	if got.Version != 2 || got.CronExpr != "0 0 4 * * *" ||
		!reflect.DeepEqual(got.Headers, map[string]string{"X-Team": "ops", "X-New": "1"}) ||
		string(got.Params) != `{"day":"mon","n":2}` || got.RetryPolicyOf().MaxAttempts != 5 ||
		got.RetryPolicyOf().InitialBackoff != 2*time.Second {
		t.Errorf("patched = %+v", got)
	}
	// Every other field is as it was.
	less := []string{"cron_expr", "headers", "params", "retry_policy", "version", "updated_at", "next_fire_time", "state"}
	if a, w := fieldsOf(t, &got, less...), fieldsOf(t, orig, less...); !reflect.DeepEqual(a, w) {
		t.Errorf("fields not patched changed:\n got %v\nwant %v", a, w)
	}
	checkTask(t, b.get(t, orig.ID), &got)
	var audit listResponse[auditView]
	want(t, b.do(t, http.MethodGet, "/api/v1/audit?action=task.update", nil), http.StatusOK, &audit)
	var after struct {
		Changed []string `json:"changed"`
	}
	if len(audit.Items) != 1 || json.Unmarshal(audit.Items[0].After, &after) != nil ||
		strings.Join(after.Changed, ",") != "cron_expr,headers,params,retry_policy" {
		t.Errorf("audit = %+v", audit.Items)
	}

	// null: the field takes its default, as a PUT leaving it out.
	got = sundial.Task{}
	want(t, b.patch(t, orig.ID, `{"description":null,"timezone":null,"params":null,"retry_policy":null,"headers":null}`),
		http.StatusOK, &got)
	if got.Version != 3 || got.Description != "" || got.Timezone != "UTC" || got.Params != nil ||
		got.RetryPolicyOf().MaxAttempts != 1 || len(got.Headers) != 0 || got.Priority != 5 {
		t.Errorf("after nulls = %+v", got)
	}

	// Nothing changed: nothing written, the version stays.
	rec = b.patch(t, orig.ID, `{"priority":5,"description":""}`)
	got = sundial.Task{}
	want(t, rec, http.StatusOK, &got)
	if got.Version != 3 || rec.Header().Get("ETag") != fmt.Sprintf(`"%d-3"`, orig.ID) {
		t.Errorf("an empty change: version %d, ETag %s", got.Version, rec.Header().Get("ETag"))
	}

	// Another spelling: delay_seconds replaces run_at; application/json
	// is taken too.
	once := b.create(t, map[string]any{"name": "once", "run_at": "2030-01-01T00:00:00Z", "target_url": "https://example.com/x"})
	got = sundial.Task{}
	want(t, send(t, b.srv, request{method: http.MethodPatch, path: taskPath(once.ID), body: `{"delay_seconds":60}`}),
		http.StatusOK, &got)
	if wantAt := b.now().Add(time.Minute); got.RunAt == nil || !got.RunAt.Equal(wantAt) {
		t.Errorf("run_at after delay_seconds = %v, want %v", got.RunAt, wantAt)
	}
	// From a one-off task to a recurring one.
	got = sundial.Task{}
	want(t, b.patch(t, once.ID, `{"run_at":null,"cron_expr":"@hourly"}`), http.StatusOK, &got)
	if got.RunAt != nil || got.CronExpr != "0 0 * * * *" {
		t.Errorf("a one-off task made recurring: %+v", got)
	}
}

// TestTaskPatchRefused: a patch the server refuses (a field the server
// sets, an unknown one, a value that breaks a rule, a status removed, a
// body that is not an object, another content type, a stale version or
// ETag) is a 4xx naming the field, and changes nothing.
func TestTaskPatchRefused(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("keep", map[string]any{"description": "as it was"}))
	b.create(t, task("other", nil))
	stale := fmt.Sprintf(`"%d-%d"`, tk.ID, tk.Version+1)
	for _, tc := range []struct {
		name, body, ct string
		header         []string
		status         int
		code, field    string
	}{
		{name: "id", body: `{"id":1}`, status: 400, code: sundial.EInvalid, field: "id"},
		{name: "created_at", body: `{"created_at":"2020-01-01T00:00:00Z"}`, status: 400, code: sundial.EInvalid, field: "created_at"},
		{name: "next_fire_time", body: `{"next_fire_time":null}`, status: 400, code: sundial.EInvalid, field: "next_fire_time"},
		{name: "disabled_by", body: `{"disabled_by":"me"}`, status: 400, code: sundial.EInvalid, field: "disabled_by"},
		{name: "unknown", body: `{"description":"x","timezon":"UTC"}`, status: 400, code: sundial.EInvalid, field: "timezon"},
		{name: "bad cron", body: `{"description":"x","cron_expr":"61 * * * * *"}`, status: 400, code: sundial.EInvalid, field: "cron_expr"},
		{name: "wrong type", body: `{"max_queue":"lots"}`, status: 400, code: sundial.EInvalid, field: "max_queue"},
		{name: "required removed", body: `{"target_url":null}`, status: 400, code: sundial.EInvalid, field: "target_url"},
		{name: "status removed", body: `{"status":null}`, status: 400, code: sundial.EInvalid, field: "status"},
		{name: "server status", body: `{"status":"COMPLETED"}`, status: 400, code: sundial.EInvalid, field: "status"},
		{name: "cron and run_at", body: `{"run_at":"2030-01-01T00:00:00Z"}`, status: 400, code: sundial.EInvalid, field: "run_at"},
		{name: "reason while enabled", body: `{"disabled_reason":"why"}`, status: 400, code: sundial.EInvalid, field: "disabled_reason"},
		{name: "version", body: `{"version":"1"}`, status: 400, code: sundial.EInvalid, field: "version"},
		{name: "an array", body: `[{"description":"x"}]`, status: 400, code: sundial.EInvalid},
		{name: "null", body: `null`, status: 400, code: sundial.EInvalid},
		{name: "key twice", body: `{"description":"a","description":"b"}`, status: 400, code: sundial.EInvalid, field: "description"},
		{name: "text", body: `{"description":"x"}`, ct: "text/plain", status: 415, code: sundial.EUnsupported},
		{name: "name taken", body: `{"name":"other"}`, status: 409, code: sundial.EConflict, field: "name"},
		{name: "stale version", body: `{"description":"x","version":2}`, status: 412, code: sundial.EPrecondition, field: "version"},
		{name: "stale ETag", body: `{"description":"x"}`, header: []string{"If-Match", stale}, status: 412,
			code: sundial.EPrecondition, field: "If-Match"},
		{name: "weak ETag", body: `{"description":"x"}`, header: []string{"If-Match", "W/" + etag(tk)}, status: 412,
			code: sundial.EPrecondition, field: "If-Match"},
		{name: "ETag not quoted", body: `{"description":"x"}`, header: []string{"If-Match", "1-1"}, status: 400,
			code: sundial.EInvalid, field: "If-Match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := tc.ct
			if ct == "" {
				ct = mergePatchType
			}
			rec := send(t, b.srv, request{method: http.MethodPatch, path: taskPath(tk.ID), body: tc.body, contentType: ct, header: tc.header})
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if e := errorOf(t, rec); e.Code != tc.code || e.Field != tc.field || e.Message == "" ||
				(tc.status == 412 && !strings.Contains(e.Message, "is at version 1")) {
				t.Errorf("error %+v, want code %s field %q (a 412 naming the current version)", e, tc.code, tc.field)
			}
		})
	}
	wantError(t, send(t, b.srv, request{method: http.MethodPatch, path: taskPath(999), body: `{"description":"x"}`, contentType: mergePatchType}),
		404, errorDetail{Code: sundial.ENotFound})
	checkTask(t, b.get(t, tk.ID), tk)
	var audit listResponse[auditView]
	want(t, b.do(t, http.MethodGet, "/api/v1/audit?action=task.update", nil), http.StatusOK, &audit)
	if len(audit.Items) != 0 {
		t.Errorf("refused patches were audited: %+v", audit.Items)
	}
}

// TestTaskPatchPreconditions: a patch (or a PUT) with the ETag GET gave,
// or the version, is made; once the task changed, the same is 412 and
// changes nothing. Without a precondition, a patch that meets a task
// changed meanwhile (the store refuses its version) is made on the task
// read again; with one, it is 412.
func TestTaskPatchPreconditions(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("contended", nil))
	rec := b.do(t, http.MethodGet, taskPath(tk.ID), nil)
	tag := rec.Header().Get("ETag")
	if tag != fmt.Sprintf(`"%d-1"`, tk.ID) {
		t.Fatalf("GET: ETag %q", tag)
	}
	want(t, b.patch(t, tk.ID, `{"description":"first"}`, "If-Match", tag), http.StatusOK, nil)
	for _, r := range []*httptest.ResponseRecorder{
		b.patch(t, tk.ID, `{"description":"second"}`, "If-Match", tag),
		b.patch(t, tk.ID, `{"description":"second","version":1}`),
		send(t, b.srv, request{method: http.MethodPut, path: taskPath(tk.ID), body: `{"name":"contended","cron_expr":"@daily",` +
			`"target_url":"https://example.com/hook","description":"second"}`, header: []string{"If-Match", tag}}),
	} {
		if e := errorOf(t, r); r.Code != http.StatusPreconditionFailed || e.Code != sundial.EPrecondition ||
			!strings.Contains(e.Message, "is at version 2") {
			t.Errorf("a stale write: %d %+v", r.Code, e)
		}
	}
	cur := b.get(t, tk.ID)
	if cur.Description != "first" || cur.Version != 2 {
		t.Fatalf("after stale writes: %+v", cur)
	}
	// A list of tags, one of them current; *, any version.
	want(t, b.patch(t, tk.ID, `{"description":"third"}`, "If-Match", tag+`, "x-1", `+etag(cur)), http.StatusOK, nil)
	want(t, b.patch(t, tk.ID, `{"description":"fourth"}`, "If-Match", "*"), http.StatusOK, nil)
	cur = b.get(t, tk.ID)
	// A PUT with If-Match may leave version out.
	want(t, send(t, b.srv, request{method: http.MethodPut, path: taskPath(tk.ID), body: `{"name":"contended","cron_expr":"@daily",` +
		`"target_url":"https://example.com/hook","description":"fifth"}`, header: []string{"If-Match", etag(cur)}}), http.StatusOK, nil)

	// A write that meets another: read again without a precondition, 412
	// with one.
	cs := &conflictStore{Store: b.store}
	srv := NewServer(Config{Now: b.now, Store: cs, Scheduler: b.sched})
	cs.conflicts.Store(2)
	var got sundial.Task
	want(t, send(t, srv, request{method: http.MethodPatch, path: taskPath(tk.ID), body: `{"priority":7}`}), http.StatusOK, &got)
	if got.Priority != 7 || got.Description != "fifth" {
		t.Errorf("patch after conflicts = %+v", got)
	}
	cs.conflicts.Store(1)
	r := send(t, srv, request{method: http.MethodPatch, path: taskPath(tk.ID), body: `{"priority":8}`,
		header: []string{"If-Match", etag(&got)}})
	wantError(t, r, http.StatusPreconditionFailed, errorDetail{Code: sundial.EPrecondition, Field: "version", Token: fmt.Sprint(got.Version)})
	cs.conflicts.Store(1)
	r = send(t, srv, request{method: http.MethodPut, path: taskPath(tk.ID), body: fmt.Sprintf(`{"name":"contended","cron_expr":"@daily",`+
		`"target_url":"https://example.com/hook","priority":9,"version":%d}`, got.Version)})
	wantError(t, r, http.StatusConflict, errorDetail{Code: sundial.EConflict, Field: "version"})
	if cur := b.get(t, tk.ID); cur.Priority != 7 {
		t.Errorf("priority after refused writes = %d, want 7", cur.Priority)
	}
}

// TestTaskPatchSecrets: the secrets a patch does not give are kept, as a
// PUT's "***" keeps them; one it gives is stored; moving target_url to
// another origin asks for them again.
func TestTaskPatchSecrets(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{})
	tk := b.create(t, task("secret", map[string]any{"target_url": "https://u:pw@example.com/hook",
		"headers": map[string]string{"Authorization": "Bearer s3cret", "X-Team": "ops"}, "signing_secret": "generate"}))
	stored := func() *sundial.Task {
		st, err := b.store.TaskGet(t.Context(), tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		open, err := sundial.OpenTask(st, b.sealer)
		if err != nil {
			t.Fatal(err)
		}
		return open
	}
	before := stored()
	var got sundial.Task
	want(t, b.patch(t, tk.ID, `{"description":"secrets kept"}`), http.StatusOK, &got)
	after := stored()
	if after.Headers["Authorization"] != "Bearer s3cret" || after.TargetURL != "https://u:pw@example.com/hook" ||
		after.SigningSecret != before.SigningSecret || after.SigningSecret == "" {
		t.Errorf("secrets after a patch of another field: %+v", after)
	}
	if got.Headers["Authorization"] != sundial.Masked || got.SigningSecret != sundial.Masked {
		t.Errorf("the answer shows a secret: %+v", got)
	}
	want(t, b.patch(t, tk.ID, `{"headers":{"Authorization":"Bearer n3w"}}`), http.StatusOK, nil)
	if h := stored().Headers; h["Authorization"] != "Bearer n3w" || h["X-Team"] != "ops" {
		t.Errorf("headers after a new secret: %v", h)
	}
	rec := b.patch(t, tk.ID, `{"target_url":"https://other.example.com/hook"}`)
	wantError(t, rec, 400, errorDetail{Code: sundial.EInvalid, Field: "headers", Token: "Authorization"})
}

// TestTaskDisableReason: a disable keeps its reason, when and who (the
// token's name) until the task is enabled again; disabling again changes
// nothing but for a new reason; a patch or a PUT may set and clear it; a
// reason too long, or for a task that is enabled, is refused.
func TestTaskDisableReason(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Required: true, Bootstrap: testBootstrap})
	op := []string{"Authorization", "Bearer " + b.secrets[sundial.RoleOperator]}
	ed := []string{"Authorization", "Bearer " + b.secrets[sundial.RoleEditor]}
	tk := &sundial.Task{}
	want(t, send(t, b.srv, request{method: http.MethodPost, path: "/api/v1/tasks", header: ed,
		body: `{"name":"paused","cron_expr":"@daily","target_url":"https://example.com/"}`}), http.StatusCreated, tk)
	disable := func(body string) *httptest.ResponseRecorder {
		return send(t, b.srv, request{method: http.MethodPost, path: taskPath(tk.ID, "/disable"), body: body, header: op})
	}
	b.setNow(b.now().Add(time.Minute))
	var got sundial.Task
	rec := disable(`{"reason":"waiting for the vendor's fix"}`)
	want(t, rec, http.StatusOK, &got)
	at := b.now()
	if got.Status != sundial.TaskDisabled || got.DisabledReason != "waiting for the vendor's fix" || got.DisabledBy != "operator-token" ||
		got.DisabledAt == nil || !got.DisabledAt.Equal(at) || got.Version != 2 || rec.Header().Get("ETag") != etag(&got) {
		t.Fatalf("disabled = %+v", got)
	}
	var read sundial.Task
	want(t, send(t, b.srv, request{method: http.MethodGet, path: taskPath(tk.ID), header: ed}), http.StatusOK, &read)
	checkTask(t, &read, &got)
	var list listResponse[*sundial.Task]
	want(t, send(t, b.srv, request{method: http.MethodGet, path: "/api/v1/tasks?status=DISABLED", header: ed}), http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].DisabledReason != got.DisabledReason {
		t.Errorf("list = %+v", list.Items)
	}

	// Again without a body, or the same reason: nothing changes; a new
	// reason replaces the old, when and who stay.
	b.setNow(b.now().Add(time.Minute))
	for _, body := range []string{"", `{}`, `{"reason":null}`, `{"reason":"waiting for the vendor's fix"}`} {
		got = sundial.Task{}
		want(t, disable(body), http.StatusOK, &got)
		if got.Version != 2 || got.DisabledReason != "waiting for the vendor's fix" {
			t.Errorf("disable %q again: %+v", body, got)
		}
	}
	got = sundial.Task{}
	want(t, disable(`{"reason":"vendor fix due Monday"}`), http.StatusOK, &got)
	if got.Version != 3 || got.DisabledReason != "vendor fix due Monday" || !got.DisabledAt.Equal(at) || got.DisabledBy != "operator-token" {
		t.Errorf("a new reason: %+v", got)
	}
	// Refused: too long, not a string, another field.
	for _, body := range []string{fmt.Sprintf(`{"reason":%q}`, strings.Repeat("é", sundial.MaxDisabledReasonLen+1)),
		`{"reason":5}`, `{"why":"x"}`} {
		rec := disable(body)
		if e := errorOf(t, rec); rec.Code != 400 || (e.Field != "reason" && e.Field != "why") {
			t.Errorf("disable %.40s: %d %+v", body, rec.Code, e)
		}
	}

	// A patch that changes another field keeps the reason; a PUT of the
	// task as GET answered it too.
	got = sundial.Task{}
	want(t, send(t, b.srv, request{method: http.MethodPatch, path: taskPath(tk.ID), body: `{"priority":3}`, header: ed}), http.StatusOK, &got)
	if got.DisabledReason != "vendor fix due Monday" || got.DisabledBy != "operator-token" {
		t.Errorf("after a patch: %+v", got)
	}
	rec = send(t, b.srv, request{method: http.MethodGet, path: taskPath(tk.ID), header: ed})
	var asRead map[string]any
	want(t, rec, http.StatusOK, &asRead)
	asRead["description"] = "put back"
	body, _ := json.Marshal(asRead)
	got = sundial.Task{}
	want(t, send(t, b.srv, request{method: http.MethodPut, path: taskPath(tk.ID), body: string(body), header: ed}), http.StatusOK, &got)
	if got.DisabledReason != "vendor fix due Monday" || !got.DisabledAt.Equal(at) {
		t.Errorf("after a PUT of the GET answer: %+v", got)
	}
	// null removes it.
	got = sundial.Task{}
	want(t, send(t, b.srv, request{method: http.MethodPatch, path: taskPath(tk.ID), body: `{"disabled_reason":null}`, header: ed}),
		http.StatusOK, &got)
	if got.DisabledReason != "" || got.Status != sundial.TaskDisabled || got.DisabledAt == nil {
		t.Errorf("reason removed: %+v", got)
	}

	// Enabling clears them all; the answers then have none.
	got = sundial.Task{}
	rec = send(t, b.srv, request{method: http.MethodPost, path: taskPath(tk.ID, "/enable"), header: op})
	want(t, rec, http.StatusOK, &got)
	if got.Status != sundial.TaskEnabled || strings.Contains(rec.Body.String(), "disabled_") {
		t.Errorf("enabled: %s", rec.Body)
	}
	if st, _ := b.store.TaskGet(t.Context(), tk.ID); st.DisabledReason != "" || st.DisabledAt != nil || st.DisabledBy != "" {
		t.Errorf("stored after enable: %+v", st)
	}

	// A patch disables with a reason, and enables again.
	got = sundial.Task{}
	want(t, send(t, b.srv, request{method: http.MethodPatch, path: taskPath(tk.ID),
		body: `{"status":"DISABLED","disabled_reason":"moved to the new cluster"}`, header: ed}), http.StatusOK, &got)
	if got.Status != sundial.TaskDisabled || got.DisabledReason != "moved to the new cluster" || got.DisabledBy != "editor-token" {
		t.Errorf("disabled by a patch: %+v", got)
	}
	rec = send(t, b.srv, request{method: http.MethodPatch, path: taskPath(tk.ID), body: `{"status":"ENABLED"}`, header: ed})
	if rec.Code != 200 || strings.Contains(rec.Body.String(), "disabled_") {
		t.Errorf("enabled by a patch: %d %s", rec.Code, rec.Body)
	}

	var audit listResponse[auditView]
	want(t, send(t, b.srv, request{method: http.MethodGet, path: fmt.Sprintf("/api/v1/audit?action=task.disable&task_id=%d", tk.ID),
		header: []string{"Authorization", "Bearer " + b.secrets[sundial.RoleAdmin]}}), http.StatusOK, &audit)
	if len(audit.Items) != 2 || audit.Items[0].Actor != "operator-token" ||
		!strings.Contains(string(audit.Items[0].After), `"disabled_reason":"vendor fix due Monday"`) {
		t.Errorf("audit of the disables: %+v", audit.Items)
	}
}

// TestTaskExport: GET /tasks?format=yaml (json) answers every task the
// filters select, as apply reads it: no server-set field, no field at its
// default, secrets masked. Each task sent back as a PUT of what the export
// holds changes nothing. A format it does not know, or a page, is 400.
func TestTaskExport(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{})
	b.create(t, task("plain", map[string]any{"cron_expr": "0 30 2 * * *"}))
	b.create(t, task("full", map[string]any{"description": "every field", "timezone": "Europe/Paris", "priority": -3,
		"headers": map[string]string{"X-Api-Key": "s3cret", "X-Team": "ops"}, "params": map[string]any{"z": 1, "a": []int{2}},
		"retry_policy": map[string]any{"max_attempts": 4}, "signing_secret": "generate", "max_queue": 7, "status": "DISABLED",
		"disabled_reason": "not yet", "target_url": "https://u:pw@example.com/hook", "oidc": map[string]string{"audience": "aud"}}))
	b.create(t, map[string]any{"name": "once", "run_at": "2030-01-02T03:04:05Z", "target_url": "https://example.com/once"})

	rec := b.do(t, http.MethodGet, "/api/v1/tasks?format=yaml", nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/yaml" {
		t.Fatalf("export: %d %s %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	wantYAML := `name: plain
cron_expr: 0 30 2 * * *
target_url: https://example.com/hook
---
name: full
description: every field
cron_expr: 0 0 */5 * * *
params:
  a:
    - 2
  z: 1
timezone: Europe/Paris
target_url: https://***@example.com/hook
headers:
  X-Api-Key: '***'
  X-Team: ops
retry_policy:
  max_attempts: 4
  initial_backoff: 1s
  max_backoff: 5m0s
  multiplier: 2
  jitter: full
  retry_on:
    - connection_error
    - timeout
    - "429"
    - 5xx
    - callback_failed
max_queue: 7
priority: -3
signing_secret: '***'
oidc:
  audience: aud
status: DISABLED
disabled_reason: not yet
---
name: once
run_at: "2030-01-02T03:04:05Z"
target_url: https://example.com/once
`
	if rec.Body.String() != wantYAML {
		t.Errorf("export:\n%s\nwant:\n%s", rec.Body, wantYAML)
	}

	// As JSON, with a filter; each task sent back changes nothing.
	rec = b.do(t, http.MethodGet, "/api/v1/tasks?format=json&name_prefix=f", nil)
	var items []map[string]any
	want(t, rec, http.StatusOK, &items)
	if len(items) != 1 || items[0]["name"] != "full" {
		t.Fatalf("export as JSON: %s", rec.Body)
	}
	var docs []map[string]any
	dec := yaml.NewDecoder(strings.NewReader(wantYAML))
	for {
		var d map[string]any
		if dec.Decode(&d) != nil {
			break
		}
		docs = append(docs, d)
	}
	var all listResponse[*sundial.Task]
	want(t, b.do(t, http.MethodGet, "/api/v1/tasks", nil), http.StatusOK, &all)
	for i, d := range docs {
		d["version"] = all.Items[i].Version
		body, _ := json.Marshal(d)
		var got sundial.Task
		want(t, b.do(t, http.MethodPut, taskPath(all.Items[i].ID), body), http.StatusOK, &got)
		if got.Version != all.Items[i].Version {
			var audit listResponse[auditView]
			want(t, b.do(t, http.MethodGet, "/api/v1/audit?action=task.update", nil), http.StatusOK, &audit)
			t.Errorf("task %s sent back as exported: version %d, want %d; %s", got.Name, got.Version, all.Items[i].Version, audit.Items[0].After)
		}
	}

	// Empty: an empty stream, an empty array.
	if rec := b.do(t, http.MethodGet, "/api/v1/tasks?format=yaml&name=none", nil); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("export of none: %d %q", rec.Code, rec.Body)
	}
	if rec := b.do(t, http.MethodGet, "/api/v1/tasks?format=json&name=none", nil); rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), []byte("[]\n")) {
		t.Errorf("export of none as JSON: %d %q", rec.Code, rec.Body)
	}
	wantError(t, b.do(t, http.MethodGet, "/api/v1/tasks?format=xml", nil), 400, errorDetail{Code: sundial.EInvalid, Field: "format", Token: "xml"})
	wantError(t, b.do(t, http.MethodGet, "/api/v1/tasks?format=yaml&limit=2", nil), 400, errorDetail{Code: sundial.EInvalid, Field: "limit"})
}

// TestTaskExportPages: an export reads the store a page at a time, and
// answers every task.
func TestTaskExportPages(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	n := exportPage + 3
	ts := make([]*sundial.Task, n)
	for i := range ts {
		ts[i] = &sundial.Task{Name: fmt.Sprintf("t-%04d", i), CronExpr: "@daily", TargetURL: "https://example.com/"}
		if err := ts[i].Normalize(b.now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.store.TaskCreateMany(t.Context(), ts, b.now()); err != nil {
		t.Fatal(err)
	}
	var items []struct{ Name string }
	want(t, b.do(t, http.MethodGet, "/api/v1/tasks?format=json", nil), http.StatusOK, &items)
	if len(items) != n || items[n-1].Name != fmt.Sprintf("t-%04d", n-1) {
		t.Fatalf("export of %d tasks: %d", n, len(items))
	}
}
