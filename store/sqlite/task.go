package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// taskWriteCols are the columns TaskCreateMany and TaskUpdate write, in the
// order of sqlrow.TaskArgs.
var taskWriteCols = strings.Join(sqlrow.TaskWriteCols, ", ")

func nameTaken(name string) *sundial.Error {
	return sqlrow.Conflict("name", "a task named %q already exists", name)
}

// taskInsertSQL inserts a task: the columns of sqlrow.TaskArgs, then
// version, created_at and updated_at.
var taskInsertSQL = `INSERT INTO tasks (` + taskWriteCols + `, version, created_at, updated_at)
	VALUES (` + placeholders(len(sqlrow.TaskWriteCols)+3) + `)`

// tasksByRequestSQL finds the live tasks with the request_ids listed after
// it (IN (...)). The literal term excluding the empty request_id lets
// SQLite use the partial index tasks_request_live.
const tasksByRequestSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks
	WHERE request_id <> '' AND deleted = 0 AND request_id`

// taskConflict is the EConflict of a unique index of tasks that an insert
// or update of t violated: the request_id's or the name's.
func taskConflict(err error, t *sundial.Task) *sundial.Error {
	if t.RequestID != "" && strings.Contains(err.Error(), "tasks.request_id") {
		return sqlrow.Conflict("request_id", "a task with request_id %q already exists", t.RequestID)
	}
	return nameTaken(t.Name)
}

// insertTask inserts t with stmt (taskInsertSQL) and returns its ID. A
// unique violation is taskConflict's EConflict.
func insertTask(ctx context.Context, stmt *sql.Stmt, t *sundial.Task, now time.Time) (int64, error) {
	args, err := sqlrow.TaskArgs(t)
	if err != nil {
		return 0, err
	}
	args = append(args, int64(1), sqlrow.Micros(now), sqlrow.Micros(now))
	res, err := stmt.ExecContext(ctx, args...)
	if isUniqueViolation(err) {
		return 0, taskConflict(err, t)
	}
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// created sets what the database gave a task it inserted.
func created(t *sundial.Task, id int64, now time.Time) {
	t.ID, t.Version, t.CreatedAt, t.UpdatedAt = id, 1, now, now
	t.NextFireTime = sqlrow.NormPtr(t.NextFireTime)
	t.RunAt = sqlrow.NormPtr(t.RunAt)
}

// TaskCreateMany inserts the tasks in one write transaction, resolving
// repeated requests (a live task with the same request_id and hash) to the
// task they made. The lookup and the inserts run under the single writer,
// so no concurrent call can insert the same request_id in between: unlike
// the client-server adapters, there is no unique violation to retry.
//
// The live tasks of the batch's request_ids are read up front, a few
// queries for the whole batch; then each task is resolved or inserted in
// order (one prepared INSERT each), so that the first task in error is the
// one reported, and a request repeated within the batch resolves to the
// task its first occurrence inserted.
func (s *Store) TaskCreateMany(ctx context.Context, ts []*sundial.Task, now time.Time) (_ []bool, err error) {
	defer s.classify(&err)
	existed := make([]bool, len(ts))
	if len(ts) == 0 {
		return existed, nil
	}
	now = sqlrow.Norm(now)
	// Results are kept aside and given to ts only once committed: a failed
	// batch leaves ts as it was.
	ids := make([]int64, len(ts))
	found := make([]*sundial.Task, len(ts))
	err = s.write(ctx, func(tx *sql.Tx) error {
		live, err := tasksByRequest(ctx, tx, ts)
		if err != nil {
			return err
		}
		insert := tx.StmtContext(ctx, s.st.taskInsert)
		for i, t := range ts {
			if old := live[t.RequestID]; old != nil {
				if old.RequestHash != t.RequestHash {
					return &sundial.BatchError{Index: i, Err: sqlrow.RequestConflict(t.RequestID)}
				}
				found[i], existed[i] = old, true
				continue
			}
			id, err := insertTask(ctx, insert, t, now)
			if e, ok := errors.AsType[*sundial.Error](err); ok {
				return &sundial.BatchError{Index: i, Err: e}
			}
			if err != nil {
				return fmt.Errorf("task %d: %w", i, err)
			}
			ids[i] = id
			if t.RequestID != "" {
				c := *t
				created(&c, id, now)
				live[t.RequestID] = &c
			}
		}
		return nil
	})
	if err != nil {
		if _, ok := errors.AsType[*sundial.BatchError](err); ok {
			return nil, err
		}
		return nil, sqlrow.Wrap(err, "create tasks")
	}
	for i, t := range ts {
		if existed[i] {
			*t = *found[i]
			continue
		}
		created(t, ids[i], now)
	}
	return existed, nil
}

// tasksByRequest reads the live tasks with the request_ids of ts, by
// request_id.
func tasksByRequest(ctx context.Context, tx *sql.Tx, ts []*sundial.Task) (map[string]*sundial.Task, error) {
	live := map[string]*sundial.Task{}
	seen := map[string]bool{}
	var reqs []any
	for _, t := range ts {
		if t.RequestID != "" && !seen[t.RequestID] {
			seen[t.RequestID] = true
			reqs = append(reqs, t.RequestID)
		}
	}
	for part := range slices.Chunk(reqs, 500) {
		found, err := sqlrow.ScanTasks(tx.QueryContext(ctx, tasksByRequestSQL+` IN (`+placeholders(len(part))+`)`, part...))
		if err != nil {
			return nil, err
		}
		for _, t := range found {
			live[t.RequestID] = t
		}
	}
	return live, nil
}

// taskRunsSQL reads the runs of a task that a change of it may take back
// (sundial.RunStatus.Held), on the index runs_task_status.
var taskRunsSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
	WHERE task_id = ? AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Held) + `
	ORDER BY id`

// TaskUpdate implements sundial.Store.TaskUpdate (sundial.TakeBackOnUpdate).
// SQLite's own: the write transaction holds every task's lock, so the runs
// are read without row locks (taskRunsSQL).
func (s *Store) TaskUpdate(ctx context.Context, t *sundial.Task, now time.Time) (err error) {
	defer s.classify(&err)
	args, err := sqlrow.TaskArgs(t)
	if err != nil {
		return fmt.Errorf("update task %d: %w", t.ID, err)
	}
	now = sqlrow.Norm(now)
	args = append(args, sqlrow.Micros(now), t.ID, t.Version)
	var created int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE tasks SET (`+taskWriteCols+`) =
			(`+placeholders(len(sqlrow.TaskWriteCols))+`),
			version = version + 1, updated_at = ?
			WHERE id = ? AND version = ? AND deleted = 0
			RETURNING created_at`, args...).Scan(&created)
		if isUniqueViolation(err) {
			return taskConflict(err, t)
		}
		if errors.Is(err, sql.ErrNoRows) {
			var v int64
			err := tx.QueryRowContext(ctx, `SELECT version FROM tasks WHERE id = ? AND deleted = 0`, t.ID).Scan(&v)
			if errors.Is(err, sql.ErrNoRows) {
				return sqlrow.NotFound("", "task %d not found", t.ID)
			}
			if err != nil {
				return err
			}
			return sqlrow.Conflict("version", "task %d is at version %d, not %d: it changed since it was read", t.ID, v, t.Version)
		}
		if err != nil {
			return err
		}
		// What the change takes back of the task's runs.
		runs, err := sqlrow.ScanRuns(tx.QueryContext(ctx, taskRunsSQL, t.ID))
		if err != nil {
			return err
		}
		return s.apply(ctx, tx, sundial.TakeBackOnUpdate(t, runs, sundial.SendCutoff(now, s.clock()), now))
	})
	if err != nil {
		return sqlrow.Wrap(err, "update task %d", t.ID)
	}
	t.Version++
	t.UpdatedAt = now
	t.CreatedAt = sqlrow.FromMicros(created)
	t.NextFireTime = sqlrow.NormPtr(t.NextFireTime)
	t.RunAt = sqlrow.NormPtr(t.RunAt)
	return nil
}

// TaskDelete implements sundial.Store.TaskDelete (sundial.TakeBackOnDelete).
// SQLite's own, as TaskUpdate.
func (s *Store) TaskDelete(ctx context.Context, id int64, now time.Time) (err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	err = s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tasks
			SET deleted = 1, deleted_at = ?1, updated_at = ?1, next_fire_at = NULL
			WHERE id = ?2 AND deleted = 0`, sqlrow.Micros(now), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return sqlrow.NotFound("", "task %d not found", id)
		}
		runs, err := sqlrow.ScanRuns(tx.QueryContext(ctx, taskRunsSQL, id))
		if err != nil {
			return err
		}
		return s.apply(ctx, tx, sundial.TakeBackOnDelete(runs, sundial.SendCutoff(now, s.clock()), now))
	})
	if err != nil {
		return sqlrow.Wrap(err, "delete task %d", id)
	}
	return nil
}
