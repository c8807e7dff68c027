package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// heldCall is one call a holdTarget received.
type heldCall struct {
	runID    int64
	delivery string
	body     string
}

// holdTarget is a loopback target that answers each call with the status
// and body the test chose for its number (from 1), after holding it open
// while hold says so, until released (or the caller goes away).
type holdTarget struct {
	srv      *httptest.Server
	calls    chan heldCall
	mu       sync.Mutex
	n        int
	open     chan struct{}
	openOnce sync.Once
	hold     func(n int) bool
	answer   func(n int) (int, string)
}

func newHoldTarget(t *testing.T, hold func(n int) bool, answer func(n int) (int, string)) *holdTarget {
	t.Helper()
	h := &holdTarget{calls: make(chan heldCall, 100), open: make(chan struct{}), hold: hold, answer: answer}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id, _ := strconv.ParseInt(r.Header.Get("X-Sundial-Run-Id"), 10, 64)
		h.mu.Lock()
		h.n++
		n := h.n
		h.mu.Unlock()
		h.calls <- heldCall{runID: id, delivery: r.Header.Get("X-Sundial-Delivery"), body: string(body)}
		if h.hold != nil && h.hold(n) {
			select {
			case <-h.open:
			case <-r.Context().Done():
				return
			}
		}
		status, text := http.StatusOK, `{"ok":true}`
		if h.answer != nil {
			status, text = h.answer(n)
		}
		w.WriteHeader(status)
		fmt.Fprint(w, text)
	}))
	t.Cleanup(func() { h.release(); h.srv.Close() })
	return h
}

func (h *holdTarget) release() { h.openOnce.Do(func() { close(h.open) }) }

// next returns the next call, failing after 10s.
func (h *holdTarget) next(t *testing.T) heldCall {
	t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no call reached the target within 10s")
		return heldCall{}
	}
}

// triggerRun is the part of a run these tests look at.
type triggerRun struct {
	ID           int64  `json:"id"`
	Status       string `json:"status"`
	SkipReason   string `json:"skip_reason"`
	Deliveries   int    `json:"deliveries"`
	Params       any    `json:"params"`
	HTTPStatus   int    `json:"http_status"`
	ResponseBody string `json:"response_body"`
	Error        string `json:"error"`
	Attempts     []struct {
		Delivery     int    `json:"delivery"`
		Status       string `json:"status"`
		HTTPStatus   int    `json:"http_status"`
		ResponseBody string `json:"response_body"`
		Error        string `json:"error"`
	} `json:"attempts"`
}

// TestServeTrigger: through the binary's API, a trigger's body gives its
// run params of its own, which reach the target, and the answer says what
// admission decided.
func TestServeTrigger(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	// Every call is held until the test releases them.
	target := newHoldTarget(t, func(int) bool { return true }, nil)

	create := func(name, policy string) taskJSON {
		var task taskJSON
		n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":%q,"cron_expr":"0 0 0 1 1 *","status":"DISABLED",
			"target_url":%q,"max_concurrency":1,"concurrency_policy":%q,"params":{"who":"task"},
			"body_template":"{\"who\":\"{{params.who}}\"}"}`, name, target.srv.URL, policy), 201, &task)
		return task
	}
	trigger := func(task taskJSON, body string) triggerRun {
		var run triggerRun
		n.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", task.ID), body, 202, &run)
		return run
	}
	queue, skip := create("queue", "QUEUE"), create("skip", "SKIP")

	first := trigger(queue, `{"params":{"who":"trigger"}}`)
	if first.Status != "RUNNING" || first.Deliveries != 1 {
		t.Fatalf("first trigger answered %+v, want RUNNING", first)
	}
	if c := target.next(t); c.runID != first.ID || c.body != `{"who":"trigger"}` {
		t.Fatalf("call %+v, want run %d with the trigger's params", c, first.ID)
	}
	queued := trigger(queue, "")
	if queued.Status != "QUEUED" || queued.Params != nil {
		t.Fatalf("second trigger answered %+v, want QUEUED with no params of its own", queued)
	}

	running := trigger(skip, "")
	if running.Status != "RUNNING" {
		t.Fatalf("trigger of the SKIP task answered %+v, want RUNNING", running)
	}
	if c := target.next(t); c.runID != running.ID {
		t.Fatalf("call %+v, want run %d", c, running.ID)
	}
	if skipped := trigger(skip, `{"params":null}`); skipped.Status != "SKIPPED" || skipped.SkipReason != "CONCURRENCY" {
		t.Fatalf("second trigger of the SKIP task answered %+v, want SKIPPED (CONCURRENCY)", skipped)
	}

	// A body with another field is refused, and makes no run.
	n.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", skip.ID), `{"params":{},"priority":1}`, 400, nil)

	// The queued run, with the task's params, goes out when the slot frees.
	target.release()
	if c := target.next(t); c.runID != queued.ID || c.body != `{"who":"task"}` {
		t.Fatalf("call %+v, want the queued run %d with the task's params", c, queued.ID)
	}
	var runs runList
	n.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/runs", skip.ID), "", 200, &runs)
	if len(runs.Items) != 2 {
		t.Errorf("runs of the SKIP task: %+v, want the two triggers' only", runs.Items)
	}
}

// TestServeRetryShowsNoStaleError: while the retry of a failed delivery is
// under way, GET /api/v1/runs/{id} shows a RUNNING run with nothing of the
// failed delivery (answer, error), which its attempt keeps.
func TestServeRetryShowsNoStaleError(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	// The first call fails with 500; the retry is held until released.
	target := newHoldTarget(t, func(n int) bool { return n == 2 }, func(n int) (int, string) {
		if n == 1 {
			return http.StatusInternalServerError, "boom"
		}
		return http.StatusOK, "fine"
	})
	var task taskJSON
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"retried","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":%q,"retry_policy":{"max_attempts":2,"initial_backoff":"200ms","jitter":"none"}}`,
		target.srv.URL), 201, &task)
	var run triggerRun
	n.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", task.ID), "", 202, &run)
	if c := target.next(t); c.runID != run.ID || c.delivery != "1" {
		t.Fatalf("first call %+v, want delivery 1 of run %d", c, run.ID)
	}
	if c := target.next(t); c.runID != run.ID || c.delivery != "2" {
		t.Fatalf("second call %+v, want delivery 2 of run %d", c, run.ID)
	}

	var got triggerRun
	n.do(t, "GET", fmt.Sprintf("/api/v1/runs/%d", run.ID), "", 200, &got)
	if got.Status != "RUNNING" || got.Deliveries != 2 || got.HTTPStatus != 0 || got.ResponseBody != "" || got.Error != "" {
		t.Errorf("run while its retry is under way: %+v; want RUNNING, 2 deliveries, no http_status, response_body or error", got)
	}
	if len(got.Attempts) != 1 || got.Attempts[0].Status != "FAILED" || got.Attempts[0].HTTPStatus != 500 ||
		got.Attempts[0].ResponseBody != "boom" || got.Attempts[0].Error == "" {
		t.Errorf("attempts while the retry is under way: %+v; want the failed delivery with its answer and error", got.Attempts)
	}
}
