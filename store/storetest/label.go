package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/label"
)

func withLabels(kv ...string) func(*sundial.Task) {
	return func(tk *sundial.Task) {
		tk.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			tk.Labels[kv[i]] = kv[i+1]
		}
	}
}

func mustSelector(t *testing.T, text string) label.Selector {
	t.Helper()
	sel, err := label.Parse(text)
	if err != nil {
		t.Fatalf("label.Parse(%q): %v", text, err)
	}
	return sel
}

// testLabels: a task's labels are stored, read back and replaced as
// given; none reads back as an empty set, never nil.
func testLabels(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("labeled", withLabels("team", "payments", "app.kubernetes.io/name", "web", "empty", ""))
	got := f.getTask(tk.ID)
	eqTask(t, got, tk)
	if len(got.Labels) != 3 || got.Labels["empty"] != "" || got.Labels["app.kubernetes.io/name"] != "web" {
		t.Fatalf("labels = %v", got.Labels)
	}
	plain := f.task("plain")
	if got := f.getTask(plain.ID); got.Labels == nil || len(got.Labels) != 0 {
		t.Fatalf("labels of a task without any = %#v, want an empty map", got.Labels)
	}
	got.Labels = map[string]string{"team": "search"}
	if err := f.s.TaskUpdate(f.ctx, got, at(1)); err != nil {
		t.Fatalf("TaskUpdate: %v", err)
	}
	eqTask(t, f.getTask(tk.ID), got)
	ts, err := f.s.TaskList(f.ctx, sundial.TaskListParams{Name: "labeled"})
	if err != nil || len(ts) != 1 {
		t.Fatalf("TaskList: %v %v", ts, err)
	}
	eqTask(t, ts[0], got)
}

// testTaskListSelector: TaskList by selector selects what
// label.Selector.Matches selects, among live tasks, by ID, with paging and
// the other filters.
func testTaskListSelector(t *testing.T, open Opener) {
	f := setup(t, open)
	tasks := []*sundial.Task{
		f.task("pay-prod", withLabels("team", "payments", "env", "prod", "tier", "a")),
		f.task("pay-dev", withLabels("team", "payments", "env", "dev", "tier", "b"), disabled),
		f.task("search-prod", withLabels("team", "search", "env", "prod", "canary", "")),
		f.task("Payments", withLabels("team", "Payments", "example.com/owner", "ops")),
		f.task("none"),
		f.task("empty-team", withLabels("team", "")),
	}
	gone := f.task("gone", withLabels("team", "payments", "env", "prod"))
	if err := f.s.TaskDelete(f.ctx, gone.ID, at(1)); err != nil {
		t.Fatalf("TaskDelete: %v", err)
	}
	for _, text := range []string{
		"team=payments", "team==payments", "team=Payments", "team!=payments", "team=", "team", "!team",
		"env in (prod,dev)", "env notin (prod)", "env notin (prod,dev)", "tier in (a,c)", "canary", "!canary",
		"team=payments,env=prod", "team=payments,env!=prod", "example.com/owner=ops", "example.com/owner",
		"team in (payments,search),!canary", "team in (,payments)", "nothing=here", "team notin ()",
	} {
		sel := mustSelector(t, text)
		var want []int64
		for _, tk := range tasks {
			if sel.Matches(tk.Labels) {
				want = append(want, tk.ID)
			}
		}
		ts, err := f.s.TaskList(f.ctx, sundial.TaskListParams{Selector: sel})
		if err != nil {
			t.Fatalf("%s: TaskList: %v", text, err)
		}
		eqIDs(t, text, taskIDs(ts), want)
	}

	// With a status, and a page at a time.
	ts, err := f.s.TaskList(f.ctx, sundial.TaskListParams{Selector: mustSelector(t, "team=payments"),
		Status: []sundial.TaskStatus{sundial.TaskEnabled}})
	if err != nil {
		t.Fatal(err)
	}
	eqIDs(t, "team=payments, ENABLED", taskIDs(ts), []int64{tasks[0].ID})
	var got []int64
	after := int64(0)
	for range 10 {
		ts, err := f.s.TaskList(f.ctx, sundial.TaskListParams{Selector: mustSelector(t, "team"), AfterID: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) == 0 {
			break
		}
		got = append(got, taskIDs(ts)...)
		after = ts[len(ts)-1].ID
	}
	eqIDs(t, "pages of team", got, []int64{tasks[0].ID, tasks[1].ID, tasks[2].ID, tasks[3].ID, tasks[5].ID})
}

// testRunListFilters: RunList by several statuses, triggers, a finished
// time range and a selector through the run's task (deleted tasks
// included), alone and together, and paged.
func testRunListFilters(t *testing.T, open Opener) {
	f := setup(t, open)
	pay := f.task("pay", withLabels("team", "payments", "env", "prod"))
	search := f.task("search", withLabels("team", "search"))
	gone := f.task("gone", withLabels("team", "payments", "env", "dev"))

	// Each run finishes a second after its scheduled time (see run).
	r1 := f.run(pay.ID, at(10), sundial.RunSuccess)
	r2 := f.run(pay.ID, at(20), sundial.RunFailed)
	r3 := f.run(pay.ID, at(30), sundial.RunTimeout, manual, withKey("m:1"))
	r4 := f.run(search.ID, at(15), sundial.RunFailed)
	r5 := f.run(search.ID, at(25), sundial.RunScheduled, manual, withKey("m:2"))
	r6 := f.run(gone.ID, at(5), sundial.RunSuccess, func(r *sundial.Run) { r.Trigger = sundial.TriggerCatchUp })
	r7 := f.run(pay.ID, at(40), sundial.RunRunning)
	if err := f.s.TaskDelete(f.ctx, gone.ID, at(50)); err != nil {
		t.Fatalf("TaskDelete: %v", err)
	}
	status := func(ss ...sundial.RunStatus) []sundial.RunStatus { return ss }
	trig := func(ts ...sundial.Trigger) []sundial.Trigger { return ts }
	for _, tc := range []struct {
		name string
		f    sundial.RunListParams
		want []*sundial.Run
	}{
		{"all", sundial.RunListParams{}, []*sundial.Run{r7, r3, r5, r2, r4, r1, r6}},
		{"statuses", sundial.RunListParams{Status: status(sundial.RunFailed, sundial.RunTimeout)}, []*sundial.Run{r3, r2, r4}},
		{"manual", sundial.RunListParams{Trigger: trig(sundial.TriggerManual)}, []*sundial.Run{r3, r5}},
		{"schedule or catch-up", sundial.RunListParams{Trigger: trig(sundial.TriggerSchedule, sundial.TriggerCatchUp)},
			[]*sundial.Run{r7, r2, r4, r1, r6}},
		{"finished from", sundial.RunListParams{FinishedFrom: at(16)}, []*sundial.Run{r3, r2, r4}},
		{"finished before", sundial.RunListParams{FinishedTo: at(17)}, []*sundial.Run{r4, r1, r6}},
		{"finished in", sundial.RunListParams{FinishedFrom: at(11), FinishedTo: at(21)}, []*sundial.Run{r4, r1}},
		{"finished range is [from, to)", sundial.RunListParams{FinishedFrom: at(21), FinishedTo: at(31)}, []*sundial.Run{r2}},
		{"selector", sundial.RunListParams{Selector: mustSelector(t, "team=payments")}, []*sundial.Run{r7, r3, r2, r1, r6}},
		{"selector of a deleted task", sundial.RunListParams{Selector: mustSelector(t, "env=dev")}, []*sundial.Run{r6}},
		{"selector without", sundial.RunListParams{Selector: mustSelector(t, "!env")}, []*sundial.Run{r5, r4}},
		{"selector !=", sundial.RunListParams{Selector: mustSelector(t, "env!=prod")}, []*sundial.Run{r5, r4, r6}},
		{"selector notin", sundial.RunListParams{Selector: mustSelector(t, "team notin (payments)")}, []*sundial.Run{r5, r4}},
		{"selector none", sundial.RunListParams{Selector: mustSelector(t, "team=nobody")}, nil},
		{"everything", sundial.RunListParams{Selector: mustSelector(t, "team in (payments,search)"),
			Status: status(sundial.RunFailed, sundial.RunTimeout, sundial.RunSuccess), Trigger: trig(sundial.TriggerSchedule),
			From: at(10), To: at(30), FinishedFrom: at(11)}, []*sundial.Run{r2, r4, r1}},
		{"task and selector", sundial.RunListParams{TaskID: search.ID, Selector: mustSelector(t, "team=payments")}, nil},
		{"task and filters", sundial.RunListParams{TaskID: pay.ID, Status: status(sundial.RunFailed, sundial.RunTimeout),
			Trigger: trig(sundial.TriggerManual)}, []*sundial.Run{r3}},
	} {
		rs, err := f.s.RunList(f.ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: RunList: %v", tc.name, err)
		}
		eqIDs(t, tc.name, runIDs(rs), runIDs(tc.want))
	}

	// Paged, the filters hold on every page.
	var got []int64
	p := sundial.RunListParams{Selector: mustSelector(t, "team=payments"), Status: status(sundial.RunSuccess, sundial.RunFailed,
		sundial.RunTimeout, sundial.RunRunning), Limit: 2}
	for range 10 {
		rs, err := f.s.RunList(f.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			break
		}
		got = append(got, runIDs(rs)...)
		last := rs[len(rs)-1]
		p.BeforeTime, p.BeforeID = last.ScheduledTime, last.ID
	}
	eqIDs(t, "pages", got, []int64{r7.ID, r3.ID, r2.ID, r1.ID, r6.ID})
}

// testRunRerunOf: a run's RerunOf is stored with it and read back; every
// other run has none.
func testRunRerunOf(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	first := f.run(tk.ID, at(1), sundial.RunFailed)
	if first.RerunOf != 0 {
		t.Fatalf("RerunOf of a scheduled run = %d", first.RerunOf)
	}
	again := &sundial.Run{TaskID: tk.ID, FireKey: fmt.Sprintf("manual:%d", time.Now().UnixNano()), Trigger: sundial.TriggerManual,
		ScheduledTime: at(2), Status: sundial.RunScheduled, Attempt: 1, NodeID: "node-a", Fence: 1, RerunOf: first.ID,
		Params: []byte(`{"day":"2030-03-04"}`)}
	if err := f.s.RunInsert(f.ctx, again); err != nil {
		t.Fatalf("RunInsert: %v", err)
	}
	got := f.get(again.ID)
	if got.RerunOf != first.ID || string(got.Params) != `{"day":"2030-03-04"}` {
		t.Fatalf("rerun = %+v, want RerunOf %d and its params", got, first.ID)
	}
	rs, err := f.s.RunList(f.ctx, sundial.RunListParams{TaskID: tk.ID})
	if err != nil || len(rs) != 2 || rs[0].RerunOf != first.ID || rs[1].RerunOf != 0 {
		t.Fatalf("RunList = %v %v", rs, err)
	}
}
