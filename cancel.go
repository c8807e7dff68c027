package sundial

import "time"

// Cancel cancels the run r of task t (nil when t is not needed: only a
// one-off task's end reads it) at now, as RunCancel does and a CANCEL_PREV
// admission does to the runs it cancels. A run that CancelsAtOnce ends
// CANCELED, finished now, and a one-off task whose scheduled run it is
// fails with it (TaskEndOf); any other unfinished run (RUNNING,
// WAITING_CALLBACK, INTERRUPTED) is flagged CancelRequested for the node
// that delivers it. A final run is EConflict.
func Cancel(t *Task, r *Run, now time.Time) (RunChanges, error) {
	var c RunChanges
	if r.Status.Final() {
		return c, Errorf(EConflict, "status", "run %d is already %s", r.ID, r.Status)
	}
	r.UpdatedAt = now
	c.Update = append(c.Update, r)
	if !r.Status.CancelsAtOnce() {
		r.CancelRequested = true
		return c, nil
	}
	r.Status, r.FinishedAt = RunCanceled, &now
	c.end(t, TaskEndOf(t, r, RunCanceled), now)
	return c, nil
}
