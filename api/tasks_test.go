package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
	"github.com/sundialhq/sundial/store/sqlite"
	"github.com/sundialhq/sundial/store/sqlite/sqlitetest"
)

// seedCreateTask is the example request of seed 001 section 10, byte for
// byte.
const seedCreateTask = `{
  "name":"sync_stats",
  "description":"统计同步",
  "cron_expr":"*/15 * * * * *",
  "exec_type":"SYNC",
  "http_method":"POST",
  "target_url":"http://svc.internal/api/sync",
  "headers_json":"{\"Content-Type\":\"application/json\"}",
  "body_template":"{\"run_id\":\"{{run_id}}\"}",
  "timeout_seconds":10,
  "max_concurrency":1,
  "concurrency_policy":"QUEUE",
  "overlap_action":"SKIP",
  "failure_action":"RUN_NEW"
}
`

// fakeScheduler stands in for *scheduler.Scheduler: it records pokes,
// inserts manual runs and cancels through the store.
type fakeScheduler struct {
	compRounds atomic.Int64
	store      sundial.Store
	now        func() time.Time
	pokes      atomic.Int64
	ready      atomic.Bool
	seq        atomic.Int64
}

func (f *fakeScheduler) Trigger(ctx context.Context, taskID int64, params json.RawMessage) (*sundial.Run, error) {
	return f.trigger(ctx, taskID, params, 0)
}

func (f *fakeScheduler) Rerun(ctx context.Context, of *sundial.Run) (*sundial.Run, error) {
	return f.trigger(ctx, of.TaskID, of.Params, of.ID)
}

func (f *fakeScheduler) trigger(ctx context.Context, taskID int64, params json.RawMessage, rerunOf int64) (*sundial.Run, error) {
	t, err := f.store.TaskGet(ctx, taskID)
	if err != nil {
		return nil, err
	}
	now := f.now()
	r := &sundial.Run{
		TaskID:        t.ID,
		FireKey:       fmt.Sprintf("manual:%d", f.seq.Add(1)),
		Trigger:       sundial.TriggerManual,
		RerunOf:       rerunOf,
		Params:        params,
		ScheduledTime: now,
		Status:        sundial.RunScheduled,
		Attempt:       1,
		NodeID:        "fake-node",
		Fence:         1,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	if err := f.store.RunInsert(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

func (f *fakeScheduler) Backfill(ctx context.Context, t *sundial.Task, times []time.Time) ([]*sundial.Run, error) {
	runs := make([]*sundial.Run, len(times))
	for i, at := range times {
		r := sundial.BackfillRun(t, at, f.now())
		if err := f.store.RunInsert(ctx, r); sundial.ErrorCode(err) == sundial.EConflict {
			continue
		} else if err != nil {
			return runs, err
		}
		runs[i] = r
	}
	return runs, nil
}

func (f *fakeScheduler) Cancel(ctx context.Context, runID int64) (*sundial.Run, error) {
	return f.store.RunCancel(ctx, runID, f.now())
}

func (f *fakeScheduler) Poke()       { f.pokes.Add(1) }
func (f *fakeScheduler) Ready() bool { return f.ready.Load() }
func (f *fakeScheduler) CompensationStatus() sundial.CompensationStatus {
	return sundial.CompensationStatus{IntervalMS: 10000, Multiplier: 1, Rounds: f.compRounds.Load()}
}
func (f *fakeScheduler) TriggerCompensation() { f.compRounds.Add(1) }

// storeBundle is a server on a fresh SQLite database, with a fake
// scheduler and a clock the test moves.
type storeBundle struct {
	srv   *Server
	store sundial.Store
	sched *fakeScheduler
	log   *bytes.Buffer

	mu  sync.Mutex
	cur time.Time
}

func setupStore(t *testing.T) *storeBundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlitetest.NewDB(t), sqlite.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return setupOn(t, st)
}

// setupOn is setupStore on the store given.
func setupOn(t *testing.T, st sundial.Store) *storeBundle {
	t.Helper()
	b := &storeBundle{store: st, log: new(bytes.Buffer), cur: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b.sched = &fakeScheduler{store: st, now: b.now}
	b.sched.ready.Store(true)
	b.srv = NewServer(Config{
		Logger:    slog.New(slog.NewTextHandler(b.log, nil)),
		Now:       b.now,
		Store:     st,
		Scheduler: b.sched,
	})
	return b
}

func (b *storeBundle) now() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur
}

func (b *storeBundle) setNow(t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cur = t
}

// do serves one request; a non-nil body is sent as application/json.
func (b *storeBundle) do(t *testing.T, method, target string, body any) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(v)
	case []byte:
		r = bytes.NewReader(v)
	default:
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encode body: %v", err)
		}
		r = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, target, r)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, req)
	return rec
}

// want fails the test unless rec has the status, and decodes its JSON body
// into out (if not nil).
func want(t *testing.T, rec *httptest.ResponseRecorder, status int, out any) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if out == nil {
		return
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
}

// wantError fails the test unless rec is the error given.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, wantErr errorDetail) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	got := errorOf(t, rec)
	if wantErr.Message == "" {
		got.Message = ""
	}
	if got != wantErr {
		t.Errorf("error = %+v, want %+v", got, wantErr)
	}
}

// task is a valid create request; change fills in or overrides fields.
func task(name string, change map[string]any) map[string]any {
	m := map[string]any{
		"name":       name,
		"cron_expr":  "0 */5 * * *",
		"target_url": "https://example.com/hook",
	}
	for k, v := range change {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// create makes a task through the API and returns it.
func (b *storeBundle) create(t *testing.T, body any) *sundial.Task {
	t.Helper()
	var got sundial.Task
	want(t, b.do(t, http.MethodPost, "/api/v1/tasks", body), http.StatusCreated, &got)
	return &got
}

func (b *storeBundle) get(t *testing.T, id int64) *sundial.Task {
	t.Helper()
	var got sundial.Task
	want(t, b.do(t, http.MethodGet, taskPath(id), nil), http.StatusOK, &got)
	return &got
}

func taskPath(id int64, rest ...string) string {
	return "/api/v1/tasks/" + strconv.FormatInt(id, 10) + strings.Join(rest, "")
}

func timeP(t time.Time) *time.Time { return &t }

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func TestTaskCreateSeedExample(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	req := httptest.NewRequest(http.MethodPost, "/api/v1/tasks", strings.NewReader(seedCreateTask))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, req)

	var got sundial.Task
	want(t, rec, http.StatusCreated, &got)
	if loc := rec.Header().Get("Location"); loc != taskPath(got.ID) {
		t.Errorf("Location = %q, want %q", loc, taskPath(got.ID))
	}
	wantTask := sundial.Task{
		ID:             got.ID,
		Name:           "sync_stats",
		Description:    "统计同步",
		CronExpr:       "*/15 * * * * *",
		Timezone:       "UTC",
		ExecType:       sundial.ExecSync,
		HTTPMethod:     "POST",
		TargetURL:      "http://svc.internal/api/sync",
		Headers:        map[string]string{"Content-Type": "application/json"},
		BodyTemplate:   `{"run_id":"{{run_id}}"}`,
		TimeoutSeconds: 10,
		RetryPolicy: json.RawMessage(`{"max_attempts":1,"initial_backoff":"1s","max_backoff":"5m0s","multiplier":2,` +
			`"jitter":"full","retry_on":["connection_error","timeout","429","5xx","callback_failed"]}`),
		MaxConcurrency:    1,
		ConcurrencyPolicy: sundial.ConcurrencyQueue,
		MaxQueue:          sundial.DefaultMaxQueue,
		OverlapAction:     sundial.OverlapSkip,
		FailureAction:     sundial.FailureRunNew,
		CatchUpMode:       sundial.CatchUpNone,
		CatchUpLimit:      sundial.DefaultCatchUp,
		CallbackMethod:    "POST",
		FollowRedirects:   sundial.RedirectSameOrigin,
		Labels:            map[string]string{},
		DST:               "vixie",
		Calendars:         []string{},
		Status:            sundial.TaskEnabled,
		Version:           1,
		CreatedAt:         b.now(),
		UpdatedAt:         b.now(),
		NextFireTime:      timeP(b.now().Add(15 * time.Second)),
		State:             &sundial.TaskHealth{}, // no run yet
	}
	checkTask(t, &got, &wantTask)
	if got.ID < 1 {
		t.Errorf("id = %d", got.ID)
	}
	if n := b.sched.pokes.Load(); n != 1 {
		t.Errorf("pokes = %d, want 1", n)
	}

	// The response is what is stored, and times are RFC 3339 in UTC.
	checkTask(t, b.get(t, got.ID), &wantTask)
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"created_at":     "2026-01-01T00:00:00Z",
		"updated_at":     "2026-01-01T00:00:00Z",
		"next_fire_time": "2026-01-01T00:00:15Z",
	} {
		if raw[k] != v {
			t.Errorf("%s = %v, want %s", k, raw[k], v)
		}
	}
}

// checkTask compares two tasks field by field.
//
// A task answer has a state block whose next fire is the task's; the rest
// of it is compared when want has one.
func checkTask(t *testing.T, got, want *sundial.Task) {
	t.Helper()
	g, w := *got, *want
	if !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) || !sameTime(g.NextFireTime, w.NextFireTime) {
		t.Errorf("times = %v, %v, %v; want %v, %v, %v",
			g.CreatedAt, g.UpdatedAt, g.NextFireTime, w.CreatedAt, w.UpdatedAt, w.NextFireTime)
	}
	if g.State == nil || !sameTime(g.State.NextFireTime, g.NextFireTime) {
		t.Errorf("state = %+v, want a state block with the next fire %v", g.State, g.NextFireTime)
	}
	if w.State == nil {
		g.State = nil
	} else {
		gs, ws := *g.State, *w.State
		gs.NextFireTime, ws.NextFireTime = nil, nil
		g.State, w.State = &gs, &ws
	}
	g.CreatedAt, g.UpdatedAt, g.NextFireTime = time.Time{}, time.Time{}, nil
	w.CreatedAt, w.UpdatedAt, w.NextFireTime = time.Time{}, time.Time{}, nil
	gj, _ := json.Marshal(g)
	wj, _ := json.Marshal(w)
	if !bytes.Equal(gj, wj) {
		t.Errorf("task =\n%s\nwant\n%s", gj, wj)
	}
}

func TestTaskCreateInvalid(t *testing.T) {
	t.Parallel()
	big := task("big", map[string]any{"description": strings.Repeat("x", maxTaskBody)})
	tests := []struct {
		name        string
		contentType string // default application/json
		body        any
		status      int
		err         errorDetail // Message compared only if set
	}{
		{
			name: "bad cron", body: task("a", map[string]any{"cron_expr": "0 0 25 * * *"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "cron_expr", Token: "25"},
		},
		{
			name: "missing cron", body: task("a", map[string]any{"cron_expr": nil}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "cron_expr",
				Message: "give cron_expr for a recurring task, run_at or delay_seconds for a one-off task, or depends_on for a task fired by its parents"},
		},
		{
			name: "bad timezone", body: task("a", map[string]any{"timezone": "Mars/Olympus"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "timezone", Token: "Mars/Olympus"},
		},
		{
			name: "Local timezone", body: task("a", map[string]any{"timezone": "Local"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "timezone", Token: "Local"},
		},
		{
			name: "bad overlap_action", body: task("a", map[string]any{"overlap_action": "NEVER"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "overlap_action", Token: "NEVER",
				Message: "must be one of ALLOW, SKIP, CANCEL_PREV, PARALLEL"},
		},
		{
			name: "bad status", body: task("a", map[string]any{"status": "PAUSED"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "status", Token: "PAUSED"},
		},
		{
			name: "bad URL scheme", body: task("a", map[string]any{"target_url": "ftp://example.com/x"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "target_url", Token: "ftp://example.com/x",
				Message: "must be an absolute http or https URL"},
		},
		{
			name: "missing name", body: task("", nil),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "name", Message: "name is required"},
		},
		{
			name: "exec_type", body: task("a", map[string]any{"exec_type": "LATER"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "exec_type", Token: "LATER"},
		},
		{
			name: "retry_policy key", body: task("a", map[string]any{"retry_policy": map[string]int{"max": 3}}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "retry_policy.max", Token: "max"},
		},
		{
			name:   "headers and headers_json",
			body:   task("a", map[string]any{"headers": map[string]string{"A": "1"}, "headers_json": `{"B":"2"}`}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "headers_json",
				Message: "give headers or headers_json, not both"},
		},
		{
			name: "headers_json not an object", body: task("a", map[string]any{"headers_json": `["x"]`}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "headers_json"},
		},
		{
			name: "headers_json null", body: task("a", map[string]any{"headers_json": `null`}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "headers_json"},
		},
		{
			// The text is not echoed: it may hold a secret.
			name: "headers_json not closed", body: task("a", map[string]any{"headers_json": `{"Authorization":"LEAK6"`}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "headers_json",
				Message: `headers_json must be a string holding a JSON object of string to string, for example "{\"X-Team\":\"ops\"}" (it is not valid JSON at offset 24)`},
		},
		{
			name: "headers_json of another shape", body: task("a", map[string]any{"headers_json": `{"Authorization":"LEAKA","X":5}`}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "headers_json",
				Message: `headers_json must be a string holding a JSON object of string to string, for example "{\"X-Team\":\"ops\"}" (found a JSON number at offset 30)`},
		},
		{
			name: "headers_json bad header name", body: task("a", map[string]any{"headers_json": `{"Bad Name":"x"}`}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "headers", Token: "Bad Name"},
		},
		{
			name: "reserved header", body: task("a", map[string]any{"headers": map[string]string{"X-Sundial-Callback-Token": "x"}}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "headers", Token: "X-Sundial-Callback-Token"},
		},
		{
			name: "header value with a line break", body: task("a", map[string]any{"headers": map[string]string{"X-A": "a\r\nB: c"}}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "headers", Token: "X-A"},
		},
		{
			// The template bomb: 64 KiB of params and 6,553 {{params}}.
			name: "template bomb", body: task("a", map[string]any{"params": strings.Repeat("x", 64<<10-2),
				"body_template": strings.Repeat("{{params}}", 6553)}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "body_template", Token: "{{params}}",
				Message: "body_template can render a body of up to 429457408 bytes with the task's params, more than " +
					"the server's limit of 1048576 bytes (executor.max_body_bytes); its largest tag is {{params}}"},
		},
		{
			name: "unknown field", body: task("a", map[string]any{"cron": "* * * * *"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "cron", Token: "cron",
				Message: `unknown field "cron"; did you mean "cron_expr"?`},
		},
		{
			name: "read-only id", body: task("a", map[string]any{"id": 7}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "id",
				Message: "id is set by the server and cannot be given"},
		},
		{
			name: "read-only version", body: task("a", map[string]any{"version": 1}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "version",
				Message: "version is set by the server and cannot be given"},
		},
		{
			name: "read-only created_at", body: task("a", map[string]any{"created_at": "2026-01-01T00:00:00Z"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "created_at"},
		},
		{
			name: "read-only updated_at", body: task("a", map[string]any{"updated_at": "2026-01-01T00:00:00Z"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "updated_at"},
		},
		{
			name: "read-only next_fire_time null", body: `{"name":"a","next_fire_time":null}`,
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "next_fire_time"},
		},
		{
			name: "wrong type", body: task("a", map[string]any{"timeout_seconds": "10"}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "timeout_seconds",
				Message: "must be an integer, such as 30; got a string"},
		},
		{
			name: "retry_policy not an object", body: task("a", map[string]any{"retry_policy": []int{1}}),
			status: 400, err: errorDetail{Code: sundial.EInvalid, Field: "retry_policy"},
		},
		{
			name: "malformed JSON", body: `{"name":"a",}`,
			status: 400, err: errorDetail{Code: sundial.EInvalid},
		},
		{
			name: "empty body", body: "",
			status: 400, err: errorDetail{Code: sundial.EInvalid, Message: "request body is empty, want a JSON object"},
		},
		{
			name: "wrong content type", contentType: "text/plain", body: seedCreateTask,
			status: 415, err: errorDetail{Code: sundial.EUnsupported, Token: "text/plain",
				Message: "Content-Type must be application/json"},
		},
		{
			name: "no content type", contentType: "-", body: seedCreateTask,
			status: 415, err: errorDetail{Code: sundial.EUnsupported},
		},
		{
			name: "over 1 MiB", body: big,
			status: 413, err: errorDetail{Code: sundial.ETooLarge, Message: "request body is larger than 1 MiB, the limit of POST /api/v1/tasks"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupStore(t)
			var body []byte
			if s, ok := tt.body.(string); ok {
				body = []byte(s)
			} else {
				body, _ = json.Marshal(tt.body)
			}
			req := httptest.NewRequest(http.MethodPost, "/api/v1/tasks", bytes.NewReader(body))
			switch tt.contentType {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", tt.contentType)
			}
			rec := httptest.NewRecorder()
			b.srv.Handler().ServeHTTP(rec, req)
			wantError(t, rec, tt.status, tt.err)

			// Nothing changed, nothing was logged.
			tasks, err := b.store.TaskList(context.Background(), sundial.TaskListParams{})
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) != 0 || b.sched.pokes.Load() != 0 {
				t.Errorf("bad input stored %d tasks, poked %d times", len(tasks), b.sched.pokes.Load())
			}
			if b.log.Len() != 0 {
				t.Errorf("a client error was logged: %s", b.log)
			}
		})
	}
}

func TestTaskCreateFields(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	got := b.create(t, task("  spaced  ", map[string]any{
		"cron_expr":          "0 0 9 * * mon",
		"timezone":           "Europe/Berlin",
		"http_method":        "put",
		"headers":            map[string]string{"X-Team": "ops"},
		"retry_policy":       map[string]any{"max_attempts": 3, "jitter": "none"},
		"status":             "DISABLED",
		"catch_up_mode":      "FULL",
		"catch_up_limit":     5,
		"priority":           7,
		"callback_method":    "patch",
		"concurrency_policy": "SKIP",
	}))
	switch {
	case got.Name != "spaced", got.CronExpr != "0 0 9 * * MON", got.HTTPMethod != "PUT",
		got.CallbackMethod != "PATCH", got.Headers["X-Team"] != "ops", string(got.RetryPolicy) != `{"max_attempts":3,"initial_backoff":"1s","max_backoff":"5m0s","multiplier":2,"jitter":"none","retry_on":["connection_error","timeout","429","5xx","callback_failed"]}`,
		got.Status != sundial.TaskDisabled, got.NextFireTime != nil, got.CatchUpMode != sundial.CatchUpFull,
		got.CatchUpLimit != 5, got.Priority != 7, got.ConcurrencyPolicy != sundial.ConcurrencySkip:
		t.Errorf("task = %+v", got)
	}

	// An enabled task's next fire is computed in its zone: 09:00 Berlin on
	// Monday 2026-01-05 is 08:00 UTC.
	got = b.create(t, task("berlin", map[string]any{"cron_expr": "0 0 9 * * MON", "timezone": "Europe/Berlin"}))
	if want := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC); !sameTime(got.NextFireTime, &want) {
		t.Errorf("next_fire_time = %v, want %v", got.NextFireTime, want)
	}
}

func TestTaskNameConflict(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	first := b.create(t, task("dup", nil))
	wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks", task("dup", nil)), http.StatusConflict,
		errorDetail{Code: sundial.EConflict, Field: "name"})
	// Surrounding spaces are trimmed before the name is compared.
	wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks", task(" dup ", nil)), http.StatusConflict,
		errorDetail{Code: sundial.EConflict, Field: "name"})

	want(t, b.do(t, http.MethodDelete, taskPath(first.ID), nil), http.StatusNoContent, nil)
	second := b.create(t, task("dup", nil))
	if second.ID == first.ID {
		t.Errorf("the name was reused by the same id %d", second.ID)
	}
}

func TestTaskGetAndList(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	var all, enabled, billing []int64
	for i := range 7 {
		name := fmt.Sprintf("report-%d", i)
		if i%3 == 0 {
			name = fmt.Sprintf("billing-%d", i)
		}
		status := "ENABLED"
		if i%2 == 1 {
			status = "DISABLED"
		}
		tk := b.create(t, task(name, map[string]any{"status": status}))
		all = append(all, tk.ID)
		if status == "ENABLED" {
			enabled = append(enabled, tk.ID)
		}
		if strings.HasPrefix(name, "billing-") {
			billing = append(billing, tk.ID)
		}
	}

	got := b.get(t, all[2])
	if got.ID != all[2] || got.Name != "report-2" {
		t.Errorf("get = %+v", got)
	}

	list := func(query string) (ids []int64, next string) {
		t.Helper()
		var resp struct {
			Items      []*sundial.Task `json:"items"`
			NextCursor *string         `json:"next_cursor"`
		}
		want(t, b.do(t, http.MethodGet, "/api/v1/tasks"+query, nil), http.StatusOK, &resp)
		if resp.Items == nil || resp.NextCursor == nil {
			t.Fatalf("GET %s: items or next_cursor missing", query)
		}
		for _, tk := range resp.Items {
			ids = append(ids, tk.ID)
		}
		return ids, *resp.NextCursor
	}
	// walk follows the cursor to the last page.
	walk := func(query string) (ids []int64, pages int) {
		t.Helper()
		cursor := ""
		for {
			q := query
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			page, next := list(q)
			ids = append(ids, page...)
			pages++
			if next == "" {
				return ids, pages
			}
			if pages > 10 {
				t.Fatalf("GET %s: more than 10 pages", query)
			}
			cursor = next
		}
	}
	eq := func(name string, got, want []int64) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	ids, next := list("")
	eq("all", ids, all)
	if next != "" {
		t.Errorf("next_cursor of the only page = %q", next)
	}
	ids, pages := walk("?limit=2")
	eq("paged", ids, all)
	if pages != 4 {
		t.Errorf("pages = %d, want 4", pages)
	}
	ids, pages = walk("?limit=7")
	eq("exact page", ids, all)
	if pages != 1 {
		t.Errorf("exact page: pages = %d, want 1", pages)
	}
	ids, _ = walk("?status=ENABLED&limit=1")
	eq("enabled", ids, enabled)
	ids, _ = walk("?name_prefix=billing-&limit=2")
	eq("billing", ids, billing)
	ids, _ = list("?name_prefix=nothing")
	eq("no match", ids, nil)
	ids, _ = list("?limit=1000")
	eq("max limit", ids, all)

	for _, tt := range []struct {
		query, field, token string
	}{
		{"?status=PAUSED", "status", "PAUSED"},
		{"?status=ENABLED,PAUSED", "status", "PAUSED"},
		{"?status=ENABLED,", "status", ""},
		{"?limit=0", "limit", "0"},
		{"?limit=1001", "limit", "1001"},
		{"?limit=ten", "limit", "ten"},
		{"?cursor=%21%21", "cursor", "!!"},
		{"?cursor=" + encodeCursorText("abc"), "cursor", encodeCursorText("abc")},
		{"?cursor=" + encodeCursorText("-3"), "cursor", encodeCursorText("-3")},
	} {
		wantError(t, b.do(t, http.MethodGet, "/api/v1/tasks"+tt.query, nil), http.StatusBadRequest,
			errorDetail{Code: sundial.EInvalid, Field: tt.field, Token: tt.token})
	}

	for _, tt := range []struct {
		path   string
		status int
		err    errorDetail
	}{
		{"/api/v1/tasks/abc", 400, errorDetail{Code: sundial.EInvalid, Field: "id", Token: "abc"}},
		{"/api/v1/tasks/0", 400, errorDetail{Code: sundial.EInvalid, Field: "id", Token: "0"}},
		{"/api/v1/tasks/-1", 400, errorDetail{Code: sundial.EInvalid, Field: "id", Token: "-1"}},
		{"/api/v1/tasks/99999999999999999999", 400,
			errorDetail{Code: sundial.EInvalid, Field: "id", Token: "99999999999999999999"}},
		{"/api/v1/tasks/999", 404, errorDetail{Code: sundial.ENotFound}},
	} {
		wantError(t, b.do(t, http.MethodGet, tt.path, nil), tt.status, tt.err)
	}
}

// TestTaskListFilters: name and request_id match exactly, status takes a
// comma-separated list in any case, and the filters combine.
func TestTaskListFilters(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	hello := b.create(t, task("hello", map[string]any{"request_id": "req-7"}))
	helloWorld := b.create(t, task("hello-world", map[string]any{"status": "DISABLED", "request_id": "req-77"}))
	other := b.create(t, task("Hello", nil))
	oneOff := b.create(t, oneOffBody(map[string]any{"name": "once", "request_id": "req-8"}))
	// The one-off task ends.
	got, err := b.store.TaskGet(t.Context(), oneOff.ID)
	if err != nil {
		t.Fatal(err)
	}
	got.Status = sundial.TaskCompleted
	if err := b.store.TaskUpdate(t.Context(), got, b.now()); err != nil {
		t.Fatal(err)
	}
	list := func(query string) string {
		t.Helper()
		var resp listResponse[*sundial.Task]
		want(t, b.do(t, http.MethodGet, "/api/v1/tasks"+query, nil), http.StatusOK, &resp)
		var ids []int64
		for _, tk := range resp.Items {
			ids = append(ids, tk.ID)
		}
		return fmt.Sprint(ids)
	}
	ids := func(ids ...int64) string { return fmt.Sprint(ids) }
	for _, tc := range []struct{ query, want string }{
		{"?name=hello", ids(hello.ID)},
		{"?name=Hello", ids(other.ID)},
		{"?name=hell", ids()},
		{"?name=hello-world&name_prefix=hello", ids(helloWorld.ID)},
		{"?request_id=req-7", ids(hello.ID)},
		{"?request_id=req", ids()},
		{"?request_id=req-77&status=DISABLED", ids(helloWorld.ID)},
		{"?request_id=req-77&status=ENABLED", ids()},
		{"?status=enabled", ids(hello.ID, other.ID)},
		{"?status=ENABLED,DISABLED", ids(hello.ID, helloWorld.ID, other.ID)},
		{"?status=" + url.QueryEscape("Disabled, completed"), ids(helloWorld.ID, oneOff.ID)},
		{"?status=completed,failed", ids(oneOff.ID)},
		{"?status=failed", ids()},
		{"?status=", ids(hello.ID, helloWorld.ID, other.ID, oneOff.ID)},
		{"?name_prefix=hello&status=disabled,enabled&limit=1000", ids(hello.ID, helloWorld.ID)},
	} {
		if got := list(tc.query); got != tc.want {
			t.Errorf("GET /api/v1/tasks%s = %s, want %s", tc.query, got, tc.want)
		}
	}
	wantError(t, b.do(t, http.MethodGet, "/api/v1/tasks?status=ENABLED,PAUSED", nil), http.StatusBadRequest,
		errorDetail{Code: sundial.EInvalid, Field: "status", Token: "PAUSED",
			Message: "must be one of ENABLED, DISABLED, COMPLETED, FAILED, or several of them separated by commas"})
	// Only ASCII letters fold: the long s does not make ENABLED, as in a body.
	wantError(t, b.do(t, http.MethodGet, "/api/v1/tasks?status="+url.QueryEscape("diſabled"), nil), http.StatusBadRequest,
		errorDetail{Code: sundial.EInvalid, Field: "status", Token: "diſabled",
			Message: "must be one of ENABLED, DISABLED, COMPLETED, FAILED, or several of them separated by commas"})
}

// encodeCursorText makes a cursor-shaped string of any text.
func encodeCursorText(s string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func TestTaskReplace(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	orig := b.create(t, task("replace-me", map[string]any{"headers": map[string]string{"A": "1"}}))
	b.create(t, task("other", nil))
	b.setNow(b.now().Add(time.Hour))
	pokes := b.sched.pokes.Load()

	put := func(body map[string]any) *httptest.ResponseRecorder {
		return b.do(t, http.MethodPut, taskPath(orig.ID), body)
	}
	// Errors: nothing changes.
	wantError(t, put(task("replace-me", nil)), 400, errorDetail{Code: sundial.EInvalid, Field: "version",
		Message: "version is required: the version the task was read at"})
	wantError(t, put(task("replace-me", map[string]any{"version": "1"})), 400,
		errorDetail{Code: sundial.EInvalid, Field: "version", Token: `"1"`})
	wantError(t, put(task("replace-me", map[string]any{"version": 0})), 400,
		errorDetail{Code: sundial.EInvalid, Field: "version", Token: "0"})
	wantError(t, put(task("replace-me", map[string]any{"version": 1, "id": orig.ID + 100})), 400,
		errorDetail{Code: sundial.EInvalid, Field: "id", Token: fmt.Sprint(orig.ID + 100)})
	wantError(t, put(task("replace-me", map[string]any{"version": 1, "cron_expr": "61 * * * * *"})), 400,
		errorDetail{Code: sundial.EInvalid, Field: "cron_expr", Token: "61"})
	wantError(t, put(task("replace-me", map[string]any{"version": 2})), 409,
		errorDetail{Code: sundial.EConflict, Field: "version"})
	wantError(t, put(task("other", map[string]any{"version": 1})), 409,
		errorDetail{Code: sundial.EConflict, Field: "name"})
	wantError(t, b.do(t, http.MethodPut, taskPath(999), task("x", map[string]any{"version": 1})), 404,
		errorDetail{Code: sundial.ENotFound})
	wantError(t, b.do(t, http.MethodPut, "/api/v1/tasks/x", task("x", map[string]any{"version": 1})), 400,
		errorDetail{Code: sundial.EInvalid, Field: "id", Token: "x"})
	checkTask(t, b.get(t, orig.ID), orig)
	if n := b.sched.pokes.Load(); n != pokes {
		t.Errorf("failed PUTs poked the scheduler %d times", n-pokes)
	}

	// The whole task is replaced: a field left out takes its default.
	var got sundial.Task
	want(t, put(task("renamed", map[string]any{"version": 1, "cron_expr": "@daily", "timezone": "Asia/Tokyo"})),
		http.StatusOK, &got)
	wantNext := time.Date(2026, 1, 1, 15, 0, 0, 0, time.UTC) // midnight in Tokyo
	switch {
	case got.ID != orig.ID, got.Version != 2, got.Name != "renamed", got.CronExpr != "0 0 0 * * *",
		len(got.Headers) != 0, !got.CreatedAt.Equal(orig.CreatedAt), !got.UpdatedAt.Equal(b.now()),
		!sameTime(got.NextFireTime, &wantNext):
		t.Errorf("replaced = %+v", got)
	}
	checkTask(t, b.get(t, orig.ID), &got)
	if n := b.sched.pokes.Load(); n != pokes+1 {
		t.Errorf("pokes = %d, want %d", n, pokes+1)
	}
	// The version read before is stale now.
	wantError(t, put(task("renamed", map[string]any{"version": 1})), 409,
		errorDetail{Code: sundial.EConflict, Field: "version"})
}

func TestTaskEnableDisable(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("toggle", map[string]any{"cron_expr": "0 * * * * *"}))
	if want := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC); !sameTime(tk.NextFireTime, &want) {
		t.Fatalf("next_fire_time = %v, want %v", tk.NextFireTime, want)
	}

	var got sundial.Task
	b.setNow(time.Date(2026, 1, 1, 0, 10, 30, 0, time.UTC))
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/disable"), nil), http.StatusOK, &got)
	if got.Status != sundial.TaskDisabled || got.NextFireTime != nil || got.Version != 2 {
		t.Errorf("disabled = %+v", got)
	}
	// Disabling twice changes nothing.
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/disable"), nil), http.StatusOK, &got)
	if got.Status != sundial.TaskDisabled || got.Version != 2 {
		t.Errorf("disabled twice = %+v", got)
	}

	b.setNow(time.Date(2026, 1, 1, 0, 20, 30, 0, time.UTC))
	got = sundial.Task{}
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/enable"), nil), http.StatusOK, &got)
	wantNext := time.Date(2026, 1, 1, 0, 21, 0, 0, time.UTC)
	if got.Status != sundial.TaskEnabled || !sameTime(got.NextFireTime, &wantNext) || got.Version != 3 {
		t.Errorf("enabled = %+v", got)
	}
	checkTask(t, b.get(t, tk.ID), &got)
	if n := b.sched.pokes.Load(); n != 3 { // create, disable, enable
		t.Errorf("pokes = %d, want 3", n)
	}

	wantError(t, b.do(t, http.MethodPost, taskPath(999, "/enable"), nil), 404, errorDetail{Code: sundial.ENotFound})
	wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks/x/disable", nil), 400,
		errorDetail{Code: sundial.EInvalid, Field: "id", Token: "x"})
}

// conflictStore makes TaskUpdate fail with a stale version a few times.
type conflictStore struct {
	sundial.Store
	conflicts atomic.Int64
}

func (s *conflictStore) TaskUpdate(ctx context.Context, t *sundial.Task, now time.Time) error {
	if s.conflicts.Add(-1) >= 0 {
		return sundial.Errorf(sundial.EConflict, "version", "stale")
	}
	return s.Store.TaskUpdate(ctx, t, now)
}

func TestTaskSetStatusRetriesConflicts(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("contended", nil))
	cs := &conflictStore{Store: b.store}
	srv := NewServer(Config{Now: b.now, Store: cs, Scheduler: b.sched})
	do := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		return rec
	}

	cs.conflicts.Store(setStatusAttempts - 1)
	var got sundial.Task
	want(t, do(taskPath(tk.ID, "/disable")), http.StatusOK, &got)
	if got.Status != sundial.TaskDisabled {
		t.Errorf("status = %s", got.Status)
	}
	cs.conflicts.Store(setStatusAttempts)
	wantError(t, do(taskPath(tk.ID, "/enable")), http.StatusConflict,
		errorDetail{Code: sundial.EConflict, Field: "version"})
}

func TestTaskDelete(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("doomed", nil))
	wantError(t, b.do(t, http.MethodDelete, "/api/v1/tasks/doomed", nil), 400,
		errorDetail{Code: sundial.EInvalid, Field: "id", Token: "doomed"})
	rec := b.do(t, http.MethodDelete, taskPath(tk.ID), nil)
	want(t, rec, http.StatusNoContent, nil)
	if rec.Body.Len() != 0 {
		t.Errorf("204 with a body: %s", rec.Body)
	}
	wantError(t, b.do(t, http.MethodGet, taskPath(tk.ID), nil), 404, errorDetail{Code: sundial.ENotFound})
	wantError(t, b.do(t, http.MethodDelete, taskPath(tk.ID), nil), 404, errorDetail{Code: sundial.ENotFound})
	wantError(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/enable"), nil), 404, errorDetail{Code: sundial.ENotFound})
	wantError(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), nil), 404, errorDetail{Code: sundial.ENotFound})
	var resp listResponse[*sundial.Task]
	want(t, b.do(t, http.MethodGet, "/api/v1/tasks", nil), http.StatusOK, &resp)
	if len(resp.Items) != 0 {
		t.Errorf("list after delete = %d tasks", len(resp.Items))
	}
}

func TestTaskTrigger(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("manual", map[string]any{"status": "DISABLED"}))

	var run sundial.Run
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), nil), http.StatusAccepted, &run)
	if run.ID < 1 || run.TaskID != tk.ID || run.Trigger != sundial.TriggerManual ||
		run.Status != sundial.RunScheduled || !run.ScheduledTime.Equal(b.now()) {
		t.Errorf("run = %+v", run)
	}
	var stored sundial.Run
	want(t, b.do(t, http.MethodGet, "/api/v1/runs/"+strconv.FormatInt(run.ID, 10), nil), http.StatusOK, &stored)
	if stored.ID != run.ID || stored.FireKey != run.FireKey {
		t.Errorf("stored run = %+v, want %+v", stored, run)
	}

	wantError(t, b.do(t, http.MethodPost, taskPath(999, "/trigger"), nil), 404, errorDetail{Code: sundial.ENotFound})
	wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks/1.5/trigger", nil), 400,
		errorDetail{Code: sundial.EInvalid, Field: "id", Token: "1.5"})
	wantError(t, b.do(t, http.MethodGet, taskPath(tk.ID, "/trigger"), nil), 405,
		errorDetail{Code: codeMethodNotAllowed})
}

// TestTaskReplaceRoundTrip: a task read with GET can be sent back with PUT
// as it is, with one field changed; the server-set fields are ignored.
func TestTaskReplaceRoundTrip(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	orig := b.create(t, task("round-trip", nil))
	rec := b.do(t, http.MethodGet, taskPath(orig.ID), nil)
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	body["description"] = "changed"
	body["created_at"] = "1999-01-01T00:00:00Z"
	rec = b.do(t, http.MethodPut, taskPath(orig.ID), body)
	if rec.Code != http.StatusOK {
		t.Fatalf("PUT of the GET body = %d %s, want 200", rec.Code, rec.Body)
	}
	got := b.get(t, orig.ID)
	if got.Description != "changed" || got.Version != orig.Version+1 || !got.CreatedAt.Equal(orig.CreatedAt) {
		t.Errorf("after PUT: description %q version %d created %s; want changed, %d, %s",
			got.Description, got.Version, got.CreatedAt, orig.Version+1, orig.CreatedAt)
	}
}

func (f *fakeScheduler) CallbackSecret() []byte { return []byte("test-callback-secret") }

func (f *fakeScheduler) Complete(ctx context.Context, r *sundial.Run, t *sundial.Task, fence int64, cb sundial.CallbackReport) (*sundial.Run, error) {
	return f.store.RunComplete(ctx, sundial.RunCompleteParams{ID: r.ID, Fence: fence, Status: cb.Status,
		Result: cb.Result, Error: cb.Failure(), Message: cb.Message, FinishedAt: f.now()})
}

func (f *fakeScheduler) Progress(ctx context.Context, r *sundial.Run, t *sundial.Task, fence int64, progress, checkpoint json.RawMessage) (*sundial.Run, error) {
	return f.store.RunProgress(ctx, sundial.RunProgressParams{ID: r.ID, Fence: fence, Progress: progress,
		Checkpoint: checkpoint, DueAt: f.now().Add(time.Minute), Now: f.now()})
}

// TestChangeAwaitsSending: a change of a task answers only after the fires a
// node had committed within sundial.SendMargin of it (left to go out as
// they were) have gone out, and does not wait for those it took back.
func TestChangeAwaitsSending(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := context.Background()
	committed := func(taskID int64, key string, at time.Time) *sundial.Run {
		t.Helper()
		r := &sundial.Run{TaskID: taskID, FireKey: key, Trigger: sundial.TriggerSchedule, ScheduledTime: at,
			Status: sundial.RunScheduled, NodeID: "n", Fence: 1}
		if err := b.store.RunInsert(ctx, r); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.store.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: 1, Attempt: 1, StartedAt: at}}); err != nil || !ok[0] {
			t.Fatalf("RunStart: %v %v", ok, err)
		}
		return r
	}
	for _, change := range []struct {
		name         string
		method, path string
	}{
		{"disable", http.MethodPost, "/disable"},
		{"delete", http.MethodDelete, ""},
	} {
		tk := b.create(t, task("awaits-"+change.name, nil))
		near := committed(tk.ID, "near", time.Now().Add(sundial.SendMargin*3/5))
		far := committed(tk.ID, "far", time.Now().Add(time.Minute))
		rec := b.do(t, change.method, taskPath(tk.ID, change.path), nil)
		if rec.Code/100 != 2 {
			t.Fatalf("%s: %d %s", change.name, rec.Code, rec.Body)
		}
		answered := time.Now()
		got, err := b.store.RunGet(ctx, near.ID)
		if err != nil || got.Status != sundial.RunRunning {
			t.Fatalf("%s: the fire within the margin is %v, %v; want it left RUNNING", change.name, got, err)
		}
		if answered.Before(*got.StartedAt) {
			t.Errorf("%s answered at %v, before the fire it left at %v went out", change.name, answered, got.StartedAt)
		}
		if _, err := b.store.RunGet(ctx, far.ID); sundial.ErrorCode(err) != sundial.ENotFound {
			t.Errorf("%s: the fire a minute ahead is still there (%v)", change.name, err)
		}
		if !answered.Before(far.ScheduledTime) {
			t.Errorf("%s waited for the fire it took back", change.name)
		}
	}
}

// Request prepares r's request as a node would, with an executor's
// defaults and the run's own values.
func (f *fakeScheduler) Request(ctx context.Context, t *sundial.Task, r *sundial.Run) (executor.Prepared, error) {
	shown := *t
	sundial.MaskTask(&shown)
	return executor.New(executor.Options{}).Prepare(executor.Request{Method: t.HTTPMethod, URL: shown.TargetURL,
		Headers: shown.Headers, BodyTemplate: t.BodyTemplate, Vars: executor.Vars{RunID: r.ID, TaskID: t.ID, TaskName: t.Name,
			ScheduledTime: r.ScheduledTime, Attempt: max(r.Attempt, 1), Delivery: max(r.Deliveries, 1), Trigger: string(r.Trigger),
			IdempotencyKey: r.IdempotencyKey, TraceID: r.TraceID, Params: r.ParamsFor(t)}})
}
