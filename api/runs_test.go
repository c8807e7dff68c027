package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// insertRun records a run of task at the given time straight in the store.
func (b *storeBundle) insertRun(t *testing.T, taskID int64, at time.Time, status sundial.RunStatus) *sundial.Run {
	t.Helper()
	r := &sundial.Run{
		TaskID:        taskID,
		FireKey:       sundial.ScheduledFireKey(at),
		Trigger:       sundial.TriggerSchedule,
		ScheduledTime: at,
		Status:        status,
		Attempt:       1,
	}
	if status == sundial.RunSkipped {
		r.SkipReason = sundial.SkipOverlap
	}
	if err := b.store.RunInsert(context.Background(), r); err != nil {
		t.Fatalf("insert run: %v", err)
	}
	return r
}

func runPath(id int64, rest string) string {
	return "/api/v1/runs/" + strconv.FormatInt(id, 10) + rest
}

func TestRunList(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	a := b.create(t, task("a", nil))
	c := b.create(t, task("c", nil))
	at := func(h int) time.Time { return time.Date(2026, 1, 1, h, 0, 0, 0, time.UTC) }
	r1 := b.insertRun(t, a.ID, at(1), sundial.RunScheduled)
	r2 := b.insertRun(t, a.ID, at(2), sundial.RunSkipped)
	r3 := b.insertRun(t, c.ID, at(3), sundial.RunScheduled)
	var r4 sundial.Run // manual, scheduled now (00:00)
	want(t, b.do(t, http.MethodPost, taskPath(a.ID, "/trigger"), nil), http.StatusAccepted, &r4)

	list := func(path string) (ids []int64, next string) {
		t.Helper()
		var resp struct {
			Items      []*sundial.Run `json:"items"`
			NextCursor *string        `json:"next_cursor"`
		}
		want(t, b.do(t, http.MethodGet, path, nil), http.StatusOK, &resp)
		if resp.Items == nil || resp.NextCursor == nil {
			t.Fatalf("GET %s: items or next_cursor missing", path)
		}
		for _, r := range resp.Items {
			ids = append(ids, r.ID)
		}
		return ids, *resp.NextCursor
	}
	ids := func(runs ...int64) string { return fmt.Sprint(runs) }

	for _, tt := range []struct {
		path string
		want string
	}{
		{"/api/v1/runs", ids(r4.ID, r3.ID, r2.ID, r1.ID)},
		{"/api/v1/runs?task_id=" + strconv.FormatInt(a.ID, 10), ids(r4.ID, r2.ID, r1.ID)},
		{"/api/v1/runs?task_id=999", ids()},
		{"/api/v1/runs?status=SKIPPED", ids(r2.ID)},
		{"/api/v1/runs?status=skipped", ids(r2.ID)},
		{"/api/v1/runs?status=Skipped,SUCCESS", ids(r2.ID)},
		{"/api/v1/runs?status=SCHEDULED&task_id=" + strconv.FormatInt(a.ID, 10), ids(r4.ID, r1.ID)},
		{"/api/v1/runs?from=2026-01-01T01:30:00Z", ids(r3.ID, r2.ID)},
		{"/api/v1/runs?from=" + url.QueryEscape("2026-01-01T02:30:00+01:00"), ids(r3.ID, r2.ID)},
		{"/api/v1/runs?to=2026-01-01T02:00:00Z", ids(r4.ID, r1.ID)},
		{"/api/v1/runs?from=2026-01-01T01:00:00Z&to=2026-01-01T03:00:00Z", ids(r2.ID, r1.ID)},
		{taskPath(a.ID, "/runs"), ids(r4.ID, r2.ID, r1.ID)},
		{taskPath(c.ID, "/runs"), ids(r3.ID)},
		{taskPath(a.ID, "/runs?status=SKIPPED"), ids(r2.ID)},
		{taskPath(a.ID, "/runs?status=skipped,scheduled"), ids(r4.ID, r2.ID, r1.ID)},
	} {
		got, next := list(tt.path)
		if fmt.Sprint(got) != tt.want || next != "" {
			t.Errorf("GET %s = %v, next %q; want %s", tt.path, got, next, tt.want)
		}
	}

	// Paging, newest first, across pages.
	for _, base := range []string{"/api/v1/runs?limit=1", taskPath(a.ID, "/runs?limit=2")} {
		var all []int64
		path := base
		for range 10 {
			page, next := list(path)
			all = append(all, page...)
			if next == "" {
				break
			}
			path = base + "&cursor=" + next
		}
		wantAll := ids(r4.ID, r3.ID, r2.ID, r1.ID)
		if base != "/api/v1/runs?limit=1" {
			wantAll = ids(r4.ID, r2.ID, r1.ID)
		}
		if fmt.Sprint(all) != wantAll {
			t.Errorf("paging %s = %v, want %s", base, all, wantAll)
		}
	}

	// Times are RFC 3339 in UTC.
	var raw struct {
		Items []map[string]any `json:"items"`
	}
	want(t, b.do(t, http.MethodGet, "/api/v1/runs?status=SKIPPED", nil), http.StatusOK, &raw)
	if len(raw.Items) != 1 || raw.Items[0]["scheduled_time"] != "2026-01-01T02:00:00Z" ||
		raw.Items[0]["skip_reason"] != "OVERLAP" {
		t.Errorf("skipped run = %v", raw.Items)
	}

	for _, tt := range []struct {
		path   string
		status int
		err    errorDetail
	}{
		{"/api/v1/runs?task_id=abc", 400, errorDetail{Code: sundial.EInvalid, Field: "task_id", Token: "abc"}},
		{"/api/v1/runs?task_id=0", 400, errorDetail{Code: sundial.EInvalid, Field: "task_id", Token: "0"}},
		{"/api/v1/runs?status=DONE", 400, errorDetail{Code: sundial.EInvalid, Field: "status", Token: "DONE"}},
		{"/api/v1/runs?status=SKIPPED,DONE", 400, errorDetail{Code: sundial.EInvalid, Field: "status", Token: "DONE"}},
		{"/api/v1/runs?from=yesterday", 400, errorDetail{Code: sundial.EInvalid, Field: "from", Token: "yesterday"}},
		{"/api/v1/runs?to=2026-01-01", 400, errorDetail{Code: sundial.EInvalid, Field: "to", Token: "2026-01-01"}},
		{"/api/v1/runs?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", 400,
			errorDetail{Code: sundial.EInvalid, Field: "to", Token: "2026-01-01T00:00:00Z"}},
		{"/api/v1/runs?limit=-1", 400, errorDetail{Code: sundial.EInvalid, Field: "limit", Token: "-1"}},
		{"/api/v1/runs?cursor=zz", 400, errorDetail{Code: sundial.EInvalid, Field: "cursor", Token: "zz"}},
		{"/api/v1/tasks/x/runs", 400, errorDetail{Code: sundial.EInvalid, Field: "id", Token: "x"}},
		{"/api/v1/tasks/999/runs", 404, errorDetail{Code: sundial.ENotFound}},
		// The query is checked before the task is looked up.
		{"/api/v1/tasks/999/runs?status=DONE", 400, errorDetail{Code: sundial.EInvalid, Field: "status", Token: "DONE"}},
		// The task comes from the path.
		{taskPath(a.ID, "/runs?task_id=") + strconv.FormatInt(c.ID, 10), 400,
			errorDetail{Code: sundial.EInvalid, Field: "task_id", Message: `unknown query parameter "task_id"; ` +
				"GET /api/v1/tasks/{id}/runs accepts status, from, to, limit, cursor"}},
	} {
		wantError(t, b.do(t, http.MethodGet, tt.path, nil), tt.status, tt.err)
	}

	// A deleted task's runs are not served under it.
	want(t, b.do(t, http.MethodDelete, taskPath(c.ID), nil), http.StatusNoContent, nil)
	wantError(t, b.do(t, http.MethodGet, taskPath(c.ID, "/runs"), nil), 404, errorDetail{Code: sundial.ENotFound})
}

func TestRunGet(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("a", nil))
	r := b.insertRun(t, tk.ID, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), sundial.RunScheduled)

	var got sundial.Run
	want(t, b.do(t, http.MethodGet, runPath(r.ID, ""), nil), http.StatusOK, &got)
	if got.ID != r.ID || got.TaskID != tk.ID || got.FireKey != r.FireKey || got.Status != sundial.RunScheduled ||
		got.IdempotencyKey != sundial.IdempotencyKeyFor(tk.ID, r.FireKey) {
		t.Errorf("run = %+v", got)
	}
	var raw map[string]any
	want(t, b.do(t, http.MethodGet, runPath(r.ID, ""), nil), http.StatusOK, &raw)
	if a, ok := raw["attempts"].([]any); !ok || len(a) != 0 {
		t.Errorf("attempts of a run not delivered yet = %v, want []", raw["attempts"])
	}

	// A delivery that ended is listed under the run.
	ok, err := b.store.RunStart(t.Context(), []sundial.RunStart{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: r.ScheduledTime}})
	if err != nil || !ok[0] {
		t.Fatalf("RunStart: %v %v", ok, err)
	}
	ok, err = b.store.RunFinish(t.Context(), []sundial.RunFinish{{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
		StartedAt: r.ScheduledTime, FinishedAt: r.ScheduledTime.Add(time.Second), HTTPStatus: 503, Error: "HTTP 503"}})
	if err != nil || !ok[0] {
		t.Fatalf("RunFinish: %v %v", ok, err)
	}
	var detail struct {
		Status   sundial.RunStatus `json:"status"`
		Attempts []sundial.Attempt `json:"attempts"`
	}
	want(t, b.do(t, http.MethodGet, runPath(r.ID, ""), nil), http.StatusOK, &detail)
	if detail.Status != sundial.RunFailed || len(detail.Attempts) != 1 || detail.Attempts[0].Delivery != 1 ||
		detail.Attempts[0].HTTPStatus != 503 || detail.Attempts[0].Status != sundial.RunFailed {
		t.Errorf("run with one failed delivery = %+v", detail)
	}

	wantError(t, b.do(t, http.MethodGet, runPath(999, ""), nil), 404, errorDetail{Code: sundial.ENotFound})
	wantError(t, b.do(t, http.MethodGet, "/api/v1/runs/one", nil), 400,
		errorDetail{Code: sundial.EInvalid, Field: "id", Token: "one"})
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("a", nil))
	var r sundial.Run
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), nil), http.StatusAccepted, &r)
	b.setNow(b.now().Add(time.Minute))

	var got map[string]any
	want(t, b.do(t, http.MethodPost, runPath(r.ID, "/cancel"), nil), http.StatusOK, &got)
	if got["status"] != string(sundial.RunCanceled) || got["finished_at"] != "2026-01-01T00:01:00Z" {
		t.Errorf("canceled run = %v", got)
	}
	var stored sundial.Run
	want(t, b.do(t, http.MethodGet, runPath(r.ID, ""), nil), http.StatusOK, &stored)
	if stored.Status != sundial.RunCanceled {
		t.Errorf("stored status = %s", stored.Status)
	}

	wantError(t, b.do(t, http.MethodPost, runPath(r.ID, "/cancel"), nil), http.StatusConflict,
		errorDetail{Code: sundial.EConflict, Field: "status"})
	skipped := b.insertRun(t, tk.ID, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), sundial.RunSkipped)
	wantError(t, b.do(t, http.MethodPost, runPath(skipped.ID, "/cancel"), nil), http.StatusConflict,
		errorDetail{Code: sundial.EConflict, Field: "status"})
	wantError(t, b.do(t, http.MethodPost, runPath(999, "/cancel"), nil), 404, errorDetail{Code: sundial.ENotFound})
	wantError(t, b.do(t, http.MethodPost, "/api/v1/runs/0/cancel", nil), 400,
		errorDetail{Code: sundial.EInvalid, Field: "id", Token: "0"})
	wantError(t, b.do(t, http.MethodDelete, runPath(r.ID, ""), nil), 405, errorDetail{Code: codeMethodNotAllowed})

	// A SCHEDULED run inserted by the planner is canceled the same way.
	planned := b.insertRun(t, tk.ID, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), sundial.RunScheduled)
	var c sundial.Run
	want(t, b.do(t, http.MethodPost, runPath(planned.ID, "/cancel"), nil), http.StatusOK, &c)
	if c.Status != sundial.RunCanceled {
		t.Errorf("status = %s", c.Status)
	}
}
