package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// taskStateFirstSQL makes the row of task_state of task ?1, with its
// first state (sundial.FirstStates, the values of
// sqlrow.TaskStateUpdateCols), if the task is live.
const taskStateFirstSQL = `INSERT INTO task_state (` + sqlrow.TaskStateCols + `)
	SELECT id, ?2, ?3, ?4, ?5, ?6, ?7 FROM tasks WHERE id = ?1 AND deleted = 0`

// taskStateLiveSQL reads the rows of task_state of the live tasks of the
// JSON array ?.
const taskStateLiveSQL = `SELECT ` + sqlrow.TaskStateCols + ` FROM task_state
	WHERE task_id IN (SELECT value FROM json_each(?))
		AND task_id IN (SELECT id FROM tasks WHERE id IN (SELECT value FROM json_each(?)) AND deleted = 0)`

// taskStateWriteSQL writes a task's state back.
const taskStateWriteSQL = `UPDATE task_state SET last_success_at = ?, last_failure_at = ?, consecutive_failures = ?,
	failing_since = ?, lags = ?, updated_at = ? WHERE task_id = ?`

// TaskStateSave (see sundial.Store.TaskStateSave, sundial.SaveStates): one
// write transaction, which holds the whole database, so no row is made
// meanwhile: the rows of the tasks read in one statement; the first state
// of each task that has none written as its row, and the changes of the
// others merged into theirs and written back, a statement a task.
func (s *Store) TaskStateSave(ctx context.Context, changes []*sundial.TaskState, now time.Time) (err error) {
	defer s.classify(&err)
	if len(changes) == 0 {
		return nil
	}
	now = sqlrow.Norm(now)
	ids := jsonIDs(sundial.TaskStateIDs(changes))
	err = s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, taskStateLiveSQL, ids, ids)
		saved, err := scanStates(rows, err)
		if err != nil {
			return err
		}
		news, merges := sundial.SplitFirst(saved, changes)
		if err := execEach(ctx, tx, taskStateFirstSQL, sundial.FirstStates(news, now), func(st *sundial.TaskState) []any {
			return append([]any{st.TaskID}, sqlrow.TaskStateArgs(st)...)
		}); err != nil {
			return err
		}
		successes, err := lastSuccesses(ctx, tx, sundial.SuccessesToRead(saved, merges))
		if err != nil {
			return err
		}
		return execEach(ctx, tx, taskStateWriteSQL, sundial.SaveStates(saved, merges, successes, now), func(st *sundial.TaskState) []any {
			return append(sqlrow.TaskStateArgs(st), st.TaskID)
		})
	})
	return sqlrow.Wrap(err, "save task states")
}

// execEach runs the statement query once for each state, with the
// arguments args gives: prepared once, when there is a state.
func execEach(ctx context.Context, tx *sql.Tx, query string, states []*sundial.TaskState, args func(*sundial.TaskState) []any) error {
	if len(states) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, st := range states {
		if _, err := stmt.ExecContext(ctx, args(st)...); err != nil {
			return err
		}
	}
	return nil
}

// lastSuccessSQL reads when the latest successful run (by scheduled time)
// of each task of the JSON array ? ended: the last entry of the task's
// SUCCESS range of runs_task_status.
const lastSuccessSQL = `SELECT t.value, (SELECT l.finished_at FROM runs AS l INDEXED BY runs_task_status
		WHERE l.task_id = t.value AND l.status = 'SUCCESS' ORDER BY l.scheduled_at DESC LIMIT 1)
	FROM json_each(?) AS t`

// lastSuccesses reads when the latest successful run of each task of ids
// ended (lastSuccessSQL), by task; none for a task without one.
func lastSuccesses(ctx context.Context, q querier, ids []int64) (map[int64]time.Time, error) {
	out := map[int64]time.Time{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q.QueryContext(ctx, lastSuccessSQL, jsonIDs(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id  int64
			end sql.NullInt64
		)
		if err := rows.Scan(&id, &end); err != nil {
			return nil, err
		}
		if end.Valid {
			out[id] = sqlrow.FromMicros(end.Int64)
		}
	}
	return out, rows.Err()
}

// taskLastRunSQL reads the latest run that ended of each task of the JSON
// array ?, scheduled at or before ?: for each task, the first final run
// of its range of runs_task_scheduled read backwards from the instant, so
// that the fires planned ahead are never read. (INDEXED BY holds SQLite
// to that index: through runs_task_status, which has the status too, it
// would read every final run of the task and sort them.)
var taskLastRunSQL = `SELECT r.task_id, r.id, r.status, r.skip_reason, r.scheduled_at, r.finished_at -- sqlrow.LastRunCols
	FROM json_each(?) AS t
	JOIN runs AS r ON r.id = (
		SELECT l.id FROM runs AS l INDEXED BY runs_task_scheduled
		WHERE l.task_id = t.value AND l.scheduled_at <= ? AND l.status IN ` + sqlrow.Statuses(sundial.RunStatus.Final) + `
		ORDER BY l.scheduled_at DESC, l.id DESC LIMIT 1)`

// TaskStates (see sundial.Store.TaskStates): two reads, each one statement
// whatever the number of ids.
func (s *Store) TaskStates(ctx context.Context, ids []int64, now time.Time) (_ map[int64]*sundial.TaskState, _ map[int64]*sundial.LastRun, err error) {
	defer s.classify(&err)
	states, last := map[int64]*sundial.TaskState{}, map[int64]*sundial.LastRun{}
	if len(ids) == 0 {
		return states, last, nil
	}
	list := jsonIDs(ids)
	rows, err := s.r.QueryContext(ctx, `SELECT `+sqlrow.TaskStateCols+` FROM task_state
		WHERE task_id IN (SELECT value FROM json_each(?))`, list)
	saved, err := scanStates(rows, err)
	if err != nil {
		return nil, nil, sqlrow.Wrap(err, "read task states")
	}
	for _, st := range saved {
		states[st.TaskID] = st
	}
	rows, err = s.r.QueryContext(ctx, taskLastRunSQL, list, sqlrow.Micros(now))
	if err != nil {
		return nil, nil, sqlrow.Wrap(err, "read the last runs of tasks")
	}
	defer rows.Close()
	for rows.Next() {
		id, r, err := sqlrow.ScanLastRun(rows)
		if err != nil {
			return nil, nil, sqlrow.Wrap(err, "read the last runs of tasks")
		}
		last[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, nil, sqlrow.Wrap(err, "read the last runs of tasks")
	}
	return states, last, nil
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
