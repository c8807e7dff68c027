package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

const taskCols = `id, name, description, cron_expr, timezone, exec_type, http_method, target_url,
	headers_json, body_template, timeout_seconds, retry_policy_json, max_concurrency,
	concurrency_policy, max_queue, overlap_action, failure_action, catch_up_mode, catch_up_limit,
	callback_method, callback_timeout_sec, priority, status, version, created_at, updated_at,
	next_fire_at`

func scanTask(sc scanner) (*sundial.Task, error) {
	var (
		t                       sundial.Task
		headers, retry          string
		created, updated        int64
		next                    sql.NullInt64
		execType, concPol       string
		overlap, failure, catch string
		status                  string
	)
	err := sc.Scan(&t.ID, &t.Name, &t.Description, &t.CronExpr, &t.Timezone, &execType, &t.HTTPMethod,
		&t.TargetURL, &headers, &t.BodyTemplate, &t.TimeoutSeconds, &retry, &t.MaxConcurrency,
		&concPol, &t.MaxQueue, &overlap, &failure, &catch, &t.CatchUpLimit,
		&t.CallbackMethod, &t.CallbackTimeout, &t.Priority, &status, &t.Version, &created, &updated,
		&next)
	if err != nil {
		return nil, err
	}
	t.ExecType = sundial.ExecType(execType)
	t.ConcurrencyPolicy = sundial.ConcurrencyPolicy(concPol)
	t.OverlapAction = sundial.OverlapAction(overlap)
	t.FailureAction = sundial.FailureAction(failure)
	t.CatchUpMode = sundial.CatchUpMode(catch)
	t.Status = sundial.TaskStatus(status)
	t.Headers = map[string]string{}
	if err := json.Unmarshal([]byte(headers), &t.Headers); err != nil {
		return nil, fmt.Errorf("decode headers of task %d: %w", t.ID, err)
	}
	if t.Headers == nil {
		t.Headers = map[string]string{}
	}
	t.RetryPolicy = json.RawMessage(retry)
	t.CreatedAt = fromMicros(created)
	t.UpdatedAt = fromMicros(updated)
	t.NextFireTime = timePtr(next)
	return &t, nil
}

// taskWriteCols are the columns TaskCreate and TaskUpdate write, in the
// order of taskArgs.
var taskWriteCols = []string{"name", "description", "cron_expr", "timezone", "exec_type", "http_method",
	"target_url", "headers_json", "body_template", "timeout_seconds", "retry_policy_json", "max_concurrency",
	"concurrency_policy", "max_queue", "overlap_action", "failure_action", "catch_up_mode", "catch_up_limit",
	"callback_method", "callback_timeout_sec", "priority", "status", "next_fire_at"}

var (
	taskInsertSQL = `INSERT INTO tasks (` + strings.Join(taskWriteCols, ", ") + `, version, created_at, updated_at)
		VALUES (` + placeholders(len(taskWriteCols)+3) + `)`
	taskUpdateSQL = `UPDATE tasks SET ` + strings.Join(taskWriteCols, " = ?, ") + ` = ?,
		version = version + 1, updated_at = ?
		WHERE id = ? AND version = ? AND deleted = 0`
)

func taskArgs(t *sundial.Task) ([]any, error) {
	headers := t.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	hj, err := json.Marshal(headers)
	if err != nil {
		return nil, fmt.Errorf("encode headers: %w", err)
	}
	retry := string(t.RetryPolicy)
	if retry == "" || retry == "null" {
		retry = "{}"
	}
	return []any{t.Name, t.Description, t.CronExpr, t.Timezone, string(t.ExecType), t.HTTPMethod,
		t.TargetURL, string(hj), t.BodyTemplate, t.TimeoutSeconds, retry, t.MaxConcurrency,
		string(t.ConcurrencyPolicy), t.MaxQueue, string(t.OverlapAction), string(t.FailureAction),
		string(t.CatchUpMode), t.CatchUpLimit, t.CallbackMethod, t.CallbackTimeout, t.Priority,
		string(t.Status), nullMicros(t.NextFireTime)}, nil
}

// nameTaken reports whether err is the live-name index refusing a
// duplicate, and if so returns the conflict for the client.
func nameTaken(err error, name string) (*sundial.Error, bool) {
	if !isDup(err) || !strings.Contains(err.Error(), "tasks_live_name") {
		return nil, false
	}
	return conflict("name", "a task named %q already exists", name), true
}

// TaskCreate inserts t, setting ID, Version, CreatedAt and UpdatedAt.
func (s *Store) TaskCreate(ctx context.Context, t *sundial.Task, now time.Time) error {
	args, err := taskArgs(t)
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	now = norm(now)
	args = append(args, int64(1), micros(now), micros(now))
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
	t.NextFireTime = normPtr(t.NextFireTime)
	return nil
}

// TaskGet returns a live task, or ENotFound.
func (s *Store) TaskGet(ctx context.Context, id int64) (*sundial.Task, error) {
	t, err := scanTask(s.db.QueryRowContext(ctx,
		`SELECT `+taskCols+` FROM tasks WHERE id = ? AND deleted = 0`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("", "task %d not found", id)
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
	args = append(args, clampLimit(f.Limit))
	rows, err := s.db.QueryContext(ctx,
		`SELECT `+taskCols+` FROM tasks WHERE `+where.String()+` ORDER BY id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	var out []*sundial.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// TaskUpdate replaces the task whose ID and Version match t and deletes its
// planned (non-manual) SCHEDULED runs. The UPDATE locks the task row first,
// then the runs: the lock order of every method.
func (s *Store) TaskUpdate(ctx context.Context, t *sundial.Task, now time.Time) error {
	args, err := taskArgs(t)
	if err != nil {
		return fmt.Errorf("update task %d: %w", t.ID, err)
	}
	now = norm(now)
	args = append(args, micros(now), t.ID, t.Version)
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
				return notFound("", "task %d not found", t.ID)
			}
			if err != nil {
				return err
			}
			return conflict("version", "task %d is at version %d, not %d: it changed since it was read", t.ID, v, t.Version)
		}
		if err := tx.QueryRowContext(ctx, `SELECT created_at FROM tasks WHERE id = ?`, t.ID).Scan(&created); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM runs
			WHERE task_id = ? AND status = 'SCHEDULED' AND trigger_type <> 'MANUAL'`, t.ID)
		return err
	})
	if err != nil {
		return wrap(err, "update task %d", t.ID)
	}
	t.Version++
	t.UpdatedAt = now
	t.CreatedAt = fromMicros(created)
	t.NextFireTime = normPtr(t.NextFireTime)
	return nil
}

// TaskDelete marks the task deleted, deletes its SCHEDULED runs and cancels
// its QUEUED ones.
func (s *Store) TaskDelete(ctx context.Context, id int64, now time.Time) error {
	at := micros(now)
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
			return notFound("", "task %d not found", id)
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
		return wrap(err, "delete task %d", id)
	}
	return nil
}
