package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// taskStateLockSQL reads and locks, in task order, the rows of task_state
// of the live tasks of n IDs.
func taskStateLockSQL(n int) string {
	return `SELECT ` + qualifiedState("s") + ` FROM task_state AS s FORCE INDEX (PRIMARY)
		JOIN tasks AS t FORCE INDEX (PRIMARY) ON t.id = s.task_id AND t.deleted = 0
		WHERE s.task_id IN (` + placeholders(n) + `) ORDER BY s.task_id FOR UPDATE`
}

// qualifiedState is sqlrow.TaskStateCols, each prefixed with alias.
func qualifiedState(alias string) string {
	cols := strings.Split(sqlrow.TaskStateCols, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// taskStateWriteCols are the columns of a state written back: its task's
// ID, named id for joinValues, then sqlrow.TaskStateUpdateCols.
var taskStateWriteCols = append([]string{"id"}, sqlrow.TaskStateUpdateCols...)

// taskStateWriteSQL writes n states back in one statement: a batch joined
// to task_state by primary key.
func taskStateWriteSQL(n int) string {
	set := make([]string, len(sqlrow.TaskStateUpdateCols))
	for i, c := range sqlrow.TaskStateUpdateCols {
		set[i] = "s." + c + " = v." + c
	}
	return `UPDATE (` + valuesTable(taskStateWriteCols, n) + `) AS v STRAIGHT_JOIN task_state AS s FORCE INDEX (PRIMARY)
		ON s.task_id = v.id SET ` + strings.Join(set, ", ")
}

// taskStateFirstSQL makes the rows of task_state of the live tasks of n
// states, with their first states (sundial.FirstStates): rows of
// taskStateWriteCols joined to tasks by primary key, made in task order.
// A row another transaction has made since this one locked the rows there
// (or is making) fails the statement with a duplicate key, after waiting
// for it.
func taskStateFirstSQL(n int) string {
	cols := make([]string, len(taskStateWriteCols))
	for i, c := range taskStateWriteCols {
		cols[i] = "v." + c
	}
	return `INSERT INTO task_state (` + sqlrow.TaskStateCols + `)
		SELECT ` + strings.Join(cols, ", ") + ` FROM (` + valuesTable(taskStateWriteCols, n) + `) AS v
		STRAIGHT_JOIN tasks AS t FORCE INDEX (PRIMARY) ON t.id = v.id AND t.deleted = 0
		ORDER BY v.id`
}

// TaskStateSave (see sundial.Store.TaskStateSave, sundial.SaveStates): one
// transaction, in chunks of batchIDs tasks or batchRows rows: the rows of
// the tasks locked and read; the first state of each task that has none
// written as its row; the changes of the others merged into theirs and
// written back. A row another node made meanwhile (a duplicate key) runs
// the transaction again, to merge into it.
func (s *Store) TaskStateSave(ctx context.Context, changes []*sundial.TaskState, now time.Time) (err error) {
	defer s.classify(&err)
	if len(changes) == 0 {
		return nil
	}
	now = sqlrow.Norm(now)
	ids := sundial.TaskStateIDs(changes)
	err = s.write(ctx, func(tx *sql.Tx) error {
		var saved []*sundial.TaskState
		for part := range slices.Chunk(ids, batchIDs) {
			rows, err := tx.QueryContext(ctx, taskStateLockSQL(len(part)), int64Args(part)...)
			got, err := scanStates(rows, err)
			if err != nil {
				return err
			}
			saved = append(saved, got...)
		}
		news, merges := sundial.SplitFirst(saved, changes)
		for part := range slices.Chunk(sundial.FirstStates(news, now), batchRows) {
			if _, err := tx.ExecContext(ctx, taskStateFirstSQL(len(part)), taskStateWriteArgs(part)...); err != nil {
				if isDup(err) {
					return fmt.Errorf("insert task states: %v: %w", err, errRetry)
				}
				return err
			}
		}
		successes, err := lastSuccesses(ctx, tx, sundial.SuccessesToRead(saved, merges))
		if err != nil {
			return err
		}
		write := sundial.SaveStates(saved, merges, successes, now)
		for part := range slices.Chunk(write, batchRows) {
			if _, err := tx.ExecContext(ctx, taskStateWriteSQL(len(part)), taskStateWriteArgs(part)...); err != nil {
				return err
			}
		}
		return nil
	})
	return sqlrow.Wrap(err, "save task states")
}

// taskStateWriteArgs are the values of taskStateWriteCols of states, a
// row each.
func taskStateWriteArgs(states []*sundial.TaskState) []any {
	args := make([]any, 0, len(taskStateWriteCols)*len(states))
	for _, st := range states {
		args = append(append(args, st.TaskID), sqlrow.TaskStateArgs(st)...)
	}
	return args
}

// lastSuccessSQL reads when the latest successful run (by scheduled time)
// of each of n tasks (an argument each) ended: the last entry of each
// task's SUCCESS range of runs_task_status, one probe per task.
func lastSuccessSQL(n int) string {
	one := `(SELECT task_id, finished_at FROM runs FORCE INDEX (runs_task_status)
		WHERE task_id = ? AND status = 'SUCCESS' ORDER BY scheduled_at DESC, id DESC LIMIT 1)`
	parts := make([]string, n)
	for i := range parts {
		parts[i] = one
	}
	return strings.Join(parts, " UNION ALL ")
}

// lastSuccesses reads when the latest successful run of each task of ids
// ended (lastSuccessSQL), by task; none for a task without one.
func lastSuccesses(ctx context.Context, q querier, ids []int64) (map[int64]time.Time, error) {
	out := map[int64]time.Time{}
	for part := range slices.Chunk(ids, batchIDs) {
		rows, err := q.QueryContext(ctx, lastSuccessSQL(len(part)), int64Args(part)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var (
				id  int64
				end sql.NullInt64
			)
			if err := rows.Scan(&id, &end); err != nil {
				rows.Close()
				return nil, err
			}
			if end.Valid {
				out[id] = sqlrow.FromMicros(end.Int64)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// taskLastRunSQL reads the latest run that ended of each of n tasks (two
// arguments each: the task's ID and the instant): for each task, the
// first final run scheduled at or before the instant, read backwards in
// its range of runs_task_scheduled from the instant, so that the fires
// planned ahead are never read. One probe per task, with constants, in
// one statement: a subquery correlated to a list of tasks would be read
// from the end of the task's range, through every fire planned ahead
// (MariaDB has no LATERAL, and neither makes a range of an outer column).
func taskLastRunSQL(n int) string {
	one := `(SELECT task_id, id, status, skip_reason, scheduled_at, finished_at -- sqlrow.LastRunCols
		FROM runs FORCE INDEX (runs_task_scheduled)
		WHERE task_id = ? AND scheduled_at <= ? AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Final) + `
		ORDER BY scheduled_at DESC, id DESC LIMIT 1)`
	parts := make([]string, n)
	for i := range parts {
		parts[i] = one
	}
	return strings.Join(parts, " UNION ALL ")
}

// TaskStates (see sundial.Store.TaskStates): two statements for up to
// batchIDs tasks (a page of a list is at most 1,000).
func (s *Store) TaskStates(ctx context.Context, ids []int64, now time.Time) (_ map[int64]*sundial.TaskState, _ map[int64]*sundial.LastRun, err error) {
	defer s.classify(&err)
	states, last := map[int64]*sundial.TaskState{}, map[int64]*sundial.LastRun{}
	for part := range slices.Chunk(ids, batchIDs) {
		rows, err := s.db.QueryContext(ctx, `SELECT `+sqlrow.TaskStateCols+` FROM task_state FORCE INDEX (PRIMARY)
			WHERE task_id IN (`+placeholders(len(part))+`)`, int64Args(part)...)
		saved, err := scanStates(rows, err)
		if err != nil {
			return nil, nil, sqlrow.Wrap(err, "read task states")
		}
		for _, st := range saved {
			states[st.TaskID] = st
		}
		args := make([]any, 0, 2*len(part))
		for _, id := range part {
			args = append(args, id, sqlrow.Micros(now))
		}
		if err := readLastRuns(ctx, s.db, taskLastRunSQL(len(part)), args, last); err != nil {
			return nil, nil, sqlrow.Wrap(err, "read the last runs of tasks")
		}
	}
	return states, last, nil
}

func readLastRuns(ctx context.Context, q querier, query string, args []any, out map[int64]*sundial.LastRun) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		id, r, err := sqlrow.ScanLastRun(rows)
		if err != nil {
			return err
		}
		out[id] = r
	}
	return rows.Err()
}

// scanStates reads the rows of task_state a query returned, and closes
// them. It passes on the query's error.
func scanStates(rows *sql.Rows, err error) ([]*sundial.TaskState, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*sundial.TaskState
	for rows.Next() {
		st, err := sqlrow.ScanTaskState(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}
