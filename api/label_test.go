package api

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestTaskLabels: labels are taken by create, PUT and batch, answered in
// every task answer ({} for none), and a label that breaks a rule is a 400
// naming labels.<key> that changes nothing.
func TestTaskLabels(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	labels := map[string]string{"team": "payments", "app.kubernetes.io/name": "web", "canary": ""}
	tk := b.create(t, task("labeled", map[string]any{"labels": labels}))
	if !maps.Equal(tk.Labels, labels) {
		t.Fatalf("labels = %v, want %v", tk.Labels, labels)
	}
	if got := b.get(t, tk.ID); !maps.Equal(got.Labels, labels) {
		t.Fatalf("GET labels = %v", got.Labels)
	}
	// None: an empty object, never null or absent.
	plain := b.do(t, http.MethodPost, "/api/v1/tasks", task("plain", nil))
	if plain.Code != http.StatusCreated || !strings.Contains(plain.Body.String(), `"labels":{}`) {
		t.Fatalf("create without labels: %d %s", plain.Code, plain.Body)
	}
	// PUT replaces them.
	put := task("labeled", map[string]any{"version": tk.Version, "labels": map[string]string{"team": "search"}})
	var replaced sundial.Task
	want(t, b.do(t, http.MethodPut, taskPath(tk.ID), put), http.StatusOK, &replaced)
	if !maps.Equal(replaced.Labels, map[string]string{"team": "search"}) || replaced.Version != tk.Version+1 {
		t.Fatalf("PUT = labels %v version %d", replaced.Labels, replaced.Version)
	}
	// Batch.
	var batch batchResponse
	want(t, b.do(t, http.MethodPost, "/api/v1/tasks:batch", map[string]any{"tasks": []any{
		task("b1", map[string]any{"labels": map[string]string{"team": "batch"}}), task("b2", nil)}}), http.StatusOK, &batch)
	if got := batch.Items[0].Task.Labels; !maps.Equal(got, map[string]string{"team": "batch"}) {
		t.Fatalf("batch labels = %v", got)
	}

	for _, tc := range []struct {
		labels any
		err    errorDetail
	}{
		{map[string]string{"team": "pay ments"}, errorDetail{Code: sundial.EInvalid, Field: "labels.team", Token: "pay ments",
			Message: `label "team": not a label value: a value may hold only letters, digits, '-', '_' and '.', not " "`}},
		{map[string]string{"-team": "x"}, errorDetail{Code: sundial.EInvalid, Field: "labels.-team", Token: "-team",
			Message: `label "-team": not a label key: a key's name must begin and end with a letter or digit`}},
		{map[string]string{"Example.com/x": "y"}, errorDetail{Code: sundial.EInvalid, Field: "labels.Example.com/x", Token: "Example.com/x"}},
		{map[string]string{"v": strings.Repeat("x", 64)}, errorDetail{Code: sundial.EInvalid, Field: "labels.v", Token: strings.Repeat("x", 64)}},
		{map[string]any{"team": 1}, errorDetail{Code: sundial.EInvalid, Field: "labels"}},
	} {
		rec := b.do(t, http.MethodPost, "/api/v1/tasks", task("bad", map[string]any{"labels": tc.labels}))
		got := errorOf(t, rec)
		if tc.err.Message == "" {
			got.Message = ""
		}
		if rec.Code != http.StatusBadRequest || got.Field != tc.err.Field || (tc.err.Token != "" && got.Token != tc.err.Token) ||
			got.Message != tc.err.Message {
			t.Errorf("labels %v: %d %+v, want %+v", tc.labels, rec.Code, got, tc.err)
		}
	}
	// A refused PUT and batch change nothing.
	put = task("labeled", map[string]any{"version": replaced.Version, "labels": map[string]string{"team": "a b"}})
	wantError(t, b.do(t, http.MethodPut, taskPath(tk.ID), put), http.StatusBadRequest,
		errorDetail{Code: sundial.EInvalid, Field: "labels.team", Token: "a b"})
	rec := b.do(t, http.MethodPost, "/api/v1/tasks:batch", map[string]any{"tasks": []any{
		task("b3", nil), task("b4", map[string]any{"labels": map[string]string{"x/y/z": "1"}})}})
	var refused struct {
		Error errorDetail `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &refused); err != nil || rec.Code != http.StatusBadRequest ||
		refused.Error.Field != "tasks[1].labels.x/y/z" {
		t.Fatalf("batch with a bad label: %d %s", rec.Code, rec.Body)
	}
	if got := b.get(t, tk.ID); got.Version != replaced.Version || !maps.Equal(got.Labels, replaced.Labels) {
		t.Fatalf("after refused changes: %+v", got)
	}
	var page listResponse[*sundial.Task]
	want(t, b.do(t, http.MethodGet, "/api/v1/tasks?name_prefix=b", nil), http.StatusOK, &page)
	if len(page.Items) != 2 {
		t.Fatalf("a refused batch created tasks: %d tasks named b*", len(page.Items))
	}
}

// TestTaskListSelector: GET /api/v1/tasks?selector= filters by labels,
// with status and a cursor; a selector that cannot be read is a 400 naming
// selector, with where and why.
func TestTaskListSelector(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	mk := func(name, status string, labels map[string]string) int64 {
		return b.create(t, task(name, map[string]any{"labels": labels, "status": status})).ID
	}
	pay1 := mk("pay-1", "ENABLED", map[string]string{"team": "payments", "env": "prod"})
	pay2 := mk("pay-2", "DISABLED", map[string]string{"team": "payments", "env": "dev"})
	pay3 := mk("pay-3", "ENABLED", map[string]string{"team": "payments"})
	search := mk("search", "ENABLED", map[string]string{"team": "search", "env": "prod"})
	none := mk("none", "ENABLED", nil)
	list := func(q string) []int64 {
		t.Helper()
		var page listResponse[*sundial.Task]
		want(t, b.do(t, http.MethodGet, "/api/v1/tasks?"+q, nil), http.StatusOK, &page)
		var ids []int64
		for _, tk := range page.Items {
			ids = append(ids, tk.ID)
		}
		return ids
	}
	for _, tc := range []struct {
		selector string
		want     []int64
	}{
		{"team=payments", []int64{pay1, pay2, pay3}},
		{"team=payments,env!=prod", []int64{pay2, pay3}},
		{"team in (payments,search),env", []int64{pay1, pay2, search}},
		{"env notin (prod)", []int64{pay2, pay3, none}},
		{"!env", []int64{pay3, none}},
		{"team==search", []int64{search}},
	} {
		if got := list("selector=" + url.QueryEscape(tc.selector)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("selector %s = %v, want %v", tc.selector, got, tc.want)
		}
	}
	if got := list("status=ENABLED,DISABLED&selector=team%3Dpayments&limit=10"); fmt.Sprint(got) != fmt.Sprint([]int64{pay1, pay2, pay3}) {
		t.Errorf("statuses and selector = %v", got)
	}
	if got := list("status=enabled&selector=team%3Dpayments"); fmt.Sprint(got) != fmt.Sprint([]int64{pay1, pay3}) {
		t.Errorf("status and selector = %v", got)
	}
	// Pages of one: the cursor goes on past the tasks that do not match.
	var ids []int64
	q := "selector=team%3Dpayments,env!%3Dprod&limit=1"
	for range 5 {
		var page listResponse[*sundial.Task]
		want(t, b.do(t, http.MethodGet, "/api/v1/tasks?"+q, nil), http.StatusOK, &page)
		for _, tk := range page.Items {
			ids = append(ids, tk.ID)
		}
		if page.NextCursor == "" {
			break
		}
		q = "selector=team%3Dpayments,env!%3Dprod&limit=1&cursor=" + page.NextCursor
	}
	if fmt.Sprint(ids) != fmt.Sprint([]int64{pay2, pay3}) {
		t.Errorf("pages = %v", ids)
	}

	for _, tc := range []struct {
		selector string
		err      errorDetail
	}{
		{"team in payments", errorDetail{Code: sundial.EInvalid, Field: "selector", Token: "payments",
			Message: "selector: at character 9: want ( after in, as in key in (a,b) (the syntax is Kubernetes': " +
				"k=v, k!=v, k in (a,b), k notin (a,b), k, !k, separated by commas)"}},
		{"team=pay ments", errorDetail{Code: sundial.EInvalid, Field: "selector", Token: "ments"}},
		{"-team", errorDetail{Code: sundial.EInvalid, Field: "selector", Token: "-team"}},
		{"team>1", errorDetail{Code: sundial.EInvalid, Field: "selector", Token: ">"}},
	} {
		wantError(t, b.do(t, http.MethodGet, "/api/v1/tasks?selector="+url.QueryEscape(tc.selector), nil), http.StatusBadRequest, tc.err)
	}
}

// TestRunListFilters: several statuses, triggers, a selector through the
// run's task, and finished time, on /runs and /tasks/{id}/runs; an
// unknown status or trigger is a 400 naming it.
func TestRunListFilters(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := context.Background()
	pay := b.create(t, task("pay", map[string]any{"labels": map[string]string{"team": "payments"}}))
	other := b.create(t, task("other", nil))
	now := b.now()
	finish := func(taskID int64, at time.Time, status sundial.RunStatus, trigger sundial.Trigger) *sundial.Run {
		t.Helper()
		r := &sundial.Run{TaskID: taskID, FireKey: fmt.Sprintf("k:%d:%d", taskID, at.Unix()), Trigger: trigger, ScheduledTime: at, NodeID: "n"}
		if err := b.store.RunInsert(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: at}}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: status,
			StartedAt: at, FinishedAt: at.Add(time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1 := finish(pay.ID, now.Add(-4*time.Hour), sundial.RunFailed, sundial.TriggerSchedule)
	r2 := finish(pay.ID, now.Add(-3*time.Hour), sundial.RunTimeout, sundial.TriggerManual)
	r3 := finish(pay.ID, now.Add(-2*time.Hour), sundial.RunSuccess, sundial.TriggerSchedule)
	r4 := finish(other.ID, now.Add(-1*time.Hour), sundial.RunFailed, sundial.TriggerSchedule)
	at := func(d time.Duration) string { return url.QueryEscape(now.Add(d).Format(time.RFC3339)) }
	list := func(path string) []int64 {
		t.Helper()
		var page listResponse[*sundial.Run]
		want(t, b.do(t, http.MethodGet, path, nil), http.StatusOK, &page)
		var ids []int64
		for _, r := range page.Items {
			ids = append(ids, r.ID)
		}
		return ids
	}
	for _, tc := range []struct {
		path string
		want []*sundial.Run
	}{
		{"/api/v1/runs?status=FAILED,TIMEOUT", []*sundial.Run{r4, r2, r1}},
		{"/api/v1/runs?status=failed,timeout&trigger=manual", []*sundial.Run{r2}},
		{"/api/v1/runs?trigger=SCHEDULE,CATCH_UP", []*sundial.Run{r4, r3, r1}},
		{"/api/v1/runs?selector=team%3Dpayments", []*sundial.Run{r3, r2, r1}},
		{"/api/v1/runs?selector=!team", []*sundial.Run{r4}},
		{"/api/v1/runs?finished_after=" + at(-150*time.Minute), []*sundial.Run{r4, r3}},
		{"/api/v1/runs?finished_before=" + at(-150*time.Minute), []*sundial.Run{r2, r1}},
		{"/api/v1/runs?finished_after=" + at(-4*time.Hour) + "&finished_before=" + at(-3*time.Hour), []*sundial.Run{r1}},
		{"/api/v1/runs?selector=team%3Dpayments&status=FAILED,TIMEOUT&from=" + at(-200*time.Minute), []*sundial.Run{r2}},
		{taskPath(pay.ID, "/runs?status=FAILED,SUCCESS&trigger=SCHEDULE"), []*sundial.Run{r3, r1}},
		{taskPath(other.ID, "/runs?selector=team%3Dpayments"), nil},
	} {
		var wantIDs []int64
		for _, r := range tc.want {
			wantIDs = append(wantIDs, r.ID)
		}
		if got := list(tc.path); fmt.Sprint(got) != fmt.Sprint(wantIDs) {
			t.Errorf("%s = %v, want %v", tc.path, got, wantIDs)
		}
	}
	for _, tc := range []struct {
		path string
		err  errorDetail
	}{
		{"/api/v1/runs?status=FAILED,DONE", errorDetail{Code: sundial.EInvalid, Field: "status", Token: "DONE"}},
		{taskPath(pay.ID, "/runs?status=FAILED,DONE"), errorDetail{Code: sundial.EInvalid, Field: "status", Token: "DONE"}},
		{"/api/v1/runs?trigger=CRON", errorDetail{Code: sundial.EInvalid, Field: "trigger", Token: "CRON",
			Message: "must be one of SCHEDULE, MANUAL, CATCH_UP, BACKFILL, DEPENDENCY, or several of them separated by commas"}},
		{"/api/v1/runs?selector=a,", errorDetail{Code: sundial.EInvalid, Field: "selector", Token: ","}},
		{"/api/v1/runs?finished_after=yesterday", errorDetail{Code: sundial.EInvalid, Field: "finished_after", Token: "yesterday"}},
		{"/api/v1/runs?finished_after=" + at(0) + "&finished_before=" + at(-time.Hour), errorDetail{Code: sundial.EInvalid,
			Field: "finished_before", Token: now.Add(-time.Hour).Format(time.RFC3339),
			Message: "finished_before must be after finished_after: runs are selected by finished time in [finished_after, finished_before)"}},
		{"/api/v1/runs?trigger=MANUAL&trigger=SCHEDULE", errorDetail{Code: sundial.EInvalid, Field: "trigger",
			Message: `query parameter "trigger" is given more than once; give it once (several triggers are one comma-separated value: trigger=A,B)`}},
	} {
		wantError(t, b.do(t, http.MethodGet, tc.path, nil), http.StatusBadRequest, tc.err)
	}
}

// TestRunRerun: a rerun is a new MANUAL run of the run's task with its
// params, recording the run it reruns, answered 202 and audited; an
// unknown run is 404, a run of a deleted task 409.
func TestRunRerun(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Required: true})
	tk := b.createAs(t, task("a", map[string]any{"params": map[string]any{"day": "task"}}))
	operator := b.secrets[sundial.RoleOperator]
	var first sundial.Run
	want(t, b.req(t, http.MethodPost, taskPath(tk.ID, "/trigger"), operator, `{"params":{"day":"2026-05-04"}}`), http.StatusAccepted, &first)
	var rerun sundial.Run
	want(t, b.req(t, http.MethodPost, runPath(first.ID, "/rerun"), operator, ""), http.StatusAccepted, &rerun)
	if rerun.ID == first.ID || rerun.RerunOf != first.ID || rerun.Trigger != sundial.TriggerManual ||
		string(rerun.Params) != `{"day":"2026-05-04"}` || rerun.TaskID != tk.ID {
		t.Fatalf("rerun = %+v", rerun)
	}
	stored, err := b.store.RunGet(context.Background(), rerun.ID)
	if err != nil || stored.RerunOf != first.ID {
		t.Fatalf("stored rerun = %+v, %v", stored, err)
	}
	// A run without params of its own reruns with the task's (as they are).
	scheduled := b.insertRun(t, tk.ID, b.now(), sundial.RunScheduled)
	var again sundial.Run
	want(t, b.req(t, http.MethodPost, runPath(scheduled.ID, "/rerun"), operator, ""), http.StatusAccepted, &again)
	if again.RerunOf != scheduled.ID || again.Params != nil {
		t.Fatalf("rerun of a scheduled run = %+v", again)
	}
	// A viewer may not.
	wantError(t, b.req(t, http.MethodPost, runPath(first.ID, "/rerun"), b.secrets[sundial.RoleViewer], ""), http.StatusForbidden,
		errorDetail{Code: sundial.EForbidden})
	// Audited: the run reruns, and the new run.
	var audit listResponse[auditView]
	want(t, b.req(t, http.MethodGet, "/api/v1/audit?action=run.rerun", b.secrets[sundial.RoleAdmin], ""), http.StatusOK, &audit)
	if len(audit.Items) != 2 || audit.Items[1].Target != fmt.Sprintf("run/%d", first.ID) || audit.Items[1].Actor != "operator-token" ||
		!strings.Contains(string(audit.Items[1].After), fmt.Sprintf(`"rerun_of":%d`, first.ID)) {
		t.Fatalf("audit = %+v", audit.Items)
	}
	wantError(t, b.req(t, http.MethodPost, runPath(987654, "/rerun"), operator, ""), http.StatusNotFound,
		errorDetail{Code: sundial.ENotFound, Message: "run 987654 not found"})
	// Its task deleted: the ended run stays, and is not run again.
	if _, err := b.store.RunCancel(context.Background(), rerun.ID, b.now()); err != nil {
		t.Fatal(err)
	}
	want(t, b.req(t, http.MethodDelete, taskPath(tk.ID), b.secrets[sundial.RoleEditor], ""), http.StatusNoContent, nil)
	wantError(t, b.req(t, http.MethodPost, runPath(rerun.ID, "/rerun"), operator, ""), http.StatusConflict,
		errorDetail{Code: sundial.EConflict, Field: "task_id", Token: fmt.Sprint(tk.ID),
			Message: fmt.Sprintf("run %d is of task %d, which has been deleted: a rerun needs a live task", rerun.ID, tk.ID)})
}
