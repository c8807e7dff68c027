package sundial

import (
	"reflect"
	"testing"
	"time"
)

func TestRunChangesAdd(t *testing.T) {
	a := RunChanges{Update: []*Run{{ID: 1}}, Rewind: map[int64]time.Time{1: ts(10)},
		Ends: []TaskEnd{{TaskID: 1, Status: TaskFailed, At: ts(1)}}}
	b := RunChanges{Delete: []*Run{{ID: 2}}, Attempts: []*Attempt{{RunID: 3}},
		Rewind: map[int64]time.Time{1: ts(5), 2: ts(20)},
		Ends:   []TaskEnd{{TaskID: 1, Status: TaskCompleted, At: ts(2)}, {TaskID: 2, Status: TaskFailed, At: ts(2)}}}
	a.Add(b)
	if len(a.Update) != 1 || len(a.Delete) != 1 || len(a.Attempts) != 1 {
		t.Errorf("added %+v", a)
	}
	if want := map[int64]time.Time{1: ts(5), 2: ts(20)}; !reflect.DeepEqual(a.Rewind, want) {
		t.Errorf("rewind %v, want %v", a.Rewind, want)
	}
	if want := []TaskEnd{{TaskID: 1, Status: TaskFailed, At: ts(1)}, {TaskID: 2, Status: TaskFailed, At: ts(2)}}; !reflect.DeepEqual(a.Ends, want) {
		t.Errorf("ends %+v, want %+v", a.Ends, want)
	}
	var empty RunChanges
	if !empty.Empty() || a.Empty() {
		t.Error("Empty is wrong")
	}
}

// TestRunChangesRewoundAway: a rewind takes the task's later planned fires
// with it, and nothing delivered, manual, earlier or of another task.
func TestRunChangesRewoundAway(t *testing.T) {
	c := RunChanges{Rewind: map[int64]time.Time{1: ts(10)}}
	planned := func(task int64, at int, mods ...func(*Run)) *Run {
		r := &Run{TaskID: task, ScheduledTime: ts(at), Status: RunScheduled, Trigger: TriggerSchedule}
		for _, m := range mods {
			m(r)
		}
		return r
	}
	for _, tt := range []struct {
		name string
		r    *Run
		want bool
	}{
		{"later planned fire", planned(1, 11), true},
		{"later catch-up run", planned(1, 12, func(r *Run) { r.Trigger = TriggerCatchUp }), true},
		{"the rewind's own fire", planned(1, 10), false},
		{"earlier fire", planned(1, 9), false},
		{"later delivered fire", planned(1, 11, func(r *Run) { r.Deliveries = 1 }), false},
		{"later running fire", planned(1, 11, func(r *Run) { r.Status = RunRunning }), false},
		{"later manual trigger", planned(1, 11, func(r *Run) { r.Trigger = TriggerManual }), false},
		{"another task's fire", planned(2, 11), false},
	} {
		if got := c.RewoundAway(tt.r); got != tt.want {
			t.Errorf("%s: RewoundAway = %v, want %v", tt.name, got, tt.want)
		}
	}
}
