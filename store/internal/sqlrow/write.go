package sqlrow

import (
	"database/sql"
	"strings"

	"github.com/sundialhq/sundial"
)

// The writes of a rule's sundial.RunChanges, in the form the database/sql
// adapters (SQLite, MySQL) share: runs written back, attempts recorded,
// tasks rewound and ended. Each adapter makes them in the transaction that
// read the runs under their locks; only how a batch is bound differs.

// Statuses renders the run statuses for which keep holds as an SQL list of
// literals, ('A', 'B'): the status lists of a statement come from the
// domain's predicates (sundial.RunStatus), never written by hand.
func Statuses(keep func(sundial.RunStatus) bool) string {
	var q []string
	for _, s := range sundial.RunStatuses() {
		if keep(s) {
			q = append(q, "'"+string(s)+"'")
		}
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// RunUpdateCols are the columns of a run that a rule may change, which
// RunUpdateArgs gives and a write-back sets: all but the fire's identity
// (task, fire key, trigger, scheduled time, idempotency key), its params,
// its planner's mark and its creation time.
var RunUpdateCols = []string{"status", "skip_reason", "missed_count", "attempt", "deliveries", "node_id", "fence",
	"started_at", "finished_at", "http_status", "response_body", "error", "trace_id", "cancel_requested",
	"updated_at", "due_at", "result_json", "progress_json", "checkpoint_json", "priority", "message", "attempt_on_run"}

// RunUpdateArgs are the values of RunUpdateCols for r, as database/sql
// drivers take them.
func RunUpdateArgs(r *sundial.Run) []any {
	return []any{string(r.Status), string(r.SkipReason), r.MissedCount, r.Attempt, r.Deliveries, r.NodeID, r.Fence,
		NullMicros(r.StartedAt), NullMicros(r.FinishedAt), r.HTTPStatus, r.ResponseBody, r.Error, r.TraceID,
		r.CancelRequested, Micros(r.UpdatedAt), Micros(r.DueAt), NullJSON(r.Result), NullJSON(r.Progress),
		NullJSON(r.Checkpoint), r.Priority, r.Message, r.AttemptOnRun}
}

// RunUpdateSQL writes a run back as a rule left it: RunUpdateArgs, then its
// ID.
var RunUpdateSQL = `UPDATE runs SET ` + strings.Join(RunUpdateCols, " = ?, ") + ` = ? WHERE id = ?`

// DeleteRunsSQL deletes n runs by ID: a rule's RunChanges.Delete, whose
// rows the transaction holds.
func DeleteRunsSQL(n int) string {
	return `DELETE FROM runs WHERE id IN (` + Markers(Question, 1, n) + `)`
}

// AttemptCols are the columns of an attempt, in the order of AttemptArgs.
const AttemptCols = `run_id, delivery, node_id, status, http_status, error, response_body, started_at, finished_at`

// OwnAttemptCols are the columns of runs that make a run's own attempt
// (sundial.Run.OwnAttempt), in the order of AttemptCols: its last delivery,
// finished at its finish or, without one, at its outcome (updated_at).
const OwnAttemptCols = `id, deliveries, node_id, status, http_status, error, response_body, started_at,
	COALESCE(finished_at, updated_at)`

// ScanAttempt reads a row of AttemptCols from any of the drivers (see
// ScanRun): the body may come as text or bytes.
func ScanAttempt(sc Scanner) (*sundial.Attempt, error) {
	var (
		a        sundial.Attempt
		status   string
		body     text
		started  sql.NullInt64
		finished int64
	)
	if err := sc.Scan(&a.RunID, &a.Delivery, &a.NodeID, &status, &a.HTTPStatus, &a.Error,
		&body, &started, &finished); err != nil {
		return nil, err
	}
	a.Status = sundial.RunStatus(status)
	a.ResponseBody = string(body)
	a.StartedAt, a.FinishedAt = TimePtr(started), FromMicros(finished)
	return &a, nil
}

// AttemptInsertSQL records n attempts in one statement.
func AttemptInsertSQL(n int) string {
	one := "(" + Markers(Question, 1, 9) + ")"
	return `INSERT INTO run_attempts (` + AttemptCols + `) VALUES ` + strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}

// AttemptArgs appends the values of AttemptCols for a to args.
func AttemptArgs(args []any, a *sundial.Attempt) []any {
	return append(args, a.RunID, a.Delivery, a.NodeID, string(a.Status), a.HTTPStatus, a.Error, a.ResponseBody,
		NullMicros(a.StartedAt), Micros(a.FinishedAt))
}

// TaskEndSQL ends a task with its run (sundial.Task.End): arguments the
// status, the time, the task's ID. The status condition is Task.Endable
// in SQL: RunFinish, a hot path, ends tasks without reading them, and a
// task disabled meanwhile stays so (the conformance suite holds it to
// that).
const TaskEndSQL = `UPDATE tasks SET status = ?, version = version + 1, next_fire_at = NULL, updated_at = ?
	WHERE id = ? AND status = 'ENABLED'`

// TaskRewindSQL rewinds a task to a fire unplanned (sundial.Task.Rewind, in
// SQL so that the task need not be read): arguments the fire's time,
// twice, then the task's ID.
const TaskRewindSQL = `UPDATE tasks
	SET next_fire_at = CASE WHEN next_fire_at IS NULL OR next_fire_at > ? THEN ? ELSE next_fire_at END
	WHERE id = ?`

// RunsUnplanAfterSQL deletes the Planned fires (sundial.Run.Planned) of a
// task rewound to a fire that are later than it (sundial.RunChanges.Rewind),
// after the task's rewind, which locks the task first: arguments the
// task's ID, then the fire's time.
const RunsUnplanAfterSQL = `DELETE FROM runs
	WHERE task_id = ? AND status = 'SCHEDULED' AND scheduled_at > ? AND deliveries = 0 AND trigger_type IN ('SCHEDULE', 'CATCH_UP')`
