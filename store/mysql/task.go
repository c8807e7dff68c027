package mysql

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

var taskUpdateSQL = `UPDATE tasks SET ` + strings.Join(sqlrow.TaskWriteCols, " = ?, ") + ` = ?,
	version = version + 1, updated_at = ?
	WHERE id = ? AND version = ? AND deleted = 0`

// nameTaken reports whether err is the live-name index refusing a
// duplicate, and if so returns the conflict for the client.
func nameTaken(err error, name string) (*sundial.Error, bool) {
	if !isDup(err) || !strings.Contains(err.Error(), "tasks_live_name") {
		return nil, false
	}
	return nameConflict(name), true
}

// requestTaken is nameTaken for the live request_id index.
func requestTaken(err error, requestID string) (*sundial.Error, bool) {
	if !isDup(err) || !strings.Contains(err.Error(), "tasks_request_live") {
		return nil, false
	}
	return sqlrow.RequestConflict(requestID), true
}

func nameConflict(name string) *sundial.Error {
	return sqlrow.Conflict("name", "a task named %q already exists", name)
}

// taskArgs is sqlrow.TaskArgs with params_json made storable (jsonText).
func taskArgs(t *sundial.Task) ([]any, error) {
	args, err := sqlrow.TaskArgs(t)
	if err != nil {
		return nil, err
	}
	args[len(args)-1] = jsonText(t.Params) // params_json, the last of TaskWriteCols
	return args, nil
}

// taskInsertWidth is the number of values of one row of taskInsertManySQL.
var taskInsertWidth = len(sqlrow.TaskWriteCols) + 3

// taskInsertManySQL inserts n tasks.
func taskInsertManySQL(n int) string {
	return `INSERT INTO tasks (` + strings.Join(sqlrow.TaskWriteCols, ", ") + `, version, created_at, updated_at)
		VALUES ` + tuples(n, taskInsertWidth)
}

// padKey is how the unique indexes on names and request IDs compare
// strings: utf8mb4_bin pads with spaces, so trailing spaces do not count.
func padKey(s string) string { return strings.TrimRight(s, " ") }

// TaskCreateMany (see sundial.Store.TaskCreateMany): the transaction reads
// the live tasks with the batch's request IDs and names (live_request_id,
// live_name), decides in Go, inserts the new tasks in multi-row INSERTs and
// reads their IDs back by name: IDs of a multi-row INSERT need not be
// consecutive (innodb_autoinc_lock_mode 2, auto_increment_increment). A
// concurrent transaction that inserts one of the request IDs or names first
// makes this one's INSERT wait for it and then fail on the unique index; the
// transaction is then run again, and finds the other's task: concurrent
// creations of one request make one task, and every caller is answered with
// it.
func (s *Store) TaskCreateMany(ctx context.Context, ts []*sundial.Task, now time.Time) (_ []bool, err error) {
	defer s.classify(&err)
	existed := make([]bool, len(ts))
	if len(ts) == 0 {
		return existed, nil
	}
	now = sqlrow.Norm(now)
	rows := make([][]any, len(ts))
	weights := make([]int, len(ts))
	for i, t := range ts {
		args, err := taskArgs(t)
		if err != nil {
			return nil, fmt.Errorf("create tasks: item %d: %w", i, err)
		}
		for _, a := range args {
			switch v := a.(type) {
			case string:
				weights[i] += len(v)
			case sql.NullString:
				weights[i] += len(v.String)
			}
		}
		rows[i] = append(args, int64(1), sqlrow.Micros(now), sqlrow.Micros(now))
	}
	var (
		found  map[int]*sundial.Task // an existing live task answers ts[i]
		sameAs map[int]int           // ts[i] repeats the request of ts[j], j < i
		ids    map[int]int64         // ts[i] inserted
	)
	err = s.write(ctx, func(tx *sql.Tx) error {
		found, sameAs, ids = map[int]*sundial.Task{}, map[int]int{}, map[int]int64{}
		var reqs, names []string
		for _, t := range ts {
			if t.RequestID != "" {
				reqs = append(reqs, t.RequestID)
			}
			names = append(names, t.Name)
		}
		// Names first: each statement reads what is committed when it
		// runs, and a task committed between the two reads must not look
		// like a name taken by another request. Read in this order, a name
		// taken by the same request is seen with its request ID.
		taken, err := liveNames(ctx, tx, names)
		if err != nil {
			return err
		}
		byReq, err := liveTasksByRequest(ctx, tx, reqs)
		if err != nil {
			return err
		}
		var (
			fresh     []int
			batchReq  = map[string]int{}
			batchName = map[string]bool{}
		)
		for i, t := range ts {
			if t.RequestID != "" {
				k := padKey(t.RequestID)
				if e, ok := byReq[k]; ok {
					if e.RequestHash != t.RequestHash {
						return &sundial.BatchError{Index: i, Err: sqlrow.RequestConflict(t.RequestID)}
					}
					found[i] = e
					continue
				}
				if j, ok := batchReq[k]; ok {
					if ts[j].RequestHash != t.RequestHash {
						return &sundial.BatchError{Index: i, Err: sqlrow.RequestConflict(t.RequestID)}
					}
					sameAs[i] = j
					continue
				}
				batchReq[k] = i
			}
			k := padKey(t.Name)
			if taken[k] || batchName[k] {
				return &sundial.BatchError{Index: i, Err: nameConflict(t.Name)}
			}
			batchName[k] = true
			fresh = append(fresh, i)
		}
		if len(fresh) == 0 {
			return nil
		}
		for _, part := range chunks(len(fresh), func(j int) int { return 2 * weights[fresh[j]] }, nil) {
			args := make([]any, 0, taskInsertWidth*len(part))
			for _, j := range part {
				args = append(args, rows[fresh[j]]...)
			}
			if _, err := tx.ExecContext(ctx, taskInsertManySQL(len(part)), args...); err != nil {
				if isDup(err) {
					// Another transaction inserted one of these request IDs
					// or names since they were read: run again to see it.
					return fmt.Errorf("insert tasks: %v: %w", err, errRetry)
				}
				return err
			}
		}
		freshNames := make([]string, len(fresh))
		for j, i := range fresh {
			freshNames[j] = ts[i].Name
		}
		byName, err := liveIDsByName(ctx, tx, freshNames)
		if err != nil {
			return err
		}
		for _, i := range fresh {
			id, ok := byName[padKey(ts[i].Name)]
			if !ok {
				return fmt.Errorf("task %q not found after insert", ts[i].Name)
			}
			ids[i] = id
		}
		return nil
	})
	if err != nil {
		return nil, sqlrow.Wrap(err, "create tasks")
	}
	for i, t := range ts {
		switch {
		case found[i] != nil:
			*t, existed[i] = *found[i], true
		case ids[i] != 0:
			t.ID, t.Version, t.CreatedAt, t.UpdatedAt = ids[i], 1, now, now
			t.NextFireTime = sqlrow.NormPtr(t.NextFireTime)
		}
	}
	for i, t := range ts {
		if j, ok := sameAs[i]; ok {
			*t, existed[i] = *ts[j], true
		}
	}
	return existed, nil
}

// liveTasksByRequest reads the live tasks with the given request IDs, by
// padKey of their request ID.
func liveTasksByRequest(ctx context.Context, tx *sql.Tx, reqs []string) (map[string]*sundial.Task, error) {
	out := map[string]*sundial.Task{}
	for part := range slices.Chunk(reqs, batchIDs) {
		got, err := sqlrow.ScanTasks(tx.QueryContext(ctx, `SELECT `+sqlrow.TaskCols+` FROM tasks FORCE INDEX (tasks_request_live)
			WHERE live_request_id IN (`+placeholders(len(part))+`)`, stringArgs(part)...))
		if err != nil {
			return nil, err
		}
		for _, t := range got {
			out[padKey(t.RequestID)] = t
		}
	}
	return out, nil
}

// liveNames reports which of names live tasks have, by padKey.
func liveNames(ctx context.Context, tx *sql.Tx, names []string) (map[string]bool, error) {
	ids, err := liveIDsByName(ctx, tx, names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ids))
	for k := range ids {
		out[k] = true
	}
	return out, nil
}

// liveIDsByName returns the IDs of the live tasks with the given names, by
// padKey of their name.
func liveIDsByName(ctx context.Context, tx *sql.Tx, names []string) (map[string]int64, error) {
	out := map[string]int64{}
	for part := range slices.Chunk(names, batchIDs) {
		rows, err := tx.QueryContext(ctx, `SELECT id, live_name FROM tasks FORCE INDEX (tasks_live_name)
			WHERE live_name IN (`+placeholders(len(part))+`)`, stringArgs(part)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var (
				id   int64
				name string
			)
			if err := rows.Scan(&id, &name); err != nil {
				rows.Close()
				return nil, err
			}
			out[padKey(name)] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func stringArgs(ss []string) []any {
	args := make([]any, len(ss))
	for i, s := range ss {
		args[i] = s
	}
	return args
}

// likePrefix returns a LIKE pattern (escape character '!') that matches
// the strings starting with p.
func likePrefix(p string) string {
	r := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	return r.Replace(p) + "%"
}

// taskRunsSQL locks and reads the runs of a task that a change of it may
// take back (sundial.RunStatus.Held): a range of runs_task_status.
var taskRunsSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs FORCE INDEX (runs_task_status)
	WHERE task_id = ? AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Held) + `
	ORDER BY id FOR UPDATE`

// lockTaskRuns locks and reads the runs of task id that a change of it may
// take back.
func lockTaskRuns(ctx context.Context, tx *sql.Tx, id int64) ([]*sundial.Run, error) {
	return sqlrow.ScanRuns(tx.QueryContext(ctx, taskRunsSQL, id))
}

// TaskUpdate (see sundial.Store.TaskUpdate, sundial.TakeBackOnUpdate) locks
// the task row first (its UPDATE), then the runs: the lock order of every
// method.
func (s *Store) TaskUpdate(ctx context.Context, t *sundial.Task, now time.Time) (err error) {
	defer s.classify(&err)
	args, err := taskArgs(t)
	if err != nil {
		return fmt.Errorf("update task %d: %w", t.ID, err)
	}
	now = sqlrow.Norm(now)
	args = append(args, sqlrow.Micros(now), t.ID, t.Version)
	var created int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, taskUpdateSQL, args...)
		if e, ok := nameTaken(err, t.Name); ok {
			return e
		}
		if e, ok := requestTaken(err, t.RequestID); ok {
			return e
		}
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
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
		if err := tx.QueryRowContext(ctx, `SELECT created_at FROM tasks WHERE id = ?`, t.ID).Scan(&created); err != nil {
			return err
		}
		runs, err := lockTaskRuns(ctx, tx, t.ID)
		if err != nil {
			return err
		}
		return apply(ctx, tx, sundial.TakeBackOnUpdate(t, runs, sundial.SendCutoff(now, s.clock()), now))
	})
	if err != nil {
		return sqlrow.Wrap(err, "update task %d", t.ID)
	}
	t.Version++
	t.UpdatedAt = now
	t.CreatedAt = sqlrow.FromMicros(created)
	t.NextFireTime = sqlrow.NormPtr(t.NextFireTime)
	return nil
}

// TaskDelete implements sundial.Store.TaskDelete (sundial.TakeBackOnDelete).
// As TaskUpdate, it locks the task row, then its runs (lockTaskRuns).
func (s *Store) TaskDelete(ctx context.Context, id int64, now time.Time) (err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	at := sqlrow.Micros(now)
	err = s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tasks
			SET deleted = 1, deleted_at = ?, updated_at = ?, next_fire_at = NULL
			WHERE id = ? AND deleted = 0`, at, at, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return sqlrow.NotFound("", "task %d not found", id)
		}
		runs, err := lockTaskRuns(ctx, tx, id)
		if err != nil {
			return err
		}
		return apply(ctx, tx, sundial.TakeBackOnDelete(runs, sundial.SendCutoff(now, s.clock()), now))
	})
	if err != nil {
		return sqlrow.Wrap(err, "delete task %d", id)
	}
	return nil
}
