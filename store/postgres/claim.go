package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// Claims: how the nodes of a cluster share the runs the planner made. A
// run no node holds has an empty node_id (PlanDue stores the node it is
// given, the empty one included); the partial index runs_unclaimed holds
// those that are SCHEDULED.

// nRunCols and nTaskCols count the columns of sqlrow.RunCols and sqlrow.TaskCols.
var (
	nRunCols  = len(strings.Split(sqlrow.RunCols, ","))
	nTaskCols = len(strings.Split(sqlrow.TaskCols, ","))
)

// qualified returns the column list cols with each column prefixed by
// alias: "a.x, a.y".
func qualified(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// claimDueSQL claims due runs no node holds in one statement. The ARRAY
// subquery, evaluated once, picks them most urgent first (due time, then
// the run's priority, its task's, among runs due at the same instant, then
// ID), which is the order of runs_unclaimed: a range scan from the oldest
// due run that stops at the limit, with no sort, however many runs are due
// or planned beyond until. It locks them with SKIP LOCKED: a run another
// claimer holds (or took and committed since this statement's snapshot:
// the lock rechecks the row) is passed over, so concurrent claimers take
// disjoint runs and never wait. The UPDATE finds the locked runs by
// primary key, and gives each its node, a new fence and updated_at; it
// also starts, as RunStart would, those that sundial.ClaimStartParams selects
// (s: due by $5, and delivered before or marked start_ahead and scheduled
// at or after $6), which its row sub-SELECT decides once per run, from the
// row it updates: RUNNING, attempt at least 1, started at the later of its
// due time and now, a new trace ID (32 lowercase hex digits: a random
// UUID's), one more delivery, and what the previous delivery left
// (answer, error, callback message, attempt_on_run: sqlrow.StartClears)
// emptied. Each
// claimed task comes once, with the first of its runs; its other runs have
// NULL in the task's columns. $1 node, $2 until, $3 limit, $4 now, $5
// ClaimStartParams.By, $6 ClaimStartParams.FreshAfter.
//
// It is RunClaimDue on a hot path, one statement: its selection is
// sundial.Run.Unclaimed, st.s is sundial.ClaimStartParams.Starts and its SET
// ClaimStartParams.Claim, which the conformance suite holds it to (ClaimRule).
var claimDueSQL = `WITH claimed AS (
		UPDATE runs SET node_id = $1, fence = fence + 1, updated_at = $4,
			(status, attempt, started_at, trace_id, deliveries,
				http_status, response_body, error, message, attempt_on_run) = (SELECT
				CASE WHEN st.s THEN 'RUNNING' ELSE runs.status END,
				CASE WHEN st.s THEN GREATEST(runs.attempt, 1) ELSE runs.attempt END,
				CASE WHEN st.s THEN GREATEST(runs.due_at, $4) ELSE runs.started_at END,
				CASE WHEN st.s THEN replace(gen_random_uuid()::text, '-', '') ELSE runs.trace_id END,
				CASE WHEN st.s THEN runs.deliveries + 1 ELSE runs.deliveries END,
				CASE WHEN st.s THEN 0 ELSE runs.http_status END,
				CASE WHEN st.s THEN ''::bytea ELSE runs.response_body END,
				CASE WHEN st.s THEN '' ELSE runs.error END,
				CASE WHEN st.s THEN '' ELSE runs.message END,
				CASE WHEN st.s THEN false ELSE runs.attempt_on_run END
				FROM (SELECT runs.due_at <= $5 AND (runs.deliveries > 0
					OR (runs.start_ahead AND runs.scheduled_at >= $6)) AS s) AS st)
		WHERE id = ANY (ARRAY(
			SELECT id FROM runs
			WHERE status = 'SCHEDULED' AND node_id = '' AND due_at <= $2
			ORDER BY due_at, priority DESC, id
			LIMIT $3
			FOR UPDATE SKIP LOCKED))
		RETURNING ` + sqlrow.RunCols + `
	)
	SELECT ` + qualified("c", sqlrow.RunCols) + `, ` + qualified("t", sqlrow.TaskCols) + `
	FROM (SELECT *, row_number() OVER (PARTITION BY task_id) AS n FROM claimed) AS c
		LEFT JOIN tasks AS t ON t.id = c.task_id AND c.n = 1`

// RunClaimDue claims for nodeID up to limit SCHEDULED runs no node holds,
// due (due_at: the first delivery's time, or a retry's) at or before until,
// most urgent first (due time, then priority descending, then ID), in one
// statement (after indexOrderPlans) and one round trip. It sets their node,
// bumps their fence and sets updated_at (the process's clock), and starts
// those start selects (sundial.ClaimStartParams) in the same statement, as
// RunStart would, at that clock; a zero start starts nothing.
func (s *Store) RunClaimDue(ctx context.Context, nodeID string, until time.Time, limit int,
	start sundial.ClaimStartParams) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil, nil
	}
	var (
		runs  []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	// Planned for its arguments each time: with the generic plan that the
	// prepared claim came to use, each claim of 250 took 130-200 ms in a
	// burst of 100,000 due runs planned a few seconds before, against 8 ms
	// planned for its arguments.
	b := &pgx.Batch{}
	b.Queue(customPlans)
	b.Queue(indexOrderPlans)
	b.Queue(claimDueSQL, nodeID, sqlrow.Micros(until), limit, sqlrow.Micros(s.clock()),
		sqlrow.Micros(start.By), sqlrow.Micros(start.FreshAfter)).Query(func(rows pgx.Rows) error {
		var err error
		runs, tasks, err = scanRunsTasks(rows)
		return err
	})
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return nil, nil, sqlrow.Wrap(badTextOr(err), "claim due runs for node %s", nodeID)
	}
	slices.SortFunc(runs, func(a, b *sundial.Run) int {
		return cmp.Or(
			a.DueAt.Compare(b.DueAt),
			cmp.Compare(b.Priority, a.Priority),
			cmp.Compare(a.ID, b.ID))
	})
	return runs, tasks, nil
}

// rowFunc is a pgx.Row made of a function.
type rowFunc func(dest ...any) error

func (f rowFunc) Scan(dest ...any) error { return f(dest...) }

// scanRunsTasks reads rows of sqlrow.RunCols followed by sqlrow.TaskCols, where the
// task's columns are NULL on the rows of a task that another row carries.
func scanRunsTasks(rows pgx.Rows) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	defer rows.Close()
	var runs []*sundial.Run
	tasks := map[int64]*sundial.Task{}
	dest := make([]any, 0, nRunCols+nTaskCols) // a row's destinations, reused
	skip := make([]any, nTaskCols)             // nil skips a column
	for rows.Next() {
		withTask := rows.RawValues()[nRunCols] != nil
		r, err := scanRun(rowFunc(func(runDest ...any) error {
			dest = append(dest[:0], runDest...)
			if !withTask {
				return rows.Scan(append(dest, skip...)...)
			}
			t, err := sqlrow.ScanTask(rowFunc(func(taskDest ...any) error {
				return rows.Scan(append(dest, taskDest...)...)
			}))
			if err == nil {
				tasks[t.ID] = t
			}
			return err
		}))
		if err != nil {
			return nil, nil, err
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	for _, r := range runs {
		if tasks[r.TaskID] == nil {
			return nil, nil, fmt.Errorf("run %d came without its task %d", r.ID, r.TaskID)
		}
	}
	return runs, tasks, nil
}

// runTasksLockSQL locks, in ID order, the tasks of the runs $1 (a task's ID
// in a run never changes), and returns them. FOR SHARE: a claim changes no
// task, and claims of one task's runs need not wait for each other, but an
// admission, TaskUpdate or TaskDelete of the task waits for the claim (and
// the claim for them), and a planner passes over the task.
const runTasksLockSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks
	WHERE id = ANY (ARRAY(SELECT task_id FROM runs WHERE id = ANY($1)))
	ORDER BY id FOR SHARE`

// RunClaim takes over the given SCHEDULED or QUEUED runs whose fence still
// matches (sundial.RunRef.Claimable), in one transaction: BEGIN with the
// runs' tasks locked (FOR SHARE, in ID order: claims of one task need not
// wait for each other, admissions, updates and deletes of it do) and the
// runs locked and read, then the write, then COMMIT. It returns the runs it
// took in the order of refs, each once, and their tasks as read under the
// lock.
func (s *Store) RunClaim(ctx context.Context, nodeID string, refs []sundial.RunRef) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if len(refs) == 0 {
		return nil, nil, nil
	}
	ids := refIDs(refs)
	now := sqlrow.Norm(s.clock())
	var (
		runs  []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	err = retry(ctx, func() error {
		runs, tasks = nil, map[int64]*sundial.Task{}
		var locked []*sundial.Run
		b := beginBatch()
		b.Queue(runTasksLockSQL, ids).Query(func(rows pgx.Rows) error {
			ts, err := scanTasks(rows)
			for _, t := range ts {
				tasks[t.ID] = t
			}
			return err
		})
		b.Queue(runsLockSQL, ids).Query(lockedRuns(&locked))
		return s.inTx(ctx, b, func(tx pgx.Tx) error {
			byID := make(map[int64]*sundial.Run, len(locked))
			for _, r := range locked {
				byID[r.ID] = r
			}
			var c sundial.RunChanges
			for _, ref := range refs {
				if r := byID[ref.ID]; r != nil && ref.Claimable(r) {
					r.ClaimFor(nodeID, now)
					c.Update = append(c.Update, r)
				}
			}
			runs = c.Update
			if len(runs) == 0 {
				return nil
			}
			return sendBatch(ctx, tx, changesBatch(c))
		})
	})
	if err != nil {
		return nil, nil, sqlrow.Wrap(badTextOr(err), "claim runs for node %s", nodeID)
	}
	taken := map[int64]*sundial.Task{}
	for _, r := range runs {
		taken[r.TaskID] = tasks[r.TaskID]
	}
	return runs, taken, nil
}

// refIDs returns the IDs refs name, ascending, each once.
func refIDs(refs []sundial.RunRef) []int64 {
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// missedPickSQL reads the planned fires (sundial.Run.Missable) due before
// $1 that no node holds
// (through runs_unclaimed, in its order) and those a node holds (few:
// claimed a moment before their instant), up to $2 of each.
var missedPickSQL = `(SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE status = 'SCHEDULED' AND node_id = '' AND due_at < $1 AND deliveries = 0 AND trigger_type = 'SCHEDULE'
		ORDER BY due_at, priority DESC, id LIMIT $2)
	UNION ALL
	(SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE status = 'SCHEDULED' AND node_id <> '' AND due_at < $1 AND deliveries = 0 AND trigger_type = 'SCHEDULE'
		ORDER BY due_at, id LIMIT $2)`

// takenSQL reads, of the tasks $1, the latest fire later than $2 that a
// sweep of missed fires must not rewind them before (sqlrow.TakenCond).
const takenSQL = `SELECT task_id, MAX(scheduled_at) FROM runs
	WHERE task_id = ANY($1) AND scheduled_at > $2 AND ` + sqlrow.TakenCond + `
	GROUP BY task_id`

// RunUnplanMissed (see sundial.Store.RunUnplanMissed, sundial.UnplanMissed)
// locks the runs' tasks first, in ID order, as every writer of a task's
// runs does, then the runs to delete.
func (s *Store) RunUnplanMissed(ctx context.Context, before time.Time, limit int,
	missed func(*sundial.Run, *sundial.Task) bool) (looked, deleted int, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return 0, 0, nil
	}
	err = retry(ctx, func() error {
		looked, deleted = 0, 0
		var runs []*sundial.Run
		b := beginBatch()
		b.Queue(customPlans)
		b.Queue(missedPickSQL, sqlrow.Micros(before), limit).Query(func(rows pgx.Rows) error {
			var err error
			runs, err = scanRuns(rows)
			return err
		})
		return s.inTx(ctx, b, func(tx pgx.Tx) error {
			if len(runs) == 0 {
				return nil
			}
			sqlrow.SortByDue(runs)
			runs = runs[:min(len(runs), limit)]
			looked = len(runs)
			taskIDs := make([]int64, 0, len(runs))
			for _, r := range runs {
				taskIDs = append(taskIDs, r.TaskID)
			}
			rows, err := tx.Query(ctx, `SELECT `+sqlrow.TaskCols+` FROM tasks WHERE id = ANY($1) ORDER BY id FOR UPDATE`, taskIDs)
			if err != nil {
				return err
			}
			ts, err := scanTasks(rows)
			if err != nil {
				return err
			}
			tasks := make(map[int64]*sundial.Task, len(ts))
			for _, t := range ts {
				tasks[t.ID] = t
			}
			var gone []int64
			for _, r := range runs {
				if missed(r, tasks[r.TaskID]) {
					gone = append(gone, r.ID)
				}
			}
			if len(gone) == 0 {
				return nil
			}
			// Decided again under the runs' locks (missed answered on the
			// candidates, once each): started, or gone, since they were read.
			var locked []*sundial.Run
			lb := &pgx.Batch{}
			lb.Queue(runsLockSQL, gone).Query(lockedRuns(&locked))
			if err := sendBatch(ctx, tx, lb); err != nil {
				return err
			}
			tids, from := sqlrow.TakenFrom(locked)
			taken := map[int64]time.Time{}
			rows, err = tx.Query(ctx, takenSQL, tids, sqlrow.Micros(from))
			if err != nil {
				return err
			}
			var id, at int64
			if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error {
				taken[id] = sqlrow.FromMicros(at)
				return nil
			}); err != nil {
				return err
			}
			// missed answered on the candidates, once each.
			c := sundial.UnplanMissed(locked, tasks, before, taken, s.clock(),
				func(*sundial.Run, *sundial.Task) bool { return true })
			if deleted = len(c.Delete) + len(c.Update); deleted == 0 {
				return nil
			}
			return sendBatch(ctx, tx, changesBatch(c))
		})
	})
	if err != nil {
		return 0, 0, sqlrow.Wrap(badTextOr(err), "unplan missed fires")
	}
	return looked, deleted, nil
}

// redeliverPickSQL picks the oldest INTERRUPTED runs (by scheduled time,
// then ID), up to $1: the refused ones fail, and so do not hold back those
// after them for long.
const redeliverPickSQL = `SELECT id FROM runs WHERE status = 'INTERRUPTED' ORDER BY scheduled_at, id LIMIT $1`

// redeliverLockSQL locks the runs $1 that are still INTERRUPTED, in ID
// order, passing over those another redeliverer holds (SKIP LOCKED): they
// are its to decide.
const redeliverLockSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs WHERE id = ANY($1) AND status = 'INTERRUPTED'
	ORDER BY id FOR UPDATE SKIP LOCKED`

// redeliverTasksSQL locks the tasks of the runs $1, deleted ones too, FOR
// SHARE in ID order (so that none is deleted while its run is scheduled
// again), and reads them with whether they are deleted.
const redeliverTasksSQL = `SELECT ` + sqlrow.TaskCols + `, deleted FROM tasks
	WHERE id = ANY (ARRAY(SELECT task_id FROM runs WHERE id = ANY($1)))
	ORDER BY id FOR SHARE`

// RunRedeliver (see sundial.Store.RunRedeliver, sundial.Redeliver) picks
// among the oldest INTERRUPTED runs (up to four times limit, at most
// 1,000); limit counts only the runs it redelivers. The pick takes no
// lock; then one transaction locks the
// picked runs' tasks (FOR SHARE, in ID order) and the runs, decides each
// under the locks, and writes. (Failing a one-off task upgrades its shared
// lock to an exclusive one.)
func (s *Store) RunRedeliver(ctx context.Context, nodeID string, maxDeliveries, limit int, now time.Time) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil, nil
	}
	now = sqlrow.Norm(now)
	var (
		runs  []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	err = retry(ctx, func() error {
		runs, tasks = nil, map[int64]*sundial.Task{}
		rows, err := s.pool.Query(ctx, redeliverPickSQL, sqlrow.ClampLimit(limit*4))
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			return err
		}
		slices.Sort(ids)
		var (
			locked  []*sundial.Run
			all     = map[int64]*sundial.Task{}
			deleted = map[int64]bool{}
		)
		b := beginBatch()
		b.Queue(redeliverTasksSQL, ids).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var gone bool
				t, err := sqlrow.ScanTask(rowFunc(func(dest ...any) error { return rows.Scan(append(dest, &gone)...) }))
				if err != nil {
					return err
				}
				all[t.ID], deleted[t.ID] = t, gone
			}
			return rows.Err()
		})
		b.Queue(redeliverLockSQL, ids).Query(lockedRuns(&locked))
		return s.inTx(ctx, b, func(tx pgx.Tx) error {
			slices.SortFunc(locked, func(a, b *sundial.Run) int {
				return cmp.Or(a.ScheduledTime.Compare(b.ScheduledTime), cmp.Compare(a.ID, b.ID))
			})
			again, c := sundial.Redeliver(locked, all, deleted, nodeID, maxDeliveries, limit, now)
			if c.Empty() {
				return nil
			}
			if err := sendBatch(ctx, tx, changesBatch(c)); err != nil {
				return err
			}
			runs = again
			for _, r := range again {
				tasks[r.TaskID] = all[r.TaskID]
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, sqlrow.Wrap(badTextOr(err), "redeliver interrupted runs for node %s", nodeID)
	}
	return runs, tasks, nil
}

// RunCheckSend reports whether runs committed ahead may still be sent.
// PostgreSQL's own: the IDs are bound as one array (id = ANY($1)), one
// statement whatever the batch's size.
func (s *Store) RunCheckSend(ctx context.Context, refs []sundial.RunRef) (_ []sundial.SendCheck, err error) {
	defer s.classify(&err)
	ids := make([]int64, len(refs))
	at := make(map[int64]int, len(refs))
	for i, r := range refs {
		ids[i], at[r.ID] = r.ID, i
	}
	out := make([]sundial.SendCheck, len(refs))
	rows, err := s.pool.Query(ctx, `SELECT `+sqlrow.SendCheckCols+` FROM runs WHERE id = ANY($1)`, ids)
	if err == nil {
		var (
			id, fence int64
			status    string
			cancel    bool
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &fence, &status, &cancel}, func() error {
			i := at[id]
			out[i] = sundial.CheckSend(refs[i].Fence, &sundial.Run{Fence: fence, Status: sundial.RunStatus(status), CancelRequested: cancel})
			return nil
		})
	}
	if err != nil {
		return nil, sqlrow.Wrap(err, "check runs to send")
	}
	return out, nil
}
