package sundial

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

var stateT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func sec(n int) time.Time { return stateT0.Add(time.Duration(n) * time.Second) }

func secPtr(n int) *time.Time { t := sec(n); return &t }

// outcome is one run that ended, for the tests: its status and when.
type testOutcome struct {
	status RunStatus
	at     int
}

func stateOf(outs ...testOutcome) *TaskState {
	s := &TaskState{}
	for _, o := range outs {
		s.Record(o.status, sec(o.at))
	}
	return s
}

// want is the state the outcomes make, worked out the plain way: the
// latest of each, and the failures after the latest success.
func wantState(outs []testOutcome) TaskState {
	var w TaskState
	for _, o := range outs {
		at := secPtr(o.at)
		switch {
		case o.status == RunSuccess && (w.LastSuccessAt == nil || at.After(*w.LastSuccessAt)):
			w.LastSuccessAt = at
		case o.status.Failure() && (w.LastFailureAt == nil || at.After(*w.LastFailureAt)):
			w.LastFailureAt = at
		}
	}
	for _, o := range outs {
		if o.status.Failure() && (w.LastSuccessAt == nil || sec(o.at).After(*w.LastSuccessAt)) {
			w.ConsecutiveFailures++
			if w.FailingSince == nil || sec(o.at).Before(*w.FailingSince) {
				w.FailingSince = secPtr(o.at)
			}
		}
	}
	return w
}

func sameHealth(a, b TaskState) bool {
	eq := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	return eq(a.LastSuccessAt, b.LastSuccessAt) && eq(a.LastFailureAt, b.LastFailureAt) &&
		eq(a.FailingSince, b.FailingSince) && a.ConsecutiveFailures == b.ConsecutiveFailures
}

func TestTaskStateRecord(t *testing.T) {
	t.Parallel()
	F, S, K := RunFailed, RunSuccess, RunSkipped
	for _, tc := range []struct {
		name string
		outs []testOutcome
		n    int
	}{
		{"none", nil, 0},
		{"failures", []testOutcome{{F, 1}, {RunTimeout, 2}, {RunCanceled, 3}}, 3},
		{"a success ends them", []testOutcome{{F, 1}, {F, 2}, {S, 3}}, 0},
		{"failures after a success", []testOutcome{{S, 1}, {F, 2}, {RunFailedTimeout, 3}}, 2},
		{"skips count for nothing", []testOutcome{{F, 1}, {K, 2}, {F, 3}, {K, 4}}, 2},
		{"a skip ends nothing", []testOutcome{{S, 1}, {F, 2}, {K, 3}}, 1},
		{"out of order: an older success", []testOutcome{{F, 5}, {S, 3}}, 1},
		{"out of order: an older failure", []testOutcome{{S, 5}, {F, 3}}, 0},
	} {
		got := stateOf(tc.outs...)
		if want := wantState(tc.outs); !sameHealth(*got, want) || got.ConsecutiveFailures != tc.n {
			t.Errorf("%s: %+v, want %+v with %d in a row", tc.name, got, want, tc.n)
		}
	}
}

// TestTaskStateMergeSaves: a node that saves its outcomes now and then
// (each save a Merge of the outcomes since the last one into the saved
// state) ends with the state of all of them, wherever the saves fall.
func TestTaskStateMergeSaves(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	statuses := []RunStatus{RunSuccess, RunSuccess, RunFailed, RunTimeout, RunSkipped}
	for range 500 {
		outs := make([]testOutcome, rng.IntN(20))
		for i := range outs {
			outs[i] = testOutcome{statuses[rng.IntN(len(statuses))], i}
		}
		saved := &TaskState{}
		change := &TaskState{}
		for i, o := range outs {
			change.Record(o.status, sec(o.at))
			if rng.IntN(3) == 0 || i == len(outs)-1 {
				saved.Merge(change)
				change = &TaskState{}
			}
		}
		if want := wantState(outs); !sameHealth(*saved, want) {
			t.Fatalf("%v: saved %+v, want %+v", outs, saved, want)
		}
	}
}

// TestTaskStateMergeNodes: two nodes record the outcomes of one task and
// each saves its own; the saved state is the same in either order, and
// exact when neither node's failures in a row straddle the other's last
// success. (A node saves its failures within about a second, so only
// outcomes that close together can straddle.)
func TestTaskStateMergeNodes(t *testing.T) {
	t.Parallel()
	F, S := RunFailed, RunSuccess
	for _, tc := range []struct {
		name string
		a, b []testOutcome
		n    int // the failures in a row of the merge
	}{
		{"b's success after a's failures", []testOutcome{{F, 1}, {F, 2}}, []testOutcome{{S, 3}}, 0},
		{"b's failures after a's success", []testOutcome{{S, 1}, {F, 2}}, []testOutcome{{F, 3}, {F, 4}}, 3},
		{"a's failures after b's success", []testOutcome{{F, 5}, {F, 6}}, []testOutcome{{F, 1}, {S, 2}}, 2},
		// a's failures at 1 and 3 straddle b's success at 2: only the
		// last is known to come after it (exact here).
		{"straddling", []testOutcome{{F, 1}, {F, 3}}, []testOutcome{{S, 2}}, 1},
		// b's failures at 4, 6 and 8 straddle a's success at 5: two of
		// them came after it, one is counted (at least one did).
		{"straddling, counted short", []testOutcome{{F, 1}, {F, 3}, {S, 5}, {F, 7}}, []testOutcome{{S, 2}, {F, 4}, {F, 6}, {F, 8}}, 2},
	} {
		ab, ba := stateOf(tc.a...), stateOf(tc.b...)
		ab.Merge(stateOf(tc.b...))
		ba.Merge(stateOf(tc.a...))
		if !sameHealth(*ab, *ba) || !reflect.DeepEqual(ab.Lags, ba.Lags) {
			t.Errorf("%s: a+b %+v, b+a %+v", tc.name, ab, ba)
		}
		if ab.ConsecutiveFailures != tc.n {
			t.Errorf("%s: %d failures in a row, want %d", tc.name, ab.ConsecutiveFailures, tc.n)
		}
		all := append(append([]testOutcome{}, tc.a...), tc.b...)
		if w := wantState(all); !ab.LastFailureAt.Equal(*w.LastFailureAt) ||
			(w.LastSuccessAt != nil) != (ab.LastSuccessAt != nil) {
			t.Errorf("%s: %+v, want the times of %+v", tc.name, ab, w)
		}
	}
}

func lagsOf(pairs ...int) []LagSample {
	var out []LagSample
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, LagSample{Scheduled: sec(pairs[i]), Lag: time.Duration(pairs[i+1]) * time.Millisecond})
	}
	return out
}

func TestTaskStateLags(t *testing.T) {
	t.Parallel()
	// One per fire, the larger lag where two saw the same fire; by time.
	a := &TaskState{Lags: lagsOf(1, 10, 3, 30, 5, 50)}
	a.Merge(&TaskState{Lags: lagsOf(2, 20, 3, 35, 6, 60)})
	if want := lagsOf(1, 10, 2, 20, 3, 35, 5, 50, 6, 60); !reflect.DeepEqual(a.Lags, want) {
		t.Errorf("merged lags %v, want %v", a.Lags, want)
	}
	// The newest MaxLagSamples are kept, added in order or not.
	s := &TaskState{}
	for i := range 250 {
		s.AddLag(sec(i), time.Duration(i)*time.Millisecond)
	}
	s.AddLag(sec(7), time.Second) // older than every sample kept: dropped
	s.AddLag(sec(200), time.Hour) // a fire seen again: the larger lag
	if len(s.Lags) != MaxLagSamples || !s.Lags[0].Scheduled.Equal(sec(150)) || !s.Lags[99].Scheduled.Equal(sec(249)) ||
		s.Lags[50].Lag != time.Hour {
		t.Errorf("lags %d, from %v to %v, [50] %v", len(s.Lags), s.Lags[0], s.Lags[len(s.Lags)-1], s.Lags[50])
	}
	other := &TaskState{}
	for i := 240; i < 400; i += 2 {
		other.AddLag(sec(i), 0)
	}
	s.Merge(other)
	if len(s.Lags) != MaxLagSamples || !s.Lags[99].Scheduled.Equal(sec(398)) {
		t.Errorf("merged: %d lags up to %v", len(s.Lags), s.Lags[len(s.Lags)-1])
	}
}

func TestTaskHealth(t *testing.T) {
	t.Parallel()
	now := sec(1000)
	task := &Task{CronExpr: "* * * * * *", Timezone: "UTC", Status: TaskEnabled}
	saved := &TaskState{LastSuccessAt: secPtr(10), LastFailureAt: secPtr(20), ConsecutiveFailures: 2,
		FailingSince: secPtr(15), Lags: lagsOf(1, 5, 2, 1, 3, 100, 4, 2)}
	run := func(st RunStatus, at int) *LastRun {
		return &LastRun{ID: 9, Status: st, ScheduledTime: sec(at - 1), FinishedAt: secPtr(at)}
	}
	for _, tc := range []struct {
		name             string
		saved            *TaskState
		last             *LastRun
		success, failure *time.Time
		n                int
	}{
		{"nothing yet", nil, nil, nil, nil, 0},
		{"saved only", saved, nil, secPtr(10), secPtr(20), 2},
		{"a success since", saved, run(RunSuccess, 30), secPtr(30), secPtr(20), 0},
		{"a failure since", saved, run(RunTimeout, 30), secPtr(10), secPtr(30), 3},
		{"the failure saved", saved, run(RunFailed, 20), secPtr(10), secPtr(20), 2},
		{"an older success", saved, run(RunSuccess, 5), secPtr(10), secPtr(20), 2},
		{"a skip", saved, run(RunSkipped, 30), secPtr(10), secPtr(20), 2},
		{"a first failure, none saved", nil, run(RunFailed, 30), nil, secPtr(30), 1},
		{"a first success, none saved", nil, run(RunSuccess, 30), secPtr(30), nil, 0},
	} {
		h := task.Health(tc.saved, tc.last, now)
		got := TaskState{LastSuccessAt: h.LastSuccessAt, LastFailureAt: h.LastFailureAt, ConsecutiveFailures: h.ConsecutiveFailures}
		want := TaskState{LastSuccessAt: tc.success, LastFailureAt: tc.failure, ConsecutiveFailures: tc.n}
		got.FailingSince, want.FailingSince = nil, nil
		if !sameHealth(got, want) || h.LastRun != tc.last {
			t.Errorf("%s: %+v, want %+v", tc.name, h, want)
		}
		if h.NextFireTime == nil || !h.NextFireTime.Equal(sec(1001)) {
			t.Errorf("%s: next fire %v, want %v", tc.name, h.NextFireTime, sec(1001))
		}
	}
	if saved.ConsecutiveFailures != 2 || !saved.LastSuccessAt.Equal(sec(10)) {
		t.Errorf("Health changed the saved state: %+v", saved)
	}
	// Percentiles by nearest rank: of 1, 2, 5, 100 ms, p50 is the 2nd
	// and p95 the 4th.
	h := task.Health(saved, nil, now)
	if h.LagSamples != 4 || *h.LagP50MS != 2 || *h.LagP95MS != 100 {
		t.Errorf("lags: %d samples, p50 %d, p95 %d", h.LagSamples, *h.LagP50MS, *h.LagP95MS)
	}
	var many TaskState
	for i := range 100 {
		many.AddLag(sec(i), time.Duration(100-i)*time.Millisecond) // 1 to 100 ms
	}
	if h := task.Health(&many, nil, now); *h.LagP50MS != 50 || *h.LagP95MS != 95 {
		t.Errorf("1..100 ms: p50 %d, p95 %d", *h.LagP50MS, *h.LagP95MS)
	}
	if h := task.Health(nil, nil, now); h.LagP50MS != nil || h.LagP95MS != nil || h.LagSamples != 0 {
		t.Errorf("no lags: %+v", h)
	}
	if h := (&Task{CronExpr: "* * * * * *", Status: TaskDisabled}).Health(nil, nil, now); h.NextFireTime != nil {
		t.Errorf("a disabled task's next fire: %v", h.NextFireTime)
	}
}

// TestSaveStates: the rule of TaskStateSave. Each change merges into its
// task's saved state, in order; a change of a task without a saved row is
// dropped; a success another node has not saved yet, read from the runs,
// ends the saved failures in a row before a change's failures add to them.
func TestSaveStates(t *testing.T) {
	t.Parallel()
	failing := stateOf(testOutcome{RunFailed, 1}, testOutcome{RunFailed, 2})
	failing.TaskID = 1
	healthy := stateOf(testOutcome{RunSuccess, 1})
	healthy.TaskID = 2
	saved := []*TaskState{failing, healthy}
	change := func(task int64, outs ...testOutcome) *TaskState {
		c := stateOf(outs...)
		c.TaskID = task
		return c
	}
	changes := []*TaskState{change(2, testOutcome{RunFailed, 4}), change(1, testOutcome{RunFailed, 4}),
		change(3, testOutcome{RunFailed, 4}), change(1, testOutcome{RunFailed, 5}), change(2, testOutcome{RunSuccess, 6})}
	// Only task 1 has failures in a row that a change adds to.
	if got := SuccessesToRead(saved, changes); !reflect.DeepEqual(got, []int64{1}) {
		t.Fatalf("SuccessesToRead = %v, want [1]", got)
	}
	if got := SuccessesToRead([]*TaskState{healthy}, changes); len(got) != 0 {
		t.Fatalf("SuccessesToRead of a healthy task = %v", got)
	}
	// Another node's success at 3 s, after the saved failures: the
	// change's failures at 4 and 5 s are the only ones in a row.
	now := sec(10)
	out := SaveStates(saved, changes, map[int64]time.Time{1: sec(3)}, now)
	if len(out) != 2 || out[0].TaskID != 1 || out[1].TaskID != 2 {
		t.Fatalf("SaveStates wrote %+v, want tasks 1 and 2", out)
	}
	if s := out[0]; s.ConsecutiveFailures != 2 || !s.FailingSince.Equal(sec(4)) || !s.LastSuccessAt.Equal(sec(3)) ||
		!s.UpdatedAt.Equal(now) {
		t.Errorf("task 1: %+v", s)
	}
	if s := out[1]; s.ConsecutiveFailures != 0 || !s.LastSuccessAt.Equal(sec(6)) || !s.LastFailureAt.Equal(sec(4)) {
		t.Errorf("task 2: %+v", s)
	}
	// Without the success read, the failures add to the saved ones.
	failing = stateOf(testOutcome{RunFailed, 1}, testOutcome{RunFailed, 2})
	failing.TaskID = 1
	if out := SaveStates([]*TaskState{failing}, changes, nil, now); out[0].ConsecutiveFailures != 4 {
		t.Errorf("no success read: %+v", out[0])
	}
}

// TestFirstStates: the first states of tasks are the changes of each
// merged in order into an empty state, as SaveStates merges them into
// empty saved states, and the changes are left as they were (a store
// that retries a save merges them again).
func TestFirstStates(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	statuses := []RunStatus{RunSuccess, RunFailed, RunTimeout, RunSkipped}
	for range 200 {
		var changes []*TaskState
		for i := range rng.IntN(10) {
			c := &TaskState{TaskID: int64(1 + rng.IntN(3))}
			for j := range rng.IntN(4) {
				c.Record(statuses[rng.IntN(len(statuses))], sec(10*i+j))
				c.AddLag(sec(10*i+j), time.Duration(rng.IntN(50))*time.Millisecond)
			}
			changes = append(changes, c)
		}
		before := clone(changes)
		var empty []*TaskState
		for _, id := range TaskStateIDs(changes) {
			empty = append(empty, &TaskState{TaskID: id})
		}
		if len(SuccessesToRead(empty, changes)) != 0 {
			t.Fatalf("%+v: an empty state needs a latest success", changes)
		}
		got, want := FirstStates(changes, sec(100)), SaveStates(empty, changes, nil, sec(100))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("FirstStates\n%+v\nwant\n%+v", got, want)
		}
		if !reflect.DeepEqual(changes, before) {
			t.Fatalf("FirstStates changed its changes: %+v, were %+v", changes, before)
		}
	}
}

// clone copies states deeply.
func clone(states []*TaskState) []*TaskState {
	var out []*TaskState
	for _, s := range states {
		c := *s
		c.Lags = append([]LagSample(nil), s.Lags...)
		for _, p := range []**time.Time{&c.LastSuccessAt, &c.LastFailureAt, &c.FailingSince} {
			if *p != nil {
				v := **p
				*p = &v
			}
		}
		out = append(out, &c)
	}
	return out
}

// TestSplitFirst: the changes of tasks with a saved state are merged, the
// others' are first states, each part in the changes' order.
func TestSplitFirst(t *testing.T) {
	t.Parallel()
	c := func(id int64, n int) *TaskState { return &TaskState{TaskID: id, ConsecutiveFailures: n} }
	a1, b1, a2, c1 := c(1, 1), c(2, 1), c(1, 2), c(3, 1)
	for _, tc := range []struct {
		name         string
		saved        []*TaskState
		changes      []*TaskState
		news, merges []*TaskState
	}{
		{"none saved", nil, []*TaskState{a1, b1, a2}, []*TaskState{a1, b1, a2}, nil},
		{"all saved", []*TaskState{c(1, 0), c(2, 0)}, []*TaskState{a1, b1, a2}, nil, []*TaskState{a1, b1, a2}},
		{"mixed", []*TaskState{c(1, 0)}, []*TaskState{a1, b1, a2, c1}, []*TaskState{b1, c1}, []*TaskState{a1, a2}},
		{"no changes", []*TaskState{c(1, 0)}, nil, nil, nil},
	} {
		news, merges := SplitFirst(tc.saved, tc.changes)
		if !slices.Equal(news, tc.news) || !slices.Equal(merges, tc.merges) {
			t.Errorf("%s: news %v, merges %v; want %v, %v", tc.name, news, merges, tc.news, tc.merges)
		}
	}
}
