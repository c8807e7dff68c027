package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// endOneOff runs the fire of one-off task id to its end: the task becomes
// end (COMPLETED or FAILED), as the scheduler would make it.
func endOneOff(t *testing.T, b *storeBundle, id int64, end sundial.TaskStatus) {
	t.Helper()
	ctx := t.Context()
	tk, err := b.store.TaskGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	r := &sundial.Run{TaskID: id, FireKey: sundial.ScheduledFireKey(*tk.RunAt), Trigger: sundial.TriggerSchedule,
		ScheduledTime: *tk.RunAt, Status: sundial.RunScheduled, Attempt: 1, NodeID: "n1", Fence: 1}
	if err := b.store.RunInsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.store.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: b.now()}}); err != nil || !ok[0] {
		t.Fatalf("RunStart = %v, %v", ok, err)
	}
	status := sundial.RunSuccess
	if end == sundial.TaskFailed {
		status = sundial.RunFailed
	}
	if ok, err := b.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: status,
		StartedAt: b.now(), FinishedAt: b.now(), HTTPStatus: 200, CompleteTask: end}}); err != nil || !ok[0] {
		t.Fatalf("RunFinish = %v, %v", ok, err)
	}
	if got := b.get(t, id); got.Status != end {
		t.Fatalf("task %d is %s after its fire, want %s", id, got.Status, end)
	}
}

// getBody is GET /tasks/{id} as a JSON object, to be sent back with PUT.
func getBody(t *testing.T, b *storeBundle, id int64) map[string]any {
	t.Helper()
	var body map[string]any
	want(t, b.do(t, http.MethodGet, taskPath(id), nil), http.StatusOK, &body)
	return body
}

// with returns a copy of body with the changes (a nil value deletes).
func with(body map[string]any, change map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range body {
		out[k] = v
	}
	for k, v := range change {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// TestTaskReplaceKeepsStatus: a PUT without status keeps the task's
// status; a disabled task stays disabled and plans nothing.
func TestTaskReplaceKeepsStatus(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("paused", map[string]any{"cron_expr": "* * * * * *"}))
	var got sundial.Task
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/disable"), nil), http.StatusOK, &got)

	want(t, b.do(t, http.MethodPut, taskPath(tk.ID), task("paused", map[string]any{
		"cron_expr": "*/2 * * * * *", "version": got.Version})), http.StatusOK, &got)
	if got.Status != sundial.TaskDisabled || got.NextFireTime != nil {
		t.Errorf("PUT without status: %s, next %v; want DISABLED, null", got.Status, got.NextFireTime)
	}
	if stored, err := b.store.TaskGet(t.Context(), tk.ID); err != nil || stored.Status != sundial.TaskDisabled || stored.NextFireTime != nil {
		t.Fatalf("stored task %+v, %v; want DISABLED with nothing to plan", stored, err)
	}

	// The status given is the status set.
	want(t, b.do(t, http.MethodPut, taskPath(tk.ID), task("paused", map[string]any{
		"version": got.Version, "status": "ENABLED"})), http.StatusOK, &got)
	if got.Status != sundial.TaskEnabled || got.NextFireTime == nil {
		t.Errorf("PUT with ENABLED: %s, next %v; want ENABLED with a next fire", got.Status, got.NextFireTime)
	}
	// And an enabled task stays enabled.
	want(t, b.do(t, http.MethodPut, taskPath(tk.ID), task("paused", map[string]any{
		"version": got.Version, "description": "still on"})), http.StatusOK, &got)
	if got.Status != sundial.TaskEnabled {
		t.Errorf("PUT without status of an enabled task: %s", got.Status)
	}
}

// TestTaskReplaceEndedOneOff: the object GET returned for a one-off task
// that ended can be sent back with PUT; a new run_at (or delay_seconds)
// runs it again; COMPLETED and FAILED stay the server's to set.
func TestTaskReplaceEndedOneOff(t *testing.T) {
	t.Parallel()
	onEveryBackend(t, func(t *testing.T, b *storeBundle) {
		done := b.create(t, oneOffBody(map[string]any{"name": "done"}))
		endOneOff(t, b, done.ID, sundial.TaskCompleted)
		body := getBody(t, b, done.ID)
		put := func(body map[string]any) *httptest.ResponseRecorder {
			return b.do(t, http.MethodPut, taskPath(done.ID), body)
		}

		// Sent back as it is, with a new description: accepted, still
		// COMPLETED, nothing to fire.
		var got sundial.Task
		want(t, put(with(body, map[string]any{"description": "kept"})), http.StatusOK, &got)
		if got.Status != sundial.TaskCompleted || got.NextFireTime != nil || got.Description != "kept" {
			t.Fatalf("PUT of the GET body: %s, next %v, %q; want COMPLETED, null, kept", got.Status, got.NextFireTime, got.Description)
		}
		body = getBody(t, b, done.ID)
		// Without status: the same.
		want(t, put(with(body, map[string]any{"status": nil})), http.StatusOK, &got)
		if got.Status != sundial.TaskCompleted {
			t.Fatalf("PUT without status: %s, want COMPLETED", got.Status)
		}
		body = getBody(t, b, done.ID)

		// Another server-set status is refused; so is enabling or disabling
		// it without a new fire time. Nothing changes.
		wantError(t, put(with(body, map[string]any{"status": "FAILED"})), http.StatusBadRequest,
			errorDetail{Code: sundial.EInvalid, Field: "status", Token: "FAILED"})
		wantError(t, put(with(body, map[string]any{"status": "ENABLED"})), http.StatusConflict,
			errorDetail{Code: sundial.EConflict, Field: "status", Token: "ENABLED"})
		wantError(t, put(with(body, map[string]any{"status": "DISABLED"})), http.StatusConflict,
			errorDetail{Code: sundial.EConflict, Field: "status", Token: "DISABLED"})
		if got := b.get(t, done.ID); got.Status != sundial.TaskCompleted || got.Version != int64(body["version"].(float64)) {
			t.Fatalf("after refused PUTs: %s version %d", got.Status, got.Version)
		}

		// A new run_at runs it again: ENABLED, with that fire next. The
		// status sent back (COMPLETED) is the old one, not a request.
		runAt := b.now().Add(time.Hour).Format(time.RFC3339)
		want(t, put(with(body, map[string]any{"run_at": runAt})), http.StatusOK, &got)
		if got.Status != sundial.TaskEnabled || got.NextFireTime == nil || got.NextFireTime.Format(time.RFC3339) != runAt {
			t.Fatalf("PUT with a new run_at: %s, next %v; want ENABLED, %s", got.Status, got.NextFireTime, runAt)
		}
		if stored, _ := b.store.TaskGet(t.Context(), done.ID); stored.NextFireTime == nil {
			t.Fatalf("the task run again has nothing for the planner")
		}

		// A task that failed, given delay_seconds and DISABLED: rearmed,
		// but disabled.
		failed := b.create(t, oneOffBody(map[string]any{"name": "failed"}))
		endOneOff(t, b, failed.ID, sundial.TaskFailed)
		fb := getBody(t, b, failed.ID)
		want(t, b.do(t, http.MethodPut, taskPath(failed.ID), with(fb, map[string]any{
			"run_at": nil, "delay_seconds": 30, "status": "DISABLED"})), http.StatusOK, &got)
		if got.Status != sundial.TaskDisabled || got.NextFireTime != nil {
			t.Fatalf("PUT with delay_seconds and DISABLED: %s, next %v; want DISABLED, null", got.Status, got.NextFireTime)
		}

		// A task that ends after a client read it: the client's PUT is
		// stale and cannot bring it back unseen.
		late := b.create(t, oneOffBody(map[string]any{"name": "late"}))
		lb := getBody(t, b, late.ID)
		endOneOff(t, b, late.ID, sundial.TaskCompleted)
		wantError(t, b.do(t, http.MethodPut, taskPath(late.ID), with(lb, map[string]any{"description": "x"})),
			http.StatusConflict, errorDetail{Code: sundial.EConflict, Field: "version"})
		if got := b.get(t, late.ID); got.Status != sundial.TaskCompleted {
			t.Fatalf("after a stale PUT: %s, want COMPLETED", got.Status)
		}
	})
}
