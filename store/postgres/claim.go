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
// also starts, as RunStart would, those that sundial.ClaimStart selects
// (s: due by $5, and delivered before or marked start_ahead and scheduled
// at or after $6), which its row sub-SELECT decides once per run, from the
// row it updates: RUNNING, attempt at least 1, started at the later of its
// due time and now, a new trace ID (32 lowercase hex digits: a random
// UUID's), one more delivery, and what the previous delivery left
// (answer, error, callback message: sqlrow.StartClears) emptied. Each
// claimed task comes once, with the first of its runs; its other runs have
// NULL in the task's columns. $1 node, $2 until, $3 limit, $4 now, $5
// ClaimStart.By, $6 ClaimStart.FreshAfter.
var claimDueSQL = `WITH claimed AS (
		UPDATE runs SET node_id = $1, fence = fence + 1, updated_at = $4,
			(status, attempt, started_at, trace_id, deliveries,
				http_status, response_body, error, message) = (SELECT
				CASE WHEN st.s THEN 'RUNNING' ELSE runs.status END,
				CASE WHEN st.s THEN GREATEST(runs.attempt, 1) ELSE runs.attempt END,
				CASE WHEN st.s THEN GREATEST(runs.due_at, $4) ELSE runs.started_at END,
				CASE WHEN st.s THEN replace(gen_random_uuid()::text, '-', '') ELSE runs.trace_id END,
				CASE WHEN st.s THEN runs.deliveries + 1 ELSE runs.deliveries END,
				CASE WHEN st.s THEN 0 ELSE runs.http_status END,
				CASE WHEN st.s THEN ''::bytea ELSE runs.response_body END,
				CASE WHEN st.s THEN '' ELSE runs.error END,
				CASE WHEN st.s THEN '' ELSE runs.message END
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
// those start selects (sundial.ClaimStart) in the same statement, as
// RunStart would, at that clock; a zero start starts nothing.
func (s *Store) RunClaimDue(ctx context.Context, nodeID string, until time.Time, limit int,
	start sundial.ClaimStart) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
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
	for rows.Next() {
		withTask := rows.RawValues()[nRunCols] != nil
		r, err := scanRun(rowFunc(func(runDest ...any) error {
			if !withTask {
				return rows.Scan(append(runDest, make([]any, nTaskCols)...)...) // nil skips a column
			}
			t, err := sqlrow.ScanTask(rowFunc(func(taskDest ...any) error {
				return rows.Scan(append(runDest, taskDest...)...)
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

// runClaimSQL takes over the runs of $1 whose fence is the one in $2 and
// that are SCHEDULED or QUEUED, for node $3 at $4.
var runClaimSQL = `UPDATE runs SET node_id = $3, fence = runs.fence + 1, updated_at = $4
	FROM unnest($1::bigint[], $2::bigint[]) AS u (id, fence)
	WHERE runs.id = ANY($1) AND runs.id = u.id AND runs.fence = u.fence
		AND runs.status IN ('SCHEDULED', 'QUEUED')
	RETURNING ` + qualified("runs", sqlrow.RunCols)

// RunClaim takes over the given SCHEDULED or QUEUED runs whose fence still
// matches, in one round trip and one implicit transaction: the runs' tasks
// are locked first (FOR SHARE, in ID order), then the runs are updated as
// RunStart updates its batch (one statement per repeat of an ID, so a batch
// applies as if its items ran one after another). It returns the runs it
// took in the order of refs, each once, and their tasks as read under the
// lock.
func (s *Store) RunClaim(ctx context.Context, nodeID string, refs []sundial.RunRef) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if len(refs) == 0 {
		return nil, nil, nil
	}
	ids := make([]int64, len(refs))
	for i, ref := range refs {
		ids[i] = ref.ID
	}
	now := sqlrow.Micros(s.clock())
	var (
		locked map[int64]*sundial.Task
		took   map[int64]*sundial.Run
	)
	stmts := []stmt{{runTasksLockSQL, []any{ids}, func(rows pgx.Rows) error {
		ts, err := scanTasks(rows)
		for _, t := range ts {
			locked[t.ID] = t
		}
		return err
	}}}
	for _, round := range rounds(ids) {
		var id, fence []int64
		for _, i := range round {
			id, fence = append(id, refs[i].ID), append(fence, refs[i].Fence)
		}
		stmts = append(stmts, stmt{runClaimSQL, []any{id, fence, nodeID, now}, func(rows pgx.Rows) error {
			rs, err := scanRuns(rows)
			for _, r := range rs {
				took[r.ID] = r
			}
			return err
		}})
	}
	err = retry(ctx, func() error {
		locked, took = map[int64]*sundial.Task{}, map[int64]*sundial.Run{}
		return sendBatch(ctx, s.pool, batchOf(stmts))
	})
	if err != nil {
		return nil, nil, sqlrow.Wrap(badTextOr(err), "claim runs for node %s", nodeID)
	}
	var runs []*sundial.Run
	tasks := map[int64]*sundial.Task{}
	for _, id := range ids {
		if r := took[id]; r != nil {
			runs = append(runs, r)
			tasks[r.TaskID] = locked[r.TaskID]
			delete(took, id)
		}
	}
	return runs, tasks, nil
}

// runUnplanLockSQL locks, in ID order, the tasks of the runs $1: RunUnplan
// rewinds them.
const runUnplanLockSQL = `SELECT id FROM tasks
	WHERE id = ANY (ARRAY(SELECT task_id FROM runs WHERE id = ANY($1)))
	ORDER BY id FOR UPDATE`

// runUnplanSQL deletes the SCHEDULED runs never delivered of $1 held by
// node $3 whose fence is the one in $2, and rewinds each task's
// next_fire_at to the earliest of its deleted runs when that is earlier.
// LEAST ignores NULL: a task with no next fire gets the earliest.
const runUnplanSQL = `WITH gone AS (
		DELETE FROM runs USING unnest($1::bigint[], $2::bigint[]) AS u (id, fence)
		WHERE runs.id = ANY($1) AND runs.id = u.id AND runs.fence = u.fence
			AND runs.status = 'SCHEDULED' AND runs.node_id = $3 AND runs.trigger_type <> 'MANUAL'
			AND runs.deliveries = 0
		RETURNING runs.task_id, runs.scheduled_at
	)
	UPDATE tasks SET next_fire_at = LEAST(tasks.next_fire_at, e.at)
	FROM (SELECT task_id, min(scheduled_at) AS at FROM gone GROUP BY task_id) AS e
	WHERE tasks.id = e.task_id`

// runHandBackSQL hands the SCHEDULED runs delivered before among $1, held
// by node $3 with the fence in $2, back to no node, as they are (due_at
// kept, fence kept: the next claim bumps it): a retry is not a fire the
// planner makes again. $4 now.
const runHandBackSQL = `UPDATE runs SET node_id = '', updated_at = $4
	FROM unnest($1::bigint[], $2::bigint[]) AS u (id, fence)
	WHERE runs.id = ANY($1) AND runs.id = u.id AND runs.fence = u.fence
		AND runs.status = 'SCHEDULED' AND runs.node_id = $3 AND runs.deliveries > 0`

// RunUnplan deletes the given SCHEDULED runs nodeID holds (each only if
// its fence matches) and rewinds their tasks, or hands them back to no
// node if they were delivered before, in one round trip and one implicit
// transaction that locks the tasks first.
func (s *Store) RunUnplan(ctx context.Context, nodeID string, refs []sundial.RunRef) (err error) {
	defer s.classify(&err)
	if len(refs) == 0 {
		return nil
	}
	sorted := slices.SortedFunc(slices.Values(refs), func(a, b sundial.RunRef) int { return cmp.Compare(a.ID, b.ID) })
	ids, fences := make([]int64, len(sorted)), make([]int64, len(sorted))
	for i, ref := range sorted {
		ids[i], fences[i] = ref.ID, ref.Fence
	}
	stmts := []stmt{
		{runUnplanLockSQL, []any{ids}, nil},
		{runUnplanSQL, []any{ids, fences, nodeID}, nil},
		{runHandBackSQL, []any{ids, fences, nodeID, sqlrow.Micros(s.clock())}, nil},
	}
	err = retry(ctx, func() error { return sendBatch(ctx, s.pool, batchOf(stmts)) })
	return sqlrow.Wrap(badTextOr(err), "unplan runs of node %s", nodeID)
}

// missedPickSQL reads the planned fires due before $1 that no node holds
// (through runs_unclaimed, in its order) and those a node holds (few:
// claimed a moment before their instant), up to $2 of each.
var missedPickSQL = `(SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE status = 'SCHEDULED' AND node_id = '' AND due_at < $1 AND deliveries = 0 AND trigger_type = 'SCHEDULE'
		ORDER BY due_at, priority DESC, id LIMIT $2)
	UNION ALL
	(SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE status = 'SCHEDULED' AND node_id <> '' AND due_at < $1 AND deliveries = 0 AND trigger_type = 'SCHEDULE'
		ORDER BY due_at, id LIMIT $2)`

// missedDeleteSQL deletes the runs $1 that are still planned fires never
// delivered, whoever holds them, and rewinds each task's next_fire_at to
// the earliest of its deleted runs when that is earlier (as runUnplanSQL).
const missedDeleteSQL = `WITH gone AS (
		DELETE FROM runs
		WHERE id = ANY($1) AND status = 'SCHEDULED' AND deliveries = 0 AND trigger_type = 'SCHEDULE'
		RETURNING task_id, scheduled_at
	), rewound AS (
		UPDATE tasks SET next_fire_at = LEAST(tasks.next_fire_at, e.at)
		FROM (SELECT task_id, min(scheduled_at) AS at FROM gone GROUP BY task_id) AS e
		WHERE tasks.id = e.task_id
	)
	SELECT count(*) FROM gone`

// RunUnplanMissed deletes the planned fires that missed reports too late
// to start, whoever holds them, and rewinds their tasks. Their tasks are
// locked first, in ID order, as every writer of a task's runs does.
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
			return tx.QueryRow(ctx, missedDeleteSQL, gone).Scan(&deleted)
		})
	})
	if err != nil {
		return 0, 0, sqlrow.Wrap(badTextOr(err), "unplan missed fires")
	}
	return looked, deleted, nil
}

// redeliverPickSQL picks the oldest INTERRUPTED runs (by scheduled time,
// then ID): up to $2 that may be delivered again (fewer than $1 deliveries,
// task live, no cancellation asked) and up to 1,000 others, which fail.
const redeliverPickSQL = `(SELECT r.id FROM runs AS r JOIN tasks AS t ON t.id = r.task_id
		WHERE r.status = 'INTERRUPTED' AND r.deliveries < $1 AND NOT t.deleted AND NOT r.cancel_requested
		ORDER BY r.scheduled_at, r.id LIMIT $2)
	UNION ALL
	(SELECT r.id FROM runs AS r JOIN tasks AS t ON t.id = r.task_id
		WHERE r.status = 'INTERRUPTED' AND (r.deliveries >= $1 OR t.deleted OR r.cancel_requested)
		ORDER BY r.scheduled_at, r.id LIMIT 1000)`

// redeliverSQL decides again, under the task locks, each picked run ($1)
// that is still INTERRUPTED: one with fewer than $3 deliveries and a live
// task becomes SCHEDULED for node $2 with a new fence, due at once ($4);
// the others become FAILED at $4, the reason added to the interruption's,
// and so does the one-off task whose scheduled run failed, if still
// ENABLED (its lock, FOR SHARE since the batch's first statement, becomes
// an exclusive one). The runs are locked in ID order with SKIP LOCKED: a
// run another redeliverer holds is its to decide.
var redeliverSQL = `WITH d AS (UPDATE runs SET
		status = CASE WHEN e.ok THEN 'SCHEDULED' ELSE 'FAILED' END,
		node_id = CASE WHEN e.ok THEN $2 ELSE runs.node_id END,
		fence = CASE WHEN e.ok THEN runs.fence + 1 ELSE runs.fence END,
		due_at = CASE WHEN e.ok THEN $4::bigint ELSE runs.due_at END,
		finished_at = CASE WHEN e.ok THEN NULL ELSE $4::bigint END,
		error = CASE WHEN e.ok THEN runs.error WHEN runs.error = '' THEN e.why ELSE runs.error || '; ' || e.why END,
		updated_at = $4
	FROM (
		SELECT r.id, r.deliveries < $3::integer AND NOT t.deleted AND NOT r.cancel_requested AS ok,
			CASE WHEN t.deleted THEN 'its task was deleted'
				WHEN r.cancel_requested THEN 'its cancellation was requested'
				ELSE format('no delivery left (%s of %s made)', r.deliveries, $3::integer) END AS why
		FROM runs AS r JOIN tasks AS t ON t.id = r.task_id
		WHERE r.id = ANY($1) AND r.status = 'INTERRUPTED'
		ORDER BY r.id
		FOR UPDATE OF r SKIP LOCKED
	) AS e
	WHERE runs.id = e.id
	RETURNING ` + qualified("runs", sqlrow.RunCols) + `
	), failed AS (
		UPDATE tasks SET status = 'FAILED', version = version + 1, next_fire_at = NULL, updated_at = $4
		WHERE tasks.id = ANY (ARRAY(SELECT task_id FROM d WHERE status = 'FAILED' AND trigger_type = 'SCHEDULE'))
			AND ` + oneOffFailed + `
	)
	SELECT ` + sqlrow.RunCols + ` FROM d`

// RunRedeliver takes up to limit INTERRUPTED runs that may be delivered
// again, oldest first, and schedules them for nodeID; up to 1,000 others,
// oldest first, fail (the limit counts only the runs it redelivers). Two round trips: the pick, then one implicit
// transaction that locks the picked runs' tasks (FOR SHARE, in ID order)
// and decides each run again under the locks.
func (s *Store) RunRedeliver(ctx context.Context, nodeID string, maxDeliveries, limit int, now time.Time) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil, nil
	}
	now = sqlrow.Norm(now)
	var (
		runs   []*sundial.Run
		locked map[int64]*sundial.Task
	)
	err = retry(ctx, func() error {
		runs, locked = nil, map[int64]*sundial.Task{}
		rows, err := s.pool.Query(ctx, redeliverPickSQL, maxDeliveries, limit)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			return err
		}
		slices.Sort(ids)
		return sendBatch(ctx, s.pool, batchOf([]stmt{
			{runTasksLockSQL, []any{ids}, func(rows pgx.Rows) error {
				ts, err := scanTasks(rows)
				for _, t := range ts {
					locked[t.ID] = t
				}
				return err
			}},
			{redeliverSQL, []any{ids, nodeID, maxDeliveries, sqlrow.Micros(now)}, func(rows pgx.Rows) error {
				rs, err := scanRuns(rows)
				for _, r := range rs {
					if r.Status == sundial.RunScheduled {
						runs = append(runs, r)
					}
				}
				return err
			}},
		}))
	})
	if err != nil {
		return nil, nil, sqlrow.Wrap(badTextOr(err), "redeliver interrupted runs for node %s", nodeID)
	}
	slices.SortFunc(runs, func(a, b *sundial.Run) int {
		return cmp.Or(a.ScheduledTime.Compare(b.ScheduledTime), cmp.Compare(a.ID, b.ID))
	})
	tasks := map[int64]*sundial.Task{}
	for _, r := range runs {
		tasks[r.TaskID] = locked[r.TaskID]
	}
	return runs, tasks, nil
}

// runFindStuckSQL reads the SCHEDULED runs (runs_status_node), oldest
// due first. A node with no row in nodes is not ALIVE.
const runFindStuckSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs AS r
	WHERE r.status = 'SCHEDULED' AND r.due_at < $2
		AND (r.node_id = $1 OR r.node_id = ''
			OR NOT EXISTS (SELECT 1 FROM nodes AS n WHERE n.id = r.node_id AND n.state = 'ALIVE'))
	ORDER BY r.due_at, r.id
	LIMIT $3`

// RunFindStuck returns up to limit (sqlrow.ClampLimit) SCHEDULED runs due
// (due_at) before dueBefore held by nodeID, by no node, or by a node that
// is not ALIVE (or unknown), oldest due first. It takes no lock: the caller
// claims what it finds with RunClaim, whose fences settle any race.
func (s *Store) RunFindStuck(ctx context.Context, nodeID string, dueBefore time.Time, limit int) (_ []*sundial.Run, err error) {
	defer s.classify(&err)
	rows, err := s.pool.Query(ctx, runFindStuckSQL, nodeID, sqlrow.Micros(dueBefore), sqlrow.ClampLimit(limit))
	var out []*sundial.Run
	if err == nil {
		out, err = scanRuns(rows)
	}
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "find stuck runs for node %s", nodeID)
	}
	return out, nil
}

// RunCheckSend reports whether runs committed ahead may still be sent.
func (s *Store) RunCheckSend(ctx context.Context, refs []sundial.RunRef) (_ []sundial.SendCheck, err error) {
	defer s.classify(&err)
	ids := make([]int64, len(refs))
	at := make(map[int64]int, len(refs))
	for i, r := range refs {
		ids[i], at[r.ID] = r.ID, i
	}
	out := make([]sundial.SendCheck, len(refs))
	rows, err := s.pool.Query(ctx, `SELECT id, fence, status, cancel_requested FROM runs WHERE id = ANY($1)`, ids)
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

// RunCancelRequested returns, in ID order, the IDs of nodeID's RUNNING and
// WAITING_CALLBACK runs whose cancellation was requested.
func (s *Store) RunCancelRequested(ctx context.Context, nodeID string) (_ []int64, err error) {
	defer s.classify(&err)
	rows, err := s.pool.Query(ctx, `SELECT id FROM runs
		WHERE status IN ('RUNNING', 'WAITING_CALLBACK') AND node_id = $1 AND cancel_requested
		ORDER BY id`, nodeID)
	var ids []int64
	if err == nil {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "find runs of node %s to cancel", nodeID)
	}
	return ids, nil
}
