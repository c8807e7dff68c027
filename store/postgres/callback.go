package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// ASYNC runs: callbacks (RunComplete), progress reports (RunProgress), the
// callback sweep (RunCallbackExpired), and what touches one-off tasks.

// runTaskLockSQL locks the task of run $1, and reads it: taken before the
// run's lock where a run's change may also end its task.
const runTaskLockSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks
	WHERE id = (SELECT task_id FROM runs WHERE id = $1) FOR UPDATE`

// runCompleteReadSQL reads run $1 under its lock: RunComplete and
// RunProgress decide from what they hold.
const runCompleteReadSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs WHERE id = $1 FOR UPDATE`

// runCompleteLatestSQL gives the outcome of the callback to the latest
// attempt of WAITING_CALLBACK run $1: the delivery whose call RunFinish
// recorded as WAITING_CALLBACK. $2 status, $3 error, $4 finished_at.
const runCompleteLatestSQL = `UPDATE run_attempts SET status = $2, error = $3, finished_at = $4
	WHERE id = (SELECT id FROM run_attempts WHERE run_id = $1 ORDER BY id DESC LIMIT 1)`

// RunComplete ends a WAITING_CALLBACK or RUNNING run with a callback's
// outcome, as sundial.RunCompleteParams.Apply decides, in one transaction and
// three round trips: BEGIN with the locks and the read, the writes, COMMIT.
// The run's lock (and, with CompleteTask, its task's, taken first) orders
// it with RunFinish of the same delivery: whichever comes second finds the
// run changed.
func (s *Store) RunComplete(ctx context.Context, c sundial.RunCompleteParams) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	if err := c.Check(); err != nil {
		return nil, err
	}
	c.FinishedAt, c.DueAt = sqlrow.NormZero(c.FinishedAt), sqlrow.NormZero(c.DueAt)
	now := sqlrow.Norm(s.clock())
	var run *sundial.Run
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
	err = s.inTx(ctx, b, func(tx pgx.Tx) error {
		if err := run.CheckReport(c.Fence); err != nil {
			return err
		}
		a, fresh := c.Apply(run, now)
		ch := sundial.RunChanges{Update: []*sundial.Run{run}}
		if fresh {
			ch.Attempts = []*sundial.Attempt{a}
		}
		if c.CompleteTask != "" {
			ch.Ends = []sundial.TaskEnd{{TaskID: run.TaskID, Status: c.CompleteTask, At: a.FinishedAt}}
		}
		wb := changesBatch(ch)
		if !fresh {
			wb.Queue(runCompleteLatestSQL, run.ID, string(a.Status), cleanText(a.Error), sqlrow.Micros(a.FinishedAt))
		}
		return sendBatch(ctx, tx, wb)
	})
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "complete run %d", c.ID)
	}
	return run, nil
}

// RunProgress saves what a RUNNING or WAITING_CALLBACK run reports about
// itself, as sundial.RunProgressParams.Apply decides, in one transaction and
// three round trips: BEGIN with the run's lock and its read, the write,
// COMMIT.
func (s *Store) RunProgress(ctx context.Context, p sundial.RunProgressParams) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	now := p.Now
	if now.IsZero() {
		now = s.clock()
	}
	now, p.DueAt = sqlrow.Norm(now), sqlrow.NormZero(p.DueAt)
	var r *sundial.Run
	b := beginBatch()
	b.Queue(runCompleteReadSQL, p.ID).QueryRow(func(row pgx.Row) error {
		var err error
		r, err = scanRun(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlrow.NotFound("", "run %d not found", p.ID)
		}
		return err
	})
	err = s.inTx(ctx, b, func(tx pgx.Tx) error {
		if err := r.CheckReport(p.Fence); err != nil {
			return err
		}
		p.Apply(r, now)
		return sendBatch(ctx, tx, changesBatch(sundial.RunChanges{Update: []*sundial.Run{r}}))
	})
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

// RunCallbackExpired (see sundial.Store.RunCallbackExpired) is one
// statement and takes no lock: the caller ends the runs with RunComplete,
// whose fence settles any race.
func (s *Store) RunCallbackExpired(ctx context.Context, now time.Time, limit int) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
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

// SettingEnsure returns the value of a cluster-wide setting, storing value
// first when the setting has none, in one round trip: the INSERT waits for
// a concurrent one of the same name and then does nothing, and the SELECT,
// a later statement (READ COMMITTED), sees whichever value was stored.
func (s *Store) SettingEnsure(ctx context.Context, name, value string) (_ string, err error) {
	defer s.classify(&err)
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
