package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// scanRun reads a row of sqlrow.RunCols: pgx's Scan takes the shared
// reader's destinations.
func scanRun(row pgx.Row) (*sundial.Run, error) { return sqlrow.ScanRun(row) }

func scanRuns(rows pgx.Rows) ([]*sundial.Run, error) {
	defer rows.Close()
	var out []*sundial.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// runUnnest turns the arrays of runArrays.args into rows of
// sqlrow.RunWriteCols.
const runUnnest = `unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[],
	$7::integer[], $8::integer[], $9::integer[], $10::text[], $11::bigint[], $12::bigint[], $13::bigint[],
	$14::integer[], $15::bytea[], $16::text[], $17::text[], $18::text[], $19::boolean[], $20::bigint[],
	$21::bigint[], $22::bigint[], $23::text[], $24::text[], $25::text[], $26::integer[],
	$27::boolean[], $28::text[], $29::text[], $30::bigint[])`

// runsInsertSQL inserts the runs of runArrays in one statement, leaving
// alone every (task, fire key) that exists, and returns those it inserted.
const runsInsertSQL = `INSERT INTO runs (` + sqlrow.RunWriteCols + `)
	SELECT * FROM ` + runUnnest + `
	ON CONFLICT (task_id, fire_key) DO NOTHING
	RETURNING id, task_id, fire_key`

// runInsertSQL inserts one run of a live task, at the task's priority
// (the run's own, $26, is ignored), holding FOR SHARE on the task so that
// a concurrent TaskDelete waits for it (and then deletes the run if it is
// SCHEDULED) or goes first (and the insert finds no task). It returns the
// task's priority, NULL if the task is not live, and the new run's ID, NULL
// if the fire key is taken. $31 is the task's ID.
var runInsertSQL = `WITH task AS (
		SELECT priority FROM tasks WHERE id = $31 AND NOT deleted FOR SHARE
	), ins AS (
		INSERT INTO runs (` + sqlrow.RunWriteCols + `)
		SELECT ` + runInsertCols + `
		FROM ` + runUnnest + ` AS u (` + sqlrow.RunWriteCols + `), task
		ON CONFLICT (task_id, fire_key) DO NOTHING
		RETURNING id
	)
	SELECT (SELECT priority FROM task), (SELECT id FROM ins)`

// runInsertCols selects a row of sqlrow.RunWriteCols from unnest's row u,
// but the priority from the task's row.
var runInsertCols = func() string {
	cols := strings.Split(sqlrow.RunWriteCols, ",")
	for i, c := range cols {
		if c = strings.TrimSpace(c); c == "priority" {
			cols[i] = "task.priority"
		} else {
			cols[i] = "u." + c
		}
	}
	return strings.Join(cols, ", ")
}()

// runArrays holds new runs column by column, to bind to unnest.
type runArrays struct {
	taskID, scheduled, fence, created, updated []int64
	fireKey, trigger, status, skipReason       []string
	nodeID, errText, traceID, idemKey          []string
	missed, attempt, deliveries, httpStatus    []int32
	started, finished                          []*int64
	body                                       [][]byte
	cancel                                     []bool
	due                                        []int64
	result, progress, checkpoint               []*string
	priority                                   []int32
	startAhead                                 []bool
	params                                     []*string
	message                                    []string
	rerunOf                                    []*int64
}

func (a *runArrays) add(r *sundial.Run) {
	a.taskID = append(a.taskID, r.TaskID)
	a.fireKey = append(a.fireKey, r.FireKey)
	a.trigger = append(a.trigger, string(r.Trigger))
	a.scheduled = append(a.scheduled, sqlrow.Micros(r.ScheduledTime))
	a.status = append(a.status, string(r.Status))
	a.skipReason = append(a.skipReason, string(r.SkipReason))
	a.missed = append(a.missed, int32(r.MissedCount))
	a.attempt = append(a.attempt, int32(r.Attempt))
	a.deliveries = append(a.deliveries, int32(r.Deliveries))
	a.nodeID = append(a.nodeID, r.NodeID)
	a.fence = append(a.fence, r.Fence)
	a.started = append(a.started, nullMicros(r.StartedAt))
	a.finished = append(a.finished, nullMicros(r.FinishedAt))
	a.httpStatus = append(a.httpStatus, int32(r.HTTPStatus))
	a.body = append(a.body, []byte(r.ResponseBody))
	a.errText = append(a.errText, r.Error)
	a.traceID = append(a.traceID, r.TraceID)
	a.idemKey = append(a.idemKey, r.IdempotencyKey)
	a.cancel = append(a.cancel, r.CancelRequested)
	a.created = append(a.created, sqlrow.Micros(r.CreatedAt))
	a.updated = append(a.updated, sqlrow.Micros(r.UpdatedAt))
	a.due = append(a.due, sqlrow.Micros(r.DueAt))
	a.result = append(a.result, nullJSON(r.Result))
	a.progress = append(a.progress, nullJSON(r.Progress))
	a.checkpoint = append(a.checkpoint, nullJSON(r.Checkpoint))
	a.priority = append(a.priority, int32(r.Priority))
	a.startAhead = append(a.startAhead, r.StartAhead)
	a.params = append(a.params, nullJSON(r.Params))
	a.message = append(a.message, cleanText(r.Message))
	var rerunOf *int64
	if r.RerunOf != 0 {
		rerunOf = &r.RerunOf
	}
	a.rerunOf = append(a.rerunOf, rerunOf)
}

func (a *runArrays) args() []any {
	return []any{a.taskID, a.fireKey, a.trigger, a.scheduled, a.status, a.skipReason, a.missed,
		a.attempt, a.deliveries, a.nodeID, a.fence, a.started, a.finished, a.httpStatus, a.body,
		a.errText, a.traceID, a.idemKey, a.cancel, a.created, a.updated, a.due, a.result, a.progress,
		a.checkpoint, a.priority, a.startAhead, a.params, a.message, a.rerunOf}
}

// nullJSON is raw JSON as a nullable text column holds it, nil for NULL:
// the form pgx binds in arrays (sqlrow.NullJSON's).
func nullJSON(raw json.RawMessage) *string {
	if len(raw) == 0 {
		return nil
	}
	s := string(raw)
	return &s
}

// RunInsert inserts a run (a manual trigger) of a live task, at the task's
// priority, which it sets in r. An existing (TaskID, FireKey) is EConflict;
// a missing task ENotFound.
func (s *Store) RunInsert(ctx context.Context, r *sundial.Run) (err error) {
	defer s.classify(&err)
	if err := sqlrow.PrepareNew(r, s.clock()); err != nil {
		return err
	}
	var a runArrays
	a.add(r)
	var priority, id *int64
	err = s.pool.QueryRow(ctx, runInsertSQL, append(a.args(), r.TaskID)...).Scan(&priority, &id)
	switch {
	case err != nil:
		return sqlrow.Wrap(badTextOr(err), "insert run")
	case priority == nil:
		return sqlrow.NotFound("task_id", "task %d not found", r.TaskID)
	case id == nil:
		return sqlrow.Conflict("fire_key", "task %d already has a run with fire key %q", r.TaskID, r.FireKey)
	}
	r.ID, r.Priority = *id, int(*priority)
	return nil
}

// rounds splits a batch by ID: round k holds the indexes of the k-th item
// of each ID, ordered by ID. Applying the rounds one after another applies
// the batch as if its items ran in order, while each round is one
// statement that locks its rows in ascending ID order.
func rounds(ids []int64) [][]int {
	var out [][]int
	seen := make(map[int64]int, len(ids))
	for i, id := range ids {
		k := seen[id]
		seen[id] = k + 1
		if k == len(out) {
			out = append(out, nil)
		}
		out[k] = append(out[k], i)
	}
	for _, r := range out {
		slices.SortFunc(r, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })
	}
	return out
}

// applied returns a callback that marks ok[i] for the items of round whose
// IDs the statement returned.
func applied(ok []bool, ids []int64, round []int) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		at := make(map[int64]int, len(round))
		for _, i := range round {
			at[ids[i]] = i
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ok[at[id]] = true
		}
		return rows.Err()
	}
}

// The batch statements offer the planner the primary key (id = ANY($1)) to
// find their runs, so that their cost grows with the batch, not with the
// runs in a status; TestQueryPlans holds them to it. Their arrays are
// sorted by ID, which makes the usual plans lock the rows in ID order.

// runStartSQL starts a round of runs. Its status test is wrapped in
// coalesce, which the planner neither serves by an index nor estimates from
// the statistics (it takes it to keep half the rows), so that the primary
// key is the only index it may take and the batch's runs are hashed: in a
// burst, before autovacuum analyzes runs, the statistics show a few
// SCHEDULED runs where there are 100,000, and the plain test made plans
// that read every SCHEDULED run through runs_status_node, or rescanned the
// batch's arrays once per run, for each batch (TestPlansStaleStatistics).
// status is NOT NULL: the coalesce changes no result.
//
// It is RunStart on a hot path, one statement per round: its condition is
// sundial.RunStartParams.Applies and its SET RunStartParams.Apply, which the
// conformance suite holds it to (StartRule).
var runStartSQL = `UPDATE runs
	SET status = 'RUNNING', attempt = u.attempt, started_at = u.started_at, trace_id = u.trace_id,
		deliveries = runs.deliveries + 1, updated_at = u.started_at, ` + sqlrow.StartClears("") + `
	FROM unnest($1::bigint[], $2::bigint[], $3::integer[], $4::bigint[], $5::text[])
		AS u (id, fence, attempt, started_at, trace_id)
	WHERE runs.id = ANY($1) AND runs.id = u.id AND runs.fence = u.fence AND coalesce(runs.status = 'SCHEDULED', false)
	RETURNING runs.id`

// RunStart (see sundial.Store.RunStart) is one statement (one per repeat of
// an ID) and one round trip.
func (s *Store) RunStart(ctx context.Context, starts []sundial.RunStartParams) (_ []bool, err error) {
	defer s.classify(&err)
	ok := make([]bool, len(starts))
	if len(starts) == 0 {
		return ok, nil
	}
	ids := make([]int64, len(starts))
	for i, st := range starts {
		ids[i] = st.ID
	}
	var stmts []stmt
	for _, round := range rounds(ids) {
		var (
			id, fence, started []int64
			attempt            []int32
			trace              []string
		)
		for _, i := range round {
			st := starts[i]
			id = append(id, st.ID)
			fence = append(fence, st.Fence)
			attempt = append(attempt, int32(st.Attempt))
			started = append(started, sqlrow.Micros(st.StartedAt))
			trace = append(trace, cleanText(st.TraceID))
		}
		stmts = append(stmts, stmt{runStartSQL, []any{id, fence, attempt, started, trace}, applied(ok, ids, round)})
	}
	err = retry(ctx, func() error {
		clear(ok)
		return sendBatch(ctx, s.pool, batchOf(stmts))
	})
	if err != nil {
		return nil, fmt.Errorf("start runs: %w", err)
	}
	return ok, nil
}

// finishEdges are the status changes RunFinish may make, from an active
// status to an outcome (sundial.FinishFrom), as an SQL list of (from, to)
// pairs.
var finishEdges = func() string {
	var pairs []string
	for _, to := range sundial.RunStatuses() {
		for _, from := range sundial.FinishFrom(to) {
			pairs = append(pairs, fmt.Sprintf("('%s', '%s')", from, to))
		}
	}
	return "(" + strings.Join(pairs, ", ") + ")"
}()

// runFinishSQL applies one round of outcomes and records an attempt for
// each that ends a delivery's call. It is RunFinish on a hot path, one
// statement per round: sundial.RunFinishParams.Apply (its condition
// RunFinishParams.Applies, its attempt the one Apply returns) and Task.End, in
// SQL, which the conformance suite holds it to (FinishRule). The CTE prev finds the runs by primary
// key, as RunStart does, and locks them in ID order before the UPDATE (FOR
// NO KEY UPDATE, the lock the UPDATE takes): the status and node it returns
// (was, node) are the ones the UPDATE replaces, read again under the lock
// if another transaction changed the run since the statement began (READ
// COMMITTED). An outcome of a RUNNING run ends a delivery, recorded as
// attempt number runs.deliveries with the outcome's status, node and times
// (not the run's: a retry sends the run back to SCHEDULED, held by no node,
// unfinished): on the run (attempt_on_run) when the outcome ends it for
// good (RunFinishParams.AttemptOnRun: a final status, no retry), in a row
// of run_attempts otherwise; one of a WAITING_CALLBACK run (its callback)
// records nothing. The statement returns the IDs of the runs it changed.
//
// The arrays $10 (retry) and $11 (due_at) are NULL for a round that sets
// neither, as most do: unnest pads a NULL array with NULLs, which change
// nothing (no retry, due_at kept), so the common batch binds and sends no
// more than it did before retries existed.
//
// runFinishCompleteSQL, for a round where some outcome also ends its task
// ($12, CompleteTask, NULL for none), updates the tasks of the applied
// outcomes as well; RunFinish locks those tasks first, so that this
// statement's task writes keep the lock order (tasks, then runs).
var runFinishSQL, runFinishCompleteSQL = finishSQL(false), finishSQL(true)

// finalStatuses are the final statuses (sundial.RunStatus.Final), as an SQL
// list: an outcome of a RUNNING run in one of them, with no retry, keeps
// the delivery's attempt on the run (sundial.RunFinishParams.AttemptOnRun).
var finalStatuses = sqlrow.Statuses(sundial.RunStatus.Final)

func finishSQL(complete bool) string {
	q := `WITH prev AS (
		SELECT runs.id, runs.task_id, runs.status AS was, runs.node_id AS node, u.status, u.started_at,
			u.finished_at, u.http_status, u.response_body, u.error, u.updated_at, u.retry, u.due_at, u.complete
		FROM runs, unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::integer[],
			$7::bytea[], $8::text[], $9::bigint[], $10::boolean[], $11::bigint[], $12::text[])
			AS u (id, fence, status, started_at, finished_at, http_status, response_body, error, updated_at,
				retry, due_at, complete)
		WHERE runs.id = ANY($1) AND runs.id = u.id AND runs.fence = u.fence
			AND (runs.status, u.status) IN ` + finishEdges + `
		ORDER BY runs.id
		FOR NO KEY UPDATE OF runs
	), done AS (
		UPDATE runs
		SET status = CASE WHEN p.retry THEN 'SCHEDULED' ELSE p.status END,
			node_id = CASE WHEN p.retry THEN '' ELSE runs.node_id END,
			due_at = COALESCE(p.due_at, runs.due_at),
			started_at = COALESCE(p.started_at, runs.started_at),
			finished_at = CASE WHEN p.retry THEN NULL ELSE p.finished_at END,
			http_status = p.http_status, response_body = p.response_body, error = p.error, updated_at = p.updated_at,
			attempt_on_run = p.was = 'RUNNING' AND p.retry IS NOT TRUE AND p.status IN ` + finalStatuses + `
		FROM prev AS p
		WHERE runs.id = p.id
		RETURNING runs.id, runs.task_id, p.was, p.node, p.status, runs.deliveries, runs.started_at,
			COALESCE(p.finished_at, p.updated_at) AS ended, p.http_status, p.error, p.response_body,
			p.complete, p.updated_at, runs.attempt_on_run AS on_run
	), attempts AS (
		INSERT INTO run_attempts (run_id, delivery, node_id, status, http_status, error, response_body,
			started_at, finished_at)
		SELECT id, deliveries, node, status, http_status, error, response_body, started_at, ended
		FROM done WHERE was = 'RUNNING' AND NOT on_run
	)`
	if complete {
		// A task ended by two outcomes of one round takes the first's.
		q += `, completed AS (
		UPDATE tasks SET status = d.complete, version = version + 1, next_fire_at = NULL, updated_at = d.updated_at
		FROM (SELECT DISTINCT ON (task_id) task_id, complete, updated_at FROM done
			WHERE complete IS NOT NULL ORDER BY task_id, id) AS d
		WHERE tasks.id = d.task_id AND tasks.status = 'ENABLED'
	)`
	}
	return q + `
	SELECT id FROM done`
}

// RunFinish (see sundial.Store.RunFinish) is one statement (one per repeat
// of an ID) and one round trip, which records the attempts too
// (runFinishSQL). An outcome no active run may reach refuses the whole
// batch (sundial.RunFinishParams.Check). A batch with CompleteTask first
// locks those tasks, in ID order.
func (s *Store) RunFinish(ctx context.Context, finishes []sundial.RunFinishParams) (_ []bool, err error) {
	defer s.classify(&err)
	ok := make([]bool, len(finishes))
	if len(finishes) == 0 {
		return ok, nil
	}
	ids := make([]int64, len(finishes))
	var completing []int64 // the runs whose tasks end with them
	for i, f := range finishes {
		if err := f.Check(); err != nil {
			return nil, err
		}
		if f.CompleteTask != "" {
			completing = append(completing, f.ID)
		}
		ids[i] = f.ID
	}
	now := sqlrow.Micros(s.clock())
	var stmts []stmt
	if len(completing) > 0 {
		slices.Sort(completing)
		stmts = append(stmts, stmt{taskEndLockSQL, []any{completing}, nil})
	}
	for _, round := range rounds(ids) {
		var (
			id, fence, updated []int64
			status, errText    []string
			started, finished  []*int64
			httpStatus         []int32
			body               [][]byte
			// Left nil (NULL) unless an outcome of the round sets them.
			again    []bool
			due      []*int64
			complete []*string
		)
		for k, i := range round {
			f := finishes[i]
			var st, fin *int64
			if !f.StartedAt.IsZero() {
				st = nullMicros(&f.StartedAt)
			}
			upd := now
			if !f.FinishedAt.IsZero() {
				fin = nullMicros(&f.FinishedAt)
				upd = *fin
			}
			id = append(id, f.ID)
			fence = append(fence, f.Fence)
			status = append(status, string(f.Status))
			started = append(started, st)
			finished = append(finished, fin)
			httpStatus = append(httpStatus, int32(f.HTTPStatus))
			body = append(body, []byte(sundial.CutResponseBody(f.ResponseBody)))
			errText = append(errText, cleanText(f.Error))
			updated = append(updated, upd)
			if f.Retry {
				if again == nil {
					again = make([]bool, len(round))
				}
				again[k] = true
			}
			if (f.Retry || f.Status == sundial.RunWaitingCallback) && !f.DueAt.IsZero() {
				if due == nil {
					due = make([]*int64, len(round))
				}
				due[k] = nullMicros(&f.DueAt)
			}
			if f.CompleteTask != "" {
				if complete == nil {
					complete = make([]*string, len(round))
				}
				c := string(f.CompleteTask)
				complete[k] = &c
			}
		}
		q := runFinishSQL
		if complete != nil {
			q = runFinishCompleteSQL
		}
		stmts = append(stmts, stmt{q,
			[]any{id, fence, status, started, finished, httpStatus, body, errText, updated, again, due, complete},
			applied(ok, ids, round)})
	}
	err = retry(ctx, func() error {
		clear(ok)
		return sendBatch(ctx, s.pool, batchOf(stmts))
	})
	if err != nil {
		return nil, fmt.Errorf("finish runs: %w", err)
	}
	return ok, nil
}

// taskEndLockSQL locks, in ID order, the tasks of the runs $1 whose
// outcomes end them.
const taskEndLockSQL = `SELECT id FROM tasks
	WHERE id = ANY (ARRAY(SELECT task_id FROM runs WHERE id = ANY($1)))
	ORDER BY id FOR UPDATE`

// completeTaskSQL ends task $3 with status $1 at $2 if it is still
// ENABLED: the end of a one-off task, with its run's. The caller holds the
// task's lock, taken before the run's.
const completeTaskSQL = `UPDATE tasks SET status = $1, version = version + 1, next_fire_at = NULL, updated_at = $2
	WHERE id = $3 AND status = 'ENABLED'`

// RunCancel (see sundial.Store.RunCancel, sundial.Cancel) is one transaction
// and three round trips: BEGIN with the locks of the run's task (its one-off
// end may come with the run's) and of the run, then the writes, then COMMIT.
func (s *Store) RunCancel(ctx context.Context, id int64, now time.Time) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	var (
		task *sundial.Task
		r    *sundial.Run
	)
	b := beginBatch()
	b.Queue(runTaskLockSQL, id).QueryRow(func(row pgx.Row) error {
		var err error
		task, err = sqlrow.ScanTask(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlrow.NotFound("", "run %d not found", id)
		}
		return err
	})
	b.Queue(`SELECT `+sqlrow.RunCols+` FROM runs WHERE id = $1 FOR UPDATE`, id).QueryRow(func(row pgx.Row) error {
		var err error
		r, err = scanRun(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlrow.NotFound("", "run %d not found", id)
		}
		return err
	})
	err = s.inTx(ctx, b, func(tx pgx.Tx) error {
		c, err := sundial.Cancel(task, r, now)
		if err != nil {
			return err
		}
		return sendBatch(ctx, tx, changesBatch(c))
	})
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "cancel run %d", id)
	}
	return r, nil
}

// RunRelease implements sundial.Store.RunRelease; see releaseWrite.
func (s *Store) RunRelease(ctx context.Context, nodeID, reason string, now time.Time) (err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	reasons := map[string]string{nodeID: reason}
	err = retry(ctx, func() error {
		var runs []*sundial.Run
		b := beginBatch()
		queueReleaseRead(b, reasons, &runs)
		return s.inTx(ctx, b, func(tx pgx.Tx) error { return releaseWrite(ctx, tx, runs, reasons, now) })
	})
	return sqlrow.Wrap(badTextOr(err), "release runs of node %s", nodeID)
}

// releases reports whether a release may change a run in status st
// (sundial.ReleaseOf): SCHEDULED and RUNNING.
func releases(st sundial.RunStatus) bool {
	return st == sundial.RunScheduled || st == sundial.RunRunning
}

var (
	// releaseLockSQL locks the tasks of the runs of the nodes $1 that a
	// release may change, in ID order.
	releaseLockSQL = `SELECT id FROM tasks WHERE id = ANY (ARRAY(
			SELECT DISTINCT task_id FROM runs WHERE status IN ` + sqlrow.Statuses(releases) + ` AND node_id = ANY($1)))
		ORDER BY id FOR UPDATE`
	// releaseRunsSQL locks and reads those runs, in ID order.
	releaseRunsSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE status IN ` + sqlrow.Statuses(releases) + ` AND node_id = ANY($1)
		ORDER BY id FOR UPDATE`
)

// A release gives up the runs of the nodes of reasons (node ID -> reason),
// as sundial.Release decides: planned fires are deleted and their tasks
// rewound, runs delivered before handed back to no node, manual ones
// skipped (MISFIRE), running ones interrupted, each with an INTERRUPTED
// attempt of its node. QUEUED runs stay: the queue is the task's, drained
// by whichever node frees a slot (RunQueuedNext). The tasks of the runs are
// locked first, in ID order, so that no admission or planning of them is
// under way, then the runs (queueReleaseRead); releaseWrite writes what
// the rule makes of them.

// queueReleaseRead queues onto b the locks and the read of a release, the
// runs read into *runs.
func queueReleaseRead(b *pgx.Batch, reasons map[string]string, runs *[]*sundial.Run) {
	nodes := slices.Sorted(maps.Keys(reasons))
	b.Queue(releaseLockSQL, nodes)
	b.Queue(releaseRunsSQL, nodes).Query(lockedRuns(runs))
}

// releaseWrite writes, inside tx, what sundial.Release makes of runs, read
// by queueReleaseRead for reasons.
func releaseWrite(ctx context.Context, tx pgx.Tx, runs []*sundial.Run, reasons map[string]string, now time.Time) error {
	if len(runs) == 0 {
		return nil
	}
	byNode := map[string][]*sundial.Run{}
	for _, r := range runs {
		byNode[r.NodeID] = append(byNode[r.NodeID], r)
	}
	var all sundial.RunChanges
	for _, node := range slices.Sorted(maps.Keys(reasons)) {
		all.Add(sundial.Release(byNode[node], cleanText(reasons[node]), now))
	}
	return sendBatch(ctx, tx, changesBatch(all))
}

// runPurgeSQL collects the IDs first (ARRAY(...) is evaluated once), so
// the DELETE finds its rows by primary key.
var runPurgeSQL = `DELETE FROM runs WHERE id = ANY (ARRAY(
	SELECT id FROM runs WHERE created_at < $1 AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Final) + `
	ORDER BY created_at, id LIMIT $2
	FOR UPDATE SKIP LOCKED))`

// RunPurge deletes up to limit final runs created before before, oldest
// first. Purgers on several nodes take disjoint runs.
func (s *Store) RunPurge(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return 0, nil
	}
	var ct pgconn.CommandTag
	err = retry(ctx, func() error {
		var err error
		ct, err = s.pool.Exec(ctx, runPurgeSQL, sqlrow.Micros(before), limit)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge runs: %w", err)
	}
	return int(ct.RowsAffected()), nil
}
