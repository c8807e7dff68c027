package sundial

import "time"

// What a change of a task takes back of its runs: an edit or a disable
// (TaskUpdate) and a delete (TaskDelete) act on the task's Held runs, read
// under the task's lock, with the send cutoff of the change (SendCutoff):
// a run committed RUNNING ahead of an instant past the cutoff has not been
// sent yet, and the node that holds it drops it when it checks it
// (RunCheckSend).

// DeletedTaskError is the Error of a run CANCELED because its task was
// deleted.
const DeletedTaskError = "task deleted"

// sentAfter reports whether r was committed RUNNING ahead of an instant
// past cutoff: taken back by a change of its task.
func sentAfter(r *Run, cutoff time.Time) bool {
	return r.Status == RunRunning && r.StartedAt != nil && r.StartedAt.After(cutoff)
}

// firstAhead reports whether r is a first delivery of a planned fire
// committed ahead of an instant past cutoff: taken back, it is deleted, and
// the planner plans it again from the task as changed.
func firstAhead(r *Run, cutoff time.Time) bool {
	return sentAfter(r, cutoff) && r.Trigger.Planned() && r.Deliveries == 1
}

// TakeBackOnUpdate decides what TaskUpdate makes of the runs of t, the task
// as it now is, at now with the send cutoff given:
//   - its planned fires (Planned) and first deliveries committed ahead past
//     the cutoff are deleted: the planner plans them anew from
//     t.NextFireTime;
//   - its other runs committed ahead past the cutoff (a manual run, a
//     redelivery) go back to SCHEDULED, held by no node under a new fence,
//     their delivery undone; so do those delivered before that a node
//     holds (a retry claimed), so that they go out under the new
//     definition, claimed as they come due;
//   - its runs waiting (SCHEDULED, QUEUED) take the task's priority, by
//     which claims order them;
//   - when t is not ENABLED, nothing more is sent: its QUEUED runs are
//     SKIPPED (SkipDisabled, DisabledQueuedError) and its runs waiting for
//     another delivery CANCELED (DisabledRetryError), finished now.
func TakeBackOnUpdate(t *Task, runs []*Run, cutoff, now time.Time) RunChanges {
	var c RunChanges
	for _, r := range runs {
		if r.Planned() || firstAhead(r, cutoff) {
			c.Delete = append(c.Delete, r)
			continue
		}
		changed := false
		switch {
		case sentAfter(r, cutoff):
			r.Status, r.NodeID, r.UpdatedAt = RunScheduled, "", now
			r.Fence++
			r.Deliveries--
			changed = true
		case r.Status == RunScheduled && r.NodeID != "" && r.Deliveries > 0:
			r.NodeID, r.UpdatedAt = "", now
			r.Fence++
			changed = true
		}
		if r.Status.Waiting() && r.Priority != t.Priority {
			r.Priority = t.Priority
			changed = true
		}
		if t.Status != TaskEnabled {
			switch {
			case r.Status == RunQueued:
				r.Status, r.SkipReason, r.Error = RunSkipped, SkipDisabled, DisabledQueuedError
				r.FinishedAt, r.UpdatedAt = &now, now
				changed = true
			case r.Status == RunScheduled && r.Deliveries > 0:
				r.Status, r.Error, r.FinishedAt, r.UpdatedAt = RunCanceled, DisabledRetryError, &now, now
				changed = true
			}
		}
		if changed {
			c.Update = append(c.Update, r)
		}
	}
	return c
}

// TakeBackOnDelete decides what TaskDelete makes of the runs of the task it
// deletes, at now with the send cutoff given: its SCHEDULED runs never
// delivered and its first deliveries committed ahead past the cutoff are
// deleted; its other waiting runs (a retry, a queued run: nothing would
// admit them) and its other runs committed ahead past the cutoff (their
// delivery undone) are CANCELED (DeletedTaskError), finished now. A
// delivery under way stays: its outcome is recorded as it comes.
func TakeBackOnDelete(runs []*Run, cutoff, now time.Time) RunChanges {
	var c RunChanges
	for _, r := range runs {
		switch {
		case r.Status == RunScheduled && r.Deliveries == 0, firstAhead(r, cutoff):
			c.Delete = append(c.Delete, r)
		case r.Status.Waiting() || sentAfter(r, cutoff):
			if r.Status == RunRunning {
				r.Deliveries--
			}
			r.Status, r.Error, r.FinishedAt, r.UpdatedAt = RunCanceled, DeletedTaskError, &now, now
			c.Update = append(c.Update, r)
		}
	}
	return c
}
