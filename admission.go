package sundial

import "time"

// The rules of admission around the policies' decision (RunAdmit: the
// policies decide, from an AdmitState, what a run becomes; a store checks
// and applies the decision).

// AdmitStateOf is the state the policies look at for run of task, from the
// runs a store read: pending, the task's other unfinished runs scheduled at
// or before run's (see AdmitState.Pending); last, its last effective run
// (nil if none); skips, the skips recorded since, oldest first, at most
// MaxSkipsSinceLast. It counts the active and queued among pending.
func AdmitStateOf(task *Task, run *Run, pending []*Run, last *Run, skips []*Run) AdmitState {
	s := AdmitState{Task: task, Run: run, Pending: pending, LastEffective: last, SkipsSinceLast: skips}
	for _, p := range pending {
		switch {
		case p.Status.Active():
			s.Active++
		case p.Status == RunQueued:
			s.Queued++
		}
	}
	return s
}

// Check refuses an admission decision for run id, found in status from,
// that RunAdmit cannot apply (EConflict): an outcome other than RUNNING,
// QUEUED or SKIPPED, or a change the run's states do not allow (a QUEUED run
// that must keep waiting stays QUEUED: no change), and a task end that is
// none (EInvalid; only a SKIPPED run ends its task, see EndsTask).
func (d *Admission) Check(id int64, from RunStatus) error {
	switch d.Status {
	case RunRunning, RunQueued, RunSkipped:
	default:
		return Errorf(EConflict, "status", "admission of run %d must be RUNNING, QUEUED or SKIPPED, not %q", id, d.Status)
	}
	if !CanTransition(from, d.Status) && !(from == RunQueued && d.Status == RunQueued) {
		return Errorf(EConflict, "status", "run %d cannot go from %s to %s", id, from, d.Status)
	}
	if end := d.EndsTask(); end != "" {
		return CheckTaskEnd(end)
	}
	return nil
}

// EndsTask is the status the admitted run's task takes with it: the
// decision's CompleteTask when the run is SKIPPED (a one-off task's only
// fire will not run), and none otherwise.
func (d *Admission) EndsTask() TaskStatus {
	if d.Status == RunSkipped {
		return d.CompleteTask
	}
	return ""
}

// Apply applies the decision d, checked, to the admitted run r at now: a
// RUNNING run starts its delivery (see StartDelivery), a QUEUED one waits
// for a slot, a SKIPPED one ends with its reason; each with d's attempt.
func (d *Admission) Apply(r *Run, now time.Time) {
	switch d.Status {
	case RunRunning:
		r.StartDelivery(d.Attempt, now, d.TraceID)
	case RunQueued:
		r.Status, r.Attempt = RunQueued, d.Attempt
	case RunSkipped:
		r.Status, r.SkipReason, r.Attempt = RunSkipped, d.SkipReason, d.Attempt
		r.FinishedAt = &now
	}
	r.UpdatedAt = now
}
