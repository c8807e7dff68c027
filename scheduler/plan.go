package scheduler

import (
	"fmt"
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
// maxRuns bounds the scheduled runs planned for one task in one pass (a
// per-second task with an hour of lookahead would otherwise plan thousands);
// the rest are planned on the next pass.
func planTask(t *sundial.Task, now, until time.Time, misfire time.Duration, maxRuns int) sundial.Plan {
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
	next := t.NextFireTime.In(loc)
	var runs []*sundial.Run

	if deadline := now.Add(-misfire); next.Before(deadline) {
		var missed []time.Time
		count := 0
		for !next.IsZero() && next.Before(deadline) && count < maxMissedCount {
			if t.CatchUpMode == sundial.CatchUpFull && len(missed) < t.CatchUpLimit {
				missed = append(missed, next)
			}
			count++
			next = sched.Next(next)
		}
		if count == maxMissedCount && !next.IsZero() && next.Before(deadline) {
			next = sched.Next(deadline.In(loc))
		}
		first := *t.NextFireTime
		switch t.CatchUpMode {
		case sundial.CatchUpFull:
			for _, m := range missed {
				runs = append(runs, newRun(t, m, sundial.TriggerCatchUp, now))
			}
			if dropped := count - len(missed); dropped > 0 {
				runs = append(runs, misfireRun(t, first, dropped, now))
			}
		case sundial.CatchUpCompact:
			r := newRun(t, now.Truncate(time.Second), sundial.TriggerCatchUp, now)
			r.FireKey = fmt.Sprintf("c:%d", first.Unix())
			r.MissedCount = count
			runs = append(runs, r)
		default:
			runs = append(runs, misfireRun(t, first, count, now))
		}
	}

	planned := 0
	for !next.IsZero() && !next.After(until) && planned < maxRuns {
		runs = append(runs, newRun(t, next, sundial.TriggerSchedule, now))
		planned++
		next = sched.Next(next)
	}
	p := sundial.Plan{Runs: runs}
	if !next.IsZero() {
		n := next.UTC()
		p.Next = &n
	}
	return p
}

func newRun(t *sundial.Task, at time.Time, trigger sundial.Trigger, now time.Time) *sundial.Run {
	return &sundial.Run{
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
