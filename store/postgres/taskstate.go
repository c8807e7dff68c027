package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// taskStateFirstSQL makes the row of task_state of each live task of $1
// that has none, with its first state (sundial.FirstStates): one array
// per column of sqlrow.TaskStateCols, by task. It returns the tasks whose
// rows it made. Rows are made in task order; a row another transaction
// is making meanwhile is waited for, then left alone, as is a row that
// was there: their tasks' changes are merged into them
// (taskStateLockSQL, taskStateWriteSQL).
const taskStateFirstSQL = `INSERT INTO task_state (` + sqlrow.TaskStateCols + `)
	SELECT v.* FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::integer[], $5::bigint[], $6::text[], $7::bigint[])
		AS v (task_id, last_success_at, last_failure_at, consecutive_failures, failing_since, lags, updated_at)
	WHERE v.task_id IN (SELECT id FROM tasks WHERE id = ANY($1) AND NOT deleted)
	ORDER BY v.task_id
	ON CONFLICT (task_id) DO NOTHING RETURNING task_id`

// taskStateLockSQL reads and locks, in task order, the rows of task_state
// of the live tasks of $1.
const taskStateLockSQL = `SELECT ` + sqlrow.TaskStateCols + ` FROM task_state AS s
	WHERE task_id = ANY($1) AND EXISTS (SELECT 1 FROM tasks AS t WHERE t.id = s.task_id AND NOT t.deleted)
	ORDER BY task_id FOR UPDATE OF s`

// taskStateWriteSQL writes states back: one array per column of
// sqlrow.TaskStateCols.
const taskStateWriteSQL = `UPDATE task_state AS s SET last_success_at = v.last_success_at,
	last_failure_at = v.last_failure_at, consecutive_failures = v.consecutive_failures,
	failing_since = v.failing_since, lags = v.lags, updated_at = v.updated_at
	FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::integer[], $5::bigint[], $6::text[], $7::bigint[])
		AS v (task_id, last_success_at, last_failure_at, consecutive_failures, failing_since, lags, updated_at)
	WHERE s.task_id = ANY($1) AND s.task_id = v.task_id`

// TaskStateSave (see sundial.Store.TaskStateSave, sundial.SaveStates) is
// one transaction. Its first round trip (BEGIN, taskStateFirstSQL) writes
// the first state of each task that has no row: most tasks' first save
// ends there, with COMMIT. The changes of the tasks whose rows were there
// are merged into them: their rows locked and read, merged, written back,
// a round trip each, then COMMIT.
func (s *Store) TaskStateSave(ctx context.Context, changes []*sundial.TaskState, now time.Time) (err error) {
	defer s.classify(&err)
	if len(changes) == 0 {
		return nil
	}
	now = sqlrow.Norm(now)
	first := taskStateArgs(sundial.FirstStates(changes, now))
	err = retry(ctx, func() error {
		made := map[int64]bool{}
		b := beginBatch()
		b.Queue(customPlans)
		b.Queue(taskStateFirstSQL, first...).Query(func(rows pgx.Rows) error {
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			for _, id := range ids {
				made[id] = true
			}
			return err
		})
		return s.inTx(ctx, b, func(tx pgx.Tx) error {
			var rest []*sundial.TaskState
			for _, c := range changes {
				if !made[c.TaskID] {
					rest = append(rest, c)
				}
			}
			if len(rest) == 0 {
				return nil
			}
			rows, err := tx.Query(ctx, taskStateLockSQL, sundial.TaskStateIDs(rest))
			if err != nil {
				return err
			}
			saved, err := scanStates(rows)
			if err != nil {
				return err
			}
			successes, err := lastSuccesses(ctx, tx, sundial.SuccessesToRead(saved, rest))
			if err != nil {
				return err
			}
			write := sundial.SaveStates(saved, rest, successes, now)
			if len(write) == 0 {
				return nil
			}
			_, err = tx.Exec(ctx, taskStateWriteSQL, taskStateArgs(write)...)
			return err
		})
	})
	return sqlrow.Wrap(err, "save task states")
}

// lastSuccessSQL reads when the latest successful run (by scheduled time)
// of each task of $1 ended: the last entry of the task's SUCCESS range of
// runs_task_status.
const lastSuccessSQL = `SELECT t.tid, r.finished_at FROM unnest($1::bigint[]) AS t (tid)
	CROSS JOIN LATERAL (
		SELECT finished_at FROM runs WHERE task_id = t.tid AND status = 'SUCCESS'
		ORDER BY scheduled_at DESC, id DESC LIMIT 1) AS r`

// lastSuccesses reads when the latest successful run of each task of ids
// ended (lastSuccessSQL), by task; none for a task without one.
func lastSuccesses(ctx context.Context, tx pgx.Tx, ids []int64) (map[int64]time.Time, error) {
	out := map[int64]time.Time{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, lastSuccessSQL, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id  int64
			end *int64
		)
		if err := rows.Scan(&id, &end); err != nil {
			return nil, err
		}
		if end != nil {
			out[id] = sqlrow.FromMicros(*end)
		}
	}
	return out, rows.Err()
}

// taskStateArgs are the arrays of taskStateFirstSQL and taskStateWriteSQL
// for states.
func taskStateArgs(states []*sundial.TaskState) []any {
	n := len(states)
	var (
		id, updated               = make([]int64, n), make([]int64, n)
		success, failure, failing = make([]*int64, n), make([]*int64, n), make([]*int64, n)
		count                     = make([]int32, n)
		lags                      = make([]string, n)
	)
	for i, st := range states {
		id[i], updated[i] = st.TaskID, sqlrow.Micros(st.UpdatedAt)
		success[i], failure[i], failing[i] = nullMicros(st.LastSuccessAt), nullMicros(st.LastFailureAt), nullMicros(st.FailingSince)
		count[i], lags[i] = int32(st.ConsecutiveFailures), sqlrow.EncodeLags(st.Lags)
	}
	return []any{id, success, failure, count, failing, lags, updated}
}

// taskStatesSQL reads the rows of task_state of the tasks $1.
const taskStatesSQL = `SELECT ` + sqlrow.TaskStateCols + ` FROM task_state WHERE task_id = ANY($1)`

// taskLastRunSQL reads the latest run that ended of each task of $1,
// scheduled at or before $2: for each task, the first final run of its
// range of runs_task_scheduled read backwards from the instant, so that
// the fires planned ahead are never read.
var taskLastRunSQL = `SELECT ` + sqlrow.LastRunCols + ` FROM unnest($1::bigint[]) AS t (tid)
	CROSS JOIN LATERAL (
		SELECT ` + sqlrow.LastRunCols + ` FROM runs
		WHERE task_id = t.tid AND scheduled_at <= $2 AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Final) + `
		ORDER BY scheduled_at DESC, id DESC LIMIT 1) AS r`

// TaskStates (see sundial.Store.TaskStates): both reads in one round
// trip, each one statement whatever the number of ids.
func (s *Store) TaskStates(ctx context.Context, ids []int64, now time.Time) (_ map[int64]*sundial.TaskState, _ map[int64]*sundial.LastRun, err error) {
	defer s.classify(&err)
	states, last := map[int64]*sundial.TaskState{}, map[int64]*sundial.LastRun{}
	if len(ids) == 0 {
		return states, last, nil
	}
	b := &pgx.Batch{}
	b.Queue(taskStatesSQL, ids).Query(func(rows pgx.Rows) error {
		saved, err := scanStates(rows)
		for _, st := range saved {
			states[st.TaskID] = st
		}
		return err
	})
	b.Queue(taskLastRunSQL, ids, sqlrow.Micros(now)).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			id, r, err := sqlrow.ScanLastRun(rows)
			if err != nil {
				return err
			}
			last[id] = r
		}
		return rows.Err()
	})
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return nil, nil, sqlrow.Wrap(err, "read task states")
	}
	return states, last, nil
}

// scanStates reads rows of sqlrow.TaskStateCols.
func scanStates(rows pgx.Rows) ([]*sundial.TaskState, error) {
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
