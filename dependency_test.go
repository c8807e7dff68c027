package sundial

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func depTask(name string, join JoinMode, parents ...string) *Task {
	t := &Task{ID: int64(len(name)), Name: name, Join: join, Status: TaskEnabled}
	for _, p := range parents {
		on := DependSuccess
		if n, o, ok := strings.Cut(p, ":"); ok {
			p, on = n, DependOn(o)
		}
		t.DependsOn = append(t.DependsOn, Dependency{Task: p, On: on})
	}
	return t
}

// TestCheckDependencies: unknown parents and cycles through the task
// written are refused, naming them; other graphs pass.
func TestCheckDependencies(t *testing.T) {
	t.Parallel()
	others := []*Task{depTask("b", JoinAll, "a"), depTask("c", JoinAll, "b"), depTask("d", JoinAll, "b", "x")}
	exists := func(name string) bool { return name != "nope" }
	for _, tc := range []struct {
		task *Task
		want string
	}{
		{depTask("e", JoinAll, "c", "d"), ""},
		{depTask("a", JoinAll, "c"), "depends_on: cycle a -> c -> b -> a"},
		{depTask("a", JoinAll, "x", "d"), "depends_on: cycle a -> d -> b -> a"},
		{depTask("x", JoinAll, "b"), ""}, // d depends on x; x on b: no cycle
		{depTask("a", JoinAll, "nope"), `depends_on: no task is named "nope"`},
	} {
		err := CheckDependencies(tc.task, others, exists)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.task.Name, err)
		case tc.want != "" && (err == nil || err.(*Error).Message != tc.want):
			t.Errorf("%s: %v, want %q", tc.task.Name, err, tc.want)
		}
	}
	// b (replacing the stored b) depending on d, which depends on b.
	if err := CheckDependencies(depTask("b", JoinAll, "d"), others[1:], exists); err == nil ||
		err.(*Error).Message != "depends_on: cycle b -> d -> b" {
		t.Errorf("b on d: %v", err)
	}
}

// TestDecideJoin: the rule of a join, outcome by outcome.
func TestDecideJoin(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	logical := now.Add(-time.Minute)
	out := func(name string, status RunStatus) *ParentOutcome {
		return &ParentOutcome{Task: name, RunID: 9, Status: status, FinishedAt: now, Result: json.RawMessage(`[1]`)}
	}
	type step struct {
		p       *ParentOutcome // nil: the deadline pass at now+at
		at      time.Duration
		status  RunStatus // of the run made; "" for none
		reason  SkipReason
		changed bool
	}
	for _, tc := range []struct {
		name  string
		child *Task
		steps []step
	}{
		{"all succeed", depTask("c", JoinAll, "a", "b"), []step{
			{p: out("a", RunSuccess), changed: true},
			{p: out("a", RunFailed)}, // a's first outcome counts
			{p: out("b", RunSuccess), status: RunScheduled, changed: true},
			{p: out("b", RunSuccess)},
		}},
		{"all, one fails", depTask("c", JoinAll, "a", "b"), []step{
			{p: out("b", RunCanceled), status: RunSkipped, reason: SkipUpstream, changed: true},
			{p: out("a", RunSuccess)},
		}},
		{"any", depTask("c", JoinAny, "a:failure", "b:completion"), []step{
			{p: out("a", RunSuccess), changed: true},
			{p: out("b", RunSkipped), status: RunScheduled, changed: true},
		}},
		{"any, none as awaited", depTask("c", JoinAny, "a", "b"), []step{
			{p: out("a", RunFailed), changed: true},
			{p: out("b", RunTimeout), status: RunSkipped, reason: SkipUpstream, changed: true},
		}},
		{"deadline", depTask("c", JoinAll, "a", "b"), []step{
			{p: out("a", RunSuccess), changed: true},
			{at: time.Hour - time.Second},
			{at: time.Hour, status: RunSkipped, reason: SkipUpstream, changed: true},
		}},
		{"not a parent", depTask("c", JoinAll, "a"), []step{{p: out("z", RunSuccess)}}},
		{"disabled child", func() *Task { c := depTask("c", JoinAll, "a"); c.Status = TaskDisabled; return c }(), []step{
			{p: out("a", RunSuccess), status: RunSkipped, reason: SkipDisabled, changed: true},
		}},
		{"deleted child", nil, []step{{p: out("a", RunSuccess)}}},
	} {
		j := &DepJoin{LogicalTime: logical, State: JoinWaiting}
		for i, s := range tc.steps {
			r, changed := DecideJoin(tc.child, j, s.p, now.Add(s.at))
			got := RunStatus("")
			if r != nil {
				got = r.Status
				if r.FireKey != DependencyFireKey(logical) || !r.ScheduledTime.Equal(logical) || r.Trigger != TriggerDependency ||
					r.SkipReason != s.reason {
					t.Errorf("%s, step %d: run %+v", tc.name, i, r)
				}
			}
			if got != s.status || changed != s.changed {
				t.Errorf("%s, step %d: run %q changed %v, want %q %v", tc.name, i, got, changed, s.status, s.changed)
			}
		}
	}
}

// TestParentVars: a child's variables from its join; empty without one.
func TestParentVars(t *testing.T) {
	t.Parallel()
	c := depTask("c", JoinAll, "a", "b")
	j := &DepJoin{Parents: []ParentOutcome{{Task: "a", RunID: 4, Status: RunSuccess, Result: json.RawMessage(`{"n":1}`)}}}
	v := ParentVars(c, j)
	if v["parents.a.run_id"] != "4" || v["parents.a.status"] != "SUCCESS" || v["parents.a.result"] != `{"n":1}` ||
		v["parents.b.run_id"] != "" || v["parents.b.result"] != "null" || len(v) != 6 {
		t.Errorf("ParentVars = %v", v)
	}
	if v := ParentVars(c, nil); v["parents.a.status"] != "" || v["parents.a.result"] != "null" {
		t.Errorf("ParentVars without a join = %v", v)
	}
	if got := ParentOutcomeOf(c, &Run{ID: 1, Status: RunSuccess, ResponseBody: `{"ok":1}`}); string(got.Result) != `{"ok":1}` {
		t.Errorf("a SYNC run's JSON body as result: %s", got.Result)
	}
	if got := ParentOutcomeOf(c, &Run{ID: 1, Status: RunSuccess, ResponseBody: `ok`}); got.Result != nil {
		t.Errorf("a SYNC run's text body as result: %s", got.Result)
	}
}
