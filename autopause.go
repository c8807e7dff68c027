package sundial

import (
	"fmt"
	"time"
)

// Auto-pause: a task with PauseAfterFailures N > 0 disables itself once its
// latest N runs that ended for good since it last changed (UpdatedAt: an
// enable, an edit) all failed (dead letters: FAILED,
// TIMEOUT, FAILED_TIMEOUT). A run cancelled by hand (CANCELED) or skipped
// does not count, either way; a SUCCESS resets the count. The decision is
// taken by the node that records a failure, from the runs the database
// holds, and applied as a change of the task under its version (so that of
// two nodes deciding at once, one disables it and the other finds it
// disabled); a success costs nothing.

// MaxPauseAfterFailures bounds a task's pause_after_failures.
const MaxPauseAfterFailures = 1000

// AutoPauseBy is the DisabledBy of a task that paused itself.
const AutoPauseBy = "sundial"

// AutoPauseCounted are the statuses of the runs auto-pause counts: the
// final outcomes of a delivery, less CANCELED.
func AutoPauseCounted() []RunStatus {
	return []RunStatus{RunSuccess, RunFailed, RunTimeout, RunFailedTimeout}
}

// AutoPause decides whether task t pauses itself, given its latest runs
// in AutoPauseCounted statuses that finished since t.UpdatedAt, newest first (at least
// t.PauseAfterFailures of them, when it has that many): it does when it is
// ENABLED, has PauseAfterFailures N > 0, and its latest N such runs all
// failed. It returns the reason to record.
func AutoPause(t *Task, latest []*Run) (string, bool) {
	n := t.PauseAfterFailures
	if n <= 0 || t.Status != TaskEnabled || len(latest) < n {
		return "", false
	}
	for _, r := range latest[:n] {
		if !r.Status.DeadLetter() {
			return "", false
		}
	}
	last := latest[0]
	reason := fmt.Sprintf("paused after %d consecutive failures (pause_after_failures); the last: run %d %s", n, last.ID, last.Status)
	if last.Error != "" {
		reason += ": " + last.Error
	}
	if len([]rune(reason)) > MaxDisabledReasonLen {
		reason = string([]rune(reason)[:MaxDisabledReasonLen])
	}
	return reason, true
}

// AutoPaused is what a node reports when a task paused itself: the task
// as disabled, and the failed runs that made it pause, newest first. It
// is what the alerting of a pause is made from.
type AutoPaused struct {
	Task *Task
	Runs []*Run
	At   time.Time
}
