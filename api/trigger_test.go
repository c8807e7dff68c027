package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
	"github.com/sundialhq/sundial/scheduler"
	"github.com/sundialhq/sundial/seal"
	"github.com/sundialhq/sundial/store/sqlite"
	"github.com/sundialhq/sundial/store/sqlite/sqlitetest"
)

// TestTaskTriggerBody: the body of a trigger is optional; when given it is
// a JSON object that may hold params only, which the run takes in place of
// its task's. A refused body makes no run.
func TestTaskTriggerBody(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("with-params", map[string]any{"params": map[string]any{"who": "task"}}))
	path := taskPath(tk.ID, "/trigger")

	trigger := func(t *testing.T, contentType, body string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		b.srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	runs := func(t *testing.T) int {
		t.Helper()
		rs, err := b.store.RunList(context.Background(), sundial.RunListParams{TaskID: tk.ID})
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}

	for _, tc := range []struct {
		name, contentType, body string
		params                  string // "" for none: the task's apply
	}{
		{"no body", "", "", ""},
		{"white space, any content type", "text/plain", " \n", ""},
		{"params", "application/json", `{"params": {"who": "trigger", "n": [1, 2]}}`, `{"who":"trigger","n":[1,2]}`},
		{"params with a charset", "application/json; charset=utf-8", `{"params": "just a string"}`, `"just a string"`},
		{"null params", "application/json", `{"params": null}`, ""},
		{"an empty object", "application/json", `{}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var run map[string]json.RawMessage
			want(t, trigger(t, tc.contentType, tc.body), http.StatusAccepted, &run)
			if got := string(run["params"]); got != tc.params {
				t.Errorf("run params = %s, want %q", got, tc.params)
			}
			var stored map[string]json.RawMessage
			want(t, b.do(t, http.MethodGet, runPath(idOf(t, run), ""), nil), http.StatusOK, &stored)
			if got := string(stored["params"]); got != tc.params {
				t.Errorf("stored run params = %s, want %q", got, tc.params)
			}
		})
	}

	before := runs(t)
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		err                     errorDetail
	}{
		{"another field", "application/json", `{"params": {}, "priority": 5}`, 400,
			errorDetail{Code: sundial.EInvalid, Field: "priority", Token: "priority", Message: `unknown field "priority"`}},
		{"a misspelt field", "application/json", `{"param": {"who": "x"}}`, 400,
			errorDetail{Code: sundial.EInvalid, Field: "param", Token: "param", Message: `unknown field "param"; did you mean "params"?`}},
		{"not an object", "application/json", `[{"params": 1}]`, 400, errorDetail{Code: sundial.EInvalid}},
		{"malformed", "application/json", `{"params": {"a": }`, 400, errorDetail{Code: sundial.EInvalid}},
		{"params too large", "application/json", `{"params": "` + strings.Repeat("x", sundial.MaxParamsLen) + `"}`, 400,
			errorDetail{Code: sundial.EInvalid, Field: "params"}},
		{"not JSON", "text/plain", `params=1`, 415, errorDetail{Code: sundial.EUnsupported, Token: "text/plain"}},
		{"no content type", "", `{"params": 1}`, 415, errorDetail{Code: sundial.EUnsupported}},
		{"over 1 MiB", "application/json", `{"params": "` + strings.Repeat("x", maxTaskBody) + `"}`, 413,
			errorDetail{Code: sundial.ETooLarge}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, trigger(t, tc.contentType, tc.body), tc.status, tc.err)
		})
	}
	if after := runs(t); after != before {
		t.Errorf("refused triggers made %d runs, want none", after-before)
	}
}

// idOf returns the id of a run decoded as raw JSON fields.
func idOf(t *testing.T, run map[string]json.RawMessage) int64 {
	t.Helper()
	var id int64
	if err := json.Unmarshal(run["id"], &id); err != nil || id < 1 {
		t.Fatalf("run id %s: %v", run["id"], err)
	}
	return id
}

// heldTarget is an in-memory target for a real scheduler on a fake clock:
// it records each delivery and answers after hold with the status answer
// gives the n-th delivery (from 1).
type heldTarget struct {
	mu     sync.Mutex
	calls  []executor.Request
	hold   time.Duration
	answer func(n int) int
}

func (h *heldTarget) Deliver(ctx context.Context, req executor.Request) executor.Outcome {
	started := time.Now()
	h.mu.Lock()
	h.calls = append(h.calls, req)
	n, hold := len(h.calls), h.hold
	h.mu.Unlock()
	if hold > 0 {
		select {
		case <-ctx.Done():
			return executor.Outcome{Status: "CANCELED", Error: "canceled", Started: started, Finished: time.Now()}
		case <-time.After(hold):
		}
	}
	code := http.StatusOK
	if h.answer != nil {
		code = h.answer(n)
	}
	out := executor.Outcome{Status: "SUCCESS", HTTPStatus: code, Started: started, Finished: time.Now()}
	if code >= 300 {
		out.Status, out.Error = "FAILED", http.StatusText(code)
	}
	return out
}

func (h *heldTarget) snapshot() []executor.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// schedBundle is an API server on a real scheduler and SQLite store, with
// a secrets key, for tests that run inside a synctest bubble.
type schedBundle struct {
	srv    *Server
	store  *sqlite.Store
	target *heldTarget
}

func setupScheduler(t *testing.T, target *heldTarget) *schedBundle { // in a synctest bubble
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlitetest.NewDB(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key, err := seal.ParseKey(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	box, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := scheduler.New(scheduler.Config{Node: sundial.Node{ID: "node-a"}, Sealer: box}, st, target, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sched.Run(ctx) }()
	synctest.Wait() // registered and firing: a trigger needs a running node
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("scheduler: %v", err)
		}
		st.Close()
	})
	return &schedBundle{srv: NewServer(Config{Store: st, Scheduler: sched, Sealer: box}), store: st, target: target}
}

func (b *schedBundle) do(t *testing.T, method, target, body string, status int, out any) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, req)
	want(t, rec, status, out)
}

// TestTriggerAnswer: the answer to a trigger is what admission decided, in
// the request: RUNNING (the call is under way), then, with max_concurrency
// 1 taken, SKIPPED (CONCURRENCY) under SKIP or QUEUED under QUEUE; the
// queued run starts when the slot frees.
func TestTriggerAnswer(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"SKIP", "QUEUE"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setupScheduler(t, &heldTarget{hold: 10 * time.Second})
				var tk sundial.Task
				b.do(t, http.MethodPost, "/api/v1/tasks", fmt.Sprintf(`{"name": "one-at-a-time",
					"cron_expr": "0 0 0 1 1 *", "target_url": "http://127.0.0.1:9/hook", "status": "DISABLED",
					"max_concurrency": 1, "concurrency_policy": %q}`, policy), http.StatusCreated, &tk)
				start := time.Now()

				var first, second sundial.Run
				b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), "", http.StatusAccepted, &first)
				if first.Status != sundial.RunRunning || first.Deliveries != 1 || first.StartedAt == nil {
					t.Fatalf("first trigger answered %s (%d deliveries), want RUNNING", first.Status, first.Deliveries)
				}
				synctest.Wait()
				if calls := b.target.snapshot(); len(calls) != 1 || calls[0].Vars.RunID != first.ID {
					t.Fatalf("deliveries after the first trigger: %d, want the first run's", len(calls))
				}

				b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), "", http.StatusAccepted, &second)
				switch policy {
				case "SKIP":
					if second.Status != sundial.RunSkipped || second.SkipReason != sundial.SkipConcurrency {
						t.Fatalf("second trigger answered %s (%s), want SKIPPED (CONCURRENCY)", second.Status, second.SkipReason)
					}
				case "QUEUE":
					if second.Status != sundial.RunQueued {
						t.Fatalf("second trigger answered %s, want QUEUED", second.Status)
					}
				}

				time.Sleep(30 * time.Second)
				calls := b.target.snapshot()
				var got sundial.Run
				b.do(t, http.MethodGet, runPath(second.ID, ""), "", http.StatusOK, &got)
				switch policy {
				case "SKIP":
					if len(calls) != 1 || got.Status != sundial.RunSkipped {
						t.Errorf("skipped run: %d deliveries in all, run %s; want 1 and SKIPPED", len(calls), got.Status)
					}
				case "QUEUE":
					if len(calls) != 2 || calls[1].Vars.RunID != second.ID || got.Status != sundial.RunSuccess ||
						!got.StartedAt.Equal(start.Add(10*time.Second)) {
						t.Errorf("queued run: %d deliveries, run %s started %v; want it delivered when the slot freed at +10s",
							len(calls), got.Status, got.StartedAt)
					}
				}
			})
		})
	}
}

// TestTriggerParams: a trigger's params replace the task's for every
// delivery of its run, a retry included, and for that run only.
func TestTriggerParams(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// The first delivery fails with 503; the retry succeeds.
		b := setupScheduler(t, &heldTarget{answer: func(n int) int {
			if n == 1 {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		}})
		var tk sundial.Task
		b.do(t, http.MethodPost, "/api/v1/tasks", `{"name": "params", "cron_expr": "0 0 0 1 1 *",
			"target_url": "http://127.0.0.1:9/hook", "status": "DISABLED", "params": {"who": "task"},
			"body_template": "{\"who\": \"{{params.who}}\", \"all\": {{params}}}",
			"retry_policy": {"max_attempts": 2, "initial_backoff": "1s", "jitter": "none"}}`, http.StatusCreated, &tk)

		var run sundial.Run
		b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), `{"params": {"who": "trigger", "n": 1}}`,
			http.StatusAccepted, &run)
		if string(run.Params) != `{"who":"trigger","n":1}` {
			t.Errorf("run params %s, want the trigger's", run.Params)
		}
		time.Sleep(10 * time.Second)
		var plain sundial.Run
		b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), "", http.StatusAccepted, &plain)
		time.Sleep(10 * time.Second)

		calls := b.target.snapshot()
		if len(calls) != 3 {
			t.Fatalf("%d deliveries, want 3: the triggered run twice, then the plain one", len(calls))
		}
		for i, c := range calls {
			wantRun, wantDelivery, wantBody := run.ID, i+1, `{"who": "trigger", "all": {"who": "trigger", "n": 1}}`
			if i == 2 {
				wantRun, wantDelivery, wantBody = plain.ID, 1, `{"who": "task", "all": {"who": "task"}}`
			}
			body, err := executor.Render(c.BodyTemplate, c.Vars)
			if err != nil || c.Vars.RunID != wantRun || c.Vars.Delivery != wantDelivery || body != wantBody {
				t.Errorf("delivery %d: run %d, delivery %d, body %s (%v); want run %d, delivery %d, body %s",
					i, c.Vars.RunID, c.Vars.Delivery, body, err, wantRun, wantDelivery, wantBody)
			}
		}
		var got sundial.Run
		b.do(t, http.MethodGet, runPath(run.ID, ""), "", http.StatusOK, &got)
		if got.Status != sundial.RunSuccess || got.Deliveries != 2 || string(got.Params) != `{"who":"trigger","n":1}` {
			t.Errorf("triggered run: %s after %d deliveries with params %s; want SUCCESS after 2, with its params",
				got.Status, got.Deliveries, got.Params)
		}
	})
}

// TestTaskUpcomingPlannedAhead: a task firing every second is planned far
// ahead by a real scheduler; its upcoming fires are the same list as its
// schedule, whatever share of it is planned already, and its
// next_fire_time is its next fire, not the planner's cursor.
func TestTaskUpcomingPlannedAhead(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupScheduler(t, &heldTarget{})
		var tk sundial.Task
		b.do(t, http.MethodPost, "/api/v1/tasks", `{"name": "every-second", "cron_expr": "* * * * * *",
			"target_url": "http://127.0.0.1:9/hook"}`, http.StatusCreated, &tk)
		time.Sleep(3*time.Second + 500*time.Millisecond)
		next := time.Now().Truncate(time.Second).Add(time.Second)

		b.do(t, http.MethodGet, taskPath(tk.ID, ""), "", http.StatusOK, &tk)
		cursor, err := b.store.TaskGet(context.Background(), tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tk.NextFireTime == nil || !tk.NextFireTime.Equal(next) || !cursor.NextFireTime.After(next.Add(20*time.Second)) {
			t.Errorf("next_fire_time %v, cursor %v; want %s, and the cursor past the 20 s after it", tk.NextFireTime, cursor.NextFireTime, next)
		}
		for _, limit := range []int{5, 300} {
			var up struct {
				Runs []sundial.Run `json:"runs"`
				Next []time.Time   `json:"next"`
			}
			b.do(t, http.MethodGet, fmt.Sprintf("%s?limit=%d", taskPath(tk.ID, "/upcoming"), limit), "", http.StatusOK, &up)
			var all []time.Time
			for _, r := range up.Runs {
				all = append(all, r.ScheduledTime)
			}
			all = append(all, up.Next...)
			if len(all) != limit || (limit == 300 && (len(up.Runs) < 20 || len(up.Next) == 0)) {
				t.Fatalf("limit %d: %d runs and %d computed fires, want %d in all (at 300, both kinds)", limit, len(up.Runs), len(up.Next), limit)
			}
			for i, at := range all {
				if want := next.Add(time.Duration(i) * time.Second); !at.Equal(want) {
					t.Fatalf("limit %d: upcoming fire %d is %s, want %s", limit, i, at, want)
				}
			}
		}
	})
}
