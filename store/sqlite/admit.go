package sqlite

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

var (
	// admitRunSQL reads the run if it still waits for admission
	// (sundial.RunStatus.Waiting) under its fence.
	admitRunSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE id = ? AND fence = ? AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Waiting)
	admitTaskSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks WHERE id = ? AND deleted = 0`

	// Pending (sundial.RunStatus.Pending): every other active or QUEUED
	// run of the task, and the SCHEDULED ones before this run by
	// (scheduled_at, id).
	admitPendingSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ?1 AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Pending) + ` AND id <> ?2
		UNION ALL
		SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ?1 AND status = 'SCHEDULED' AND scheduled_at <= ?3
			AND (scheduled_at < ?3 OR id < ?2)
		ORDER BY scheduled_at, id`

	// SkipsSinceLast (sundial.AdmitState): the first SKIPPED runs, but
	// for CALENDAR, after (scheduled_at, id).
	admitSkipsSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ?1 AND status = 'SKIPPED' AND skip_reason <> 'CALENDAR' AND scheduled_at >= ?2
			AND (scheduled_at > ?2 OR id > ?3)
		ORDER BY scheduled_at, id
		LIMIT ?4`
)

// admitLastSQL finds LastEffective: the latest run (by scheduled_at, id)
// other than this one whose status is effective (sundial.RunStatus.Effective).
// It probes the index once per effective status instead of walking back
// over the SCHEDULED runs planned ahead and the history of skips.
var admitLastSQL = func() string {
	var probes []string
	for _, st := range sundial.RunStatuses() {
		if st.Effective() {
			probes = append(probes, `SELECT id FROM (SELECT id FROM runs WHERE task_id = ?1 AND status = '`+string(st)+
				`' AND id <> ?2 ORDER BY scheduled_at DESC, id DESC LIMIT 1)`)
		}
	}
	return `SELECT ` + sqlrow.RunCols + ` FROM runs WHERE id IN (` + strings.Join(probes, "\n\t\tUNION ALL ") + `)
		ORDER BY scheduled_at DESC, id DESC LIMIT 1`
}()

// RunAdmit (see sundial.Store.RunAdmit): the write transaction, the single
// writer's, holds every task's lock at once.
func (s *Store) RunAdmit(ctx context.Context, id, fence int64, now time.Time, decide sundial.AdmitFunc) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	var out *sundial.Run
	err = s.write(ctx, func(tx *sql.Tx) error {
		st := s.st.in(ctx, tx)
		run, err := sqlrow.ScanRun(st(s.st.admitRun).QueryRowContext(ctx, id, fence))
		if errors.Is(err, sql.ErrNoRows) {
			return sqlrow.NotFound("", "run %d is not waiting for admission under fence %d", id, fence)
		}
		if err != nil {
			return err
		}
		task, err := sqlrow.ScanTask(st(s.st.admitTask).QueryRowContext(ctx, run.TaskID))
		if errors.Is(err, sql.ErrNoRows) {
			return sqlrow.NotFound("", "task %d of run %d not found", run.TaskID, id)
		}
		if err != nil {
			return err
		}
		state, err := s.admitState(ctx, st, task, run)
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
			prev, err := sqlrow.ScanRun(tx.QueryRowContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs WHERE id = ?`, cid))
			if errors.Is(err, sql.ErrNoRows) {
				continue // gone: nothing left to cancel
			}
			if err != nil {
				return err
			}
			if prev.TaskID != task.ID || prev.Status.Final() {
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
			// A one-off task whose only fire is skipped ends with it.
			c.Ends = append(c.Ends, sundial.TaskEnd{TaskID: task.ID, Status: end, At: now})
		}
		out = &admitted
		return s.apply(ctx, tx, c)
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "admit run %d", id)
	}
	return out, nil
}

// admitState reads what the policies look at, inside the write transaction.
func (s *Store) admitState(ctx context.Context, st func(*sql.Stmt) *sql.Stmt, task *sundial.Task, run *sundial.Run) (sundial.AdmitState, error) {
	pending, err := sqlrow.ScanRuns(st(s.st.admitPending).QueryContext(ctx, run.TaskID, run.ID, sqlrow.Micros(run.ScheduledTime)))
	if err != nil {
		return sundial.AdmitState{}, fmt.Errorf("read pending runs: %w", err)
	}
	last, err := sqlrow.ScanRuns(st(s.st.admitLast).QueryContext(ctx, run.TaskID, run.ID))
	if err != nil {
		return sundial.AdmitState{}, fmt.Errorf("read last effective run: %w", err)
	}
	var lastRun *sundial.Run
	afterAt, afterID := int64(math.MinInt64), int64(0)
	if len(last) > 0 {
		lastRun = last[0]
		afterAt, afterID = sqlrow.Micros(lastRun.ScheduledTime), lastRun.ID
	}
	skips, err := sqlrow.ScanRuns(st(s.st.admitSkips).QueryContext(ctx, run.TaskID, afterAt, afterID, sundial.MaxSkipsSinceLast))
	if err != nil {
		return sundial.AdmitState{}, fmt.Errorf("read skips: %w", err)
	}
	return sundial.AdmitStateOf(task, run, pending, lastRun, skips), nil
}
