package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

var (
	taskInsertSQL = `INSERT INTO tasks (` + strings.Join(sqlrow.TaskWriteCols, ", ") + `, version, created_at, updated_at)
		VALUES (` + placeholders(len(sqlrow.TaskWriteCols)+3) + `)`
	taskUpdateSQL = `UPDATE tasks SET ` + strings.Join(sqlrow.TaskWriteCols, " = ?, ") + ` = ?,
		version = version + 1, updated_at = ?
		WHERE id = ? AND version = ? AND deleted = 0`
)

// nameTaken reports whether err is the live-name index refusing a
// duplicate, and if so returns the conflict for the client.
func nameTaken(err error, name string) (*sundial.Error, bool) {
	if !isDup(err) || !strings.Contains(err.Error(), "tasks_live_name") {
		return nil, false
	}
	return sqlrow.Conflict("name", "a task named %q already exists", name), true
}

// TaskCreate inserts t, setting ID, Version, CreatedAt and UpdatedAt.
func (s *Store) TaskCreate(ctx context.Context, t *sundial.Task, now time.Time) error {
	args, err := sqlrow.TaskArgs(t)
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	now = sqlrow.Norm(now)
	args = append(args, int64(1), sqlrow.Micros(now), sqlrow.Micros(now))
	res, err := s.db.ExecContext(ctx, taskInsertSQL, args...)
	if e, ok := nameTaken(err, t.Name); ok {
		return e
	}
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	t.ID, t.Version, t.CreatedAt, t.UpdatedAt = id, 1, now, now
	t.NextFireTime = sqlrow.NormPtr(t.NextFireTime)
	return nil
}

// TaskGet returns a live task, or ENotFound.
func (s *Store) TaskGet(ctx context.Context, id int64) (*sundial.Task, error) {
	t, err := sqlrow.ScanTask(s.db.QueryRowContext(ctx,
		`SELECT `+sqlrow.TaskCols+` FROM tasks WHERE id = ? AND deleted = 0`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("", "task %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("get task %d: %w", id, err)
	}
	return t, nil
}

// likePrefix returns a LIKE pattern (escape character '!') that matches
// the strings starting with p.
func likePrefix(p string) string {
	r := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	return r.Replace(p) + "%"
}

// TaskList returns live tasks ordered by ID.
func (s *Store) TaskList(ctx context.Context, f sundial.TaskFilter) ([]*sundial.Task, error) {
	var (
		where strings.Builder
		args  []any
	)
	where.WriteString(`deleted = 0 AND id > ?`)
	args = append(args, f.AfterID)
	if f.Status != "" {
		where.WriteString(` AND status = ?`)
		args = append(args, string(f.Status))
	}
	if f.NamePrefix != "" {
		// Case-sensitive (utf8mb4_bin), wildcards escaped.
		where.WriteString(` AND name LIKE ? ESCAPE '!'`)
		args = append(args, likePrefix(f.NamePrefix))
	}
	args = append(args, sqlrow.ClampLimit(f.Limit))
	out, err := sqlrow.ScanTasks(s.db.QueryContext(ctx,
		`SELECT `+sqlrow.TaskCols+` FROM tasks WHERE `+where.String()+` ORDER BY id LIMIT ?`, args...))
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// TaskUpdate replaces the task whose ID and Version match t and deletes its
// planned (non-manual) SCHEDULED runs. The UPDATE locks the task row first,
// then the runs: the lock order of every method.
func (s *Store) TaskUpdate(ctx context.Context, t *sundial.Task, now time.Time) error {
	args, err := sqlrow.TaskArgs(t)
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
		_, err = tx.ExecContext(ctx, `DELETE FROM runs
			WHERE task_id = ? AND status = 'SCHEDULED' AND trigger_type <> 'MANUAL'`, t.ID)
		return err
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

// TaskDelete marks the task deleted, deletes its SCHEDULED runs and cancels
// its QUEUED ones.
func (s *Store) TaskDelete(ctx context.Context, id int64, now time.Time) error {
	at := sqlrow.Micros(now)
	err := s.write(ctx, func(tx *sql.Tx) error {
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
		if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE task_id = ? AND status = 'SCHEDULED'`, id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs
			SET status = 'CANCELED', error = 'task deleted', finished_at = ?, updated_at = ?
			WHERE task_id = ? AND status = 'QUEUED'`, at, at, id)
		return err
	})
	if err != nil {
		return sqlrow.Wrap(err, "delete task %d", id)
	}
	return nil
}
