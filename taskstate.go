package sundial

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// A task's health (the state block of a task answer) comes from two
// places. What only its outcomes tell (its last success and failure, its
// failures in a row, the lag of its recent fires) is kept in a TaskState
// per task, which each node saves now and then from the outcomes it
// records (Store.TaskStateSave): at once after a failure, otherwise at
// most every few minutes, so that a healthy task firing every second costs
// a row written every few hundred fires, not one per fire. Its latest run
// that ended is read live (Store.TaskStates). Task.Health puts the two
// together.

// MaxLagSamples is how many fires' lags a task's state keeps: its newest
// by scheduled time.
const MaxLagSamples = 100

// LagSample is the lag of one fire: how long after its scheduled time the
// call of its first delivery started.
type LagSample struct {
	// Scheduled is the fire's scheduled time, which names it: the same
	// fire seen twice (by two nodes, or saved twice) is one sample.
	Scheduled time.Time
	Lag       time.Duration
}

// TaskState is what a task's outcomes tell of its health, saved in its
// row of task_state.
//
// A TaskState is also how a node carries what it recorded since it last
// saved a task's state: the state of those outcomes alone, which Merge
// adds to the saved one (and to what another node saved meanwhile). Merge
// is commutative, so the nodes' changes may be saved in any order.
type TaskState struct {
	TaskID int64
	// LastSuccessAt and LastFailureAt are when the task's latest run that
	// succeeded, and that failed (RunStatus.Failure: FAILED, TIMEOUT,
	// FAILED_TIMEOUT, CANCELED), ended; nil for none. A skip is neither.
	LastSuccessAt, LastFailureAt *time.Time
	// ConsecutiveFailures counts the failures that ended after
	// LastSuccessAt (all of them when there is none); FailingSince is when
	// the first of them ended, nil when there are none.
	ConsecutiveFailures int
	FailingSince        *time.Time
	// Lags are the lags of its newest fires (at most MaxLagSamples), by
	// scheduled time, oldest first.
	Lags []LagSample
	// UpdatedAt is when the row was last written; zero for a change.
	UpdatedAt time.Time
}

// Record adds to s a run of the task that ended with status at at: a
// success or a failure; any other status (a skip) tells nothing of the
// task's health and changes nothing.
func (s *TaskState) Record(status RunStatus, at time.Time) {
	at = at.UTC()
	switch {
	case status == RunSuccess:
		s.Merge(&TaskState{LastSuccessAt: &at})
	case status.Failure():
		s.Merge(&TaskState{LastFailureAt: &at, ConsecutiveFailures: 1, FailingSince: &at})
	}
}

// AddLag adds the lag of the fire scheduled at scheduled to s, keeping the
// newest MaxLagSamples fires. Both are kept to the millisecond, as they
// are saved.
func (s *TaskState) AddLag(scheduled time.Time, lag time.Duration) {
	scheduled, lag = scheduled.UTC().Truncate(time.Millisecond), lag.Truncate(time.Millisecond)
	if n := len(s.Lags); n == 0 || s.Lags[n-1].Scheduled.Before(scheduled) {
		// The common case: the task's fires end in order.
		s.Lags = append(s.Lags, LagSample{Scheduled: scheduled, Lag: lag})
		if len(s.Lags) > MaxLagSamples {
			s.Lags = slices.Delete(s.Lags, 0, len(s.Lags)-MaxLagSamples)
		}
		return
	}
	s.Lags = mergeLags(s.Lags, []LagSample{{Scheduled: scheduled, Lag: lag}})
}

// Empty reports whether s tells nothing: no outcome, no lag.
func (s *TaskState) Empty() bool {
	return s.LastSuccessAt == nil && s.LastFailureAt == nil && s.ConsecutiveFailures == 0 && len(s.Lags) == 0
}

// Merge adds o to s, as if s had recorded o's outcomes too: the latest of
// each time; the failures in a row are those of either that ended after
// the later last success; the lag samples of both, one per fire (the
// larger lag where both have a fire), the newest MaxLagSamples kept.
//
// The failures in a row are exact when each side's are all before or all
// after the other's last success. Of failures that straddle the other
// side's last success only the last is known to come after it, and it
// alone is counted. A node saves a failure within about a second, so only
// the outcomes two nodes record that close together can straddle.
func (s *TaskState) Merge(o *TaskState) {
	success := later(s.LastSuccessAt, o.LastSuccessAt)
	n1, since1 := s.failuresAfter(success)
	n2, since2 := o.failuresAfter(success)
	s.ConsecutiveFailures = n1 + n2
	s.FailingSince = earlier(since1, since2)
	s.LastSuccessAt = success
	s.LastFailureAt = later(s.LastFailureAt, o.LastFailureAt)
	s.Lags = mergeLags(s.Lags, o.Lags)
	if o.UpdatedAt.After(s.UpdatedAt) {
		s.UpdatedAt = o.UpdatedAt
	}
}

// TaskStateIDs returns the IDs of the tasks of changes, each once, in
// order: the order in which Store.TaskStateSave locks their rows.
func TaskStateIDs(changes []*TaskState) []int64 {
	ids := make([]int64, 0, len(changes))
	for _, c := range changes {
		ids = append(ids, c.TaskID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// SuccessesToRead names the tasks whose latest successful run
// Store.TaskStateSave reads from the runs before SaveStates: those whose
// saved state (saved, locked) has failures in a row that a change's
// failures would add to. Another node may have recorded a success since
// (its runs alternate with this node's) without saving it yet, since it
// saves a success at its leisure; the run is the truth, and folding it in
// first ends the old failures in a row where they ended. A healthy task is
// never among them.
func SuccessesToRead(saved, changes []*TaskState) []int64 {
	failing := map[int64]bool{}
	for _, s := range saved {
		if s.ConsecutiveFailures > 0 {
			failing[s.TaskID] = true
		}
	}
	var ids []int64
	for _, c := range changes {
		if c.ConsecutiveFailures > 0 && failing[c.TaskID] {
			ids = append(ids, c.TaskID)
			delete(failing, c.TaskID)
		}
	}
	slices.Sort(ids)
	return ids
}

// SaveStates is the rule of Store.TaskStateSave: it merges each change, in
// order, into the saved state of its task (saved holds the rows the store
// has locked, each task once) and returns the states to write back, by
// task ID, each with UpdatedAt now. A task's latest successful run, when
// the store read it (successes, by task: when it ended; see
// SuccessesToRead), is recorded in its saved state first. A change of a
// task that saved does not hold (a deleted task) is dropped.
func SaveStates(saved, changes []*TaskState, successes map[int64]time.Time, now time.Time) []*TaskState {
	byID := make(map[int64]*TaskState, len(saved))
	for _, s := range saved {
		byID[s.TaskID] = s
		if at, ok := successes[s.TaskID]; ok {
			s.Record(RunSuccess, at)
		}
	}
	merged := make(map[int64]*TaskState, len(saved))
	for _, c := range changes {
		if s := byID[c.TaskID]; s != nil {
			s.Merge(c)
			s.UpdatedAt = now
			merged[s.TaskID] = s
		}
	}
	out := slices.Collect(maps.Values(merged))
	slices.SortFunc(out, func(a, b *TaskState) int { return cmp.Compare(a.TaskID, b.TaskID) })
	return out
}

// FirstStates returns what SaveStates writes for the tasks of changes
// when none has a saved state yet: the changes of each task merged, in
// order, into an empty state, by task ID, each with UpdatedAt now. An
// empty state has no failures in a row, so no latest success is needed
// (SuccessesToRead names none). A store writes them as the rows of the
// tasks that have none, and merges the changes of the others with
// SaveStates.
func FirstStates(changes []*TaskState, now time.Time) []*TaskState {
	ids := TaskStateIDs(changes)
	empty := make([]*TaskState, len(ids))
	for i, id := range ids {
		empty[i] = &TaskState{TaskID: id}
	}
	return SaveStates(empty, changes, nil, now)
}

// SplitFirst parts changes by whether their task has a saved state
// (saved, the rows a store read): news are the changes of tasks with none,
// whose first state FirstStates makes, merges those SaveStates merges.
// Each keeps the changes' order.
func SplitFirst(saved, changes []*TaskState) (news, merges []*TaskState) {
	has := make(map[int64]bool, len(saved))
	for _, st := range saved {
		has[st.TaskID] = true
	}
	for _, c := range changes {
		if has[c.TaskID] {
			merges = append(merges, c)
		} else {
			news = append(news, c)
		}
	}
	return news, merges
}

// failuresAfter returns how many of s's failures in a row ended after t
// (all of them when t is nil), and when the first of those ended.
func (s *TaskState) failuresAfter(t *time.Time) (int, *time.Time) {
	switch {
	case s.ConsecutiveFailures <= 0:
		return 0, nil
	case t == nil || s.FailingSince == nil || s.FailingSince.After(*t):
		return s.ConsecutiveFailures, s.FailingSince
	case s.LastFailureAt != nil && s.LastFailureAt.After(*t):
		// Some ended after t, the last one at least.
		return 1, s.LastFailureAt
	}
	return 0, nil
}

// mergeLags returns the samples of a and b (each by scheduled time), one
// per fire, the larger lag where both have it, the newest MaxLagSamples.
func mergeLags(a, b []LagSample) []LagSample {
	if len(b) == 0 && len(a) <= MaxLagSamples {
		return a
	}
	out := make([]LagSample, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.SortStableFunc(out, func(x, y LagSample) int {
		return cmp.Or(x.Scheduled.Compare(y.Scheduled), cmp.Compare(y.Lag, x.Lag))
	})
	out = slices.CompactFunc(out, func(x, y LagSample) bool { return x.Scheduled.Equal(y.Scheduled) })
	if len(out) > MaxLagSamples {
		out = out[len(out)-MaxLagSamples:]
	}
	return out
}

func later(a, b *time.Time) *time.Time {
	if a == nil || (b != nil && b.After(*a)) {
		return b
	}
	return a
}

func earlier(a, b *time.Time) *time.Time {
	if a == nil || (b != nil && b.Before(*a)) {
		return b
	}
	return a
}

// LastRun is a task's latest run that ended (by scheduled time), as the
// state block of a task answer shows it.
type LastRun struct {
	ID            int64      `json:"id"`
	Status        RunStatus  `json:"status"`
	SkipReason    SkipReason `json:"skip_reason,omitempty"`
	ScheduledTime time.Time  `json:"scheduled_time"`
	FinishedAt    *time.Time `json:"finished_at"`
}

// TaskHealth is the state block of a task answer: how the task is doing,
// seen at the moment of the answer.
type TaskHealth struct {
	// NextFireTime is the task's next_fire_time (Task.NextFire).
	NextFireTime *time.Time `json:"next_fire_time"`
	// LastRun is read live; nil when no run of the task has ended.
	LastRun             *LastRun   `json:"last_run"`
	LastSuccessAt       *time.Time `json:"last_success_at"`
	LastFailureAt       *time.Time `json:"last_failure_at"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	// LagP50MS and LagP95MS are percentiles (nearest rank) of the saved
	// lags, in milliseconds; nil when there is none. LagSamples counts
	// them.
	LagP50MS   *int64 `json:"lag_p50_ms"`
	LagP95MS   *int64 `json:"lag_p95_ms"`
	LagSamples int    `json:"lag_samples"`
	// Recent are the task's latest runs that ended, newest first, when
	// a task list asks for them (GET /tasks?recent=N); nil otherwise.
	Recent *[]LastRun `json:"recent,omitempty"`
}

// Health is the state block of t at now, from its saved state (nil when
// none is saved) and its latest run that ended (nil for none).
//
// The saved state may lag behind the runs: a node saves a healthy task's
// state every few minutes, and any task's within about a second after a
// failure. So the latest run counts too when it ended after what the
// saved state knows: a success that ended after the saved last success
// is the last success, and ends the failures in a row that ended before
// it; a failure that ended after the saved last failure is the last
// failure, and adds one to the failures in a row when it ended after the
// last success (so the count is at least right: failures before it that
// no node has saved yet are not counted). A skip changes nothing. The lag
// percentiles are those of the saved samples alone.
func (t *Task) Health(saved *TaskState, last *LastRun, now time.Time) *TaskHealth {
	var st TaskState
	if saved != nil {
		st = *saved
	}
	if last != nil {
		at := last.ScheduledTime
		if last.FinishedAt != nil {
			at = *last.FinishedAt
		}
		switch {
		case last.Status == RunSuccess && (st.LastSuccessAt == nil || at.After(*st.LastSuccessAt)),
			last.Status.Failure() && (st.LastFailureAt == nil || at.After(*st.LastFailureAt)):
			st.Record(last.Status, at)
		}
	}
	h := &TaskHealth{
		NextFireTime:        t.NextFire(now),
		LastRun:             last,
		LastSuccessAt:       utc(st.LastSuccessAt),
		LastFailureAt:       utc(st.LastFailureAt),
		ConsecutiveFailures: st.ConsecutiveFailures,
		LagSamples:          len(st.Lags),
	}
	if len(st.Lags) > 0 {
		ms := make([]int64, len(st.Lags))
		for i, l := range st.Lags {
			ms[i] = l.Lag.Milliseconds()
		}
		slices.Sort(ms)
		h.LagP50MS, h.LagP95MS = percentile(ms, 50), percentile(ms, 95)
	}
	return h
}

// percentile is the p-th percentile of sorted (not empty) by nearest rank:
// the smallest value that at least p percent of them do not exceed.
func percentile(sorted []int64, p int) *int64 {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	v := sorted[max(rank, 1)-1]
	return &v
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
