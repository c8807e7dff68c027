package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// MaxSkipsSinceLast caps AdmitState.SkipsSinceLast.
const MaxSkipsSinceLast = 10

// The admission reads take the run's ID as $1 and find its task and
// scheduled time by primary key, so that all of them go in the round trip
// that begins the transaction, after the statement that locks the task.
const (
	admitTask = `(SELECT task_id FROM runs WHERE id = $1)`
	admitAt   = `(SELECT scheduled_at FROM runs WHERE id = $1)`
)

const (
	// admitLockSQL locks the run's live task: admissions of one task wait
	// for each other here, on every node.
	admitLockSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks WHERE id = ` + admitTask + ` AND NOT deleted FOR UPDATE`

	admitRunSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE id = $1 AND fence = $2 AND status IN ('SCHEDULED', 'QUEUED')`

	// Pending: every other RUNNING, WAITING_CALLBACK and QUEUED run of the
	// task, and the SCHEDULED ones before this run by (scheduled_at, id).
	admitPendingSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ` + admitTask + ` AND status IN ('RUNNING', 'WAITING_CALLBACK', 'QUEUED') AND id <> $1
		UNION ALL
		SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ` + admitTask + ` AND status = 'SCHEDULED' AND (scheduled_at, id) < (` + admitAt + `, $1)
		ORDER BY scheduled_at, id`
)

// admitLastFrom finds LastEffective: the latest run (by scheduled_at, id)
// other than this one whose status is not SCHEDULED, QUEUED or SKIPPED. It
// probes the index once per effective status instead of walking back over
// the SCHEDULED runs planned ahead and the history of skips.
var admitLastFrom = `FROM (VALUES ` + values(filter(allStatuses, effective)) + `) AS s (status)
	CROSS JOIN LATERAL (
		SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE runs.task_id = ` + admitTask + ` AND runs.status = s.status AND runs.id <> $1
		ORDER BY runs.scheduled_at DESC, runs.id DESC
		LIMIT 1
	) AS l
	ORDER BY l.scheduled_at DESC, l.id DESC
	LIMIT 1`

// effective reports whether a run in status s counts as LastEffective.
func effective(s sundial.RunStatus) bool {
	return s != sundial.RunScheduled && s != sundial.RunQueued && s != sundial.RunSkipped
}

// values renders statuses as the rows of a VALUES list: ('A'), ('B').
func values(statuses []sundial.RunStatus) string {
	var out string
	for i, s := range statuses {
		if i > 0 {
			out += ", "
		}
		out += sqlList(s)
	}
	return out
}

var (
	admitLastSQL = `SELECT l.* ` + admitLastFrom

	// SkipsSinceLast: the first SKIPPED runs after LastEffective by
	// (scheduled_at, id), or from the first if there is none. The bounds
	// are scalar subqueries, evaluated once, so the index scan starts there.
	admitSkipsSQL = `WITH last AS (SELECT l.scheduled_at, l.id ` + admitLastFrom + `)
		SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ` + admitTask + ` AND status = 'SKIPPED'
			AND (scheduled_at, id) > (COALESCE((SELECT scheduled_at FROM last), -9223372036854775808),
				COALESCE((SELECT id FROM last), 0))
		ORDER BY scheduled_at, id
		LIMIT $2`
)

// The admission writes are guarded by the run's fence and status as read:
// RunStart, RunCancel and RunRelease change runs without the task lock.
var (
	admitRunningSQL = `UPDATE runs
		SET status = 'RUNNING', attempt = $1, started_at = $2, deliveries = deliveries + 1,
			trace_id = $3, updated_at = $2, ` + sqlrow.StartClears("") + `
		WHERE id = $4 AND fence = $5 AND status = $6 RETURNING ` + sqlrow.RunCols
	admitQueuedSQL = `UPDATE runs SET status = 'QUEUED', attempt = $1, updated_at = $2
		WHERE id = $3 AND fence = $4 AND status = $5 RETURNING ` + sqlrow.RunCols
	admitSkippedSQL = `UPDATE runs
		SET status = 'SKIPPED', skip_reason = $1, attempt = $2, finished_at = $3, updated_at = $3
		WHERE id = $4 AND fence = $5 AND status = $6 RETURNING ` + sqlrow.RunCols

	// admitLockRunsSQL locks the runs an admission changes in ID order
	// before changing them, as RunStart and RunFinish do.
	admitLockRunsSQL = `SELECT id FROM runs WHERE id = ANY($1) ORDER BY id FOR UPDATE`
)

// admitCancelSQL cancels (as RunCancel does) the unfinished runs of task
// $3 among $2, and fails the task if it is one-off and its scheduled run
// was among those cancelled at once.
var admitCancelSQL = `WITH c AS (
		UPDATE runs SET ` + cancelSet + `
		WHERE id = ANY($2) AND task_id = $3 AND status NOT IN ` + finalStatuses + `
		RETURNING status, trigger_type
	)
	UPDATE tasks SET status = 'FAILED', version = version + 1, next_fire_at = NULL, updated_at = $1
	WHERE id = $3 AND ` + oneOffFailed + `
		AND EXISTS (SELECT 1 FROM c WHERE status = 'CANCELED' AND trigger_type = 'SCHEDULE')`

// RunAdmit decides and applies what the SCHEDULED or QUEUED run id becomes,
// in one transaction that holds the task's row lock, in three round trips:
// BEGIN with the lock and every read, the writes, COMMIT.
func (s *Store) RunAdmit(ctx context.Context, id, fence int64, now time.Time, decide sundial.AdmitFunc) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	var (
		task  *sundial.Task
		state sundial.AdmitState
		out   *sundial.Run
	)
	b := beginBatch()
	b.Queue(admitLockSQL, id).QueryRow(func(row pgx.Row) error {
		var err error
		task, err = sqlrow.ScanTask(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the run's check below says why
		}
		return err
	})
	b.Queue(admitRunSQL, id, fence).QueryRow(func(row pgx.Row) error {
		run, err := scanRun(row)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return sqlrow.NotFound("", "run %d is not waiting for admission under fence %d", id, fence)
		case err != nil:
			return err
		case task == nil:
			return sqlrow.NotFound("", "task %d of run %d not found", run.TaskID, id)
		}
		state = sundial.AdmitState{Task: task, Run: run}
		return nil
	})
	b.Queue(admitPendingSQL, id).Query(func(rows pgx.Rows) error {
		var err error
		if state.Pending, err = scanRuns(rows); err != nil {
			return err
		}
		for _, p := range state.Pending {
			switch {
			case p.Status.Active():
				state.Active++
			case p.Status == sundial.RunQueued:
				state.Queued++
			}
		}
		return nil
	})
	b.Queue(admitLastSQL, id).Query(func(rows pgx.Rows) error {
		last, err := scanRuns(rows)
		if len(last) > 0 {
			state.LastEffective = last[0]
		}
		return err
	})
	b.Queue(admitSkipsSQL, id, MaxSkipsSinceLast).Query(func(rows pgx.Rows) error {
		var err error
		state.SkipsSinceLast, err = scanRuns(rows)
		return err
	})
	err = s.inTx(ctx, b, func(tx pgx.Tx) error {
		from := state.Run.Status
		d := decide(state)
		if err := d.Check(id, from); err != nil {
			return err
		}
		// A decision ends its task only with its run: SKIPPED, the one-off
		// task's only fire not run.
		complete := d.EndsTask() != ""
		wb := &pgx.Batch{}
		if cancel := slices.DeleteFunc(slices.Clone(d.Cancel), func(c int64) bool { return c == id }); len(cancel) > 0 {
			wb.Queue(admitLockRunsSQL, append(slices.Clone(cancel), id))
			wb.Queue(admitCancelSQL, sqlrow.Micros(now), cancel, state.Run.TaskID)
		}
		var q *pgx.QueuedQuery
		switch d.Status {
		case sundial.RunRunning:
			q = wb.Queue(admitRunningSQL, d.Attempt, sqlrow.Micros(now), cleanText(d.TraceID), id, fence, string(from))
		case sundial.RunQueued:
			q = wb.Queue(admitQueuedSQL, d.Attempt, sqlrow.Micros(now), id, fence, string(from))
		case sundial.RunSkipped:
			q = wb.Queue(admitSkippedSQL, string(d.SkipReason), d.Attempt, sqlrow.Micros(now), id, fence, string(from))
		}
		q.QueryRow(func(row pgx.Row) error {
			var err error
			out, err = scanRun(row)
			if errors.Is(err, pgx.ErrNoRows) {
				// Changed since it was read, by a statement that does not
				// take the task lock: no longer this admission's to decide.
				return sqlrow.NotFound("", "run %d is not waiting for admission under fence %d", id, fence)
			}
			return err
		})
		if complete {
			// The task's lock is this transaction's since its first statement.
			wb.Queue(completeTaskSQL, string(d.CompleteTask), sqlrow.Micros(now), state.Run.TaskID)
		}
		return sendBatch(ctx, tx, wb)
	})
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "admit run %d", id)
	}
	return out, nil
}
