package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
	// Now is 05:00: the SCHEDULED runs are due, not planned ahead.
	b.setNow(at(5))
	var r4 sundial.Run // manual, scheduled now (05:00)
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
		{"/api/v1/runs?from=2026-01-01T01:30:00Z", ids(r4.ID, r3.ID, r2.ID)},
		{"/api/v1/runs?from=" + url.QueryEscape("2026-01-01T02:30:00+01:00"), ids(r4.ID, r3.ID, r2.ID)},
		{"/api/v1/runs?to=2026-01-01T02:00:00Z", ids(r1.ID)},
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
				"GET /api/v1/tasks/{id}/runs accepts status, trigger, selector, from, to, finished_after, finished_before, planned, dead_letter, limit, cursor"}},
	} {
		wantError(t, b.do(t, http.MethodGet, tt.path, nil), tt.status, tt.err)
	}

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
	ok, err := b.store.RunStart(t.Context(), []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: r.ScheduledTime}})
	if err != nil || !ok[0] {
		t.Fatalf("RunStart: %v %v", ok, err)
	}
	ok, err = b.store.RunFinish(t.Context(), []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
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
	// Every field of each attempt, whether a store keeps it in a row (a
	// delivery retried) or on the run (the delivery that ended it).
	wantAttempts := func(id int64, attempts string) {
		t.Helper()
		var raw struct {
			Attempts json.RawMessage `json:"attempts"`
		}
		want(t, b.do(t, http.MethodGet, runPath(id, ""), nil), http.StatusOK, &raw)
		if string(raw.Attempts) != attempts {
			t.Errorf("attempts of run %d =\n%s\nwant\n%s", id, raw.Attempts, attempts)
		}
	}
	wantAttempts(r.ID, `[{"delivery":1,"node_id":"","status":"FAILED","http_status":503,"error":"HTTP 503",`+
		`"started_at":"2026-01-01T01:00:00Z","finished_at":"2026-01-01T01:00:01Z"}]`)
	again := b.insertRun(t, tk.ID, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), sundial.RunScheduled)
	for i, fin := range []sundial.RunFinishParams{
		{Status: sundial.RunFailed, HTTPStatus: 503, ResponseBody: "busy", Error: "HTTP 503", Retry: true,
			DueAt: again.ScheduledTime.Add(time.Minute)},
		{Status: sundial.RunSuccess, HTTPStatus: 200, ResponseBody: `{"ok":true}`},
	} {
		start := again.ScheduledTime.Add(time.Duration(i) * time.Minute)
		ok, err := b.store.RunStart(t.Context(), []sundial.RunStartParams{{ID: again.ID, Fence: again.Fence, Attempt: 1, StartedAt: start}})
		if err != nil || !ok[0] {
			t.Fatalf("RunStart: %v %v", ok, err)
		}
		fin.ID, fin.Fence, fin.StartedAt, fin.FinishedAt = again.ID, again.Fence, start, start.Add(time.Second)
		if ok, err := b.store.RunFinish(t.Context(), []sundial.RunFinishParams{fin}); err != nil || !ok[0] {
			t.Fatalf("RunFinish: %v %v", ok, err)
		}
	}
	wantAttempts(again.ID, `[{"delivery":1,"node_id":"","status":"FAILED","http_status":503,"error":"HTTP 503",`+
		`"response_body":"busy","started_at":"2026-01-01T02:00:00Z","finished_at":"2026-01-01T02:00:01Z"},`+
		`{"delivery":2,"node_id":"","status":"SUCCESS","http_status":200,"response_body":"{\"ok\":true}",`+
		`"started_at":"2026-01-01T02:01:00Z","finished_at":"2026-01-01T02:01:01Z"}]`)

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

// TestRunListOrder: runs are listed by scheduled time, newest first (ties by
// ID, newest first), whatever order they were written in; the fires
// planned ahead appear only with planned=true; pages follow each other
// across runs scheduled at the same instant; a cursor from another list is
// refused.
func TestRunListOrder(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := context.Background()
	a := b.create(t, task("a", nil))
	c := b.create(t, task("c", nil))
	noon := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b.setNow(noon)
	at := func(d time.Duration) time.Time { return noon.Add(d) }

	// start starts r; finish ends it with status, or with a retry.
	start := func(r *sundial.Run) {
		t.Helper()
		if ok, err := b.store.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1,
			StartedAt: r.ScheduledTime}}); err != nil || !ok[0] {
			t.Fatalf("RunStart %d: %v %v", r.ID, ok, err)
		}
	}
	finish := func(r *sundial.Run, status sundial.RunStatus, retry bool) {
		t.Helper()
		start(r)
		if ok, err := b.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: status,
			StartedAt: r.ScheduledTime, FinishedAt: r.ScheduledTime.Add(time.Second), Retry: retry,
			DueAt: noon.Add(5 * time.Minute)}}); err != nil || !ok[0] {
			t.Fatalf("RunFinish %d: %v %v", r.ID, ok, err)
		}
	}
	ended := func(task int64, when time.Time, status sundial.RunStatus) *sundial.Run {
		t.Helper()
		r := b.insertRun(t, task, when, sundial.RunScheduled)
		finish(r, status, false)
		return r
	}

	// Three runs at one instant, of both tasks.
	eq1 := ended(a.ID, at(-4*time.Hour), sundial.RunSuccess)
	eq2 := ended(c.ID, at(-4*time.Hour), sundial.RunFailed)
	eq3 := &sundial.Run{TaskID: a.ID, FireKey: "other:1", Trigger: sundial.TriggerManual,
		ScheduledTime: at(-4 * time.Hour), Status: sundial.RunScheduled, Attempt: 1}
	if err := b.store.RunInsert(ctx, eq3); err != nil {
		t.Fatal(err)
	}
	finish(eq3, sundial.RunSuccess, false)
	// Planned ahead (written first, as the planner does), then the
	// history, then a catch-up run of an older fire.
	planned1 := b.insertRun(t, a.ID, at(10*time.Second), sundial.RunScheduled)
	planned2 := b.insertRun(t, c.ID, at(20*time.Second), sundial.RunScheduled)
	canceled := b.insertRun(t, a.ID, at(30*time.Second), sundial.RunScheduled)
	if _, err := b.store.RunCancel(ctx, canceled.ID, noon); err != nil {
		t.Fatal(err)
	}
	done := ended(a.ID, at(-2*time.Hour), sundial.RunSuccess)
	retry := b.insertRun(t, a.ID, at(-time.Hour), sundial.RunScheduled) // waits for its retry
	finish(retry, sundial.RunFailed, true)
	due := b.insertRun(t, a.ID, noon, sundial.RunScheduled) // due now, not started yet
	catchUp := ended(a.ID, at(-3*time.Hour), sundial.RunSuccess)
	// A fire committed RUNNING ahead of its instant (ClaimStartParams) shows too.
	ahead := b.insertRun(t, c.ID, at(time.Second), sundial.RunScheduled)
	start(ahead)

	ids := func(runs ...*sundial.Run) string {
		var out []int64
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return fmt.Sprint(out)
	}
	// walk lists path a page of limit at a time and returns every run.
	walk := func(path string, limit int) string {
		t.Helper()
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		base := path + sep + "limit=" + strconv.Itoa(limit)
		var all []int64
		next := ""
		for range 20 {
			p := base
			if next != "" {
				p += "&cursor=" + next
			}
			var resp listResponse[*sundial.Run]
			want(t, b.do(t, http.MethodGet, p, nil), http.StatusOK, &resp)
			if len(resp.Items) > limit {
				t.Fatalf("GET %s: %d runs, limit %d", p, len(resp.Items), limit)
			}
			for _, r := range resp.Items {
				all = append(all, r.ID)
			}
			if next = resp.NextCursor; next == "" {
				return fmt.Sprint(all)
			}
		}
		t.Fatalf("GET %s: more than 20 pages", base)
		return ""
	}
	history := []*sundial.Run{canceled, ahead, due, retry, done, catchUp, eq3, eq2, eq1}
	withPlanned := []*sundial.Run{canceled, planned2, planned1, ahead, due, retry, done, catchUp, eq3, eq2, eq1}
	for _, tc := range []struct {
		path string
		want string
	}{
		{"/api/v1/runs", ids(history...)},
		{"/api/v1/runs?planned=false", ids(history...)},
		{"/api/v1/runs?planned=true", ids(withPlanned...)},
		{"/api/v1/runs?planned=TRUE", ids(withPlanned...)},
		{"/api/v1/runs?task_id=" + strconv.FormatInt(a.ID, 10), ids(canceled, due, retry, done, catchUp, eq3, eq1)},
		{taskPath(a.ID, "/runs"), ids(canceled, due, retry, done, catchUp, eq3, eq1)},
		{taskPath(a.ID, "/runs?planned=true"), ids(canceled, planned1, due, retry, done, catchUp, eq3, eq1)},
		{taskPath(c.ID, "/runs"), ids(ahead, eq2)},
		{taskPath(c.ID, "/runs?planned=true"), ids(planned2, ahead, eq2)},
		{"/api/v1/runs?status=scheduled", ids(due, retry)},
		{"/api/v1/runs?status=scheduled&planned=true", ids(planned2, planned1, due, retry)},
		{"/api/v1/runs?status=SUCCESS,FAILED", ids(done, catchUp, eq3, eq2, eq1)},
		{"/api/v1/runs?from=2026-01-01T08:00:00Z&to=2026-01-01T12:00:00Z", ids(retry, done, catchUp, eq3, eq2, eq1)},
		{"/api/v1/runs?from=2026-01-01T08:00:00Z&to=2026-01-01T08:00:01Z", ids(eq3, eq2, eq1)},
		{"/api/v1/runs?from=2026-01-01T12:00:00Z&planned=true", ids(canceled, planned2, planned1, ahead, due)},
		{"/api/v1/runs?status=RUNNING", ids(ahead)},
	} {
		for _, limit := range []int{1, 2, 3, 1000} {
			if got := walk(tc.path, limit); got != tc.want {
				t.Errorf("GET %s, %d a page = %s, want %s", tc.path, limit, got, tc.want)
			}
		}
	}

	// Cursors from another list, of another order, or altered.
	var tasks listResponse[*sundial.Task]
	want(t, b.do(t, http.MethodGet, "/api/v1/tasks?limit=1", nil), http.StatusOK, &tasks)
	var runs listResponse[*sundial.Run]
	want(t, b.do(t, http.MethodGet, "/api/v1/runs?limit=1", nil), http.StatusOK, &runs)
	if tasks.NextCursor == "" || runs.NextCursor == "" {
		t.Fatalf("no next cursor: tasks %q, runs %q", tasks.NextCursor, runs.NextCursor)
	}
	for _, tc := range []struct{ path, cursor string }{
		{"/api/v1/runs", tasks.NextCursor},
		{taskPath(a.ID, "/runs"), tasks.NextCursor},
		{"/api/v1/tasks", runs.NextCursor},
		{"/api/v1/runs", encodeCursorText(strconv.FormatInt(done.ID, 10))}, // a cursor of the order by ID
		{"/api/v1/runs", encodeCursorText("sched:abc:1")},
		{"/api/v1/runs", encodeCursorText("sched:1:0")},
		{"/api/v1/runs", encodeCursorText("sched:1:2:3")},
		{"/api/v1/runs", encodeCursorText("other:1:2")},
		{"/api/v1/runs", runs.NextCursor + "A"},
		{"/api/v1/runs", "%21%21"},
	} {
		wantError(t, b.do(t, http.MethodGet, tc.path+"?cursor="+tc.cursor, nil), http.StatusBadRequest,
			errorDetail{Code: sundial.EInvalid, Field: "cursor", Token: mustUnescape(t, tc.cursor)})
	}
	for _, v := range []string{"yes", "1", "all"} {
		wantError(t, b.do(t, http.MethodGet, "/api/v1/runs?planned="+v, nil), http.StatusBadRequest,
			errorDetail{Code: sundial.EInvalid, Field: "planned", Token: v})
	}
}

func mustUnescape(t *testing.T, s string) string {
	t.Helper()
	u, err := url.QueryUnescape(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestTaskRunsAfterDelete: a deleted task's runs stay listed under it, as
// in GET /runs?task_id=; only an ID no task ever had is 404.
func TestTaskRunsAfterDelete(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := context.Background()
	tk := b.create(t, task("a", nil))
	other := b.create(t, task("b", nil))
	noon := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b.setNow(noon)
	var history []int64
	for i := range 3 {
		r := b.insertRun(t, tk.ID, noon.Add(time.Duration(i-3)*time.Minute), sundial.RunScheduled)
		if ok, err := b.store.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1,
			StartedAt: r.ScheduledTime}}); err != nil || !ok[0] {
			t.Fatalf("RunStart: %v %v", ok, err)
		}
		if ok, err := b.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess,
			StartedAt: r.ScheduledTime, FinishedAt: r.ScheduledTime.Add(time.Second), HTTPStatus: 200}}); err != nil || !ok[0] {
			t.Fatalf("RunFinish: %v %v", ok, err)
		}
		history = append([]int64{r.ID}, history...)
	}
	b.insertRun(t, other.ID, noon.Add(-time.Minute), sundial.RunSkipped)
	list := func(path string) []int64 {
		t.Helper()
		var resp listResponse[*sundial.Run]
		want(t, b.do(t, http.MethodGet, path, nil), http.StatusOK, &resp)
		var ids []int64
		for _, r := range resp.Items {
			ids = append(ids, r.ID)
		}
		return ids
	}
	byPath, byQuery := taskPath(tk.ID, "/runs"), "/api/v1/runs?task_id="+strconv.FormatInt(tk.ID, 10)
	if got := list(byPath); fmt.Sprint(got) != fmt.Sprint(history) {
		t.Fatalf("GET %s before the delete = %v, want %v", byPath, got, history)
	}

	want(t, b.do(t, http.MethodDelete, taskPath(tk.ID), nil), http.StatusNoContent, nil)
	wantError(t, b.do(t, http.MethodGet, taskPath(tk.ID), nil), http.StatusNotFound, errorDetail{Code: sundial.ENotFound})
	for _, path := range []string{byPath, byQuery, byPath + "?status=success&limit=1000", byPath + "?planned=true"} {
		if got := list(path); fmt.Sprint(got) != fmt.Sprint(history) {
			t.Errorf("GET %s after the delete = %v, want the history %v", path, got, history)
		}
	}
	// Paged, the same.
	var page listResponse[*sundial.Run]
	want(t, b.do(t, http.MethodGet, byPath+"?limit=2", nil), http.StatusOK, &page)
	if len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("first page of 2: %d runs, cursor %q", len(page.Items), page.NextCursor)
	}
	if got := list(byPath + "?limit=2&cursor=" + page.NextCursor); fmt.Sprint(got) != fmt.Sprint(history[2:]) {
		t.Errorf("second page = %v, want %v", got, history[2:])
	}

	// No task ever had this ID: 404, and the query is checked first.
	never := other.ID + 1000
	wantError(t, b.do(t, http.MethodGet, taskPath(never, "/runs"), nil), http.StatusNotFound,
		errorDetail{Code: sundial.ENotFound, Message: fmt.Sprintf("task %d not found", never)})
	wantError(t, b.do(t, http.MethodGet, taskPath(never, "/runs?status=DONE"), nil), http.StatusBadRequest,
		errorDetail{Code: sundial.EInvalid, Field: "status", Token: "DONE"})
	// As a filter, an unknown task_id matches no run.
	if got := list("/api/v1/runs?task_id=" + strconv.FormatInt(never, 10)); len(got) != 0 {
		t.Errorf("runs of task %d = %v, want none", never, got)
	}
}
