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
