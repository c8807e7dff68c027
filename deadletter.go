package sundial

// Dead letters are the runs that failed for good: their last delivery
// failed and no retry is left (a run waiting for a retry is SCHEDULED, not
// failed), so nothing will run that fire again unless someone replays it
// (POST /runs/{id}/rerun, or POST /runs:replay for many). A CANCELED run
// is not one: someone stopped it.

// MaxReplay is the most runs one bulk replay (POST /runs:replay) takes.
const MaxReplay = 100

// DeadLetter reports whether a run in this status failed for good:
// FAILED, TIMEOUT or FAILED_TIMEOUT (final statuses all three).
func (s RunStatus) DeadLetter() bool {
	return s == RunFailed || s == RunTimeout || s == RunFailedTimeout
}

// DeadLetterStatuses are the statuses of the dead letters.
func DeadLetterStatuses() []RunStatus { return []RunStatus{RunFailed, RunTimeout, RunFailedTimeout} }
