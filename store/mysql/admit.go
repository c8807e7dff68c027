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

// The admission queries name their index: a task with a long history has
// many runs under runs_task_scheduled, few under each (task_id, status).
var (
	// Pending (sundial.RunStatus.Pending): every other active or QUEUED run
	// of the task, and the SCHEDULED ones before this run by
	// (scheduled_at, id). Arguments: task, run, task, at, at, run.
	admitPendingSQL = `(SELECT ` + sqlrow.RunCols + ` FROM runs FORCE INDEX (runs_task_status)
		WHERE task_id = ? AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Pending) + ` AND id <> ?)
		UNION ALL
		(SELECT ` + sqlrow.RunCols + ` FROM runs FORCE INDEX (runs_task_status)
		WHERE task_id = ? AND status = 'SCHEDULED' AND scheduled_at <= ?
			AND (scheduled_at < ? OR id < ?))
		ORDER BY scheduled_at, id`

	// SkipsSinceLast (sundial.AdmitState): the first SKIPPED runs, but
	// for CALENDAR, after (scheduled_at, id).
	// Arguments: task, at, at, id, limit.
	admitSkipsSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs FORCE INDEX (runs_task_status)
		WHERE task_id = ? AND status = 'SKIPPED' AND skip_reason <> 'CALENDAR' AND scheduled_at >= ?
			AND (scheduled_at > ? OR id > ?)
		ORDER BY scheduled_at, id
		LIMIT ?`
)

// lastStatuses are the effective statuses (sundial.RunStatus.Effective).
var lastStatuses = func() []sundial.RunStatus {
	var out []sundial.RunStatus
	for _, s := range sundial.RunStatuses() {
		if s.Effective() {
			out = append(out, s)
		}
	}
	return out
}()

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

// RunAdmit (see sundial.Store.RunAdmit) holds the task's row lock:
// admissions of one task wait for each other on every node, and each reads
// what the previous one committed. Should the transaction be retried after a
// deadlock, decide is called again with the state read then.
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
			WHERE id = ? AND fence = ? AND status IN `+sqlrow.Statuses(sundial.RunStatus.Waiting)+` FOR UPDATE`, id, fence))
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
		// CANCEL_PREV: the runs to cancel first, as RunCancel does.
		var c sundial.RunChanges
		for _, cid := range d.Cancel {
			if cid == id {
				continue
			}
			prev, err := getRun(ctx, tx, cid, true)
			if errors.Is(err, sql.ErrNoRows) {
				continue // gone: nothing left to cancel
			}
			if err != nil {
				return err
			}
			if prev.TaskID != taskID || prev.Status.Final() {
				continue
			}
			pc, err := sundial.Cancel(task, prev, now)
			if err != nil {
				return err
			}
			c.Add(pc)
		}
		// The decision applies to a copy: decide may keep its state.
		admitted := *run
		d.Apply(&admitted, now)
		c.Update = append(c.Update, &admitted)
		if end := d.EndsTask(); end != "" {
			// A one-off task whose only fire is skipped ends with it: the
			// task's lock is held since the start.
			c.Ends = append(c.Ends, sundial.TaskEnd{TaskID: taskID, Status: end, At: now})
		}
		out = &admitted
		return apply(ctx, tx, c)
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "admit run %d", id)
	}
	return out, nil
}

// admitState reads what the policies look at, inside the admission's
// transaction.
func admitState(ctx context.Context, tx *sql.Tx, task *sundial.Task, run *sundial.Run) (sundial.AdmitState, error) {
	sched := sqlrow.Micros(run.ScheduledTime)
	pending, err := sqlrow.ScanRuns(tx.QueryContext(ctx, admitPendingSQL,
		run.TaskID, run.ID, run.TaskID, sched, sched, run.ID))
	if err != nil {
		return sundial.AdmitState{}, fmt.Errorf("read pending runs: %w", err)
	}
	args := make([]any, 0, 2*len(lastStatuses))
	for range lastStatuses {
		args = append(args, run.TaskID, run.ID)
	}
	last, err := sqlrow.ScanRuns(tx.QueryContext(ctx, admitLastSQL, args...))
	if err != nil {
		return sundial.AdmitState{}, fmt.Errorf("read last effective run: %w", err)
	}
	var lastRun *sundial.Run
	afterAt, afterID := int64(math.MinInt64), int64(0)
	if len(last) > 0 {
		lastRun = last[0]
		afterAt, afterID = sqlrow.Micros(lastRun.ScheduledTime), lastRun.ID
	}
	skips, err := sqlrow.ScanRuns(tx.QueryContext(ctx, admitSkipsSQL,
		run.TaskID, afterAt, afterAt, afterID, sundial.MaxSkipsSinceLast))
	if err != nil {
		return sundial.AdmitState{}, fmt.Errorf("read skips: %w", err)
	}
	return sundial.AdmitStateOf(task, run, pending, lastRun, skips), nil
}
