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

// runInsertSQL inserts a run unless its (task, fire key) exists:
// RunInsert's, SQLite's own (prepared on the write connection, whose
// transaction holds every task's lock).
var runInsertSQL = `INSERT INTO runs (` + sqlrow.RunWriteCols + `)
	VALUES (` + placeholders(len(sqlrow.RunWriteArgs(&sundial.Run{}))) + `)
	ON CONFLICT (task_id, fire_key) DO NOTHING`

// insertRun inserts r unless its (task, fire key) exists, and reports
// whether it did, setting r.ID.
func insertRun(ctx context.Context, stmt *sql.Stmt, r *sundial.Run) (bool, error) {
	res, err := stmt.ExecContext(ctx, sqlrow.RunWriteArgs(r)...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return false, err
	}
	r.ID, err = res.LastInsertId()
	return err == nil, err
}

// RunInsert inserts a run (a manual trigger) of a live task. An existing
// (TaskID, FireKey) is EConflict; a missing task ENotFound.
func (s *Store) RunInsert(ctx context.Context, r *sundial.Run) (err error) {
	defer s.classify(&err)
	if err := sqlrow.PrepareNew(r, s.clock()); err != nil {
		return err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT priority FROM tasks WHERE id = ? AND deleted = 0`, r.TaskID).Scan(&r.Priority)
		if errors.Is(err, sql.ErrNoRows) {
			return sqlrow.NotFound("task_id", "task %d not found", r.TaskID)
		}
		if err != nil {
			return err
		}
		ok, err := insertRun(ctx, tx.StmtContext(ctx, s.st.runInsert), r)
		if err != nil {
			return err
		}
		if !ok {
			return sqlrow.Conflict("fire_key", "task %d already has a run with fire key %q", r.TaskID, r.FireKey)
		}
		return nil
	})
	return sqlrow.Wrap(err, "insert run")
}

// runStartSQL is RunStart on a hot path, in one statement per run: its
// condition is sundial.RunStartParams.Applies and its SET sundial.RunStartParams.Apply,
// which the conformance suite holds it to (StartRule).
var runStartSQL = `UPDATE runs
	SET status = 'RUNNING', attempt = ?1, started_at = ?2, trace_id = ?3,
		deliveries = deliveries + 1, updated_at = ?2, ` + sqlrow.StartClears("") + `
	WHERE id = ?4 AND fence = ?5 AND status = 'SCHEDULED'`

// RunStart implements sundial.Store.RunStart.
// SQLite's own: one prepared UPDATE per run (runStartSQL), in one write
// transaction.
func (s *Store) RunStart(ctx context.Context, starts []sundial.RunStartParams) (_ []bool, err error) {
	defer s.classify(&err)
	ok := make([]bool, len(starts))
	if len(starts) == 0 {
		return ok, nil
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		stmt := tx.StmtContext(ctx, s.st.runStart)
		for i, st := range starts {
			res, err := stmt.ExecContext(ctx, st.Attempt, sqlrow.Micros(st.StartedAt), st.TraceID, st.ID, st.Fence)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			ok[i] = n == 1
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("start runs: %w", err)
	}
	return ok, nil
}

// finishFrom lists, for each status RunFinish may record, the active
// statuses it may be reached from (sundial.FinishFrom), twice when there
// is one, for runFinishSQL's two markers.
var finishFrom = func() map[sundial.RunStatus][2]string {
	m := map[sundial.RunStatus][2]string{}
	for _, to := range sundial.RunStatuses() {
		switch from := sundial.FinishFrom(to); len(from) {
		case 1:
			m[to] = [2]string{string(from[0]), string(from[0])}
		case 2:
			m[to] = [2]string{string(from[0]), string(from[1])}
		}
	}
	return m
}()

// runFinishSQL, runRetrySQL and completeTaskSQL are RunFinish on a hot
// path: sundial.RunFinishParams.Apply (its condition RunFinishParams.Applies), and
// Task.End for the run's task, in SQL, so that a batch of outcomes costs one
// UPDATE per run and one INSERT of attempts. The conformance suite holds
// them to the rule (FinishRule).
//
// ?13 is whether the outcome keeps its delivery's attempt on the run
// (attempt_on_run): RunFinishParams.AttemptOnRun, for an outcome of a
// RUNNING run; those runs get no attempt row.
const runFinishSQL = `UPDATE runs
	SET status = ?1, started_at = COALESCE(?2, started_at), finished_at = ?3, http_status = ?4,
		response_body = ?5, error = ?6, updated_at = ?7, due_at = COALESCE(?12, due_at), attempt_on_run = ?13
	WHERE id = ?8 AND fence = ?9 AND status IN (?10, ?11)`

// runRetrySQL sends a run whose failed delivery was just recorded back to
// SCHEDULED for another one, held by no node: any node claims it when it is
// due (due_at, set by runFinishSQL). The fence stays; the claim bumps it.
const runRetrySQL = `UPDATE runs SET status = 'SCHEDULED', node_id = '', finished_at = NULL WHERE id = ?`

// completeTaskSQL ends a task with a run of its (a one-off task whose fire
// ended): only an ENABLED task, so that one disabled meanwhile stays so.
const completeTaskSQL = `UPDATE tasks SET status = ?1, version = version + 1, next_fire_at = NULL, updated_at = ?2
	WHERE id = (SELECT task_id FROM runs WHERE id = ?3) AND status = 'ENABLED'`

// RunFinish (see sundial.Store.RunFinish): an outcome no active run may
// reach refuses the whole batch (sundial.RunFinishParams.Check).
//
// An outcome with Retry is recorded as any other (the run row, then its
// attempt copied from it) and the run is then sent back to SCHEDULED; so is
// the rare CompleteTask applied after the outcomes. An outcome that ends
// its RUNNING run for good keeps its attempt on the run (attempt_on_run);
// those of the others are copied into rows. A batch of plain outcomes
// costs one UPDATE per run, and one INSERT per 500 attempts that go on.
func (s *Store) RunFinish(ctx context.Context, finishes []sundial.RunFinishParams) (_ []bool, err error) {
	defer s.classify(&err)
	ok := make([]bool, len(finishes))
	if len(finishes) == 0 {
		return ok, nil
	}
	for _, f := range finishes {
		if err := f.Check(); err != nil {
			return nil, err
		}
	}
	now := s.clock()
	err = s.write(ctx, func(tx *sql.Tx) error {
		stmt := tx.StmtContext(ctx, s.st.runFinish)
		var ended []int64 // runs that left RUNNING but go on: deliveries to record in rows
		var later []int   // applied outcomes with a Retry or a CompleteTask
		for i, f := range finishes {
			var started, finished, due *time.Time
			if !f.StartedAt.IsZero() {
				started = &f.StartedAt
			}
			updated := now
			if !f.FinishedAt.IsZero() {
				finished = &f.FinishedAt
				updated = f.FinishedAt
			}
			// A zero DueAt leaves due_at as it is.
			if (f.Retry || f.Status == sundial.RunWaitingCallback) && !f.DueAt.IsZero() {
				due = &f.DueAt
			}
			apply := func(a, b string, onRun bool) (bool, error) {
				res, err := stmt.ExecContext(ctx, string(f.Status), sqlrow.NullMicros(started), sqlrow.NullMicros(finished),
					f.HTTPStatus, sundial.CutResponseBody(f.ResponseBody), f.Error, sqlrow.Micros(updated), f.ID, f.Fence, a, b,
					sqlrow.NullMicros(due), onRun)
				if err != nil {
					return false, err
				}
				n, err := res.RowsAffected()
				return n == 1, err
			}
			from := finishFrom[f.Status]
			running := string(sundial.RunRunning)
			var err error
			if from[0] != running && from[1] != running {
				ok[i], err = apply(from[0], from[1], false)
			} else if ok[i], err = apply(running, running, f.AttemptOnRun()); ok[i] {
				// A run leaving RUNNING ends a delivery: record it as an
				// attempt, unless the run keeps it.
				if !f.AttemptOnRun() {
					ended = append(ended, f.ID)
				}
			} else if err == nil {
				if other := from[0]; other != running {
					ok[i], err = apply(other, other, false)
				} else if other := from[1]; other != running {
					ok[i], err = apply(other, other, false)
				}
			}
			if err != nil {
				return err
			}
			if ok[i] && (f.Retry || f.CompleteTask != "") {
				later = append(later, i)
			}
		}
		if len(ended) > 0 {
			if _, err := tx.StmtContext(ctx, s.st.attempts).ExecContext(ctx, jsonIDs(ended)); err != nil {
				return err
			}
		}
		var retry, complete *sql.Stmt
		if len(later) > 0 {
			retry, complete = tx.StmtContext(ctx, s.st.runRetry), tx.StmtContext(ctx, s.st.completeTask)
		}
		for _, i := range later {
			f := finishes[i]
			if f.Retry {
				if _, err := retry.ExecContext(ctx, f.ID); err != nil {
					return err
				}
			}
			if f.CompleteTask != "" {
				at := now
				if !f.FinishedAt.IsZero() {
					at = f.FinishedAt
				}
				if _, err := complete.ExecContext(ctx, string(f.CompleteTask), sqlrow.Micros(at), f.ID); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finish runs: %w", err)
	}
	return ok, nil
}

// RunCancel implements sundial.Store.RunCancel (sundial.Cancel).
// SQLite's own: one write transaction, which holds every task's lock.
func (s *Store) RunCancel(ctx context.Context, id int64, now time.Time) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	var out *sundial.Run
	err = s.write(ctx, func(tx *sql.Tx) error {
		r, err := sqlrow.ScanRun(tx.QueryRowContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return sqlrow.NotFound("", "run %d not found", id)
		}
		if err != nil {
			return err
		}
		tasks, err := tasksOf(ctx, tx, []*sundial.Run{r})
		if err != nil {
			return err
		}
		c, err := sundial.Cancel(tasks[r.TaskID], r, now)
		if err != nil {
			return err
		}
		out = r
		return s.apply(ctx, tx, c)
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "cancel run %d", id)
	}
	return out, nil
}

// RunRelease implements sundial.Store.RunRelease; see release.
// SQLite's own: one write transaction (release), which NodeReap shares.
func (s *Store) RunRelease(ctx context.Context, nodeID, reason string, now time.Time) (err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	err = s.write(ctx, func(tx *sql.Tx) error { return s.release(ctx, tx, nodeID, reason, now) })
	return sqlrow.Wrap(err, "release runs of node %s", nodeID)
}

// release gives up nodeID's runs inside tx, as sundial.Release decides:
// planned fires are deleted and their tasks rewound, runs delivered before
// handed back, manual ones skipped (MISFIRE), running ones interrupted,
// each with an INTERRUPTED attempt. QUEUED runs stay: the queue is the
// task's, drained by whichever node frees a slot (RunQueuedNext).
func (s *Store) release(ctx context.Context, tx *sql.Tx, nodeID, reason string, now time.Time) error {
	runs, err := sqlrow.ScanRuns(tx.QueryContext(ctx, queries.RunsOwned, nodeID))
	if err != nil {
		return err
	}
	return s.apply(ctx, tx, sundial.Release(runs, reason, now))
}

// attemptFromRunSQL records the deliveries the runs whose IDs are in the
// JSON array ? just ended, from the runs: each run's own attempt
// (sundial.Run.OwnAttempt), as RunAttempts reads it from a run that keeps
// it, copied into a row.
const attemptFromRunSQL = `INSERT INTO run_attempts (` + sqlrow.AttemptCols + `)
	SELECT ` + sqlrow.OwnAttemptCols + `
	FROM runs WHERE id IN (SELECT value FROM json_each(?))`

// RunPurge deletes up to limit final runs created before before, oldest
// first.
// SQLite's own: the oldest final runs are picked through runs_created
// (INDEXED BY) in a subquery of the DELETE.
func (s *Store) RunPurge(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return 0, nil
	}
	var n int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id IN (
			SELECT id FROM runs INDEXED BY runs_created
			WHERE created_at < ? AND status IN `+sqlrow.Statuses(sundial.RunStatus.Final)+`
			ORDER BY created_at, id LIMIT ?)`, sqlrow.Micros(before), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge runs: %w", err)
	}
	return int(n), nil
}
