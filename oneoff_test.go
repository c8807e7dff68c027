package sundial

import (
	"testing"
	"time"
)

func TestTaskEndOf(t *testing.T) {
	once := &Task{ID: 1, RunAt: tp(0), Status: TaskEnabled}
	cron := &Task{ID: 1, CronExpr: "* * * * * *", Status: TaskEnabled}
	// A bounded task whose last fire, at ts(0), is planned: no next fire.
	bounded := &Task{ID: 1, CronExpr: "* * * * * *", Status: TaskEnabled, MaxRuns: 3, FireCount: 3, CountedThrough: tp(0)}
	ahead := *bounded // its last fire, at ts(1), not yet planned
	ahead.FireCount, ahead.CountedThrough, ahead.NextFireTime = 2, tp(0), tp(1)
	later := *bounded // its last counted fire is later than the run
	later.CountedThrough = tp(1)
	endAt := &Task{ID: 1, CronExpr: "* * * * * *", Status: TaskEnabled, EndAt: tp(0), FireCount: 9, CountedThrough: tp(0)}
	for _, tc := range []struct {
		name   string
		t      *Task
		r      *Run
		status RunStatus
		want   TaskStatus
	}{
		{"success", once, aRun(RunRunning), RunSuccess, TaskCompleted},
		{"failure", once, aRun(RunRunning), RunFailed, TaskFailed},
		{"cancelled", once, aRun(RunScheduled), RunCanceled, TaskFailed},
		{"skipped", once, aRun(RunScheduled), RunSkipped, TaskFailed},
		{"timed out", once, aRun(RunWaitingCallback), RunFailedTimeout, TaskFailed},
		{"not final", once, aRun(RunRunning), RunInterrupted, ""},
		{"waiting", once, aRun(RunRunning), RunWaitingCallback, ""},
		{"manual run", once, aRun(RunRunning, func(r *Run) { r.Trigger = TriggerManual }), RunSuccess, ""},
		{"catch-up run", once, aRun(RunRunning, func(r *Run) { r.Trigger = TriggerCatchUp }), RunFailed, ""},
		{"cron task", cron, aRun(RunRunning), RunFailed, ""},
		{"no task", nil, aRun(RunRunning), RunFailed, ""},
		{"max_runs: last fire", bounded, aRun(RunRunning), RunSuccess, TaskCompleted},
		{"max_runs: last fire failed", bounded, aRun(RunRunning), RunFailed, TaskCompleted},
		{"max_runs: last fire skipped", bounded, aRun(RunScheduled), RunSkipped, TaskCompleted},
		{"max_runs: last catch-up fire", bounded, aRun(RunRunning, func(r *Run) { r.Trigger = TriggerCatchUp }), RunSuccess, TaskCompleted},
		{"max_runs: manual run", bounded, aRun(RunRunning, func(r *Run) { r.Trigger = TriggerManual }), RunSuccess, ""},
		{"max_runs: not final", bounded, aRun(RunRunning), RunInterrupted, ""},
		{"max_runs: a fire left", &ahead, aRun(RunRunning), RunSuccess, ""},
		{"max_runs: an earlier fire", &later, aRun(RunRunning), RunSuccess, ""},
		{"end_at: last fire", endAt, aRun(RunRunning), RunSuccess, TaskCompleted},
	} {
		if got := TaskEndOf(tc.t, tc.r, tc.status); got != tc.want {
			t.Errorf("%s: TaskEndOf = %q, want %q", tc.name, got, tc.want)
		}
	}
	for s, ok := range map[TaskStatus]bool{TaskCompleted: true, TaskFailed: true, TaskEnabled: false, TaskDisabled: false, "": false} {
		if err := CheckTaskEnd(s); (err == nil) != ok || (err != nil && ErrorCode(err) != EInvalid) {
			t.Errorf("CheckTaskEnd(%q) = %v", s, err)
		}
	}
}

func TestTaskEnd(t *testing.T) {
	tk := &Task{ID: 1, RunAt: tp(0), Status: TaskEnabled, Version: 4, NextFireTime: tp(0), UpdatedAt: ts(-9)}
	if !tk.End(TaskCompleted, ts(5)) || tk.Status != TaskCompleted || tk.Version != 5 || tk.NextFireTime != nil ||
		!tk.UpdatedAt.Equal(ts(5)) {
		t.Errorf("ended task = %+v", tk)
	}
	// Ended, or disabled meanwhile: stays as it is.
	if tk.End(TaskFailed, ts(6)) || tk.Status != TaskCompleted || tk.Version != 5 {
		t.Errorf("a task ended twice: %+v", tk)
	}
	off := &Task{ID: 1, RunAt: tp(0), Status: TaskDisabled, Version: 2}
	if off.End(TaskFailed, ts(6)) || off.Status != TaskDisabled || off.Version != 2 {
		t.Errorf("a disabled task ended: %+v", off)
	}
}

func TestTaskRewindAndDue(t *testing.T) {
	for _, tc := range []struct {
		name     string
		next, at *time.Time
		want     time.Time
	}{
		{"earlier", tp(10), tp(5), ts(5)},
		{"later", tp(10), tp(15), ts(10)},
		{"none", nil, tp(15), ts(15)},
	} {
		tk := &Task{NextFireTime: tc.next}
		tk.Rewind(*tc.at)
		if tk.NextFireTime == nil || !tk.NextFireTime.Equal(tc.want) {
			t.Errorf("%s: rewound to %v, want %v", tc.name, tk.NextFireTime, tc.want)
		}
	}
	for _, tc := range []struct {
		name   string
		status TaskStatus
		next   *time.Time
		want   bool
	}{
		{"due", TaskEnabled, tp(5), true},
		{"due at until", TaskEnabled, tp(10), true},
		{"later", TaskEnabled, tp(11), false},
		{"nothing to plan", TaskEnabled, nil, false},
		{"disabled", TaskDisabled, tp(5), false},
		{"ended", TaskCompleted, tp(5), false},
	} {
		if got := (&Task{Status: tc.status, NextFireTime: tc.next}).DueBy(ts(10)); got != tc.want {
			t.Errorf("%s: DueBy = %v, want %v", tc.name, got, tc.want)
		}
	}
}
