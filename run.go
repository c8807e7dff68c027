package sundial

import (
	"encoding/json"
	"fmt"
	"time"
)

// RunStatus is the state of one run. The legal changes are in transitions;
// see CanTransition.
//
//	SCHEDULED --admit--> RUNNING --> SUCCESS | FAILED | TIMEOUT | CANCELED
//	    |                   |--async accepted--> WAITING_CALLBACK --> SUCCESS | FAILED | FAILED_TIMEOUT
//	    |--policy--> SKIPPED (reason: OVERLAP | FAILURE | CONCURRENCY | MISFIRE | QUEUE_FULL | DISABLED)
//	    |--policy--> QUEUED --slot free--> RUNNING
//	RUNNING on a dead node --> INTERRUPTED --> SCHEDULED again (next try) or FAILED (tries used up)
//	RUNNING, WAITING_CALLBACK --retryable failure, attempts left--> SCHEDULED (due after the backoff)
type RunStatus string

const (
	RunScheduled       RunStatus = "SCHEDULED"
	RunQueued          RunStatus = "QUEUED"
	RunRunning         RunStatus = "RUNNING"
	RunWaitingCallback RunStatus = "WAITING_CALLBACK"
	RunSuccess         RunStatus = "SUCCESS"
	RunFailed          RunStatus = "FAILED"
	RunTimeout         RunStatus = "TIMEOUT"
	RunFailedTimeout   RunStatus = "FAILED_TIMEOUT"
	RunCanceled        RunStatus = "CANCELED"
	RunSkipped         RunStatus = "SKIPPED"
	RunInterrupted     RunStatus = "INTERRUPTED"
)

var transitions = map[RunStatus][]RunStatus{
	RunScheduled:       {RunRunning, RunQueued, RunSkipped, RunCanceled},
	RunQueued:          {RunRunning, RunSkipped, RunCanceled},
	RunRunning:         {RunSuccess, RunFailed, RunTimeout, RunCanceled, RunWaitingCallback, RunInterrupted, RunScheduled},
	RunWaitingCallback: {RunSuccess, RunFailed, RunFailedTimeout, RunCanceled, RunInterrupted, RunScheduled},
	RunInterrupted:     {RunScheduled, RunFailed},
}

// CanTransition reports whether a run may move from one status to another.
func CanTransition(from, to RunStatus) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Final reports whether the status ends the run.
func (s RunStatus) Final() bool {
	switch s {
	case RunSuccess, RunFailed, RunTimeout, RunFailedTimeout, RunCanceled, RunSkipped:
		return true
	}
	return false
}

// Active reports whether a run in this status occupies a concurrency slot.
func (s RunStatus) Active() bool { return s == RunRunning || s == RunWaitingCallback }

// Failure reports whether the status counts as a failure for the task's
// failure_action (seed 001: Failed, Timeout, FailedTimeout, Canceled).
func (s RunStatus) Failure() bool {
	switch s {
	case RunFailed, RunTimeout, RunFailedTimeout, RunCanceled:
		return true
	}
	return false
}

// ValidRunStatus reports whether s names a run status.
func ValidRunStatus(s string) bool {
	switch RunStatus(s) {
	case RunScheduled, RunQueued, RunRunning, RunWaitingCallback, RunSuccess, RunFailed,
		RunTimeout, RunFailedTimeout, RunCanceled, RunSkipped, RunInterrupted:
		return true
	}
	return false
}

// RunStatuses returns every run status, in the order of the state machine.
// Stores render their status lists from it and the predicates below.
func RunStatuses() []RunStatus {
	return []RunStatus{RunScheduled, RunQueued, RunRunning, RunWaitingCallback, RunSuccess, RunFailed,
		RunTimeout, RunFailedTimeout, RunCanceled, RunSkipped, RunInterrupted}
}

// Waiting reports whether a run in this status waits for admission: a
// node may still admit it (RunAdmit) or take it over (RunClaim).
func (s RunStatus) Waiting() bool { return s == RunScheduled || s == RunQueued }

// Held reports whether a run in this status is in a node's hands, or about
// to be: SCHEDULED, QUEUED or RUNNING (RunsOwned). A change of its task may
// take it back (TakeBack).
func (s RunStatus) Held() bool { return s.Waiting() || s == RunRunning }

// Pending reports whether a run in this status holds back the later fires
// of its task (AdmitState.Pending): an active or queued run. A SCHEDULED
// run does too when it is due earlier.
func (s RunStatus) Pending() bool { return s.Active() || s == RunQueued }

// Effective reports whether a run in this status can be its task's last
// effective run (AdmitState.LastEffective): one that was delivered, or is
// being delivered. A fire not admitted yet (SCHEDULED, QUEUED) or skipped
// is not.
func (s RunStatus) Effective() bool {
	return s != RunScheduled && s != RunQueued && s != RunSkipped && ValidRunStatus(string(s))
}

// CancelsAtOnce reports whether cancelling a run in this status ends it
// CANCELED at once: it may become CANCELED and no delivery of it is in
// flight. Any other unfinished run is flagged for its node (see Cancel).
func (s RunStatus) CancelsAtOnce() bool { return CanTransition(s, RunCanceled) && !s.Active() }

// SkipReason says why a fire was recorded as SKIPPED.
type SkipReason string

const (
	SkipOverlap     SkipReason = "OVERLAP"
	SkipFailure     SkipReason = "FAILURE"
	SkipConcurrency SkipReason = "CONCURRENCY"
	SkipMisfire     SkipReason = "MISFIRE"
	SkipQueueFull   SkipReason = "QUEUE_FULL"
	// SkipDisabled is a QUEUED run taken back when its task was disabled
	// before a slot freed for it.
	SkipDisabled SkipReason = "DISABLED"
	// SkipCalendar is a scheduled fire that falls on a day of one of its
	// task's calendars (Task.Calendars), recorded so when it is planned.
	// It is no decision of the task's policies: the failure policy does not
	// count it as its skip (AdmitState.SkipsSinceLast leaves it out), nor
	// max_runs as a fire.
	SkipCalendar SkipReason = "CALENDAR"
)

// CalendarSkipError is the error of a run SKIPPED (CALENDAR): the calendar
// that skipped it.
func CalendarSkipError(calendar string) string { return "falls on calendar " + calendar }

// DisabledQueuedError is the error of a run SKIPPED (DISABLED).
const DisabledQueuedError = "task disabled before the run could start"

// DisabledRetryError is the error of a run CANCELED while it waited for a
// retry, because its task was disabled.
const DisabledRetryError = "task disabled before the run's next delivery"

// Trigger says what made a run.
type Trigger string

const (
	TriggerSchedule Trigger = "SCHEDULE"
	TriggerManual   Trigger = "MANUAL"
	TriggerCatchUp  Trigger = "CATCH_UP"
	// TriggerBackfill marks a run of a past fire time made by a backfill
	// (POST /tasks/{id}/backfill): see Task.BackfillTimes.
	TriggerBackfill Trigger = "BACKFILL"
)

// Triggers returns every trigger.
func Triggers() []Trigger {
	return []Trigger{TriggerSchedule, TriggerManual, TriggerCatchUp, TriggerBackfill, TriggerDependency}
}

// Planned reports whether runs of the trigger are made by the planner
// (SCHEDULE, CATCH_UP), which makes such a run again if it is deleted
// before its first delivery. A manual run or a backfilled one is made
// once, by a request, and no planner makes it again.
func (t Trigger) Planned() bool { return t == TriggerSchedule || t == TriggerCatchUp }

// MaxResponseBody is how much of a target's answer a run keeps.
const MaxResponseBody = 4096

// Limits of what a target may report about a run.
const (
	MaxResultLen     = 64 << 10 // a callback's result
	MaxProgressLen   = 4 << 10  // a progress report's progress
	MaxCheckpointLen = 8 << 10  // a checkpoint, sent back as a header
)

// Run is one fire of a task (or one manual trigger) and what became of it.
// (TaskID, FireKey) is unique: one scheduled second has at most one run.
type Run struct {
	ID      int64   `json:"id"`
	TaskID  int64   `json:"task_id"`
	FireKey string  `json:"fire_key"`
	Trigger Trigger `json:"trigger"`
	// RerunOf is the run this one runs again (POST /runs/{id}/rerun): a
	// MANUAL run with that run's params. 0: none.
	RerunOf int64 `json:"rerun_of,omitempty"`
	// Params replace the task's params for this run only (a manual
	// trigger's "run once with these params"): every delivery of the run
	// renders {{params}} from them. Nil: the task's.
	Params        json.RawMessage `json:"params,omitempty"`
	ScheduledTime time.Time       `json:"scheduled_time"`
	// Priority is the task's priority, copied onto the run so that claims
	// order runs by an index of their own.
	Priority int `json:"priority"`
	// DueAt is when the run next needs a node: its first delivery
	// (ScheduledTime), a retry after its backoff (SCHEDULED with
	// Deliveries > 0), or its callback deadline (WAITING_CALLBACK).
	DueAt        time.Time  `json:"due_at"`
	Status       RunStatus  `json:"status"`
	SkipReason   SkipReason `json:"skip_reason,omitempty"`
	MissedCount  int        `json:"missed_count,omitempty"`
	Attempt      int        `json:"attempt"`
	Deliveries   int        `json:"deliveries"`
	NodeID       string     `json:"node_id,omitempty"`
	Fence        int64      `json:"fence"`
	StartedAt    *time.Time `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	HTTPStatus   int        `json:"http_status,omitempty"`
	ResponseBody string     `json:"response_body,omitempty"`
	Error        string     `json:"error,omitempty"`
	// Message is what an ASYNC run's callback said about its outcome,
	// SUCCESS or FAILED alike (a FAILED one's is its Error too).
	Message string `json:"message,omitempty"`
	TraceID string `json:"trace_id,omitempty"`
	// Result is what an ASYNC run's callback reported (any JSON).
	Result json.RawMessage `json:"result,omitempty"`
	// Progress and Checkpoint are the latest a long job reported
	// (POST /runs/{id}/progress); the checkpoint goes with every later
	// delivery of the run, so the target can resume from it.
	Progress        json.RawMessage `json:"progress,omitempty"`
	Checkpoint      json.RawMessage `json:"checkpoint,omitempty"`
	IdempotencyKey  string          `json:"idempotency_key"`
	CancelRequested bool            `json:"cancel_requested,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	// StartAhead marks a run its planner found free of admission: its
	// task's policies can neither hold it back nor skip it (see
	// ClaimStartParams). A task's change deletes its planned runs, so the mark
	// never outlives the definition it was made from.
	StartAhead bool `json:"-"`
	// AttemptOnRun says that the attempt of the run's last delivery is the
	// run itself (OwnAttempt), not a row: its outcome ended the run for
	// good (RunFinishParams.AttemptOnRun); RunAttempts answers it after the
	// rows. Only a final run has it (a store refuses it on any other, and
	// every write that starts a delivery clears it), and a final run never
	// changes again.
	AttemptOnRun bool `json:"-"`
}

// ParamsFor returns the params the deliveries of r render ({{params}}):
// its own, or else those of its task t.
func (r *Run) ParamsFor(t *Task) json.RawMessage {
	if r.Params != nil {
		return r.Params
	}
	return t.Params
}

// ScheduledFireKey is the fire key of the scheduled fire of a task at t: its
// Unix second, so a second is planned once however often it is computed.
func ScheduledFireKey(t time.Time) string { return fmt.Sprintf("s:%d", t.Unix()) }

// IdempotencyKeyFor is the Idempotency-Key sent with every delivery of the
// fire (taskID, fireKey): stable across retries and node takeovers.
func IdempotencyKeyFor(taskID int64, fireKey string) string {
	return fmt.Sprintf("sundial-%d-%s", taskID, fireKey)
}
