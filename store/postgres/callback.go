package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// ASYNC runs: callbacks (RunComplete), progress reports (RunProgress), the
// callback sweep (RunCallbackExpired), and what touches one-off tasks.

// runTaskLockSQL locks the task of run $1, taken before the run's lock
// where a run's change also ends its task.
const runTaskLockSQL = `SELECT id FROM tasks WHERE id = (SELECT task_id FROM runs WHERE id = $1) FOR UPDATE`

// runCompleteReadSQL reads run $1 under its lock: RunComplete decides from
// what it holds.
const runCompleteReadSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs WHERE id = $1 FOR UPDATE`

// runCompleteAttemptSQL records the delivery of RUNNING run $1 that a
// callback ends before the call's answer was recorded: as RunFinish would
// have, numbered by the run's deliveries, with the run's node and start.
// $2 status, $3 error, $4 finished_at.
const runCompleteAttemptSQL = `INSERT INTO run_attempts (run_id, delivery, node_id, status, error,
		started_at, finished_at)
	SELECT id, deliveries, node_id, $2, $3, started_at, $4 FROM runs WHERE id = $1`

// runCompleteLatestSQL gives the outcome of the callback to the latest
// attempt of WAITING_CALLBACK run $1: the delivery whose call RunFinish
// recorded as WAITING_CALLBACK. $2 status, $3 error, $4 finished_at.
const runCompleteLatestSQL = `UPDATE run_attempts SET status = $2, error = $3, finished_at = $4
	WHERE id = (SELECT id FROM run_attempts WHERE run_id = $1 ORDER BY id DESC LIMIT 1)`

// runCompleteSQL ends run $1 with status $2 at $3 (error $4, result $5,
// message $8), or, with $6 (retry), sends it back to SCHEDULED, held by no
// node, due at $7 (NULL: due_at kept), unfinished. The fence stays: the next claim bumps
// it.
const runCompleteSQL = `UPDATE runs SET
		status = CASE WHEN $6::boolean THEN 'SCHEDULED' ELSE $2::text END,
		node_id = CASE WHEN $6 THEN '' ELSE node_id END,
		due_at = CASE WHEN $6 THEN COALESCE($7::bigint, due_at) ELSE due_at END,
		finished_at = CASE WHEN $6 THEN NULL ELSE $3::bigint END,
		error = $4, result_json = $5, message = $8, updated_at = $3
	WHERE id = $1
	RETURNING ` + sqlrow.RunCols

// completable are the statuses a callback may give a run.
var completable = map[sundial.RunStatus]bool{
	sundial.RunSuccess: true, sundial.RunFailed: true, sundial.RunFailedTimeout: true, sundial.RunCanceled: true,
}

// RunComplete ends a WAITING_CALLBACK or RUNNING run with a callback's
// outcome, in one transaction and three round trips: BEGIN with the locks
// and the read, the writes, COMMIT. The run's lock (and, with
// CompleteTask, its task's, taken first) orders it with RunFinish of the
// same delivery: whichever comes second finds the run changed.
func (s *Store) RunComplete(ctx context.Context, c sundial.RunCompletion) (*sundial.Run, error) {
	if !completable[c.Status] {
		return nil, sundial.Errorf(sundial.EInvalid, "status",
			"a callback ends a run SUCCESS, FAILED, FAILED_TIMEOUT or CANCELED, not %q", c.Status)
	}
	if c.CompleteTask != "" {
		if err := checkTaskEnd(c.CompleteTask); err != nil {
			return nil, err
		}
	}
	fin := c.FinishedAt
	if fin.IsZero() {
		fin = s.clock()
	}
	finished := sqlrow.Micros(fin)
	var due *int64
	if !c.DueAt.IsZero() {
		due = nullMicros(&c.DueAt)
	}
	errText := cleanText(c.Error)
	var run, out *sundial.Run
	b := beginBatch()
	if c.CompleteTask != "" {
		b.Queue(runTaskLockSQL, c.ID)
	}
	b.Queue(runCompleteReadSQL, c.ID).QueryRow(func(row pgx.Row) error {
		var err error
		run, err = scanRun(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlrow.NotFound("", "run %d not found", c.ID)
		}
		return err
	})
	err := s.inTx(ctx, b, func(tx pgx.Tx) error {
		if err := checkReport(run, c.Fence); err != nil {
			return err
		}
		wb := &pgx.Batch{}
		if run.Status == sundial.RunRunning {
			wb.Queue(runCompleteAttemptSQL, c.ID, string(c.Status), errText, finished)
		} else {
			wb.Queue(runCompleteLatestSQL, c.ID, string(c.Status), errText, finished)
		}
		wb.Queue(runCompleteSQL, c.ID, string(c.Status), finished, errText, nullJSON(c.Result), c.Retry, due,
			cleanText(c.Message)).
			QueryRow(func(row pgx.Row) error {
				var err error
				out, err = scanRun(row)
				return err
			})
		if c.CompleteTask != "" {
			wb.Queue(completeTaskSQL, string(c.CompleteTask), finished, run.TaskID)
		}
		return sendBatch(ctx, tx, wb)
	})
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "complete run %d", c.ID)
	}
	return out, nil
}

// checkReport refuses a callback or progress report on run r (nil: none)
// from fence: a missing run is ENotFound, another delivery's fence or a run
// no delivery is under way for EConflict.
func checkReport(r *sundial.Run, fence int64) error {
	switch {
	case r.Fence != fence:
		return sqlrow.Conflict("fence", "run %d was delivered again since: this callback is from a superseded delivery", r.ID)
	case r.Status != sundial.RunRunning && r.Status != sundial.RunWaitingCallback:
		return sqlrow.Conflict("status", "run %d is already %s", r.ID, r.Status)
	}
	return nil
}

// runProgressSQL saves run $1's progress ($3) and checkpoint ($4), each
// kept when NULL, and moves a WAITING_CALLBACK run's callback deadline to
// $5 when that is later, if the fence is $2 and a delivery is under way.
const runProgressSQL = `UPDATE runs SET
		progress_json = COALESCE($3, progress_json),
		checkpoint_json = COALESCE($4, checkpoint_json),
		due_at = CASE WHEN status = 'WAITING_CALLBACK' AND $5::bigint > due_at THEN $5 ELSE due_at END,
		updated_at = $6
	WHERE id = $1 AND fence = $2 AND status IN ('RUNNING', 'WAITING_CALLBACK')
	RETURNING ` + sqlrow.RunCols

// RunProgress saves what a RUNNING or WAITING_CALLBACK run reports about
// itself, in one statement; when it changes nothing, a second read says
// why.
func (s *Store) RunProgress(ctx context.Context, p sundial.RunProgress) (*sundial.Run, error) {
	now := p.Now
	if now.IsZero() {
		now = s.clock()
	}
	var due *int64
	if !p.DueAt.IsZero() {
		due = nullMicros(&p.DueAt)
	}
	r, err := scanRun(s.pool.QueryRow(ctx, runProgressSQL, p.ID, p.Fence, nullJSON(p.Progress),
		nullJSON(p.Checkpoint), due, sqlrow.Micros(now)))
	if errors.Is(err, pgx.ErrNoRows) {
		var cur *sundial.Run
		if cur, err = s.RunGet(ctx, p.ID); err == nil {
			if err = checkReport(cur, p.Fence); err == nil {
				// Changed between the two statements: as if it came first.
				err = sqlrow.Conflict("status", "run %d changed while its progress was saved", p.ID)
			}
		}
	}
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "save progress of run %d", p.ID)
	}
	return r, nil
}

// callbackExpiredSQL reads the WAITING_CALLBACK runs whose callback
// deadline is at or before $1 through runs_waiting, oldest deadline first,
// up to $2, each with its task (deleted or not: a callback's run ends
// whatever became of its task), the first of each task's runs carrying it
// as in claimDueSQL. The tasks are found by primary key from the runs'
// task IDs (the ARRAY, evaluated once): a plain join may hash the whole
// tasks table.
var callbackExpiredSQL = `WITH due AS (
		SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE status = 'WAITING_CALLBACK' AND due_at <= $1
		ORDER BY due_at, id
		LIMIT $2
	), t AS (
		SELECT * FROM tasks WHERE id = ANY (ARRAY(SELECT task_id FROM due))
	)
	SELECT ` + qualified("c", sqlrow.RunCols) + `, ` + qualified("t", sqlrow.TaskCols) + `
	FROM (SELECT *, row_number() OVER (PARTITION BY task_id ORDER BY due_at, id) AS n FROM due) AS c
		LEFT JOIN t ON t.id = c.task_id AND c.n = 1
	ORDER BY c.due_at, c.id`

// RunCallbackExpired returns up to limit WAITING_CALLBACK runs whose
// callback deadline is at or before now, oldest first, and their tasks,
// deleted ones included, in one statement. It takes no lock: the caller
// ends them with RunComplete, whose fence settles any race.
func (s *Store) RunCallbackExpired(ctx context.Context, now time.Time, limit int) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	if limit <= 0 {
		return nil, map[int64]*sundial.Task{}, nil
	}
	rows, err := s.pool.Query(ctx, callbackExpiredSQL, sqlrow.Micros(now), limit)
	var (
		runs  []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	if err == nil {
		runs, tasks, err = scanRunsTasks(rows)
	}
	if err != nil {
		return nil, nil, sqlrow.Wrap(badTextOr(err), "find runs whose callback is overdue")
	}
	return runs, tasks, nil
}

// runUpcomingSQL reads a task's SCHEDULED runs never delivered through
// runs_task_status, by scheduled time.
const runUpcomingSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
	WHERE task_id = $1 AND status = 'SCHEDULED' AND deliveries = 0
	ORDER BY scheduled_at, id
	LIMIT $2`

// RunUpcoming returns up to limit (sqlrow.ClampLimit) SCHEDULED runs of a
// task never delivered, by scheduled time then ID.
func (s *Store) RunUpcoming(ctx context.Context, taskID int64, limit int) ([]*sundial.Run, error) {
	rows, err := s.pool.Query(ctx, runUpcomingSQL, taskID, sqlrow.ClampLimit(limit))
	var out []*sundial.Run
	if err == nil {
		out, err = scanRuns(rows)
	}
	if err != nil {
		return nil, fmt.Errorf("list upcoming runs of task %d: %w", taskID, err)
	}
	return out, nil
}

// oneOffLockSQL locks the task of run $1 if it is a one-off task, which
// cancelling the run may end: before the run's lock, in the lock order.
const oneOffLockSQL = `SELECT id FROM tasks WHERE id = (SELECT task_id FROM runs WHERE id = $1)
	AND cron_expr = '' AND run_at IS NOT NULL FOR UPDATE`

// oneOffFailed is the condition on tasks of a one-off task that is still
// ENABLED: its scheduled run ending for good without running ends it
// FAILED.
const oneOffFailed = `tasks.cron_expr = '' AND tasks.run_at IS NOT NULL AND tasks.status = 'ENABLED'`

// SettingEnsure returns the value of a cluster-wide setting, storing value
// first when the setting has none, in one round trip: the INSERT waits for
// a concurrent one of the same name and then does nothing, and the SELECT,
// a later statement (READ COMMITTED), sees whichever value was stored.
func (s *Store) SettingEnsure(ctx context.Context, name, value string) (string, error) {
	var stored string
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, value)
	b.Queue(`SELECT value FROM settings WHERE name = $1`, name).QueryRow(func(row pgx.Row) error {
		return row.Scan(&stored)
	})
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return "", sqlrow.Wrap(badTextOr(err), "ensure setting %q", name)
	}
	return stored, nil
}
