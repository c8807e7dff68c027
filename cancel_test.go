package sundial

import (
	"reflect"
	"testing"
)

func TestCancel(t *testing.T) {
	once := &Task{ID: 1, RunAt: tp(0), Status: TaskEnabled}
	for _, tc := range []struct {
		from   RunStatus
		to     RunStatus // "" for EConflict
		flag   bool
		trig   Trigger
		ending bool
	}{
		{RunScheduled, RunCanceled, false, TriggerSchedule, true},
		{RunQueued, RunCanceled, false, TriggerSchedule, true},
		{RunScheduled, RunCanceled, false, TriggerManual, false},
		{RunRunning, RunRunning, true, TriggerSchedule, false},
		{RunWaitingCallback, RunWaitingCallback, true, TriggerSchedule, false},
		{RunInterrupted, RunInterrupted, true, TriggerSchedule, false},
		{RunSuccess, "", false, TriggerSchedule, false},
		{RunSkipped, "", false, TriggerSchedule, false},
	} {
		r := aRun(tc.from, func(r *Run) { r.Trigger = tc.trig })
		c, err := Cancel(once, r, ts(50))
		if tc.to == "" {
			if ErrorCode(err) != EConflict || !c.Empty() || r.Status != tc.from {
				t.Errorf("Cancel of a %s run = %v, %+v; want EConflict and nothing", tc.from, err, c)
			}
			continue
		}
		want := aRun(tc.to, func(r *Run) { r.Trigger, r.CancelRequested, r.UpdatedAt = tc.trig, tc.flag, ts(50) })
		if tc.to == RunCanceled {
			want.FinishedAt = tp(50)
		}
		eqRunRule(t, "cancelled "+string(tc.from), r, want)
		if err != nil || len(c.Update) != 1 || c.Update[0] != r {
			t.Errorf("Cancel of a %s run: %v, %+v", tc.from, err, c)
		}
		var ends []TaskEnd
		if tc.ending {
			ends = []TaskEnd{{TaskID: 1, Status: TaskFailed, At: ts(50)}}
		}
		if !reflect.DeepEqual(c.Ends, ends) {
			t.Errorf("Cancel of a %s %s run ends %+v, want %+v", tc.trig, tc.from, c.Ends, ends)
		}
	}
	// A cron task, or none: nothing ends.
	if c, _ := Cancel(nil, aRun(RunScheduled), ts(50)); len(c.Ends) != 0 {
		t.Errorf("Cancel without a task ends %+v", c.Ends)
	}
}
