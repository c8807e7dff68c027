package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

func scanTasks(rows pgx.Rows) ([]*sundial.Task, error) {
	defer rows.Close()
	var out []*sundial.Task
	for rows.Next() {
		t, err := sqlrow.ScanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// taskWriteCols are the columns TaskCreate and TaskUpdate write, in the
// order of sqlrow.TaskArgs, bound to $1 to $23.
var (
	taskWriteCols  = strings.Join(sqlrow.TaskWriteCols, ", ")
	nTaskWriteCols = len(sqlrow.TaskWriteCols)
)

// params returns "$from, ..., $to".
func params(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i > from {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(i))
	}
	return b.String()
}

func nameTaken(name string) *sundial.Error {
	return sqlrow.Conflict("name", "a task named %q already exists", name)
}

// taskWriteErr turns the errors of writing a task that the client can act
// on into *sundial.Error: a live name taken, or text PostgreSQL refuses.
func taskWriteErr(err error, name string) error {
	if pgCode(err) == codeUniqueViolation {
		return nameTaken(name)
	}
	if e := badText(err); e != nil {
		return e
	}
	return err
}

var taskCreateSQL = `INSERT INTO tasks (` + taskWriteCols + `, version, created_at, updated_at)
	VALUES (` + params(1, nTaskWriteCols+3) + `) RETURNING id`

// TaskCreate inserts t, setting ID, Version, CreatedAt and UpdatedAt.
func (s *Store) TaskCreate(ctx context.Context, t *sundial.Task, now time.Time) error {
	args, err := sqlrow.TaskArgs(t)
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	now = sqlrow.Norm(now)
	args = append(args, int64(1), sqlrow.Micros(now), sqlrow.Micros(now))
	var id int64
	if err := s.pool.QueryRow(ctx, taskCreateSQL, args...).Scan(&id); err != nil {
		return sqlrow.Wrap(taskWriteErr(err, t.Name), "create task")
	}
	t.ID, t.Version, t.CreatedAt, t.UpdatedAt = id, 1, now, now
	t.NextFireTime = sqlrow.NormPtr(t.NextFireTime)
	return nil
}

// TaskGet returns a live task, or ENotFound.
func (s *Store) TaskGet(ctx context.Context, id int64) (*sundial.Task, error) {
	t, err := sqlrow.ScanTask(s.pool.QueryRow(ctx, `SELECT `+sqlrow.TaskCols+` FROM tasks WHERE id = $1 AND NOT deleted`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, sqlrow.NotFound("", "task %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("get task %d: %w", id, err)
	}
	return t, nil
}

// TaskList returns live tasks ordered by ID.
func (s *Store) TaskList(ctx context.Context, f sundial.TaskFilter) ([]*sundial.Task, error) {
	where := []string{`NOT deleted`, `id > $1`}
	args := []any{f.AfterID}
	if f.Status != "" {
		args = append(args, string(f.Status))
		where = append(where, `status = $`+strconv.Itoa(len(args)))
	}
	if f.NamePrefix != "" {
		// Case-sensitive and free of LIKE's wildcards.
		args = append(args, f.NamePrefix)
		where = append(where, `starts_with(name, $`+strconv.Itoa(len(args))+`)`)
	}
	args = append(args, sqlrow.ClampLimit(f.Limit))
	rows, err := s.pool.Query(ctx, `SELECT `+sqlrow.TaskCols+` FROM tasks WHERE `+strings.Join(where, ` AND `)+
		` ORDER BY id LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "list tasks")
	}
	out, err := scanTasks(rows)
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "list tasks")
	}
	return out, nil
}

// badTextOr returns badText(err) if err is about text PostgreSQL refuses,
// err otherwise.
func badTextOr(err error) error {
	if e := badText(err); e != nil {
		return e
	}
	return err
}

var taskUpdateSQL = `UPDATE tasks SET (` + taskWriteCols + `) = (` + params(1, nTaskWriteCols) + `),
	version = version + 1, updated_at = $24
	WHERE id = $25 AND version = $26 AND NOT deleted
	RETURNING created_at`

// TaskUpdate replaces the task whose ID and Version match t and deletes its
// planned (non-manual) SCHEDULED runs. The UPDATE takes the task's row lock
// first, so the DELETE (a later statement, with a later snapshot) also sees
// the runs a planner that held the lock just committed.
func (s *Store) TaskUpdate(ctx context.Context, t *sundial.Task, now time.Time) error {
	args, err := sqlrow.TaskArgs(t)
	if err != nil {
		return fmt.Errorf("update task %d: %w", t.ID, err)
	}
	now = sqlrow.Norm(now)
	args = append(args, sqlrow.Micros(now), t.ID, t.Version)
	var created int64
	b := beginBatch()
	b.Queue(taskUpdateSQL, args...).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&created)
		if errors.Is(err, pgx.ErrNoRows) {
			return errStaleOrGone
		}
		return taskWriteErr(err, t.Name)
	})
	b.Queue(`DELETE FROM runs WHERE task_id = $1 AND status = 'SCHEDULED' AND trigger_type <> 'MANUAL'`, t.ID)
	err = s.inTx(ctx, b, nil)
	if errors.Is(err, errStaleOrGone) {
		// Why nothing matched: the task is gone, or at another version.
		var v int64
		err = s.pool.QueryRow(ctx, `SELECT version FROM tasks WHERE id = $1 AND NOT deleted`, t.ID).Scan(&v)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			err = sqlrow.NotFound("", "task %d not found", t.ID)
		case err == nil:
			err = sqlrow.Conflict("version", "task %d is at version %d, not %d: it changed since it was read", t.ID, v, t.Version)
		}
	}
	if err != nil {
		return sqlrow.Wrap(err, "update task %d", t.ID)
	}
	t.Version++
	t.UpdatedAt = now
	t.CreatedAt = sqlrow.FromMicros(created)
	t.NextFireTime = sqlrow.NormPtr(t.NextFireTime)
	return nil
}

// errStaleOrGone stops TaskUpdate's batch when no live task has the ID and
// version, before its DELETE runs.
var errStaleOrGone = errors.New("no live task with this ID and version")

// TaskDelete marks the task deleted, deletes its SCHEDULED runs and cancels
// its QUEUED ones. As in TaskUpdate, the UPDATE locks the task before the
// other statements look at its runs.
func (s *Store) TaskDelete(ctx context.Context, id int64, now time.Time) error {
	b := beginBatch()
	b.Queue(`UPDATE tasks SET deleted = true, deleted_at = $1, updated_at = $1, next_fire_at = NULL
		WHERE id = $2 AND NOT deleted`, sqlrow.Micros(now), id).Exec(func(ct pgconn.CommandTag) error {
		if ct.RowsAffected() == 0 {
			return sqlrow.NotFound("", "task %d not found", id)
		}
		return nil
	})
	b.Queue(`DELETE FROM runs WHERE task_id = $1 AND status = 'SCHEDULED'`, id)
	b.Queue(`UPDATE runs SET status = 'CANCELED', error = 'task deleted', finished_at = $1, updated_at = $1
		WHERE task_id = $2 AND status = 'QUEUED'`, sqlrow.Micros(now), id)
	return sqlrow.Wrap(s.inTx(ctx, b, nil), "delete task %d", id)
}
