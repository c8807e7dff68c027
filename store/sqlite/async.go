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
// cluster-wide settings.

// completeStatuses are the outcomes a callback (or its deadline, or a
// cancellation) may give a run.
var completeStatuses = map[sundial.RunStatus]bool{
	sundial.RunSuccess: true, sundial.RunFailed: true, sundial.RunFailedTimeout: true, sundial.RunCanceled: true,
}

// activeRun reads run id inside tx for a report of the delivery with the
// given fence (a callback, a progress report) and refuses one the run no
// longer takes: ENotFound, then EConflict on the fence, then on the status.
func activeRun(ctx context.Context, tx *sql.Tx, id, fence int64) (*sundial.Run, error) {
	r, err := sqlrow.ScanRun(tx.QueryRowContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("", "run %d not found", id)
	}
	if err != nil {
		return nil, err
	}
	if r.Fence != fence {
		return nil, sqlrow.Conflict("fence",
			"run %d was delivered again since: this callback is from a superseded delivery", id)
	}
	if !r.Status.Active() {
		if r.Status.Final() {
			return nil, sqlrow.Conflict("status", "run %d is already %s", id, r.Status)
		}
		return nil, sqlrow.Conflict("status", "run %d is %s, not running or waiting for a callback", id, r.Status)
	}
	return r, nil
}

// RunComplete ends a RUNNING or WAITING_CALLBACK run with a callback's
// outcome, or sends it back to SCHEDULED for a retry.
func (s *Store) RunComplete(ctx context.Context, c sundial.RunCompletion) (*sundial.Run, error) {
	if !completeStatuses[c.Status] {
		return nil, sundial.Errorf(sundial.EInvalid, "status",
			"run %d cannot be completed as %q: give SUCCESS, FAILED, FAILED_TIMEOUT or CANCELED", c.ID, c.Status)
	}
	finished := c.FinishedAt
	if finished.IsZero() {
		finished = s.clock()
	}
	fin := sqlrow.Micros(finished)
	var out *sundial.Run
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, err := activeRun(ctx, tx, c.ID, c.Fence)
		if err != nil {
			return err
		}
		if r.Status == sundial.RunRunning {
			// The callback came before the call's answer was recorded: the
			// delivery ends here, with no answer of its own.
			_, err = tx.ExecContext(ctx, `INSERT INTO run_attempts
				(run_id, delivery, node_id, status, http_status, error, response_body, started_at, finished_at)
				VALUES (?, ?, ?, ?, 0, ?, '', ?, ?)`,
				r.ID, r.Deliveries, r.NodeID, string(c.Status), c.Error, sqlrow.NullMicros(r.StartedAt), fin)
		} else {
			// The delivery was recorded WAITING_CALLBACK: its attempt takes
			// the outcome.
			_, err = tx.ExecContext(ctx, `UPDATE run_attempts SET status = ?1, error = ?2, finished_at = ?3
				WHERE id = (SELECT id FROM run_attempts WHERE run_id = ?4 ORDER BY id DESC LIMIT 1)`,
				string(c.Status), c.Error, fin, r.ID)
		}
		if err != nil {
			return err
		}
		if c.Retry {
			var due *time.Time
			if !c.DueAt.IsZero() {
				due = &c.DueAt
			}
			out, err = sqlrow.ScanRun(tx.QueryRowContext(ctx, `UPDATE runs
				SET status = 'SCHEDULED', node_id = '', due_at = COALESCE(?1, due_at), error = ?2,
					result_json = ?3, message = ?6, finished_at = NULL, updated_at = ?4
				WHERE id = ?5 RETURNING `+sqlrow.RunCols,
				sqlrow.NullMicros(due), c.Error, sqlrow.NullJSON(c.Result), fin, r.ID, c.Message))
		} else {
			out, err = sqlrow.ScanRun(tx.QueryRowContext(ctx, `UPDATE runs
				SET status = ?1, finished_at = ?2, error = ?3, result_json = ?4, message = ?6, updated_at = ?2
				WHERE id = ?5 RETURNING `+sqlrow.RunCols,
				string(c.Status), fin, c.Error, sqlrow.NullJSON(c.Result), r.ID, c.Message))
		}
		if err != nil {
			return err
		}
		if c.CompleteTask != "" {
			_, err = tx.ExecContext(ctx, completeTaskSQL, string(c.CompleteTask), fin, r.ID)
		}
		return err
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "complete run %d", c.ID)
	}
	return out, nil
}

// RunProgress saves a RUNNING or WAITING_CALLBACK run's progress and
// checkpoint (nil keeps the saved one) and moves a callback deadline later.
func (s *Store) RunProgress(ctx context.Context, p sundial.RunProgress) (*sundial.Run, error) {
	now := p.Now
	if now.IsZero() {
		now = s.clock()
	}
	var due *time.Time
	if !p.DueAt.IsZero() {
		due = &p.DueAt
	}
	var out *sundial.Run
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := activeRun(ctx, tx, p.ID, p.Fence); err != nil {
			return err
		}
		// A NULL deadline compares to nothing: due_at stays.
		var err error
		out, err = sqlrow.ScanRun(tx.QueryRowContext(ctx, `UPDATE runs
			SET progress_json = COALESCE(?1, progress_json), checkpoint_json = COALESCE(?2, checkpoint_json),
				due_at = CASE WHEN status = 'WAITING_CALLBACK' AND ?3 > due_at THEN ?3 ELSE due_at END,
				updated_at = ?4
			WHERE id = ?5 RETURNING `+sqlrow.RunCols,
			sqlrow.NullJSON(p.Progress), sqlrow.NullJSON(p.Checkpoint), sqlrow.NullMicros(due), sqlrow.Micros(now), p.ID))
		return err
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

// RunCallbackExpired returns up to limit WAITING_CALLBACK runs whose
// deadline is at or before now, by deadline, and their tasks, deleted ones
// too: a deleted task's run still ends.
func (s *Store) RunCallbackExpired(ctx context.Context, now time.Time, limit int) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	if limit <= 0 {
		return nil, nil, nil
	}
	// One read transaction, so that the tasks are those of the runs read.
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("find expired callbacks: %w", err)
	}
	defer tx.Rollback()
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

// runUpcomingSQL: the task's SCHEDULED runs never delivered, on the index
// runs_task_status (task_id, status, scheduled_at).
const runUpcomingSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
	WHERE task_id = ? AND status = 'SCHEDULED' AND deliveries = 0
	ORDER BY scheduled_at, id LIMIT ?`

// RunUpcoming returns up to limit upcoming runs of a task (SCHEDULED, never
// delivered), by scheduled time then ID.
func (s *Store) RunUpcoming(ctx context.Context, taskID int64, limit int) ([]*sundial.Run, error) {
	runs, err := sqlrow.ScanRuns(s.r.QueryContext(ctx, runUpcomingSQL, taskID, sqlrow.ClampLimit(limit)))
	if err != nil {
		return nil, fmt.Errorf("list upcoming runs of task %d: %w", taskID, err)
	}
	return runs, nil
}

// SettingEnsure returns the value of a setting, storing value first when
// it has none: the first writer decides.
func (s *Store) SettingEnsure(ctx context.Context, name, value string) (string, error) {
	var got string
	err := s.write(ctx, func(tx *sql.Tx) error {
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
