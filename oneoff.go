package sundial

import "time"

// The end of a one-off task, and the other changes a run's fate makes to
// its task: a fire planned again (Rewind), the planner's selection (DueBy).

// OneOffEnd is the status a one-off task t takes when its scheduled run r
// ends with status: COMPLETED after a success, FAILED after any other final
// status (a failure with no retry left, a cancellation, a skip, a
// redelivery refused); "" when r ends no task (a cron task's run, a manual
// or catch-up run, a status that is not final). t may be nil: none.
func OneOffEnd(t *Task, r *Run, status RunStatus) TaskStatus {
	if t == nil || !t.OneOff() || r.Trigger != TriggerSchedule || !status.Final() {
		return ""
	}
	if status == RunSuccess {
		return TaskCompleted
	}
	return TaskFailed
}

// CheckTaskEnd refuses a status a run's end cannot give its task (EInvalid):
// a one-off task ends COMPLETED or FAILED.
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
// (COMPLETED or FAILED, from OneOffEnd) and no next fire, as a change of
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
