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

// MaxSkipsSinceLast caps AdmitState.SkipsSinceLast.
const MaxSkipsSinceLast = 10

const (
	admitRunSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE id = ? AND fence = ? AND status IN ('SCHEDULED', 'QUEUED')`
	admitTaskSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks WHERE id = ? AND deleted = 0`

	// Pending: every other RUNNING, WAITING_CALLBACK and QUEUED run of the
	// task, and the SCHEDULED ones before this run by (scheduled_at, id).
	admitPendingSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ?1 AND status IN ('RUNNING', 'WAITING_CALLBACK', 'QUEUED') AND id <> ?2
		UNION ALL
		SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ?1 AND status = 'SCHEDULED' AND scheduled_at <= ?3
			AND (scheduled_at < ?3 OR id < ?2)
		ORDER BY scheduled_at, id`

	// SkipsSinceLast: the first SKIPPED runs after (scheduled_at, id).
	admitSkipsSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ?1 AND status = 'SKIPPED' AND scheduled_at >= ?2
			AND (scheduled_at > ?2 OR id > ?3)
		ORDER BY scheduled_at, id
		LIMIT ?4`
)

// admitLastSQL finds LastEffective: the latest run (by scheduled_at, id)
// other than this one whose status is not SCHEDULED, QUEUED or SKIPPED. It
// probes the index once per effective status instead of walking back over
// the SCHEDULED runs planned ahead and the history of skips.
var admitLastSQL = func() string {
	var probes []string
	for _, st := range []sundial.RunStatus{sundial.RunRunning, sundial.RunWaitingCallback, sundial.RunSuccess,
		sundial.RunFailed, sundial.RunTimeout, sundial.RunFailedTimeout, sundial.RunCanceled, sundial.RunInterrupted} {
		probes = append(probes, `SELECT id FROM (SELECT id FROM runs WHERE task_id = ?1 AND status = '`+string(st)+
			`' AND id <> ?2 ORDER BY scheduled_at DESC, id DESC LIMIT 1)`)
	}
	return `SELECT ` + sqlrow.RunCols + ` FROM runs WHERE id IN (` + strings.Join(probes, "\n\t\tUNION ALL ") + `)
		ORDER BY scheduled_at DESC, id DESC LIMIT 1`
}()

var (
	admitRunningSQL = `UPDATE runs
		SET status = 'RUNNING', attempt = ?1, started_at = ?2, deliveries = deliveries + 1,
			trace_id = ?3, updated_at = ?2, ` + sqlrow.StartClears("") + `
		WHERE id = ?4 RETURNING ` + sqlrow.RunCols
	admitQueuedSQL = `UPDATE runs SET status = 'QUEUED', attempt = ?1, updated_at = ?2
		WHERE id = ?3 RETURNING ` + sqlrow.RunCols
	admitSkippedSQL = `UPDATE runs
		SET status = 'SKIPPED', skip_reason = ?1, attempt = ?2, finished_at = ?3, updated_at = ?3
		WHERE id = ?4 RETURNING ` + sqlrow.RunCols
)

// RunAdmit decides and applies what the SCHEDULED or QUEUED run id becomes,
// in one write transaction (which holds every task's lock).
func (s *Store) RunAdmit(ctx context.Context, id, fence int64, now time.Time, decide sundial.AdmitFunc) (*sundial.Run, error) {
	now = sqlrow.Norm(now)
	var out *sundial.Run
	err := s.write(ctx, func(tx *sql.Tx) error {
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
		from, taskID := run.Status, run.TaskID
		d := decide(state)

		if err := sqlrow.CheckAdmission(id, from, d.Status); err != nil {
			return err
		}
		for _, cid := range d.Cancel {
			if cid == id {
				continue
			}
			c, err := sqlrow.ScanRun(tx.QueryRowContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs WHERE id = ?`, cid))
			if errors.Is(err, sql.ErrNoRows) {
				continue // gone: nothing left to cancel
			}
			if err != nil {
				return err
			}
			if c.TaskID != taskID || c.Status.Final() {
				continue
			}
			if _, err := cancelRun(ctx, tx, c, now); err != nil {
				return err
			}
		}
		switch d.Status {
		case sundial.RunRunning:
			out, err = sqlrow.ScanRun(st(s.st.admitRunning).QueryRowContext(ctx, d.Attempt, sqlrow.Micros(now), d.TraceID, id))
		case sundial.RunQueued:
			out, err = sqlrow.ScanRun(st(s.st.admitQueued).QueryRowContext(ctx, d.Attempt, sqlrow.Micros(now), id))
		case sundial.RunSkipped:
			out, err = sqlrow.ScanRun(st(s.st.admitSkipped).QueryRowContext(ctx, string(d.SkipReason), d.Attempt, sqlrow.Micros(now), id))
			if err == nil && d.CompleteTask != "" {
				// A one-off task whose only fire is skipped ends with it.
				_, err = tx.ExecContext(ctx, completeTaskSQL, string(d.CompleteTask), sqlrow.Micros(now), id)
			}
		}
		return err
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "admit run %d", id)
	}
	return out, nil
}

// admitState reads what the policies look at, inside the write transaction.
func (s *Store) admitState(ctx context.Context, st func(*sql.Stmt) *sql.Stmt, task *sundial.Task, run *sundial.Run) (sundial.AdmitState, error) {
	state := sundial.AdmitState{Task: task, Run: run}
	var err error
	state.Pending, err = sqlrow.ScanRuns(st(s.st.admitPending).QueryContext(ctx, run.TaskID, run.ID, sqlrow.Micros(run.ScheduledTime)))
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
	last, err := sqlrow.ScanRuns(st(s.st.admitLast).QueryContext(ctx, run.TaskID, run.ID))
	if err != nil {
		return state, fmt.Errorf("read last effective run: %w", err)
	}
	afterAt, afterID := int64(math.MinInt64), int64(0)
	if len(last) > 0 {
		state.LastEffective = last[0]
		afterAt, afterID = sqlrow.Micros(last[0].ScheduledTime), last[0].ID
	}
	state.SkipsSinceLast, err = sqlrow.ScanRuns(st(s.st.admitSkips).QueryContext(ctx, run.TaskID, afterAt, afterID, MaxSkipsSinceLast))
	if err != nil {
		return state, fmt.Errorf("read skips: %w", err)
	}
	return state, nil
}
