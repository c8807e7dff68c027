package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// failureAt and successAt are changes of one outcome each.
func failureAt(task int64, t time.Time) *sundial.TaskState {
	s := &sundial.TaskState{TaskID: task}
	s.Record(sundial.RunFailed, t)
	return s
}

func successAt(task int64, t time.Time) *sundial.TaskState {
	s := &sundial.TaskState{TaskID: task}
	s.Record(sundial.RunSuccess, t)
	return s
}

// states reads the saved states and latest runs of tasks at now, failing
// the test on an error.
func (f *fixture) states(now time.Time, ids ...int64) (map[int64]*sundial.TaskState, map[int64]*sundial.LastRun) {
	f.t.Helper()
	saved, last, err := f.s.TaskStates(f.ctx, ids, now)
	if err != nil {
		f.t.Fatalf("TaskStates: %v", err)
	}
	return saved, last
}

func (f *fixture) saveStates(now time.Time, changes ...*sundial.TaskState) {
	f.t.Helper()
	if err := f.s.TaskStateSave(f.ctx, changes, now); err != nil {
		f.t.Fatalf("TaskStateSave: %v", err)
	}
}

// eqState fails t unless got is want, its times to the microsecond.
func eqState(t *testing.T, what string, got *sundial.TaskState, want sundial.TaskState) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no saved state, want %+v", what, want)
	}
	g := *got
	for _, p := range []**time.Time{&g.LastSuccessAt, &g.LastFailureAt, &g.FailingSince, &want.LastSuccessAt,
		&want.LastFailureAt, &want.FailingSince} {
		*p = normTimePtr(*p)
	}
	g.UpdatedAt, want.UpdatedAt = normTime(g.UpdatedAt), normTime(want.UpdatedAt)
	if len(g.Lags) == 0 && len(want.Lags) == 0 {
		g.Lags, want.Lags = nil, nil
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("%s: saved state\n%+v\nwant\n%+v", what, g, want)
	}
}

func testTaskStateSave(t *testing.T, open Opener) {
	f := setup(t, open)
	a, b, gone := f.task("a"), f.task("b"), f.task("gone")

	saved, last := f.states(at(0))
	if len(saved) != 0 || len(last) != 0 {
		t.Fatalf("TaskStates of no task: %v %v", saved, last)
	}
	saved, last = f.states(at(0), a.ID, b.ID)
	if len(saved) != 0 || len(last) != 0 {
		t.Fatalf("TaskStates before any save: %v %v", saved, last)
	}

	// A first save makes each task's row; the changes of one task merge
	// in order; an ID no task has is ignored.
	fa := failureAt(a.ID, at(10))
	fa.AddLag(at(9), 15*time.Millisecond)
	fa.AddLag(at(8), -2*time.Millisecond)
	f.saveStates(at(11), fa, successAt(b.ID, at(10)), failureAt(a.ID, at(12)), failureAt(999_999, at(10)))
	saved, _ = f.states(at(20), a.ID, b.ID, 999_999)
	eqState(t, "a", saved[a.ID], sundial.TaskState{TaskID: a.ID, LastFailureAt: ptr(at(12)), ConsecutiveFailures: 2,
		FailingSince: ptr(at(10)), Lags: []sundial.LagSample{{Scheduled: at(8), Lag: -2 * time.Millisecond},
			{Scheduled: at(9), Lag: 15 * time.Millisecond}}, UpdatedAt: at(11)})
	eqState(t, "b", saved[b.ID], sundial.TaskState{TaskID: b.ID, LastSuccessAt: ptr(at(10)), UpdatedAt: at(11)})
	if len(saved) != 2 {
		t.Fatalf("saved states of %d tasks, want 2", len(saved))
	}

	// A later save merges into the row: a success ends the failures in a
	// row, a failure adds to them; the lags keep the newest 100 fires.
	change := successAt(a.ID, at(30))
	for i := range 150 {
		change.AddLag(at(100+i), time.Duration(i)*time.Millisecond)
	}
	f.saveStates(at(31), change, failureAt(b.ID, at(40)), failureAt(b.ID, at(41)))
	saved, _ = f.states(at(50), a.ID, b.ID)
	eqState(t, "b", saved[b.ID], sundial.TaskState{TaskID: b.ID, LastSuccessAt: ptr(at(10)), LastFailureAt: ptr(at(41)),
		ConsecutiveFailures: 2, FailingSince: ptr(at(40)), UpdatedAt: at(31)})
	got := saved[a.ID]
	if got.ConsecutiveFailures != 0 || got.FailingSince != nil || !got.LastSuccessAt.Equal(at(30)) ||
		!got.LastFailureAt.Equal(at(12)) || len(got.Lags) != sundial.MaxLagSamples ||
		!got.Lags[0].Scheduled.Equal(at(150)) || got.Lags[99].Lag != 149*time.Millisecond {
		t.Fatalf("a after a success and 150 lags: %+v", got)
	}

	// A deleted task's row is kept as it was, and no longer saved; a
	// task deleted before its first save gets none.
	f.saveStates(at(60), failureAt(gone.ID, at(60)))
	if err := f.s.TaskDelete(f.ctx, gone.ID, at(61)); err != nil {
		t.Fatal(err)
	}
	deleted := f.task("deleted")
	if err := f.s.TaskDelete(f.ctx, deleted.ID, at(61)); err != nil {
		t.Fatal(err)
	}
	f.saveStates(at(62), failureAt(gone.ID, at(62)), failureAt(deleted.ID, at(62)), successAt(a.ID, at(62)))
	saved, _ = f.states(at(70), gone.ID, deleted.ID, a.ID)
	eqState(t, "deleted task", saved[gone.ID], sundial.TaskState{TaskID: gone.ID, LastFailureAt: ptr(at(60)),
		ConsecutiveFailures: 1, FailingSince: ptr(at(60)), UpdatedAt: at(60)})
	if saved[deleted.ID] != nil || !saved[a.ID].LastSuccessAt.Equal(at(62)) {
		t.Fatalf("after a save with deleted tasks: %+v", saved)
	}
	if err := f.s.TaskStateSave(f.ctx, nil, at(80)); err != nil {
		t.Fatalf("TaskStateSave of nothing: %v", err)
	}

	// A success another node recorded and has not saved (a run that
	// succeeded, ended at 201 s) ends the saved failures in a row before a
	// change's failures add to them.
	flaky := f.task("flaky")
	f.saveStates(at(100), failureAt(flaky.ID, at(100)), failureAt(flaky.ID, at(110)))
	f.run(flaky.ID, at(200), sundial.RunSuccess) // ends at 201 s
	f.run(flaky.ID, at(150), sundial.RunFailed)  // an older success's neighbours do not matter
	f.saveStates(at(210), failureAt(flaky.ID, at(205)), failureAt(flaky.ID, at(206)))
	saved, _ = f.states(at(220), flaky.ID)
	eqState(t, "a task whose success was not saved", saved[flaky.ID], sundial.TaskState{TaskID: flaky.ID,
		LastSuccessAt: ptr(at(201)), LastFailureAt: ptr(at(206)), ConsecutiveFailures: 2, FailingSince: ptr(at(205)),
		UpdatedAt: at(210)})

	// One save of tasks with rows and without: those without get their
	// first states, the others' changes merge into theirs (flaky's
	// failures in a row after its latest success); a deleted task without
	// a row gets none, in a save of new tasks alone too.
	fresh, other, dropped := f.task("fresh"), f.task("other"), f.task("dropped")
	if err := f.s.TaskDelete(f.ctx, dropped.ID, at(299)); err != nil {
		t.Fatal(err)
	}
	f.saveStates(at(302), failureAt(fresh.ID, at(300)), failureAt(dropped.ID, at(300)), failureAt(flaky.ID, at(300)),
		successAt(fresh.ID, at(301)))
	f.saveStates(at(303), failureAt(dropped.ID, at(303)), failureAt(other.ID, at(303)))
	saved, _ = f.states(at(310), fresh.ID, other.ID, dropped.ID, flaky.ID)
	eqState(t, "a new task in a save with a saved one", saved[fresh.ID], sundial.TaskState{TaskID: fresh.ID,
		LastSuccessAt: ptr(at(301)), LastFailureAt: ptr(at(300)), UpdatedAt: at(302)})
	eqState(t, "a saved task in a save with a new one", saved[flaky.ID], sundial.TaskState{TaskID: flaky.ID,
		LastSuccessAt: ptr(at(201)), LastFailureAt: ptr(at(300)), ConsecutiveFailures: 3, FailingSince: ptr(at(205)),
		UpdatedAt: at(302)})
	eqState(t, "a new task in a save with a deleted one", saved[other.ID], sundial.TaskState{TaskID: other.ID,
		LastFailureAt: ptr(at(303)), ConsecutiveFailures: 1, FailingSince: ptr(at(303)), UpdatedAt: at(303)})
	if saved[dropped.ID] != nil {
		t.Fatalf("a task deleted before its first save: saved %+v", saved[dropped.ID])
	}
}

func testTaskStatesLastRun(t *testing.T, open Opener) {
	f := setup(t, open)
	a, b, c, none := f.task("a"), f.task("b"), f.task("c"), f.task("none")
	now := at(100)

	// a: its runs that ended, then one under way, one waiting for a retry
	// (SCHEDULED, due now) and fires planned ahead, some of them
	// committed RUNNING: the latest that ended is the FAILED one.
	f.run(a.ID, at(10), sundial.RunSuccess)
	failed := f.run(a.ID, at(20), sundial.RunFailed)
	f.run(a.ID, at(5), sundial.RunSkipped)
	f.run(a.ID, at(30), sundial.RunRunning)
	f.run(a.ID, at(40), sundial.RunScheduled, func(r *sundial.Run) { r.Deliveries = 1 })
	for i := range 50 {
		status := sundial.RunScheduled
		if i < 3 {
			status = sundial.RunRunning
		}
		f.run(a.ID, now.Add(time.Duration(i+1)*time.Second), status)
	}
	// b: a skip is a run that ended; two runs at one instant (a manual
	// trigger): the one with the larger ID.
	f.run(b.ID, at(10), sundial.RunSuccess)
	f.run(b.ID, at(50), sundial.RunSuccess, withKey("manual:1"), manual)
	skipped := f.run(b.ID, at(50), sundial.RunSkipped, withKey("manual:2"), manual)
	// c: its only run that ended is scheduled after now: not yet.
	f.run(c.ID, now.Add(time.Second), sundial.RunSuccess)

	_, last := f.states(now, a.ID, b.ID, c.ID, none.ID)
	lastOf := func(r *sundial.Run) *sundial.LastRun {
		return &sundial.LastRun{ID: r.ID, Status: r.Status, SkipReason: r.SkipReason, ScheduledTime: normTime(r.ScheduledTime),
			FinishedAt: normTimePtr(r.FinishedAt)}
	}
	for _, tc := range []struct {
		name string
		task int64
		want *sundial.LastRun
	}{
		{"a", a.ID, lastOf(failed)},
		{"b", b.ID, lastOf(skipped)},
		{"c", c.ID, nil},
		{"none", none.ID, nil},
	} {
		if got := last[tc.task]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: last run %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if lr := last[b.ID]; lr == nil || lr.SkipReason != sundial.SkipOverlap || lr.FinishedAt == nil {
		t.Errorf("b's last run %+v, want a SKIPPED (OVERLAP) one that finished", lr)
	}
	if _, last := f.states(at(15), a.ID); last[a.ID] == nil || last[a.ID].Status != sundial.RunSuccess {
		t.Errorf("a's last run seen at 15 s: %+v, want the SUCCESS at 10 s", last[a.ID])
	}
}

// testTaskStatesMany reads the states of 1,000 tasks, as a page of
// GET /tasks?limit=1000 does: each has a saved state and runs.
func testTaskStatesMany(t *testing.T, open Opener) {
	f := setup(t, open)
	const n = 1000
	ts := make([]*sundial.Task, n)
	for i := range ts {
		ts[i] = newTask(fmt.Sprintf("t%04d", i))
	}
	if _, err := f.s.TaskCreateMany(f.ctx, ts, t0); err != nil {
		t.Fatal(err)
	}
	ids := taskIDs(ts)
	changes := make([]*sundial.TaskState, n)
	for i, tk := range ts {
		changes[i] = successAt(tk.ID, at(1))
		for j := range sundial.MaxLagSamples {
			changes[i].AddLag(at(j), time.Duration(j)*time.Millisecond)
		}
		if i%10 == 0 {
			f.run(tk.ID, at(5), sundial.RunFailed)
		}
	}
	f.saveStates(at(2), changes...)
	start := time.Now()
	saved, last := f.states(at(10), ids...)
	t.Logf("TaskStates of %d tasks: %s", n, time.Since(start))
	if len(saved) != n || len(last) != n/10 {
		t.Fatalf("TaskStates of %d tasks: %d saved states, %d last runs; want %d and %d", n, len(saved), len(last), n, n/10)
	}
	for i, tk := range ts {
		h := tk.Health(saved[tk.ID], last[tk.ID], at(10))
		if h.LagSamples != sundial.MaxLagSamples || *h.LagP95MS != 94 || (i%10 == 0) != (h.ConsecutiveFailures == 1) {
			t.Fatalf("task %d: %+v", i, h)
		}
	}
}

// testClusterTaskStateSave: nodes saving changes of the same tasks at
// once, the tasks' rows made by the first of them: every change is
// merged, none lost.
func testClusterTaskStateSave(t *testing.T, b Backend) {
	c := setupCluster(t, b, 2)
	tasks := []*sundial.Task{c.task("a"), c.task("b"), c.task("c")}
	const n = 8
	errs := make([]error, n)
	race(n, func(i int) {
		// Node i's failures, of every task, in reverse order on odd nodes.
		var changes []*sundial.TaskState
		for j := range tasks {
			tk := tasks[j]
			if i%2 == 1 {
				tk = tasks[len(tasks)-1-j]
			}
			ch := failureAt(tk.ID, at(10+i))
			ch.AddLag(at(i), time.Duration(i)*time.Millisecond)
			changes = append(changes, ch)
		}
		errs[i] = c.node(i).TaskStateSave(c.ctx, changes, at(20))
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: TaskStateSave: %v", i, err)
		}
	}
	saved, _, err := c.node(0).TaskStates(c.ctx, taskIDs(tasks), at(30))
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tasks {
		st := saved[tk.ID]
		if st == nil || st.ConsecutiveFailures != n || len(st.Lags) != n || !st.FailingSince.Equal(at(10)) ||
			!st.LastFailureAt.Equal(at(10+n-1)) {
			t.Fatalf("task %s after %d concurrent saves of a failure each: %+v", tk.Name, n, st)
		}
	}
}
