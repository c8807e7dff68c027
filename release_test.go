package sundial

import (
	"reflect"
	"testing"
	"time"
)

func TestRelease(t *testing.T) {
	planned := aRun(RunScheduled, func(r *Run) { r.ID, r.ScheduledTime = 1, ts(50) })
	planned2 := aRun(RunScheduled, func(r *Run) { r.ID, r.ScheduledTime = 2, ts(40) })
	catchUp := aRun(RunScheduled, func(r *Run) { r.ID, r.TaskID, r.Trigger, r.ScheduledTime = 3, 2, TriggerCatchUp, ts(60) })
	retry := aRun(RunScheduled, func(r *Run) { r.ID, r.Deliveries = 4, 1 })
	manual := aRun(RunScheduled, func(r *Run) { r.ID, r.Trigger = 5, TriggerManual })
	running := aRun(RunRunning, func(r *Run) { r.ID, r.Deliveries, r.StartedAt = 6, 2, tp(1) })
	queued := aRun(RunQueued, func(r *Run) { r.ID = 8 })
	waiting := aRun(RunWaitingCallback, func(r *Run) { r.ID = 9 })

	for r, want := range map[*Run]ReleaseAction{planned: ReleaseUnplan, catchUp: ReleaseUnplan, retry: ReleaseHandBack,
		manual: ReleaseMisfire, running: ReleaseInterrupt, queued: ReleaseKeep, waiting: ReleaseKeep} {
		if got := ReleaseOf(r); got != want {
			t.Errorf("ReleaseOf run %d = %d, want %d", r.ID, got, want)
		}
	}

	c := Release([]*Run{planned, planned2, catchUp, retry, manual, running, queued, waiting}, "gone", ts(100))
	if ids := c.DeleteIDs(); !reflect.DeepEqual(ids, []int64{1, 2, 3}) {
		t.Errorf("deleted %v, want the planned fires", ids)
	}
	if want := map[int64]time.Time{1: ts(40), 2: ts(60)}; !reflect.DeepEqual(c.Rewind, want) {
		t.Errorf("rewind %v, want %v", c.Rewind, want)
	}
	if len(c.Update) != 3 || c.Update[0] != retry || c.Update[1] != manual || c.Update[2] != running {
		t.Fatalf("updated %d runs, want the retry, the manual run and the running one", len(c.Update))
	}
	eqRunRule(t, "handed back", retry, aRun(RunScheduled, func(r *Run) { r.ID, r.Deliveries, r.NodeID, r.UpdatedAt = 4, 1, "", ts(100) }))
	eqRunRule(t, "misfire", manual, aRun(RunSkipped, func(r *Run) {
		r.ID, r.Trigger, r.SkipReason, r.MissedCount, r.Error, r.FinishedAt, r.UpdatedAt = 5, TriggerManual, SkipMisfire, 1, "gone", tp(100), ts(100)
	}))
	eqRunRule(t, "interrupted", running, aRun(RunInterrupted, func(r *Run) {
		r.ID, r.Deliveries, r.StartedAt, r.Error, r.FinishedAt, r.UpdatedAt, r.Fence = 6, 2, tp(1), "gone", tp(100), ts(100), 4
	}))
	want := []*Attempt{{RunID: 6, Delivery: 2, NodeID: "node-a", Status: RunInterrupted, Error: "gone", StartedAt: tp(1), FinishedAt: ts(100)}}
	if !reflect.DeepEqual(c.Attempts, want) {
		t.Errorf("attempts %+v, want %+v", c.Attempts, want)
	}
	if len(c.Ends) != 0 {
		t.Errorf("a release ended tasks: %+v", c.Ends)
	}
}

func TestUnplanMissed(t *testing.T) {
	missed := func(r *Run, tk *Task) bool { return r.ID != 12 }
	mr := []*Run{
		aRun(RunScheduled, func(r *Run) { r.ID, r.ScheduledTime, r.DueAt = 10, ts(5), ts(5) }),
		aRun(RunScheduled, func(r *Run) { r.ID, r.Trigger = 11, TriggerCatchUp }),
		aRun(RunScheduled, func(r *Run) { r.ID = 12 }),
		aRun(RunScheduled, func(r *Run) { r.ID, r.DueAt = 13, ts(20) }),
		aRun(RunRunning, func(r *Run) { r.ID = 14 }),
		aRun(RunScheduled, func(r *Run) { r.ID, r.Deliveries = 15, 1 }),
	}
	c := UnplanMissed(mr, nil, ts(10), nil, ts(30), missed)
	if ids := c.DeleteIDs(); !reflect.DeepEqual(ids, []int64{10}) {
		t.Errorf("UnplanMissed deleted %v, want 10", ids)
	}
	if len(c.Update) != 0 {
		t.Errorf("UnplanMissed updated %d runs, want none", len(c.Update))
	}
}

// TestUnplanMissedBeforeTaken: a task is not rewound to a missed fire
// before one of its fires that was taken: each missed fire before the
// latest taken one is recorded MISFIRE on its own; those after it are
// unplanned, the task rewound to the first. Under FULL, the missed fire
// before is due again, to run late, instead.
func TestUnplanMissedBeforeTaken(t *testing.T) {
	all := func(*Run, *Task) bool { return true }
	fire := func(id int64, at int) *Run {
		return aRun(RunScheduled, func(r *Run) { r.ID, r.ScheduledTime, r.DueAt = id, ts(at), ts(at) })
	}
	mr := []*Run{fire(1, 3), fire(2, 4), fire(3, 6), fire(4, 7)}
	c := UnplanMissed(mr, nil, ts(10), map[int64]time.Time{mr[0].TaskID: ts(5)}, ts(30), all)
	if ids := c.DeleteIDs(); !reflect.DeepEqual(ids, []int64{3, 4}) {
		t.Errorf("deleted %v, want 3 and 4", ids)
	}
	if at := c.Rewind[mr[0].TaskID]; !at.Equal(ts(6)) {
		t.Errorf("rewound to %v, want %v", at, ts(6))
	}
	if len(c.Update) != 2 {
		t.Fatalf("recorded %d runs missed on their own, want 2", len(c.Update))
	}
	for i, r := range c.Update {
		if r.ID != int64(i+1) || r.Status != RunSkipped || r.SkipReason != SkipMisfire || r.MissedCount != 1 ||
			r.FinishedAt == nil || !r.FinishedAt.Equal(ts(30)) {
			t.Errorf("run %d: %s %s count %d finished %v, want SKIPPED MISFIRE 1 at %v",
				r.ID, r.Status, r.SkipReason, r.MissedCount, r.FinishedAt, ts(30))
		}
	}

	full := &Task{ID: mr[0].TaskID, CatchUpMode: CatchUpFull}
	r := fire(5, 3)
	r.NodeID, r.Fence = "node-b", 4
	c = UnplanMissed([]*Run{r}, map[int64]*Task{full.ID: full}, ts(10), map[int64]time.Time{full.ID: ts(5)}, ts(30), all)
	if len(c.Delete) != 0 || len(c.Rewind) != 0 || len(c.Update) != 1 {
		t.Fatalf("FULL: deleted %v, rewound %v, updated %d; want one run updated", c.DeleteIDs(), c.Rewind, len(c.Update))
	}
	if r.Status != RunScheduled || !r.DueAt.Equal(ts(30)) || r.NodeID != "" || r.Fence != 5 {
		t.Errorf("FULL: the missed fire became %s due %v node %q fence %d; want SCHEDULED, due %v, of no node, fence 5",
			r.Status, r.DueAt, r.NodeID, r.Fence, ts(30))
	}
}

func TestRedeliver(t *testing.T) {
	once := &Task{ID: 1, RunAt: tp(0), Status: TaskEnabled}
	cron := &Task{ID: 2, CronExpr: "* * * * * *", Status: TaskEnabled}
	gone := &Task{ID: 3, RunAt: tp(0), Status: TaskEnabled}
	tasks := map[int64]*Task{1: once, 2: cron, 3: gone}
	deleted := map[int64]bool{3: true}
	intr := func(id, task int64, mods ...func(*Run)) *Run {
		return aRun(RunInterrupted, append([]func(*Run){func(r *Run) {
			r.ID, r.TaskID, r.Deliveries, r.Error, r.FinishedAt = id, task, 1, "node x died", tp(1)
		}}, mods...)...)
	}
	a := intr(1, 2)
	used := intr(2, 1, func(r *Run) { r.Deliveries = 3 })
	b := intr(3, 2)
	orphan := intr(4, 3)
	asked := intr(5, 2, func(r *Run) { r.CancelRequested = true })
	c3 := intr(6, 2)
	notInterrupted := aRun(RunScheduled, func(r *Run) { r.ID = 7 })

	again, c := Redeliver([]*Run{a, used, b, orphan, asked, c3, notInterrupted}, tasks, deleted, "node-c", 3, 2, ts(50))
	if len(again) != 2 || again[0] != a || again[1] != b {
		t.Fatalf("delivered again %d runs, want runs 1 and 3", len(again))
	}
	eqRunRule(t, "again", a, intr(1, 2, func(r *Run) {
		r.Status, r.NodeID, r.Fence, r.FinishedAt, r.DueAt, r.UpdatedAt = RunScheduled, "node-c", 4, nil, ts(50), ts(50)
	}))
	for _, tc := range []struct {
		r   *Run
		err string
	}{
		{used, "node x died; no delivery left (3 of 3 made)"},
		{orphan, "node x died; its task was deleted"},
		{asked, "node x died; its cancellation was requested"},
	} {
		if tc.r.Status != RunFailed || tc.r.Error != tc.err || !tc.r.FinishedAt.Equal(ts(50)) || !tc.r.UpdatedAt.Equal(ts(50)) {
			t.Errorf("refused run %d: %s %q finished %v; want FAILED %q at %v", tc.r.ID, tc.r.Status, tc.r.Error,
				tc.r.FinishedAt, tc.err, ts(50))
		}
	}
	if c3.Status != RunInterrupted {
		t.Errorf("run 6, beyond the limit, is %s: want it left INTERRUPTED", c3.Status)
	}
	// The one-off tasks whose scheduled runs failed fail too, the deleted
	// one included (its status is its own, deleted or not).
	wantEnds := []TaskEnd{{TaskID: 1, Status: TaskFailed, At: ts(50)}, {TaskID: 3, Status: TaskFailed, At: ts(50)}}
	if !reflect.DeepEqual(c.Ends, wantEnds) {
		t.Errorf("ends %+v, want %+v", c.Ends, wantEnds)
	}
	if len(c.Update) != 5 {
		t.Errorf("updated %d runs, want 5", len(c.Update))
	}
	if got := RedeliveryError(&Run{}, "its task was deleted"); got != "its task was deleted" {
		t.Errorf("RedeliveryError without a reason = %q", got)
	}
}
