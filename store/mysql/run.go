package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// getRun reads run id inside tx, locking it when lock is set.
func getRun(ctx context.Context, tx *sql.Tx, id int64, lock bool) (*sundial.Run, error) {
	q := `SELECT ` + sqlrow.RunCols + ` FROM runs WHERE id = ?`
	if lock {
		q += ` FOR UPDATE`
	}
	return sqlrow.ScanRun(tx.QueryRowContext(ctx, q, id))
}

const runInsertWidth = 30

// runInsertSQL inserts n runs.
func runInsertSQL(n int) string {
	return `INSERT INTO runs (` + sqlrow.RunWriteCols + `) VALUES ` + tuples(n, runInsertWidth)
}

// prepareNew is sqlrow.PrepareNew, which leaves a run CheckNew refuses as it
// was, with the error text made storable.
func prepareNew(r *sundial.Run, now time.Time) error {
	if err := sqlrow.CheckNew(r); err != nil {
		return err
	}
	if err := sqlrow.PrepareNew(r, now); err != nil {
		return err
	}
	r.Error = text(r.Error)
	return nil
}

func runInsertArgs(args []any, r *sundial.Run) []any {
	return append(args, r.TaskID, r.FireKey, string(r.Trigger), sqlrow.Micros(r.ScheduledTime), string(r.Status),
		string(r.SkipReason), r.MissedCount, r.Attempt, r.Deliveries, r.NodeID, r.Fence,
		sqlrow.NullMicros(r.StartedAt), sqlrow.NullMicros(r.FinishedAt), r.HTTPStatus, bin(r.ResponseBody), r.Error,
		r.TraceID, r.IdempotencyKey, r.CancelRequested, sqlrow.Micros(r.CreatedAt), sqlrow.Micros(r.UpdatedAt),
		sqlrow.Micros(r.DueAt), jsonText(r.Result), jsonText(r.Progress), jsonText(r.Checkpoint), r.Priority,
		r.StartAhead, jsonText(r.Params), text(r.Message), sqlrow.NullID(r.RerunOf))
}

// bin passes s as a binary string (_binary'...'): response bodies are the
// target's bytes, not necessarily UTF-8.
func bin(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

// text makes s storable in a utf8mb4 column, which refuses invalid UTF-8
// in strict mode: invalid bytes become U+FFFD.
func text(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// jsonText is raw JSON as a nullable utf8mb4 column (NULL for none): JSON
// strings may hold bytes that are not UTF-8, which become U+FFFD as in text.
func jsonText(raw json.RawMessage) sql.NullString {
	v := sqlrow.NullJSON(raw)
	if v.Valid && !utf8.ValidString(v.String) {
		v.String = text(v.String)
	}
	return v
}

// RunInsert inserts a run (a manual trigger) of a live task, with the
// task's priority (r.Priority is set to it). An existing (TaskID, FireKey)
// is EConflict; a missing task ENotFound. A run without a CreatedAt is
// created at the database's clock.
func (s *Store) RunInsert(ctx context.Context, r *sundial.Run) (err error) {
	defer s.classify(&err)
	if err := sqlrow.CheckNew(r); err != nil {
		return err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		// The shared lock on the task keeps TaskDelete (and PlanDue) from
		// changing the task's runs, and TaskUpdate its priority, until this
		// one is in.
		err := tx.QueryRowContext(ctx, `SELECT priority FROM tasks
			WHERE id = ? AND deleted = 0 LOCK IN SHARE MODE`, r.TaskID).Scan(&r.Priority)
		if errors.Is(err, sql.ErrNoRows) {
			return sqlrow.NotFound("task_id", "task %d not found", r.TaskID)
		}
		if err != nil {
			return err
		}
		if err := prepareNew(r, sqlrow.Norm(s.clock())); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, runInsertSQL(1), runInsertArgs(nil, r)...)
		if isDup(err) {
			return sqlrow.Conflict("fire_key", "task %d already has a run with fire key %q", r.TaskID, r.FireKey)
		}
		if err != nil {
			return err
		}
		r.ID, err = res.LastInsertId()
		return err
	})
	return sqlrow.Wrap(err, "insert run")
}

// lockRuns locks the runs ids by primary key and returns what RunStart and
// RunFinish read of them (the columns of lockRunsCols), by ID, with the
// clock's reading once they are locked; missing runs are absent from the
// map.
func lockRuns(ctx context.Context, tx *sql.Tx, ids []int64, clock func() time.Time) (map[int64]*sundial.Run, int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, task_id, fence, status, deliveries, node_id, started_at, due_at
		FROM runs WHERE id IN (`+placeholders(len(ids))+`) FOR UPDATE`, int64Args(ids)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := make(map[int64]*sundial.Run, len(ids))
	for rows.Next() {
		var (
			r       sundial.Run
			status  string
			started sql.NullInt64
			due     int64
		)
		if err := rows.Scan(&r.ID, &r.TaskID, &r.Fence, &status, &r.Deliveries, &r.NodeID, &started, &due); err != nil {
			return nil, 0, err
		}
		r.Status, r.StartedAt, r.DueAt = sundial.RunStatus(status), sqlrow.TimePtr(started), sqlrow.FromMicros(due)
		out[r.ID] = &r
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return out, sqlrow.Micros(clock()), nil
}

// applyBatch runs one UPDATE that joins runs to a derived table of the
// rows to change and checks that it matched each of them.
func applyBatch(ctx context.Context, tx *sql.Tx, query string, want int, args []any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != int64(want) {
		// Impossible under the row locks; run the transaction again.
		return fmt.Errorf("batch update matched %d of %d locked runs: %w", n, want, errRetry)
	}
	return nil
}

var runStartCols = []string{"id", "fence", "attempt", "started_at", "trace_id"}

// runStartSQL starts n runs (sundial.RunStartParams.Apply); its condition,
// sundial.RunStartParams.Applies, checked under the locks, only guards.
func runStartSQL(n int) string {
	return `UPDATE ` + joinValues("runs", "r", runStartCols, n) + `
	SET r.status = 'RUNNING', r.attempt = v.attempt, r.started_at = v.started_at, r.trace_id = v.trace_id,
		r.deliveries = r.deliveries + 1, r.updated_at = v.started_at, ` + sqlrow.StartClears("r.") + `
	WHERE r.fence = v.fence AND r.status = 'SCHEDULED'`
}

// RunStart (see sundial.Store.RunStart) locks the batch's runs, picks those
// that may start (sundial.RunStartParams.Applies), and starts them in one
// UPDATE per chunk.
func (s *Store) RunStart(ctx context.Context, starts []sundial.RunStartParams) (_ []bool, err error) {
	defer s.classify(&err)
	ok := make([]bool, len(starts))
	if len(starts) == 0 {
		return ok, nil
	}
	parts := chunks(len(starts), nil, func(i int) int64 { return starts[i].ID })
	err = s.write(ctx, func(tx *sql.Tx) error {
		clear(ok)
		for _, part := range parts {
			ids := make([]int64, len(part))
			for j, i := range part {
				ids[j] = starts[i].ID
			}
			cur, _, err := lockRuns(ctx, tx, ids, s.clock)
			if err != nil {
				return err
			}
			var (
				args  []any
				apply []int
			)
			for _, i := range part {
				st := starts[i]
				if c, found := cur[st.ID]; !found || !st.Applies(c) {
					continue
				}
				apply = append(apply, i)
				args = append(args, st.ID, st.Fence, st.Attempt, sqlrow.Micros(st.StartedAt), st.TraceID)
			}
			if len(apply) == 0 {
				continue
			}
			if err := applyBatch(ctx, tx, runStartSQL(len(apply)), len(apply), args); err != nil {
				return err
			}
			for _, i := range apply {
				ok[i] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("start runs: %w", err)
	}
	return ok, nil
}

// runFinishCols are the columns of an outcome's batch: the run, its status
// as read under its lock, and what sundial.RunFinishParams.Apply left.
var runFinishCols = []string{"id", "was", "status", "node_id", "due_at", "started_at", "finished_at",
	"http_status", "response_body", "error", "updated_at", "attempt_on_run"}

// runFinishSQL records n outcomes as sundial.RunFinishParams.Apply left their
// runs; the status as read under the runs' locks only guards.
func runFinishSQL(n int) string {
	return `UPDATE ` + joinValues("runs", "r", runFinishCols, n) + `
	SET r.status = v.status, r.node_id = v.node_id, r.due_at = v.due_at, r.started_at = v.started_at,
		r.finished_at = v.finished_at, r.http_status = v.http_status, r.response_body = v.response_body,
		r.error = v.error, r.updated_at = v.updated_at, r.attempt_on_run = v.attempt_on_run
	WHERE r.status = v.was`
}

// completeTaskSQL sets the status of n tasks that are still ENABLED (a
// one-off task that ended), with no next fire: CompleteTask of RunFinish,
// RunComplete and RunAdmit.
func completeTaskSQL(n int) string {
	return `UPDATE ` + joinValues("tasks", "t", []string{"id", "status", "updated_at"}, n) + `
	SET t.status = v.status, t.version = t.version + 1, t.next_fire_at = NULL, t.updated_at = v.updated_at
	WHERE t.status = 'ENABLED'`
}

// taskEnd is a CompleteTask to apply: the task, its new status, when.
type taskEnd struct {
	task   int64
	status sundial.TaskStatus
	at     sql.NullInt64
}

// completeTasks applies ends in order (a task listed twice takes its first
// end: the later ones would find it no longer ENABLED). The caller holds
// the tasks' locks, taken before its runs'.
func completeTasks(ctx context.Context, tx *sql.Tx, ends []taskEnd) error {
	seen := map[int64]bool{}
	var args []any
	for _, e := range ends {
		if seen[e.task] {
			continue
		}
		seen[e.task] = true
		args = append(args, e.task, string(e.status), e.at)
	}
	for part := range slices.Chunk(args, 3*batchRows) {
		if _, err := tx.ExecContext(ctx, completeTaskSQL(len(part)/3), part...); err != nil {
			return err
		}
	}
	return nil
}

// lockTaskRows locks the tasks ids, in ascending order.
func lockTaskRows(ctx context.Context, tx *sql.Tx, ids []int64) error {
	for part := range slices.Chunk(ids, batchIDs) {
		if _, err := int64s(tx.QueryContext(ctx, `SELECT id FROM tasks FORCE INDEX (PRIMARY)
			WHERE id IN (`+placeholders(len(part))+`) ORDER BY id FOR UPDATE`, int64Args(part)...)); err != nil {
			return err
		}
	}
	return nil
}

// RunFinish (see sundial.Store.RunFinish) records the outcomes that apply
// (sundial.RunFinishParams.Applies); an outcome no active run may reach
// refuses the whole batch (sundial.RunFinishParams.Check). Like RunStart, it
// locks the batch's runs, decides in Go what each outcome makes of its run
// and its attempt (sundial.RunFinishParams.Apply), and writes the runs in
// one UPDATE and the attempts that are not on their runs (the run's
// AttemptOnRun) in one INSERT per chunk; a run listed twice is
// finished in order (its second outcome meets it as the first left it). When
// an outcome ends a task (CompleteTask), the tasks of those outcomes are
// locked first, before the runs, in the lock order of every method; a batch
// without one reads no task.
func (s *Store) RunFinish(ctx context.Context, finishes []sundial.RunFinishParams) (_ []bool, err error) {
	defer s.classify(&err)
	ok := make([]bool, len(finishes))
	if len(finishes) == 0 {
		return ok, nil
	}
	var ending []int64 // runs whose outcome may end their task
	for _, f := range finishes {
		if err := f.Check(); err != nil {
			return nil, err
		}
		if f.CompleteTask != "" {
			ending = append(ending, f.ID)
		}
	}
	parts := chunks(len(finishes),
		func(i int) int {
			return 2*min(len(finishes[i].ResponseBody), sundial.MaxResponseBody) + 2*len(finishes[i].Error)
		},
		func(i int) int64 { return finishes[i].ID })
	err = s.write(ctx, func(tx *sql.Tx) error {
		clear(ok)
		if len(ending) > 0 {
			slices.Sort(ending)
			taskIDs, err := taskIDsOfRuns(ctx, tx, slices.Compact(ending))
			if err != nil {
				return err
			}
			if err := lockTaskRows(ctx, tx, taskIDs); err != nil {
				return err
			}
		}
		for _, part := range parts {
			ids := make([]int64, len(part))
			for j, i := range part {
				ids[j] = finishes[i].ID
			}
			cur, now, err := lockRuns(ctx, tx, ids, s.clock)
			if err != nil {
				return err
			}
			var (
				args     []any
				apply    []int
				attempts []any
				nAtt     int
				ends     []taskEnd
			)
			for _, i := range part {
				f := finishes[i]
				r, found := cur[f.ID]
				if !found || !f.Applies(r) {
					continue
				}
				was := r.Status
				a := f.Apply(r, sqlrow.FromMicros(now))
				apply = append(apply, i)
				body := bin(r.ResponseBody)
				args = append(args, r.ID, string(was), string(r.Status), r.NodeID, sqlrow.Micros(r.DueAt),
					sqlrow.NullMicros(r.StartedAt), sqlrow.NullMicros(r.FinishedAt), r.HTTPStatus, body,
					text(r.Error), sqlrow.Micros(r.UpdatedAt), r.AttemptOnRun)
				if a != nil && !r.AttemptOnRun { // the end of a delivery's call, which goes on
					// (a retry, WAITING_CALLBACK, INTERRUPTED): its attempt is a row
					nAtt++
					attempts = attemptArgs(attempts, a.RunID, a.Delivery, a.NodeID, a.Status, a.HTTPStatus,
						text(a.Error), body, sqlrow.NullMicros(a.StartedAt),
						sql.NullInt64{Int64: sqlrow.Micros(a.FinishedAt), Valid: true})
				}
				if f.CompleteTask != "" {
					ends = append(ends, taskEnd{r.TaskID, f.CompleteTask,
						sql.NullInt64{Int64: sqlrow.Micros(r.UpdatedAt), Valid: true}})
				}
			}
			if len(apply) == 0 {
				continue
			}
			if err := applyBatch(ctx, tx, runFinishSQL(len(apply)), len(apply), args); err != nil {
				return err
			}
			if nAtt > 0 {
				if _, err := tx.ExecContext(ctx, attemptInsertSQL(nAtt), attempts...); err != nil {
					return err
				}
			}
			if err := completeTasks(ctx, tx, ends); err != nil {
				return err
			}
			for _, i := range apply {
				ok[i] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finish runs: %w", err)
	}
	return ok, nil
}

// lockReporting locks run id for a report of its delivery (RunComplete,
// RunProgress) and checks it (sundial.Run.CheckReport), returning it with
// the clock's reading once it is locked. With lockTask, the run's task is locked first, in
// the lock order of every method (a run's task never changes, so it is
// read unlocked).
func lockReporting(ctx context.Context, tx *sql.Tx, id, fence int64, lockTask bool, clock func() time.Time) (*sundial.Run, time.Time, error) {
	if lockTask {
		var taskID int64
		err := tx.QueryRowContext(ctx, `SELECT task_id FROM runs WHERE id = ?`, id).Scan(&taskID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, time.Time{}, sqlrow.NotFound("", "run %d not found", id)
		}
		if err != nil {
			return nil, time.Time{}, err
		}
		if err := lockTaskRows(ctx, tx, []int64{taskID}); err != nil {
			return nil, time.Time{}, err
		}
	}
	got, now, err := lockRunsFull(ctx, tx, []int64{id}, clock)
	if err != nil {
		return nil, time.Time{}, err
	}
	r := got[id]
	if r == nil {
		return nil, time.Time{}, sqlrow.NotFound("", "run %d not found", id)
	}
	return r, sqlrow.FromMicros(now), r.CheckReport(fence)
}

// latestAttemptSQL gives a callback's outcome to a run's latest attempt
// (its call's, recorded WAITING_CALLBACK): a range of run_attempts_run,
// read backwards.
const latestAttemptSQL = `UPDATE run_attempts SET status = ?, error = ?, finished_at = ?
	WHERE run_id = ? ORDER BY id DESC LIMIT 1`

// RunComplete ends a WAITING_CALLBACK run, or a RUNNING one whose callback
// came before its call's answer was recorded, or sends it back to
// SCHEDULED for a retry, as sundial.RunCompleteParams.Apply decides. A
// RUNNING run's delivery is recorded as a new attempt; a WAITING_CALLBACK
// run's latest attempt (its delivery's, from RunFinish) takes the outcome.
func (s *Store) RunComplete(ctx context.Context, c sundial.RunCompleteParams) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	if err := c.Check(); err != nil {
		return nil, err
	}
	c.FinishedAt, c.DueAt = sqlrow.NormZero(c.FinishedAt), sqlrow.NormZero(c.DueAt)
	var out *sundial.Run
	err = s.write(ctx, func(tx *sql.Tx) error {
		r, now, err := lockReporting(ctx, tx, c.ID, c.Fence, c.CompleteTask != "", s.clock)
		if err != nil {
			return err
		}
		a, fresh := c.Apply(r, now)
		ch := sundial.RunChanges{Update: []*sundial.Run{r}}
		if fresh {
			ch.Attempts = []*sundial.Attempt{a}
		} else if _, err := tx.ExecContext(ctx, latestAttemptSQL, string(a.Status), text(a.Error),
			sqlrow.Micros(a.FinishedAt), r.ID); err != nil {
			return err
		}
		if c.CompleteTask != "" {
			ch.Ends = []sundial.TaskEnd{{TaskID: r.TaskID, Status: c.CompleteTask, At: a.FinishedAt}}
		}
		out = r
		return apply(ctx, tx, ch)
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "complete run %d", c.ID)
	}
	return out, nil
}

// RunProgress saves what a RUNNING or WAITING_CALLBACK run reports about
// itself, as sundial.RunProgressParams.Apply decides. Errors as RunComplete.
func (s *Store) RunProgress(ctx context.Context, p sundial.RunProgressParams) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	p.DueAt = sqlrow.NormZero(p.DueAt)
	var out *sundial.Run
	err = s.write(ctx, func(tx *sql.Tx) error {
		r, now, err := lockReporting(ctx, tx, p.ID, p.Fence, false, s.clock)
		if err != nil {
			return err
		}
		if !p.Now.IsZero() {
			now = sqlrow.Norm(p.Now)
		}
		p.Apply(r, now)
		out = r
		return apply(ctx, tx, sundial.RunChanges{Update: []*sundial.Run{r}})
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "save progress of run %d", p.ID)
	}
	return out, nil
}

// callbackExpiredSQL reads the WAITING_CALLBACK runs whose callback
// deadline has passed, oldest first: a range of runs_waiting, whose
// entries are the waiting runs' due_at (NULL for every other run), in
// (waiting_due, id) order.
const callbackExpiredSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs FORCE INDEX (runs_waiting)
	WHERE waiting_due <= ? AND status = 'WAITING_CALLBACK'
	ORDER BY waiting_due, id
	LIMIT ?`

// RunCallbackExpired implements sundial.Store.RunCallbackExpired.
// MySQL's own: read through runs_waiting, which indexes the generated
// column waiting_due (callbackExpiredSQL).
func (s *Store) RunCallbackExpired(ctx context.Context, now time.Time, limit int) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, map[int64]*sundial.Task{}, nil
	}
	runs, err := sqlrow.ScanRuns(s.db.QueryContext(ctx, callbackExpiredSQL, sqlrow.Micros(now), limit))
	if err != nil {
		return nil, nil, fmt.Errorf("list expired callbacks: %w", err)
	}
	tasks, err := readTasks(ctx, s.db, runTaskIDs(runs))
	if err != nil {
		return nil, nil, fmt.Errorf("list expired callbacks: %w", err)
	}
	return runs, tasks, nil
}

// RunCancel (see sundial.Store.RunCancel, sundial.Cancel) locks the run's
// task first (its one-off end may come with the run's), then the run, in the
// lock order of every method.
func (s *Store) RunCancel(ctx context.Context, id int64, now time.Time) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	var out *sundial.Run
	err = s.write(ctx, func(tx *sql.Tx) error {
		// A run's task never changes: read unlocked, then locked.
		taskIDs, err := taskIDsOfRuns(ctx, tx, []int64{id})
		if err != nil {
			return err
		}
		tasks, err := lockTasks(ctx, tx, taskIDs, true, false)
		if err != nil {
			return err
		}
		got, _, err := lockRunsFull(ctx, tx, []int64{id}, s.clock)
		if err != nil {
			return err
		}
		r := got[id]
		if r == nil {
			return sqlrow.NotFound("", "run %d not found", id)
		}
		c, err := sundial.Cancel(tasks[r.TaskID], r, now)
		if err != nil {
			return err
		}
		out = r
		return apply(ctx, tx, c)
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "cancel run %d", id)
	}
	return out, nil
}

// RunPurge deletes up to limit final runs created before before, oldest
// first.
// MySQL's own: a single-table DELETE with ORDER BY and LIMIT, as MySQL
// takes no LIMIT in an IN subquery.
func (s *Store) RunPurge(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return 0, nil
	}
	var n int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM runs
			WHERE created_at < ? AND status IN `+sqlrow.Statuses(sundial.RunStatus.Final)+`
			ORDER BY created_at, id LIMIT ?`, sqlrow.Micros(before), limit)
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
