package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// bulkFixture is a server with authentication on and some labeled tasks.
type bulkFixture struct {
	*authBundle
	pay, search []*sundial.Task
	once        *sundial.Task // a one-off task that has ended
}

func setupBulk(t *testing.T) *bulkFixture {
	t.Helper()
	f := &bulkFixture{authBundle: setupAuth(t, Auth{Required: true})}
	for i := range 3 {
		f.pay = append(f.pay, f.createAs(t, task(fmt.Sprintf("pay-%d", i), map[string]any{"labels": map[string]string{"team": "payments"}})))
	}
	for i := range 2 {
		f.search = append(f.search, f.createAs(t, task(fmt.Sprintf("search-%d", i), map[string]any{"labels": map[string]string{"team": "search"}})))
	}
	f.once = f.createAs(t, map[string]any{"name": "once", "run_at": "2026-01-01T00:00:00Z", "target_url": "https://example.com/",
		"labels": map[string]string{"team": "payments"}})
	ctx := context.Background()
	now := f.now()
	r := &sundial.Run{TaskID: f.once.ID, FireKey: "o:1", ScheduledTime: now, NodeID: "n"}
	if err := f.store.RunInsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess,
		StartedAt: now, FinishedAt: now, CompleteTask: sundial.TaskCompleted}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// createAs makes a task through the API with the admin's token.
func (b *authBundle) createAs(t *testing.T, body map[string]any) *sundial.Task {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var got sundial.Task
	want(t, b.req(t, http.MethodPost, "/api/v1/tasks", b.secrets[sundial.RoleAdmin], string(raw)), http.StatusCreated, &got)
	return &got
}

func (f *bulkFixture) bulk(t *testing.T, role sundial.Role, body string) (int, bulkErrorBody) {
	t.Helper()
	rec := f.req(t, http.MethodPost, "/api/v1/tasks:bulk", f.secrets[role], body)
	var out bulkErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
	return rec.Code, out
}

// statuses are the status of each task, "DELETED" for one that is gone.
func (f *bulkFixture) statuses(t *testing.T, ts ...*sundial.Task) []string {
	t.Helper()
	var out []string
	for _, tk := range ts {
		got, err := f.store.TaskGet(context.Background(), tk.ID)
		if sundial.ErrorCode(err) == sundial.ENotFound {
			out = append(out, "DELETED")
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(got.Status))
	}
	return out
}

func idList(ts ...*sundial.Task) string {
	var b []string
	for _, tk := range ts {
		b = append(b, fmt.Sprint(tk.ID))
	}
	return "[" + strings.Join(b, ",") + "]"
}

// TestBulkAllOrNothing: a request with one task that fails its check (an
// unknown id, a one-off task that has ended) changes none of its tasks,
// and says which failed and why.
func TestBulkAllOrNothing(t *testing.T) {
	t.Parallel()
	f := setupBulk(t)
	all := append(append([]*sundial.Task{}, f.pay...), f.search...)
	before := f.statuses(t, all...)

	status, body := f.bulk(t, sundial.RoleOperator, `{"action":"disable","ids":[`+fmt.Sprint(f.pay[0].ID)+`,987654,`+fmt.Sprint(f.pay[1].ID)+`]}`)
	if status != http.StatusNotFound || body.Error.Code != sundial.ENotFound || body.Error.Field != "ids[1]" ||
		body.Error.Message != "nothing was done: task 987654: task 987654 not found" || len(body.Items) != 3 ||
		body.Items[0].OK || body.Items[0].Error != nil || body.Items[1].Error == nil || body.Items[0].Name != "pay-0" {
		t.Fatalf("one unknown id: %d %+v", status, body)
	}
	// The selector takes the ended one-off task, whose disable is refused.
	status, body = f.bulk(t, sundial.RoleOperator, `{"action":"disable","selector":"team=payments"}`)
	if status != http.StatusConflict || body.Error.Field != "selector" || body.Error.Token != fmt.Sprint(f.once.ID) ||
		!strings.HasPrefix(body.Error.Message, "nothing was done: task "+fmt.Sprint(f.once.ID)+" (once): ") || len(body.Items) != 4 {
		t.Fatalf("an ended task: %d %+v", status, body)
	}
	for _, it := range body.Items {
		if it.OK {
			t.Errorf("item %+v done in a refused request", it)
		}
	}
	if got := f.statuses(t, all...); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("statuses after refused requests = %v, want %v", got, before)
	}
	var audit listResponse[auditView]
	want(t, f.req(t, http.MethodGet, "/api/v1/audit?action=task.disable", f.secrets[sundial.RoleAdmin], ""), http.StatusOK, &audit)
	if len(audit.Items) != 0 {
		t.Fatalf("refused requests audited: %+v", audit.Items)
	}
	// A delete needs an editor: an operator's is refused before any task is read.
	status, body = f.bulk(t, sundial.RoleOperator, `{"action":"delete","ids":`+idList(f.search...)+`}`)
	if status != http.StatusForbidden || body.Error.Code != sundial.EForbidden ||
		!strings.Contains(body.Error.Message, "needs the role editor") {
		t.Fatalf("an operator's delete: %d %+v", status, body)
	}
	if got := f.statuses(t, f.search...); fmt.Sprint(got) != "[ENABLED ENABLED]" {
		t.Fatalf("search tasks = %v", got)
	}
}

// TestBulkActions: each action by ids and by selector, answered per task
// and audited per task.
func TestBulkActions(t *testing.T) {
	t.Parallel()
	f := setupBulk(t)
	status, body := f.bulk(t, sundial.RoleOperator, `{"action":"disable","selector":"team=payments,!gone"}`)
	if status == http.StatusOK {
		t.Fatalf("a selector taking the ended one-off task was not refused")
	}
	// Enable the first two payments tasks by id, one of which is already.
	status, body = f.bulk(t, sundial.RoleOperator, `{"action":"Disable","ids":`+idList(f.pay[0])+`}`)
	if status != http.StatusOK || body.Action != "disable" || len(body.Items) != 1 || !body.Items[0].OK {
		t.Fatalf("disable: %d %+v", status, body)
	}
	status, body = f.bulk(t, sundial.RoleOperator, `{"action":"enable","ids":`+idList(f.pay[0], f.pay[1])+`}`)
	if status != http.StatusOK || len(body.Items) != 2 || !body.Items[0].OK || !body.Items[1].OK || body.Items[1].Name != "pay-1" {
		t.Fatalf("enable: %d %+v", status, body)
	}
	status, body = f.bulk(t, sundial.RoleOperator, `{"action":"disable","selector":"team=search"}`)
	if status != http.StatusOK || len(body.Items) != 2 || body.Items[0].ID != f.search[0].ID {
		t.Fatalf("disable by selector: %d %+v", status, body)
	}
	if got := f.statuses(t, append(f.pay, f.search...)...); fmt.Sprint(got) != "[ENABLED ENABLED ENABLED DISABLED DISABLED]" {
		t.Fatalf("statuses = %v", got)
	}
	// A trigger makes one run per task, the ended one-off task's too.
	status, body = f.bulk(t, sundial.RoleOperator, `{"action":"trigger","selector":"team in (payments)"}`)
	if status != http.StatusOK || len(body.Items) != 4 {
		t.Fatalf("trigger: %d %+v", status, body)
	}
	for _, it := range body.Items {
		r, err := f.store.RunGet(context.Background(), it.RunID)
		if !it.OK || err != nil || r.TaskID != it.ID || r.Trigger != sundial.TriggerManual || it.RunStatus != r.Status {
			t.Errorf("trigger item %+v: run %+v, %v", it, r, err)
		}
	}
	// A delete, by an editor.
	status, body = f.bulk(t, sundial.RoleEditor, `{"action":"delete","ids":`+idList(f.search...)+`}`)
	if status != http.StatusOK || len(body.Items) != 2 || !body.Items[1].OK {
		t.Fatalf("delete: %d %+v", status, body)
	}
	if got := f.statuses(t, f.search...); fmt.Sprint(got) != "[DELETED DELETED]" {
		t.Fatalf("deleted tasks = %v", got)
	}
	// One audit entry per task changed: two enables were asked, one made.
	counts := map[string]int{}
	var audit listResponse[auditView]
	want(t, f.req(t, http.MethodGet, "/api/v1/audit?limit=100", f.secrets[sundial.RoleAdmin], ""), http.StatusOK, &audit)
	for _, e := range audit.Items {
		counts[e.Action]++
	}
	if counts["task.disable"] != 3 || counts["task.enable"] != 1 || counts["task.trigger"] != 4 || counts["task.delete"] != 2 {
		t.Fatalf("audit counts = %v", counts)
	}
}

// TestBulkInvalid: requests refused whole, with the field at fault.
func TestBulkInvalid(t *testing.T) {
	t.Parallel()
	f := setupBulk(t)
	many := make([]string, maxBulkTasks+1)
	for i := range many {
		many[i] = fmt.Sprint(i + 1)
	}
	for _, tc := range []struct {
		body, field, msg string
	}{
		{`{"action":"pause","ids":[1]}`, "action", "must be one of enable, disable, trigger, delete"},
		{`{"ids":[1]}`, "action", "action is required"},
		{`{"action":"enable"}`, "ids", "give the tasks by ids"},
		{`{"action":"enable","ids":[1],"selector":"a"}`, "selector", "give ids or selector, not both"},
		{`{"action":"enable","ids":[]}`, "ids", "ids is empty"},
		{`{"action":"enable","ids":[1,0]}`, "ids[1]", "a task id is a positive integer"},
		{`{"action":"enable","ids":[1,2,1]}`, "ids[2]", "task 1 is listed twice, at ids[0] and here"},
		{`{"action":"enable","ids":[` + strings.Join(many, ",") + `]}`, "ids", "ids has 1001 items; a bulk action takes at most 1000 tasks"},
		{`{"action":"enable","selector":" "}`, "selector", "selector is empty"},
		{`{"action":"enable","selector":"team in payments"}`, "selector", "selector: at character 9: want ( after in"},
		{`{"action":"enable","selector":"a","reason":"x"}`, "reason", `unknown field "reason"`},
	} {
		rec := f.req(t, http.MethodPost, "/api/v1/tasks:bulk", f.secrets[sundial.RoleAdmin], tc.body)
		e := errorOf(t, rec)
		if rec.Code != http.StatusBadRequest || e.Field != tc.field || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%.80s: %d %+v, want field %s and %q", tc.body, rec.Code, e, tc.field, tc.msg)
		}
	}
	if got := f.statuses(t, append(f.pay, f.search...)...); fmt.Sprint(got) != "[ENABLED ENABLED ENABLED ENABLED ENABLED]" {
		t.Fatalf("statuses = %v", got)
	}
	// A node that cannot trigger says so before any task is read.
	f.sched.ready.Store(false)
	rec := f.req(t, http.MethodPost, "/api/v1/tasks:bulk", f.secrets[sundial.RoleOperator], `{"action":"trigger","selector":"team"}`)
	if e := errorOf(t, rec); rec.Code != http.StatusServiceUnavailable || e.Code != sundial.EUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("trigger on a node that is not ready: %d %+v", rec.Code, e)
	}
	runs, err := f.store.RunList(context.Background(), sundial.RunListParams{})
	if err != nil || len(runs) != 1 { // the one-off task's
		t.Fatalf("runs = %d, %v", len(runs), err)
	}
}

// TestBulkSelectorLimit: a selector that matches more than 1,000 tasks is
// refused, and changes nothing.
func TestBulkSelectorLimit(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ts := make([]*sundial.Task, maxBulkTasks+1)
	now := b.now()
	for i := range ts {
		ts[i] = &sundial.Task{Name: fmt.Sprintf("t%04d", i), CronExpr: "@daily", TargetURL: "https://example.com/",
			Labels: map[string]string{"fleet": "big"}}
		if err := ts[i].Normalize(now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.store.TaskCreateMany(context.Background(), ts, now); err != nil {
		t.Fatal(err)
	}
	wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks:bulk", `{"action":"disable","selector":"fleet=big"}`), http.StatusBadRequest,
		errorDetail{Code: sundial.EInvalid, Field: "selector", Token: "fleet=big",
			Message: "the selector matches more than 1000 tasks, more than a bulk action takes; narrow it"})
	var page listResponse[*sundial.Task]
	want(t, b.do(t, http.MethodGet, "/api/v1/tasks?status=DISABLED", nil), http.StatusOK, &page)
	if len(page.Items) != 0 {
		t.Fatalf("%d tasks disabled", len(page.Items))
	}
	// 1,000 exactly is taken.
	if err := b.store.TaskDelete(context.Background(), ts[0].ID, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	var out bulkResponse
	want(t, b.do(t, http.MethodPost, "/api/v1/tasks:bulk", `{"action":"disable","selector":"fleet=big"}`), http.StatusOK, &out)
	if len(out.Items) != maxBulkTasks || out.Items[0].ID != ts[1].ID {
		t.Fatalf("%d items", len(out.Items))
	}
}
