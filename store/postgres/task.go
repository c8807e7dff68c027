package postgres

import (
	"context"
	"database/sql"
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

// taskWriteCols are the columns TaskCreateMany and TaskUpdate write, in the
// order of sqlrow.TaskArgs, bound to $1 to $nTaskWriteCols.
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

func requestTaken(id string) *sundial.Error {
	return sqlrow.Conflict("request_id", "a task with request_id %q already exists", id)
}

// taskWriteErr turns the errors of writing a task t that the client can
// act on into *sundial.Error: a live name or request_id taken (told apart
// by the unique index that refused the row), or text PostgreSQL refuses.
func taskWriteErr(err error, t *sundial.Task) error {
	if e, ok := errors.AsType[*pgconn.PgError](err); ok && e.Code == codeUniqueViolation {
		if e.ConstraintName == "tasks_request_live" {
			return requestTaken(t.RequestID)
		}
		return nameTaken(t.Name)
	}
	if e := badText(err); e != nil {
		return e
	}
	return err
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
	version = version + 1, updated_at = $` + strconv.Itoa(nTaskWriteCols+1) + `
	WHERE id = $` + strconv.Itoa(nTaskWriteCols+2) + ` AND version = $` + strconv.Itoa(nTaskWriteCols+3) + ` AND NOT deleted
	RETURNING created_at`

// taskRunsSQL locks and reads the runs of task $1 that a change of it may
// take back (sundial.RunStatus.Held), through runs_task_status, in ID
// order.
var taskRunsSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
	WHERE task_id = $1 AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Held) + `
	ORDER BY id FOR UPDATE`

// TaskUpdate (see sundial.Store.TaskUpdate, sundial.TakeBackOnUpdate) is one
// transaction and three round trips: BEGIN with the UPDATE and the read of
// the runs (locked), the writes, COMMIT. The UPDATE takes the task's row
// lock first, so the read (a later statement, with a later snapshot) also
// sees the runs a planner that held the lock just committed.
func (s *Store) TaskUpdate(ctx context.Context, t *sundial.Task, now time.Time) (err error) {
	defer s.classify(&err)
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
		return taskWriteErr(err, t)
	})
	var runs []*sundial.Run
	b.Queue(taskRunsSQL, t.ID).Query(lockedRuns(&runs))
	err = s.inTx(ctx, b, func(tx pgx.Tx) error {
		c := sundial.TakeBackOnUpdate(t, runs, sundial.SendCutoff(now, s.clock()), now)
		if c.Empty() {
			return nil
		}
		return sendBatch(ctx, tx, changesBatch(c))
	})
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
	t.NextFireTime, t.RunAt = sqlrow.NormPtr(t.NextFireTime), sqlrow.NormPtr(t.RunAt)
	return nil
}

// errStaleOrGone stops TaskUpdate's batch when no live task has the ID and
// version, before its runs are read.
var errStaleOrGone = errors.New("no live task with this ID and version")

// TaskDelete (see sundial.Store.TaskDelete, sundial.TakeBackOnDelete): as
// in TaskUpdate, the UPDATE locks the task before the read of its runs.
func (s *Store) TaskDelete(ctx context.Context, id int64, now time.Time) (err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	b := beginBatch()
	b.Queue(`UPDATE tasks SET deleted = true, deleted_at = $1, updated_at = $1, next_fire_at = NULL
		WHERE id = $2 AND NOT deleted`, sqlrow.Micros(now), id).Exec(func(ct pgconn.CommandTag) error {
		if ct.RowsAffected() == 0 {
			return sqlrow.NotFound("", "task %d not found", id)
		}
		return nil
	})
	var runs []*sundial.Run
	b.Queue(taskRunsSQL, id).Query(lockedRuns(&runs))
	err = s.inTx(ctx, b, func(tx pgx.Tx) error {
		c := sundial.TakeBackOnDelete(runs, sundial.SendCutoff(now, s.clock()), now)
		if c.Empty() {
			return nil
		}
		return sendBatch(ctx, tx, changesBatch(c))
	})
	return sqlrow.Wrap(err, "delete task %d", id)
}

// taskInsertManySQL inserts tasks from one array per column of
// sqlrow.TaskWriteCols (then version, created_at and updated_at), in one
// statement, and returns each new task's ID with its name, unique among
// them. taskArrayTypes are the columns' array element types, from the Go
// types of sqlrow.TaskArgs: text, or bigint (which an INTEGER column takes
// by assignment).
var taskInsertManySQL, taskArrayTypes = func() (string, []string) {
	sample, err := sqlrow.TaskArgs(&sundial.Task{})
	if err != nil {
		panic(err)
	}
	sample = append(sample, int64(0), int64(0), int64(0))
	types := make([]string, len(sample))
	arrays := make([]string, len(sample))
	for i, v := range sample {
		switch v.(type) {
		case string, sql.NullString:
			types[i] = "text"
		case int, int64, sql.NullInt64:
			types[i] = "bigint"
		default:
			panic(fmt.Sprintf("postgres: sqlrow.TaskArgs column %d is a %T", i, v))
		}
		arrays[i] = fmt.Sprintf("$%d::%s[]", i+1, types[i])
	}
	return `INSERT INTO tasks (` + taskWriteCols + `, version, created_at, updated_at)
		SELECT * FROM unnest(` + strings.Join(arrays, ", ") + `)
		RETURNING id, name`, types
}()

// taskColumns holds rows of task arguments column by column, each column a
// typed slice for pgx to bind as an array: []string, []*string ([]int64,
// []*int64) for a text (bigint) column, nil for NULL.
type taskColumns []any

func newTaskColumns(n int) taskColumns {
	c := make(taskColumns, len(taskArrayTypes))
	for j, typ := range taskArrayTypes {
		switch typ {
		case "text":
			c[j] = make([]*string, 0, n)
		default:
			c[j] = make([]*int64, 0, n)
		}
	}
	return c
}

// add appends one row: the values of sqlrow.TaskArgs, then version,
// created_at and updated_at.
func (c taskColumns) add(row []any) {
	for j, v := range row {
		switch v := v.(type) {
		case string:
			c[j] = append(c[j].([]*string), &v)
		case sql.NullString:
			var p *string
			if v.Valid {
				p = &v.String
			}
			c[j] = append(c[j].([]*string), p)
		case int:
			n := int64(v)
			c[j] = append(c[j].([]*int64), &n)
		case int64:
			c[j] = append(c[j].([]*int64), &v)
		case sql.NullInt64:
			var p *int64
			if v.Valid {
				p = &v.Int64
			}
			c[j] = append(c[j].([]*int64), p)
		}
	}
}

// createAttempts is how often TaskCreateMany runs its transaction in all
// while it collides with a concurrent creation of the same request (or
// name), or deadlocks.
const createAttempts = 5

// createPlan is what TaskCreateMany's transaction made of each task:
// inserted with an ID, answered by a live task with its request_id, or by
// an earlier task of the batch with the same request.
type createPlan struct {
	ids      map[int]int64
	existing map[int]*sundial.Task
	same     map[int]int
}

// TaskCreateMany (see sundial.Store.TaskCreateMany) answers a request
// repeated within the batch with the batch's earlier task. The transaction
// reads the live tasks with the batch's request IDs and names, decides each
// task, then inserts the new ones in one statement. A concurrent creation of
// one of them that committed in between makes the insert fail on a unique
// index (tasks_request_live, tasks_name_live): the whole transaction runs
// again, and then finds that task. So concurrent calls with one request
// create one task, and each caller gets it.
func (s *Store) TaskCreateMany(ctx context.Context, ts []*sundial.Task, now time.Time) (_ []bool, err error) {
	defer s.classify(&err)
	existed := make([]bool, len(ts))
	if len(ts) == 0 {
		return existed, nil
	}
	now = sqlrow.Norm(now)
	rows := make([][]any, len(ts))
	for i, t := range ts {
		args, err := sqlrow.TaskArgs(t)
		if err != nil {
			return nil, &sundial.BatchError{Index: i, Err: fmt.Errorf("create task: %w", err)}
		}
		rows[i] = append(args, int64(1), sqlrow.Micros(now), sqlrow.Micros(now))
	}
	var p *createPlan
	for range createAttempts {
		p, err = s.taskCreateMany(ctx, ts, rows)
		if (pgCode(err) != codeUniqueViolation && !isRetryable(err)) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		if e, ok := errors.AsType[*pgconn.PgError](err); ok && e.Code == codeUniqueViolation {
			// Still colliding after every attempt: which task is not known.
			field := "name"
			if e.ConstraintName == "tasks_request_live" {
				field = "request_id"
			}
			return nil, sqlrow.Conflict(field, "a task of the batch collides with tasks being created at the same time")
		}
		if _, ok := errors.AsType[*sundial.BatchError](err); ok {
			return nil, err
		}
		return nil, sqlrow.Wrap(badTextOr(err), "create tasks")
	}
	for i, id := range p.ids {
		t := ts[i]
		t.ID, t.Version, t.CreatedAt, t.UpdatedAt = id, 1, now, now
		t.NextFireTime, t.RunAt = sqlrow.NormPtr(t.NextFireTime), sqlrow.NormPtr(t.RunAt)
	}
	for i, e := range p.existing {
		*ts[i], existed[i] = *e, true
	}
	for i, j := range p.same {
		*ts[i], existed[i] = *ts[j], true
	}
	return existed, nil
}

// taskCreateMany runs TaskCreateMany's transaction once, changing no task
// of ts: it returns what it did to each.
func (s *Store) taskCreateMany(ctx context.Context, ts []*sundial.Task, rows [][]any) (*createPlan, error) {
	var reqIDs, names []string
	for _, t := range ts {
		if t.RequestID != "" {
			reqIDs = append(reqIDs, t.RequestID)
		}
		names = append(names, t.Name)
	}
	byRequest := map[string]*sundial.Task{}
	taken := map[string]bool{}
	b := beginBatch()
	// One statement, so one snapshot: under READ COMMITTED two lookups
	// could see a concurrent creation of the same request between them,
	// its name taken but its request_id not yet there (a conflict instead
	// of the task it created). The literal term matches the partial index
	// tasks_request_live.
	b.Queue(`SELECT `+sqlrow.TaskCols+` FROM tasks
		WHERE NOT deleted AND (name = ANY($1) OR request_id = ANY($2) AND request_id <> '')`,
		names, reqIDs).Query(func(rows pgx.Rows) error {
		found, err := scanTasks(rows)
		for _, t := range found {
			taken[t.Name] = true
			if t.RequestID != "" {
				byRequest[t.RequestID] = t
			}
		}
		return err
	})
	p := &createPlan{ids: map[int]int64{}, existing: map[int]*sundial.Task{}, same: map[int]int{}}
	err := s.inTx(ctx, b, func(tx pgx.Tx) error {
		var (
			firstOf = map[string]int{} // a request ID's first task in the batch
			named   = map[string]int{} // a name's task in the batch, to insert
			cols    = newTaskColumns(len(ts))
		)
		for i, t := range ts {
			if t.RequestID != "" {
				other, j := byRequest[t.RequestID], -1
				if other == nil {
					if k, ok := firstOf[t.RequestID]; ok {
						other, j = ts[k], k
					}
				}
				switch {
				case other != nil && other.RequestHash != t.RequestHash:
					return &sundial.BatchError{Index: i, Err: sqlrow.RequestConflict(t.RequestID)}
				case j >= 0:
					p.same[i] = j
					continue
				case other != nil:
					p.existing[i] = other
					continue
				}
				firstOf[t.RequestID] = i
			}
			if _, dup := named[t.Name]; dup || taken[t.Name] {
				return &sundial.BatchError{Index: i, Err: nameTaken(t.Name)}
			}
			named[t.Name] = i
			cols.add(rows[i])
		}
		if len(named) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, taskInsertManySQL, cols...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id   int64
				name string
			)
			if err := rows.Scan(&id, &name); err != nil {
				return err
			}
			p.ids[named[name]] = id
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
