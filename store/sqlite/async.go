package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// ASYNC runs: callbacks, progress reports and callback deadlines; and the
// cluster-wide settings. RunComplete and RunProgress are SQLite's own: each
// reads and writes its run in one write transaction, which holds every
// task's lock.

// reporting reads run id inside tx for a report of the delivery under
// fence (a callback, a progress report), and refuses one the run does not
// take (sundial.Run.CheckReport).
func reporting(ctx context.Context, tx *sql.Tx, id, fence int64) (*sundial.Run, error) {
	r, err := sqlrow.ScanRun(tx.QueryRowContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("", "run %d not found", id)
	}
	if err != nil {
		return nil, err
	}
	return r, r.CheckReport(fence)
}

// latestAttemptSQL gives a callback's outcome to the run's latest attempt:
// its call's, recorded WAITING_CALLBACK.
const latestAttemptSQL = `UPDATE run_attempts SET status = ?1, error = ?2, finished_at = ?3
	WHERE id = (SELECT id FROM run_attempts WHERE run_id = ?4 ORDER BY id DESC LIMIT 1)`

// RunComplete ends a RUNNING or WAITING_CALLBACK run with a callback's
// outcome, or sends it back to SCHEDULED for a retry, as
// sundial.RunCompleteParams.Apply decides.
func (s *Store) RunComplete(ctx context.Context, c sundial.RunCompleteParams) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	if err := c.Check(); err != nil {
		return nil, err
	}
	now := sqlrow.Norm(s.clock())
	c.FinishedAt, c.DueAt = sqlrow.NormZero(c.FinishedAt), sqlrow.NormZero(c.DueAt)
	var out *sundial.Run
	err = s.write(ctx, func(tx *sql.Tx) error {
		r, err := reporting(ctx, tx, c.ID, c.Fence)
		if err != nil {
			return err
		}
		a, fresh := c.Apply(r, now)
		ch := sundial.RunChanges{Update: []*sundial.Run{r}}
		if fresh {
			ch.Attempts = []*sundial.Attempt{a}
		} else if _, err := tx.ExecContext(ctx, latestAttemptSQL, string(a.Status), a.Error,
			sqlrow.Micros(a.FinishedAt), r.ID); err != nil {
			return err
		}
		if c.CompleteTask != "" {
			ch.Ends = []sundial.TaskEnd{{TaskID: r.TaskID, Status: c.CompleteTask, At: a.FinishedAt}}
		}
		out = r
		return s.apply(ctx, tx, ch)
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "complete run %d", c.ID)
	}
	return out, nil
}

// RunProgress saves a RUNNING or WAITING_CALLBACK run's progress and
// checkpoint and moves a callback deadline later, as
// sundial.RunProgressParams.Apply decides.
func (s *Store) RunProgress(ctx context.Context, p sundial.RunProgressParams) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	now := p.Now
	if now.IsZero() {
		now = s.clock()
	}
	now, p.DueAt = sqlrow.Norm(now), sqlrow.NormZero(p.DueAt)
	var out *sundial.Run
	err = s.write(ctx, func(tx *sql.Tx) error {
		r, err := reporting(ctx, tx, p.ID, p.Fence)
		if err != nil {
			return err
		}
		p.Apply(r, now)
		out = r
		return s.apply(ctx, tx, sundial.RunChanges{Update: []*sundial.Run{r}})
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "save progress of run %d", p.ID)
	}
	return out, nil
}

// callbackExpiredSQL reads the waiting runs past their deadline from the
// partial index runs_waiting.
const callbackExpiredSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs INDEXED BY runs_waiting
	WHERE status = 'WAITING_CALLBACK' AND due_at <= ? ORDER BY due_at, id LIMIT ?`

// RunCallbackExpired implements sundial.Store.RunCallbackExpired.
// SQLite's own: the waiting runs are read from the partial index
// runs_waiting (INDEXED BY), and their tasks in the same read transaction.
func (s *Store) RunCallbackExpired(ctx context.Context, now time.Time, limit int) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil, nil
	}
	// One read transaction, so that the tasks are those of the runs read.
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("find expired callbacks: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // a read: nothing to undo
	runs, err := sqlrow.ScanRuns(tx.QueryContext(ctx, callbackExpiredSQL, sqlrow.Micros(now), limit))
	if err != nil {
		return nil, nil, fmt.Errorf("find expired callbacks: %w", err)
	}
	if len(runs) == 0 {
		return nil, nil, nil
	}
	tasks, err := tasksOf(ctx, tx, runs)
	if err != nil {
		return nil, nil, fmt.Errorf("find expired callbacks: %w", err)
	}
	return runs, tasks, nil
}

// SettingEnsure returns the value of a setting, storing value first when
// it has none: the first writer decides.
// SQLite's own: the insert and the read share one write transaction.
func (s *Store) SettingEnsure(ctx context.Context, name, value string) (_ string, err error) {
	defer s.classify(&err)
	var got string
	err = s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES (?, ?)
			ON CONFLICT (name) DO NOTHING`, name, value); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&got)
	})
	if err != nil {
		return "", fmt.Errorf("ensure setting %s: %w", name, err)
	}
	return got, nil
}
