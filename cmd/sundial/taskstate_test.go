package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestTaskState: a real node answers every task with its state block: after
// a failure, the failure (last run, last failure, one in a row); after the
// target recovers, the success that ended them, and the lags of the fires.
// GET of the task, the list and a PUT's answer agree.
func TestTaskState(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	target.mu.Lock()
	target.status = 500
	target.mu.Unlock()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	var created sundial.Task
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"flaky","cron_expr":"* * * * * *","target_url":%q}`,
		target.srv.URL+"/flaky"), 201, &created)
	if st := created.State; st == nil || st.LastRun != nil || st.NextFireTime == nil || st.ConsecutiveFailures != 0 ||
		st.LagSamples != 0 || st.LagP50MS != nil || !st.NextFireTime.Equal(*created.NextFireTime) {
		t.Fatalf("a new task's state: %+v", st)
	}
	path := fmt.Sprintf("/api/v1/tasks/%d", created.ID)

	// waitState reads the task until ok says its state is as wanted.
	waitState := func(what string, ok func(*sundial.TaskHealth) bool) *sundial.Task {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			var got sundial.Task
			n.do(t, "GET", path, "", 200, &got)
			if got.State != nil && ok(got.State) {
				return &got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: state %+v after 20 s", what, got.State)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	failed := waitState("a failure", func(st *sundial.TaskHealth) bool {
		return st.LastRun != nil && st.LastRun.Status == sundial.RunFailed
	})
	if st := failed.State; st.ConsecutiveFailures < 1 || st.LastFailureAt == nil || st.LastSuccessAt != nil ||
		st.LastRun.FinishedAt == nil || st.NextFireTime == nil || !st.NextFireTime.Equal(*failed.NextFireTime) {
		t.Errorf("after a failure: %+v", st)
	}
	// Saved within a second, with the fire's lag.
	waitState("the failure saved", func(st *sundial.TaskHealth) bool { return st.LagSamples >= 1 })

	target.mu.Lock()
	target.status = 200
	target.mu.Unlock()
	ok := waitState("a success", func(st *sundial.TaskHealth) bool {
		return st.LastRun != nil && st.LastRun.Status == sundial.RunSuccess
	})
	if st := ok.State; st.ConsecutiveFailures != 0 || st.LastSuccessAt == nil || st.LastFailureAt == nil ||
		!st.LastSuccessAt.After(*st.LastFailureAt) {
		t.Errorf("after a success: %+v", st)
	}
	ok = waitState("the success saved, with the lags", func(st *sundial.TaskHealth) bool { return st.LagSamples >= 2 })
	if st := ok.State; st.LagP50MS == nil || st.LagP95MS == nil || *st.LagP50MS < 0 || *st.LagP95MS < *st.LagP50MS ||
		*st.LagP95MS > 1000 {
		t.Errorf("lags: %+v", st)
	}

	var list struct {
		Items []sundial.Task `json:"items"`
	}
	n.do(t, "GET", "/api/v1/tasks", "", 200, &list)
	if len(list.Items) != 1 || list.Items[0].State == nil || list.Items[0].State.LastRun == nil ||
		list.Items[0].State.LastSuccessAt == nil {
		t.Errorf("the list's task: %+v", list.Items)
	}
	// A PUT's answer: the same task, its state with it.
	var put sundial.Task
	n.do(t, "PUT", path, fmt.Sprintf(`{"name":"flaky","cron_expr":"*/2 * * * * *","target_url":%q,"version":%d,"state":{"x":1}}`,
		target.srv.URL+"/flaky", ok.Version), 200, &put)
	if st := put.State; st == nil || st.LastRun == nil || st.LastSuccessAt == nil || st.NextFireTime == nil ||
		!st.NextFireTime.Equal(*put.NextFireTime) {
		t.Errorf("a PUT's answer: %+v", st)
	}
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"other","cron_expr":"* * * * * *","target_url":%q,"state":{}}`,
		target.srv.URL), 400, nil)
}
