package sundial

import (
	"fmt"
	"time"
)

// A backfill (POST /api/v1/tasks/{id}/backfill) runs the fire times of a
// task's schedule in a past range, oldest first, as runs with trigger
// BACKFILL. Each time has its own fire key (BackfillFireKey), under the
// same uniqueness of (task, fire key) that protects the scheduled fires:
// a backfill repeated over the same range makes no run twice.

// MaxBackfill is the most fire times one backfill may cover: a range
// holding more is refused, to be split.
const MaxBackfill = 500

// BackfillFireKey is the fire key of the backfilled fire of a task at t:
// its Unix second, apart from the scheduled fire's (ScheduledFireKey), so
// that a time the schedule fired may be backfilled once too.
func BackfillFireKey(t time.Time) string { return fmt.Sprintf("b:%d", t.Unix()) }

// BackfillTimes returns the fire times of t's schedule in [from, to],
// oldest first, in UTC. A one-off task has no schedule (EConflict, field
// "cron_expr"), and a range holding more than limit times is EInvalid
// (field "to"), naming the limit. The caller checks from and to
// themselves (CheckBackfillRange).
func (t *Task) BackfillTimes(from, to time.Time, limit int) ([]time.Time, error) {
	if t.OneOff() || t.CronExpr == "" {
		return nil, &Error{Code: EConflict, Field: "cron_expr",
			Message: fmt.Sprintf("task %d is a one-off task: it has no schedule to backfill (trigger it instead)", t.ID)}
	}
	s, loc, err := t.Schedule()
	if err != nil {
		return nil, &Error{Code: EConflict, Field: "cron_expr", Message: fmt.Sprintf("task %d's schedule cannot be evaluated: %v", t.ID, err)}
	}
	var times []time.Time
	// Next is strictly after its argument: start just before from, so
	// that a fire at from itself is in.
	for next := s.Next(from.Add(-time.Nanosecond).In(loc)); !next.IsZero() && !next.After(to); next = s.Next(next) {
		if len(times) == limit {
			return nil, &Error{Code: EInvalid, Field: "to", Token: to.UTC().Format(time.RFC3339),
				Message: fmt.Sprintf("the range from %s to %s holds more than %d fire times, the most one backfill takes: split it",
					from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), limit)}
		}
		times = append(times, next.UTC())
	}
	return times, nil
}

// CheckBackfillRange checks the range of a backfill at now: from before
// to, and to not after now (a backfill runs past fires; the planner runs
// the coming ones).
func CheckBackfillRange(from, to, now time.Time) error {
	switch {
	case from.IsZero():
		return &Error{Code: EInvalid, Field: "from", Message: "from is required: the start of the range, RFC 3339"}
	case to.IsZero():
		return &Error{Code: EInvalid, Field: "to", Message: "to is required: the end of the range, RFC 3339"}
	case !from.Before(to):
		return &Error{Code: EInvalid, Field: "from", Token: from.UTC().Format(time.RFC3339),
			Message: fmt.Sprintf("from must be before to (%s)", to.UTC().Format(time.RFC3339))}
	case to.After(now):
		return &Error{Code: EInvalid, Field: "to", Token: to.UTC().Format(time.RFC3339),
			Message: fmt.Sprintf("to must not be in the future (now is %s): a backfill runs past fire times", now.UTC().Format(time.RFC3339))}
	}
	return nil
}

// BackfillRun is the run of the backfilled fire of task t at at, made at
// now: SCHEDULED, due now, held by no node, so that any node claims it
// (oldest first: the runs of a backfill are inserted in order) and admits
// it under the task's policies as a scheduled fire.
func BackfillRun(t *Task, at, now time.Time) *Run {
	return &Run{
		TaskID:        t.ID,
		FireKey:       BackfillFireKey(at),
		Trigger:       TriggerBackfill,
		ScheduledTime: at.UTC(),
		DueAt:         now,
		Status:        RunScheduled,
		Attempt:       1,
		Fence:         1,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
}
