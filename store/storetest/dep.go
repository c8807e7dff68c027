package storetest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// withParents makes a task depend on parents (each awaited for success),
// joined as join.
func withParents(join sundial.JoinMode, parents ...string) func(*sundial.Task) {
	return func(tk *sundial.Task) {
		tk.DependsOn = nil
		for _, p := range parents {
			tk.DependsOn = append(tk.DependsOn, sundial.Dependency{Task: p, On: sundial.DependSuccess})
		}
		tk.Join = join
	}
}

// outcome is the outcome of a run of parent p, numbered id, ended at end.
func outcome(p *sundial.Task, id int64, status sundial.RunStatus, end time.Time) sundial.ParentOutcome {
	return sundial.ParentOutcome{Task: p.Name, TaskID: p.ID, RunID: id, Status: status, FinishedAt: end,
		Result: json.RawMessage(`{"rows":42}`)}
}

// record records one parent's outcome for child at logical, at now.
func (f *fixture) record(child *sundial.Task, logical time.Time, p sundial.ParentOutcome, now time.Time) []*sundial.Run {
	f.t.Helper()
	runs, err := f.s.DepRecord(f.ctx, []sundial.DepRecordParams{{ChildID: child.ID, LogicalTime: logical, Parent: p}},
		now, sundial.DecideJoin)
	if err != nil {
		f.t.Fatalf("DepRecord %s for %s: %v", p.Task, child.Name, err)
	}
	return runs
}

func (f *fixture) join(child *sundial.Task, logical time.Time) *sundial.DepJoin {
	f.t.Helper()
	j, err := f.s.DepJoinGet(f.ctx, child.ID, logical)
	if err != nil {
		f.t.Fatalf("DepJoinGet %s at %s: %v", child.Name, logical, err)
	}
	return j
}

// testDependencies: a task's depends_on round trips; TaskList lists the
// tasks with parents; DepRecord and DepExpire apply DecideJoin under the
// join's lock: a child fires once per logical time when all its parents
// succeeded, is skipped (UPSTREAM) as soon as one did not, or at its
// deadline; DepPurge deletes resolved joins.
func testDependencies(t *testing.T, open Opener) {
	f := setup(t, open)
	a, b := f.task("a"), f.task("b")
	f.task("x")
	c := f.task("c", withParents(sundial.JoinAll, "a", "b"), func(tk *sundial.Task) {
		tk.CronExpr, tk.JoinDeadline, tk.Priority = "", 600, 7
	})
	got := f.getTask(c.ID)
	if !reflect.DeepEqual(got.DependsOn, c.DependsOn) || got.Join != sundial.JoinAll || got.JoinDeadline != 600 || got.CronExpr != "" {
		t.Fatalf("task with parents read back: depends_on %+v join %q deadline %d cron %q",
			got.DependsOn, got.Join, got.JoinDeadline, got.CronExpr)
	}
	if got := f.getTask(a.ID); got.HasParents() || got.Join != "" {
		t.Fatalf("task without parents read back: depends_on %+v join %q", got.DependsOn, got.Join)
	}
	list, err := f.s.TaskList(f.ctx, sundial.TaskListParams{HasParents: true, Limit: 10})
	if err != nil || len(list) != 1 || list[0].ID != c.ID {
		t.Fatalf("TaskList(HasParents) = %d tasks, %v; want c alone", len(list), err)
	}

	// join all, both succeed: one run, when the second ends.
	l1 := at(100)
	if runs := f.record(c, l1, outcome(a, 1, sundial.RunSuccess, at(101)), at(102)); len(runs) != 0 {
		t.Fatalf("first parent made %d runs, want none", len(runs))
	}
	j := f.join(c, l1)
	if j.State != sundial.JoinWaiting || len(j.Parents) != 1 || !j.DeadlineAt.Equal(at(102+600)) || j.RunID != 0 {
		t.Fatalf("join after a: %+v", j)
	}
	if runs := f.record(c, l1, outcome(a, 1, sundial.RunSuccess, at(101)), at(103)); len(runs) != 0 {
		t.Fatalf("a recorded again made %d runs", len(runs))
	}
	runs := f.record(c, l1, outcome(b, 2, sundial.RunSuccess, at(104)), at(105))
	if len(runs) != 1 {
		t.Fatalf("second parent made %d runs, want 1", len(runs))
	}
	r := f.get(runs[0].ID)
	if r.TaskID != c.ID || r.Trigger != sundial.TriggerDependency || r.FireKey != sundial.DependencyFireKey(l1) ||
		r.Status != sundial.RunScheduled || !r.ScheduledTime.Equal(l1) || !r.DueAt.Equal(at(105)) || r.Priority != 7 || r.NodeID != "" {
		t.Fatalf("child run: %+v", r)
	}
	j = f.join(c, l1)
	if j.State != sundial.JoinFired || j.RunID != r.ID || len(j.Parents) != 2 || j.Parents[1].RunID != 2 ||
		string(j.Parents[1].Result) != `{"rows":42}` || !j.Parents[1].FinishedAt.Equal(at(104)) {
		t.Fatalf("join fired: %+v", j)
	}
	if runs := f.record(c, l1, outcome(b, 3, sundial.RunFailed, at(106)), at(107)); len(runs) != 0 {
		t.Fatalf("a parent's later run made %d runs after the child fired", len(runs))
	}

	// join all, one fails: SKIPPED (UPSTREAM) at once.
	l2 := at(200)
	runs = f.record(c, l2, outcome(a, 4, sundial.RunFailed, at(201)), at(202))
	if len(runs) != 1 {
		t.Fatalf("a failed parent made %d runs, want 1 skip", len(runs))
	}
	r = f.get(runs[0].ID)
	if r.Status != sundial.RunSkipped || r.SkipReason != sundial.SkipUpstream || !strings.Contains(r.Error, "a ended FAILED") ||
		r.FinishedAt == nil || r.FireKey != sundial.DependencyFireKey(l2) {
		t.Fatalf("skipped child run: %+v", r)
	}
	if runs := f.record(c, l2, outcome(b, 5, sundial.RunSuccess, at(203)), at(204)); len(runs) != 0 {
		t.Fatalf("the other parent made %d runs after the skip", len(runs))
	}

	// The deadline: skipped by DepExpire, not before.
	l3 := at(300)
	f.record(c, l3, outcome(a, 6, sundial.RunSuccess, at(301)), at(302))
	if runs, err := f.s.DepExpire(f.ctx, at(302+599), 10, sundial.DecideJoin); err != nil || len(runs) != 0 {
		t.Fatalf("DepExpire before the deadline = %d runs, %v", len(runs), err)
	}
	runs, err = f.s.DepExpire(f.ctx, at(302+600), 10, sundial.DecideJoin)
	if err != nil || len(runs) != 1 {
		t.Fatalf("DepExpire at the deadline = %d runs, %v; want 1", len(runs), err)
	}
	r = f.get(runs[0].ID)
	if r.Status != sundial.RunSkipped || r.SkipReason != sundial.SkipUpstream || !strings.Contains(r.Error, "deadline") ||
		!strings.Contains(r.Error, "b") {
		t.Fatalf("child run at the deadline: %+v", r)
	}
	if j := f.join(c, l3); j.State != sundial.JoinSkipped || j.RunID != r.ID {
		t.Fatalf("join at the deadline: %+v", j)
	}

	// A task that is not a parent, or a run that ended before the child
	// existed, leaves no join.
	x := f.getTask(a.ID)
	x.Name = "x"
	l4 := at(400)
	f.record(c, l4, outcome(x, 7, sundial.RunSuccess, at(401)), at(402))
	f.record(c, l4, outcome(a, 8, sundial.RunSuccess, t0.Add(-time.Second)), at(402))
	if _, err := f.s.DepJoinGet(f.ctx, c.ID, l4); sundial.ErrorCode(err) != sundial.ENotFound {
		t.Fatalf("DepJoinGet of a join that recorded nothing: %v, want ENotFound", err)
	}

	// DepPurge deletes the resolved joins, not the waiting ones.
	l5 := at(500)
	f.record(c, l5, outcome(a, 9, sundial.RunSuccess, at(501)), at(502))
	if n, err := f.s.DepPurge(f.ctx, at(1000)); err != nil || n != 3 {
		t.Fatalf("DepPurge = %d, %v; want the 3 resolved joins", n, err)
	}
	if j := f.join(c, l5); j.State != sundial.JoinWaiting {
		t.Fatalf("waiting join after the purge: %+v", j)
	}
}

// testClusterDepRecord: the parents of a child end on two nodes at once,
// each node recording its parent's outcome (and, as a node may, the other
// one's again): the child's run is made exactly once per logical time.
func testClusterDepRecord(t *testing.T, b Backend) {
	c := setupCluster(t, b, 2)
	pa, pb := c.task("a"), c.task("b")
	child := c.task("c", withParents(sundial.JoinAll, "a", "b"), func(tk *sundial.Task) { tk.CronExpr = "" })
	const rounds = 6
	for k := range rounds {
		logical := at(100 * (k + 1))
		errs := make([]error, 4)
		made := make([]int, 4)
		race(4, func(i int) {
			p := pa
			if i%2 == 1 {
				p = pb
			}
			runs, err := c.node(i).DepRecord(c.ctx, []sundial.DepRecordParams{{ChildID: child.ID, LogicalTime: logical,
				Parent: outcome(p, int64(10*k+i%2+1), sundial.RunSuccess, logical.Add(time.Second))}}, logical.Add(2*time.Second), sundial.DecideJoin)
			errs[i], made[i] = err, len(runs)
		})
		total := 0
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, node %d: DepRecord: %v", k, i, err)
			}
			total += made[i]
		}
		if total != 1 {
			t.Fatalf("round %d: %d child runs made, want exactly 1", k, total)
		}
		j := c.join(child, logical)
		if j.State != sundial.JoinFired || len(j.Parents) != 2 || j.RunID == 0 {
			t.Fatalf("round %d: join %+v", k, j)
		}
	}
	runs, err := c.s.RunList(c.ctx, sundial.RunListParams{TaskID: child.ID, Limit: 100})
	if err != nil || len(runs) != rounds {
		t.Fatalf("child has %d runs (%v), want %d", len(runs), err, rounds)
	}
}
