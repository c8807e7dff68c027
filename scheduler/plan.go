package scheduler

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/sundialhq/sundial"
)

// maxMissedCount bounds how many missed fires are counted one by one after a
// long outage; past it the count stops and the plan jumps to the present.
const maxMissedCount = 1_000_000

// planTask decides the runs of one due task (see sundial.PlanFunc). Fires
// from the task's NextFireTime up to until become SCHEDULED runs. Fires more
// than misfire before now were missed (Sundial was down, or the task could
// not be planned in time) and follow the task's catch-up mode:
//
//	NONE     one SKIPPED run with reason MISFIRE counts them
//	COMPACT  one run, due now, stands for all of them (and counts them)
//	FULL     each becomes a run, oldest first, up to catch_up_limit; the
//	         rest are counted in a MISFIRE record
//
// The fires are those within the task's bounds (sundial.Task.Fires): none
// after end_at, none past max_runs. Each fire planned as a run (SCHEDULE or
// CATCH_UP; not the fires a MISFIRE record counts) is counted on t
// (sundial.Task.Count), which PlanDue writes with the plan: the planner
// holds the task's row, so however many nodes plan, each scheduled time is
// counted once. A bounded task left with no fire and no planned run to end
// it with ends COMPLETED with the plan (Plan.End); otherwise its last
// planned run ends it (sundial.TaskEndOf).
//
// A fire that falls on one of the task's calendars (cals; see
// sundial.Calendar) is recorded SKIPPED with reason CALENDAR instead of
// being scheduled (calendarRun): one row, and not counted against
// max_runs. A missed fire on a calendar's day is passed over: it would not
// have run, so it is neither caught up nor counted missed.
//
// maxRuns bounds the scheduled runs planned for one task in one pass (a
// per-second task with an hour of lookahead would otherwise plan thousands);
// the rest are planned on the next pass.
//
// A frequent task (refillAt) is planned further than until, up to its
// refill boundary, so that its row is written once for many fires rather
// than once a pass; the planner takes it up again when that boundary
// comes within the lookahead. Rarer tasks are planned up to until.
func planTask(t *sundial.Task, now, until time.Time, misfire time.Duration, maxRuns int, horizon time.Duration, cals sundial.CalendarSet) sundial.Plan {
	if t.NextFireTime == nil {
		return sundial.Plan{}
	}
	if t.OneOff() {
		// One fire, however late: a one-off task is work someone is
		// waiting for, not a tick that the next one replaces.
		return sundial.Plan{Runs: []*sundial.Run{newRun(t, *t.NextFireTime, sundial.TriggerSchedule, now)}}
	}
	sched, loc, err := t.Schedule()
	if err != nil {
		// Validated on the way in; a zone removed from the system's
		// database since is the only way here. Stop planning the task.
		return sundial.Plan{}
	}
	// fires is the fire after at within the task's bounds, or zero.
	fires := func(at time.Time) time.Time {
		if at.IsZero() || !t.Fires(at) {
			return time.Time{}
		}
		return at
	}
	// off is the calendar a fire at at falls on, if any.
	off := func(at time.Time) (string, bool) {
		if len(t.Calendars) == 0 {
			return "", false
		}
		return cals.Skips(t, at, loc)
	}
	next := fires(t.NextFireTime.In(loc))
	var runs []*sundial.Run

	if deadline := now.Add(-misfire); !next.IsZero() && next.Before(deadline) {
		var missed []time.Time
		var first, last time.Time
		count, looked := 0, 0
		for !next.IsZero() && next.Before(deadline) && looked < maxMissedCount {
			looked++
			if _, ok := off(next); ok {
				next = fires(sched.Next(next))
				continue
			}
			if t.CatchUpMode == sundial.CatchUpFull && len(missed) < t.CatchUpLimit {
				missed = append(missed, next)
			}
			if count == 0 {
				first = next
			}
			count++
			last = next
			next = fires(sched.Next(next))
		}
		if looked == maxMissedCount && !next.IsZero() && next.Before(deadline) {
			next = fires(sched.Next(deadline.In(loc)))
		}
		mode := t.CatchUpMode
		if mode == sundial.CatchUpCompact && !t.Fires(last) {
			mode = sundial.CatchUpNone // no fire left to count the run as
		}
		switch {
		case count == 0:
			// Every missed fire fell on a calendar: nothing was missed.
		case mode == sundial.CatchUpFull:
			ran := 0
			for _, m := range missed {
				if !t.Fires(m) {
					break // max_runs reached: the rest are not fires
				}
				t.Count(m)
				runs = append(runs, newRun(t, m, sundial.TriggerCatchUp, now))
				ran++
			}
			if dropped := count - ran; dropped > 0 {
				runs = append(runs, misfireRun(t, first, dropped, now))
			}
		case mode == sundial.CatchUpCompact:
			// Counted as one fire, at the last missed fire it stands for.
			t.Count(last)
			r := newRun(t, now.Truncate(time.Second), sundial.TriggerCatchUp, now)
			r.FireKey = fmt.Sprintf("c:%d", first.Unix())
			r.MissedCount = count
			runs = append(runs, r)
		default:
			runs = append(runs, misfireRun(t, first, count, now))
		}
		next = fires(next)
	}

	var refill time.Time
	if !next.IsZero() {
		refill = refillAt(t.ID, next, sched.Next(next), now, until, horizon, maxRuns)
	}
	planned := 0
	for !next.IsZero() && (!next.After(until) || next.Before(refill)) && planned < maxRuns {
		if cal, ok := off(next); ok {
			runs = append(runs, calendarRun(t, next, cal, now))
		} else {
			t.Count(next)
			runs = append(runs, newRun(t, next, sundial.TriggerSchedule, now))
		}
		planned++
		next = fires(sched.Next(next))
	}
	p := sundial.Plan{Runs: runs}
	if !next.IsZero() {
		n := next.UTC()
		p.Next = &n
	} else if t.Bounded() && !slices.ContainsFunc(runs, func(r *sundial.Run) bool { return r.Status == sundial.RunScheduled }) {
		// No fire left, and none planned to end the task with.
		p.End = sundial.TaskCompleted
	}
	return p
}

// refillAt is how far a pass at now, whose lookahead ends at until, plans
// the cron task id whose next unplanned fire is next, and the one after it
// second (zero when there is none): the zero time (up to until only)
// unless the task is frequent, its next two fires at most a lookahead
// apart. A frequent task is planned up to its refill boundary, the fires
// before it. Its span is horizon, or, if that is sooner, maxRuns fires at
// the gap between next and second less a lookahead (so that a pass never
// has more than maxRuns of its fires to plan); the span is cut into
// intervals at a phase of the task's own, and the boundary is the last
// cut at most a span after next, or the cut after it when that one is not
// past until. So the first pass plans up to a cut, and each pass after it
// a whole span; the next pass takes the task up when the cut comes within
// the lookahead. A task whose span is no longer than the lookahead is
// planned up to until only.
//
// The phase is one of the span's slots, a lookahead apart, taken by the
// fractional part of the task's ID times the golden ratio, so that tasks
// created together (consecutive IDs) fall evenly into the slots: one slot
// is refilled every lookahead, not every task in one pass. And the tasks
// of a slot are refilled in the same pass, which inserts their runs by
// instant (Store.PlanDue): the runs due at one instant then come from a
// few passes (span over lookahead), each pass's together in the table,
// rather than from a pass each and scattered, and each claim and outcome
// of them writes fewer pages (on SQLite about half the bytes a fire:
// BenchmarkSteadyWrites, docs/benchmarks.md).
func refillAt(id int64, next, second, now, until time.Time, horizon time.Duration, maxRuns int) time.Time {
	if second.IsZero() {
		return time.Time{}
	}
	gap, lookahead := second.Sub(next), until.Sub(now)
	if gap <= 0 || gap > lookahead {
		return time.Time{}
	}
	span := horizon
	if maxRuns > 0 && time.Duration(maxRuns) <= (span+lookahead)/gap {
		span = time.Duration(maxRuns)*gap - lookahead
	}
	if span <= lookahead {
		return time.Time{}
	}
	phase, _ := bits.Mul64(uint64(id)*0x9E3779B97F4A7C15, uint64(span))
	phase -= phase % uint64(lookahead)
	end := next.Add(span).UnixNano() - int64(phase)
	cut := time.Unix(0, end-((end%int64(span))+int64(span))%int64(span)+int64(phase))
	if !cut.After(until) {
		cut = cut.Add(span)
	}
	return cut
}

// newRun is the run of t's fire at at. A scheduled fire of a task with
// jitter_seconds is due a random while after its time: the jitter is
// decided here, once, and stored as the run's DueAt, so that every node
// delivers it at the same instant and a fire planned again is jittered
// anew only as a new run. Catch-up and manual runs are not jittered.
func newRun(t *sundial.Task, at time.Time, trigger sundial.Trigger, now time.Time) *sundial.Run {
	r := &sundial.Run{
		TaskID:        t.ID,
		FireKey:       sundial.ScheduledFireKey(at),
		Trigger:       trigger,
		ScheduledTime: at.UTC(),
		Status:        sundial.RunScheduled,
		Attempt:       1,
		CreatedAt:     now,
		UpdatedAt:     now,
		// Claimed shortly before its instant, such a run is started in
		// the same write (sundial.ClaimStartParams), unless its task has a
		// starting deadline of its own: the claim judges lateness by the
		// server's misfire threshold, and only the node can judge it by
		// the task's (claimer.take).
		StartAhead: trigger != sundial.TriggerManual && unconstrained(t) && (t.OneOff() || t.StartingDeadline == 0),
	}
	r.DueAt = r.ScheduledTime.Add(jitter(t, trigger))
	return r
}

// jitter is a random delay in [0, jitter_seconds) for a scheduled fire of
// t, in whole milliseconds; 0 for a task without jitter or another trigger.
func jitter(t *sundial.Task, trigger sundial.Trigger) time.Duration {
	if t.JitterSeconds <= 0 || trigger != sundial.TriggerSchedule {
		return 0
	}
	return time.Duration(randN(int64(t.JitterSeconds)*1000)) * time.Millisecond
}

// calendarRun records the fire of t at at SKIPPED (CALENDAR): it falls on
// the calendar cal. It takes the fire's own key, so that the fire is
// decided once, however often it is planned; it is final when written.
func calendarRun(t *sundial.Task, at time.Time, cal string, now time.Time) *sundial.Run {
	fin := now
	return &sundial.Run{
		TaskID:        t.ID,
		FireKey:       sundial.ScheduledFireKey(at),
		Trigger:       sundial.TriggerSchedule,
		ScheduledTime: at.UTC(),
		DueAt:         at.UTC(),
		Status:        sundial.RunSkipped,
		SkipReason:    sundial.SkipCalendar,
		Attempt:       1,
		FinishedAt:    &fin,
		CreatedAt:     now,
		UpdatedAt:     now,
		Error:         sundial.CalendarSkipError(cal),
	}
}

// misfireRun records count missed fires starting at first.
func misfireRun(t *sundial.Task, first time.Time, count int, now time.Time) *sundial.Run {
	fin := now
	return &sundial.Run{
		TaskID:        t.ID,
		FireKey:       fmt.Sprintf("m:%d", first.Unix()),
		Trigger:       sundial.TriggerSchedule,
		ScheduledTime: first.UTC(),
		Status:        sundial.RunSkipped,
		SkipReason:    sundial.SkipMisfire,
		MissedCount:   count,
		Attempt:       1,
		FinishedAt:    &fin,
		CreatedAt:     now,
		UpdatedAt:     now,
		Error:         fmt.Sprintf("%d fires missed since %s", count, first.UTC().Format(time.RFC3339)),
	}
}
