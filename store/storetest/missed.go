package storetest

import (
	"testing"

	"github.com/sundialhq/sundial"
)

// testRunUnplanMissed: the planned fires found too late to start are
// deleted whoever holds them, and their tasks rewound, so that the planner
// counts them with the fires it never planned; so are the later fires
// their tasks have planned (and never delivered), which the planner then
// plans anew (sundial.RunChanges.Rewind); nothing else is touched. A task
// is not rewound before a later fire of it that was taken (started while
// an earlier one waited): the missed fire before it is recorded MISFIRE on
// its own (sundial.UnplanMissed).
func testRunUnplanMissed(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("late", withNext(at(100)))
	early := f.task("rewound-already", withNext(at(-60)))
	other := f.task("in-time", withNext(at(100)))

	unheld := f.run(tk.ID, at(-30), sundial.RunScheduled, withNode(""))
	held := f.run(tk.ID, at(-20), sundial.RunScheduled, withNode("node-b"))
	spared := f.run(other.ID, at(-10), sundial.RunScheduled, withNode("")) // missed says no
	recent := f.run(other.ID, at(-2), sundial.RunScheduled, withNode(""))  // due after before
	// The late task's later fires: planned ones go with the rewind,
	// delivered and manual ones stay.
	laterPlanned := f.run(tk.ID, at(-3), sundial.RunScheduled, withNode(""), withKey("later"))
	laterHeld := f.run(tk.ID, at(50), sundial.RunScheduled, withNode("node-b"), withKey("later-held"))
	laterCatchUp := f.run(tk.ID, at(-4), sundial.RunScheduled, withKey("later-c"), func(r *sundial.Run) { r.Trigger = sundial.TriggerCatchUp })
	laterManualRunning := f.run(tk.ID, at(-1), sundial.RunRunning, manual, withKey("later-started"))
	laterManual := f.run(tk.ID, at(60), sundial.RunScheduled, manual, withKey("later-m"))
	retry := f.retrying(tk.ID, at(-40), at(-35)) // delivered before
	manualRun := f.run(tk.ID, at(-31), sundial.RunScheduled, manual, withKey("m"))
	catchUp := f.run(tk.ID, at(-32), sundial.RunScheduled, withKey("c"), func(r *sundial.Run) { r.Trigger = sundial.TriggerCatchUp })
	started := f.run(tk.ID, at(-33), sundial.RunRunning, withKey("started"))
	otherTask := f.run(early.ID, at(-25), sundial.RunScheduled, withNode(""))
	// A task whose fire of -28 was started while that of -29 waited: a
	// calendar's skip of -26 is not a fire taken.
	tk2 := f.task("taken", withNext(at(100)))
	beforeTaken := f.run(tk2.ID, at(-29), sundial.RunScheduled, withNode(""), withKey("before-taken"))
	taken := f.run(tk2.ID, at(-28), sundial.RunRunning, withKey("taken"))
	afterTaken := f.run(tk2.ID, at(-27), sundial.RunScheduled, withNode("node-b"), withKey("after-taken"))
	calendar := f.run(tk2.ID, at(-26), sundial.RunScheduled, withKey("calendar"), func(r *sundial.Run) {
		r.Status, r.SkipReason, r.NodeID, r.FinishedAt = sundial.RunSkipped, sundial.SkipCalendar, "", &r.ScheduledTime
	})

	var asked []int64
	looked, deleted, err := f.s.RunUnplanMissed(f.ctx, at(-5), 100, func(r *sundial.Run, task *sundial.Task) bool {
		asked = append(asked, r.ID)
		if task == nil || task.ID != r.TaskID {
			t.Errorf("run %d asked about with task %v", r.ID, task)
		}
		return r.ID != spared.ID
	})
	if err != nil {
		t.Fatalf("RunUnplanMissed: %v", err)
	}
	eqIDs(t, "runs asked about, oldest due first", asked,
		[]int64{unheld.ID, beforeTaken.ID, afterTaken.ID, otherTask.ID, held.ID, spared.ID})
	if looked != 6 || deleted != 5 {
		t.Errorf("RunUnplanMissed = %d looked at, %d unplanned; want 6, 5", looked, deleted)
	}
	for _, r := range []*sundial.Run{unheld, held, otherTask, afterTaken} {
		f.gone("a missed planned fire", r.ID)
	}
	for _, r := range []*sundial.Run{laterPlanned, laterHeld, laterCatchUp} {
		f.gone("a later planned fire of a rewound task", r.ID)
	}
	if got := f.get(beforeTaken.ID); got.Status != sundial.RunSkipped || got.SkipReason != sundial.SkipMisfire ||
		got.MissedCount != 1 || got.FinishedAt == nil {
		t.Errorf("the missed fire before a taken one became %s %s count %d finished %v; want SKIPPED MISFIRE 1, finished",
			got.Status, got.SkipReason, got.MissedCount, got.FinishedAt)
	}
	for _, r := range []*sundial.Run{spared, recent, retry, manualRun, catchUp, started, laterManualRunning, laterManual, taken, calendar} {
		if got := f.get(r.ID); got.Status != r.Status || got.Fence != r.Fence {
			t.Errorf("run %d (%s %s) became %s fence %d", r.ID, r.Trigger, r.Status, got.Status, got.Fence)
		}
	}
	eqTime(t, "rewound next fire", f.getTask(tk.ID).NextFireTime, at(-30))
	eqTime(t, "next fire already earlier", f.getTask(early.ID).NextFireTime, at(-60))
	eqTime(t, "next fire rewound past the fire taken only", f.getTask(tk2.ID).NextFireTime, at(-27))
	eqTime(t, "next fire of a task none of whose fires was missed", f.getTask(other.ID).NextFireTime, at(100))

	// The limit bounds the runs looked at, oldest first.
	a := f.run(early.ID, at(-50), sundial.RunScheduled, withNode(""), withKey("a"))
	b := f.run(other.ID, at(-49), sundial.RunScheduled, withNode("node-c"), withKey("b"))
	looked, deleted, err = f.s.RunUnplanMissed(f.ctx, at(-5), 1, func(*sundial.Run, *sundial.Task) bool { return true })
	if err != nil || looked != 1 || deleted != 1 {
		t.Fatalf("RunUnplanMissed with limit 1 = %d, %d, %v; want 1, 1", looked, deleted, err)
	}
	f.gone("the oldest missed fire", a.ID)
	if got := f.get(b.ID); got.Status != sundial.RunScheduled {
		t.Errorf("run %d past the limit became %s", b.ID, got.Status)
	}
}
