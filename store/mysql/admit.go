package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// MaxSkipsSinceLast caps AdmitState.SkipsSinceLast.
const MaxSkipsSinceLast = 10

// The admission queries name their index: a task with a long history has
// many runs under runs_task_scheduled, few under each (task_id, status).
const (
	// Pending: every other RUNNING, WAITING_CALLBACK and QUEUED run of the
	// task, and the SCHEDULED ones before this run by (scheduled_at, id).
	// Arguments: task, run, task, at, at, run.
	admitPendingSQL = `(SELECT ` + sqlrow.RunCols + ` FROM runs FORCE INDEX (runs_task_status)
		WHERE task_id = ? AND status IN ('RUNNING', 'WAITING_CALLBACK', 'QUEUED') AND id <> ?)
		UNION ALL
		(SELECT ` + sqlrow.RunCols + ` FROM runs FORCE INDEX (runs_task_status)
		WHERE task_id = ? AND status = 'SCHEDULED' AND scheduled_at <= ?
			AND (scheduled_at < ? OR id < ?))
		ORDER BY scheduled_at, id`

	// SkipsSinceLast: the first SKIPPED runs after (scheduled_at, id).
	// Arguments: task, at, at, id, limit.
	admitSkipsSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs FORCE INDEX (runs_task_status)
		WHERE task_id = ? AND status = 'SKIPPED' AND scheduled_at >= ?
			AND (scheduled_at > ? OR id > ?)
		ORDER BY scheduled_at, id
		LIMIT ?`
)

// lastStatuses are the effective statuses: all but SCHEDULED, QUEUED and
// SKIPPED.
var lastStatuses = []sundial.RunStatus{sundial.RunRunning, sundial.RunWaitingCallback, sundial.RunSuccess,
	sundial.RunFailed, sundial.RunTimeout, sundial.RunFailedTimeout, sundial.RunCanceled, sundial.RunInterrupted}

// admitLastSQL finds LastEffective: the latest run (by scheduled_at, id)
// other than this one whose status is effective. It probes the index once
// per effective status instead of walking back over the SCHEDULED runs
// planned ahead and the history of skips. Arguments: (task, run) per status.
var admitLastSQL = func() string {
	var probes []string
	for _, st := range lastStatuses {
		probes = append(probes, `(SELECT `+sqlrow.RunCols+` FROM runs FORCE INDEX (runs_task_status) WHERE task_id = ? AND status = '`+string(st)+
			`' AND id <> ? ORDER BY scheduled_at DESC, id DESC LIMIT 1)`)
	}
	return strings.Join(probes, "\n\t\tUNION ALL ") + `
		ORDER BY scheduled_at DESC, id DESC LIMIT 1`
}()

// RunAdmit decides and applies what the SCHEDULED or QUEUED run id becomes,
// in one transaction holding the task's row lock: admissions of one task
// wait for each other on every node, and each reads what the previous one
// committed. Should the transaction be retried after a deadlock, decide is
// called again with the state read then.
func (s *Store) RunAdmit(ctx context.Context, id, fence int64, now time.Time, decide sundial.AdmitFunc) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	var out *sundial.Run
	err = s.write(ctx, func(tx *sql.Tx) error {
		out = nil
		var taskID int64
		err := tx.QueryRowContext(ctx, `SELECT task_id FROM runs WHERE id = ?`, id).Scan(&taskID)
		if errors.Is(err, sql.ErrNoRows) {
			return sqlrow.NotFound("", "run %d is not waiting for admission under fence %d", id, fence)
		}
		if err != nil {
			return err
		}
		task, err := sqlrow.ScanTask(tx.QueryRowContext(ctx,
			`SELECT `+sqlrow.TaskCols+` FROM tasks WHERE id = ? AND deleted = 0 FOR UPDATE`, taskID))
		if errors.Is(err, sql.ErrNoRows) {
			return sqlrow.NotFound("", "task %d of run %d not found", taskID, id)
		}
		if err != nil {
			return err
		}
		// Read under the task's lock, and locked: RunStart, RunFinish and
		// RunCancel change runs without the task's lock.
		run, err := sqlrow.ScanRun(tx.QueryRowContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs
			WHERE id = ? AND fence = ? AND status IN ('SCHEDULED', 'QUEUED') FOR UPDATE`, id, fence))
		if errors.Is(err, sql.ErrNoRows) {
			return sqlrow.NotFound("", "run %d is not waiting for admission under fence %d", id, fence)
		}
		if err != nil {
			return err
		}
		state, err := admitState(ctx, tx, task, run)
		if err != nil {
			return err
		}
		from := run.Status
		d := decide(state)

		if err := d.Check(id, from); err != nil {
			return err
		}
		for _, cid := range d.Cancel {
			if cid == id {
				continue
			}
			c, err := getRun(ctx, tx, cid, true)
			if errors.Is(err, sql.ErrNoRows) {
				continue // gone: nothing left to cancel
			}
			if err != nil {
				return err
			}
			if c.TaskID != taskID || c.Status.Final() {
				continue
			}
			if _, err := cancelRun(ctx, tx, c, now, task.OneOff()); err != nil {
				return err
			}
		}
		at := sqlrow.Micros(now)
		switch d.Status {
		case sundial.RunRunning:
			_, err = tx.ExecContext(ctx, `UPDATE runs
				SET status = 'RUNNING', attempt = ?, started_at = ?, deliveries = deliveries + 1,
					trace_id = ?, updated_at = ?, `+sqlrow.StartClears("")+`
				WHERE id = ?`, d.Attempt, at, d.TraceID, at, id)
		case sundial.RunQueued:
			_, err = tx.ExecContext(ctx, `UPDATE runs SET status = 'QUEUED', attempt = ?, updated_at = ?
				WHERE id = ?`, d.Attempt, at, id)
		case sundial.RunSkipped:
			_, err = tx.ExecContext(ctx, `UPDATE runs
				SET status = 'SKIPPED', skip_reason = ?, attempt = ?, finished_at = ?, updated_at = ?
				WHERE id = ?`, string(d.SkipReason), d.Attempt, at, at, id)
		}
		if err != nil {
			return err
		}
		if d.CompleteTask != "" && d.Status == sundial.RunSkipped {
			// A one-off task whose only fire is skipped ends with it: the
			// task's lock is held since the start.
			if err := completeTasks(ctx, tx, []taskEnd{{taskID, d.CompleteTask, sql.NullInt64{Int64: at, Valid: true}}}); err != nil {
				return err
			}
		}
		out, err = getRun(ctx, tx, id, false)
		return err
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "admit run %d", id)
	}
	return out, nil
}

// admitState reads what the policies look at, inside the admission's
// transaction.
func admitState(ctx context.Context, tx *sql.Tx, task *sundial.Task, run *sundial.Run) (sundial.AdmitState, error) {
	state := sundial.AdmitState{Task: task, Run: run}
	sched := sqlrow.Micros(run.ScheduledTime)
	var err error
	state.Pending, err = sqlrow.ScanRuns(tx.QueryContext(ctx, admitPendingSQL,
		run.TaskID, run.ID, run.TaskID, sched, sched, run.ID))
	if err != nil {
		return state, fmt.Errorf("read pending runs: %w", err)
	}
	for _, p := range state.Pending {
		switch {
		case p.Status.Active():
			state.Active++
		case p.Status == sundial.RunQueued:
			state.Queued++
		}
	}
	args := make([]any, 0, 2*len(lastStatuses))
	for range lastStatuses {
		args = append(args, run.TaskID, run.ID)
	}
	last, err := sqlrow.ScanRuns(tx.QueryContext(ctx, admitLastSQL, args...))
	if err != nil {
		return state, fmt.Errorf("read last effective run: %w", err)
	}
	afterAt, afterID := int64(math.MinInt64), int64(0)
	if len(last) > 0 {
		state.LastEffective = last[0]
		afterAt, afterID = sqlrow.Micros(last[0].ScheduledTime), last[0].ID
	}
	state.SkipsSinceLast, err = sqlrow.ScanRuns(tx.QueryContext(ctx, admitSkipsSQL,
		run.TaskID, afterAt, afterAt, afterID, MaxSkipsSinceLast))
	if err != nil {
		return state, fmt.Errorf("read skips: %w", err)
	}
	return state, nil
}
