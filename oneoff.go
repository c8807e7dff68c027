package sundial

import "time"

// The end of a one-off task, and the other changes a run's fate makes to
// its task: a fire planned again (Rewind), the planner's selection (DueBy).

// TaskEndOf is the status task t takes when its run r ends with status.
//
// A one-off task ends with its scheduled run: COMPLETED after a success,
// FAILED after any other final status (a failure with no retry left, a
// cancellation, a skip, a redelivery refused).
//
// A bounded cron task (Bounded: an end_at or a max_runs) ends COMPLETED,
// whatever the status, with the last fire it has: r is a planned fire
// (SCHEDULE or CATCH_UP) and the task has no fire after it within its
// bounds (NextAfter), read as the task is now: a fire later than the last
// counted (CountedThrough) once max_runs are counted, or after end_at.
//
// It is "" when r ends no task (a manual run, an unbounded cron task's run,
// a status that is not final). t may be nil: none.
func TaskEndOf(t *Task, r *Run, status RunStatus) TaskStatus {
	if t == nil || !status.Final() {
		return ""
	}
	if t.OneOff() {
		switch {
		case r.Trigger != TriggerSchedule:
			return ""
		case status == RunSuccess:
			return TaskCompleted
		}
		return TaskFailed
	}
	if t.Bounded() && r.Trigger != TriggerManual && t.NextAfter(r.ScheduledTime) == nil {
		return TaskCompleted
	}
	return ""
}

// CheckTaskEnd refuses a status a run's end cannot give its task (EInvalid):
// a task ends COMPLETED or FAILED.
func CheckTaskEnd(s TaskStatus) error {
	if !s.Ended() {
		return Errorf(EInvalid, "status", "a run ends its task COMPLETED or FAILED, not %q", s)
	}
	return nil
}

// Endable reports whether the task ends with its run (End): only an
// ENABLED task does, so that one disabled meanwhile stays so.
func (t *Task) Endable() bool { return t.Status == TaskEnabled }

// End ends the task with its run's end, as a store does: with the status
// (COMPLETED or FAILED, from TaskEndOf) and no next fire, as a change of
// the task (a new version), at at. A task that is not Endable stays as it
// is. It reports whether t changed.
func (t *Task) End(status TaskStatus, at time.Time) bool {
	if !t.Endable() {
		return false
	}
	t.Status, t.NextFireTime, t.UpdatedAt = status, nil, at
	t.Version++
	return true
}

// Rewind moves the task's NextFireTime, the planner's cursor, back to at
// when that is earlier, or when it has none: its fire at at was unplanned
// (deleted), and the planner plans it again, under its catch-up mode.
func (t *Task) Rewind(at time.Time) {
	if t.NextFireTime == nil || at.Before(*t.NextFireTime) {
		t.NextFireTime = &at
	}
}

// DueBy reports whether PlanDue plans the live task t by until: it is
// ENABLED and its next unplanned fire is at or before until.
func (t *Task) DueBy(until time.Time) bool {
	return t.Status == TaskEnabled && t.NextFireTime != nil && !t.NextFireTime.After(until)
}
