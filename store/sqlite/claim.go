package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// Claims. SQLite has one writer, so a claim inside a write transaction is
// atomic by itself: concurrent claimers queue for the writer and each sees
// the runs the previous one took. That is why the claims (RunClaimDue,
// RunClaim, RunRedeliver) are SQLite's own, with no row locks
// or SKIP LOCKED as on the other databases.

// Unclaimed runs, most urgent first: by due time (a fresh run is due at its
// scheduled time, a retry after its backoff), then priority (the task's,
// copied onto the run) among runs due at the same instant. runs_unclaimed
// is in that order, so a claim is a range scan that stops at its limit
// whatever the backlog or the lookahead: no sort.
var (
	claimProbeSQL = `SELECT 1 FROM runs INDEXED BY runs_unclaimed
		WHERE status = 'SCHEDULED' AND node_id = '' AND due_at <= ? LIMIT 1`
	// claimDueSQL gives node ?1 the runs due by ?3, up to ?4 of them, at
	// ?2 (its clock), starts those that ClaimStartParams (?5 By, ?6 FreshAfter)
	// selects, and returns them (in no order). It is RunClaimDue on a hot
	// path, one statement: its selection is sundial.Run.Unclaimed, c.starts
	// is sundial.ClaimStartParams.Starts and its SET ClaimStartParams.Claim, which the
	// conformance suite holds it to (ClaimRule).
	claimDueSQL = `UPDATE runs SET node_id = ?1, fence = fence + 1, updated_at = ?2,
			status = CASE WHEN c.starts THEN 'RUNNING' ELSE status END,
			attempt = CASE WHEN c.starts THEN max(attempt, 1) ELSE attempt END,
			started_at = CASE WHEN c.starts THEN max(due_at, ?2) ELSE started_at END,
			trace_id = CASE WHEN c.starts THEN lower(hex(randomblob(16))) ELSE trace_id END,
			deliveries = deliveries + c.starts, ` + sqlrow.StartClearsIf("c.starts") + `
		FROM (SELECT id AS cid, due_at <= ?5 AND (deliveries > 0 OR (start_ahead AND scheduled_at >= ?6)) AS starts
			FROM runs INDEXED BY runs_unclaimed
			WHERE status = 'SCHEDULED' AND node_id = '' AND due_at <= ?3
			ORDER BY due_at, priority DESC, id LIMIT ?4) AS c
		WHERE runs.id = c.cid
		RETURNING ` + sqlrow.RunCols
)

// RunClaimDue claims unowned SCHEDULED runs due by until for nodeID, and
// starts those start selects.
func (s *Store) RunClaimDue(ctx context.Context, nodeID string, until time.Time, limit int,
	start sundial.ClaimStartParams) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil, nil
	}
	// Every node asks many times a second; most often nothing is due. Look
	// on a reader first so that an idle claim does not take the writer.
	var one int
	err = s.r.QueryRowContext(ctx, claimProbeSQL, sqlrow.Micros(until)).Scan(&one)
	if err == sql.ErrNoRows {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("claim due runs for node %s: %w", nodeID, err)
	}
	var (
		runs  []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	err = s.write(ctx, func(tx *sql.Tx) error {
		runs, err = sqlrow.ScanRuns(tx.StmtContext(ctx, s.st.claimDue).QueryContext(ctx,
			nodeID, sqlrow.Micros(s.clock()), sqlrow.Micros(until), limit,
			sqlrow.Micros(start.By), sqlrow.Micros(start.FreshAfter)))
		if err != nil || len(runs) == 0 {
			return err
		}
		// The tasks are read in the claim's transaction: a failure to read
		// them undoes the claim, so no run is left claimed (or started)
		// by a node that never learnt of it.
		tasks, err = tasksOf(ctx, tx, runs)
		return err
	})
	if err != nil {
		return nil, nil, sqlrow.Wrap(err, "claim due runs for node %s", nodeID)
	}
	slices.SortFunc(runs, func(a, b *sundial.Run) int {
		return cmp.Or(a.DueAt.Compare(b.DueAt), cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.ID, b.ID))
	})
	return runs, tasks, nil
}

// RunClaim takes over the given SCHEDULED or QUEUED runs whose fence still
// matches (sundial.RunRef.Claimable).
func (s *Store) RunClaim(ctx context.Context, nodeID string, refs []sundial.RunRef) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if len(refs) == 0 {
		return nil, nil, nil
	}
	var (
		runs  []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	err = s.write(ctx, func(tx *sql.Tx) error {
		found, err := runsByID(ctx, tx, refIDs(refs))
		if err != nil {
			return err
		}
		now := sqlrow.Norm(s.clock())
		var c sundial.RunChanges
		for _, ref := range refs {
			if r := found[ref.ID]; r != nil && ref.Claimable(r) {
				r.ClaimFor(nodeID, now)
				c.Update = append(c.Update, r)
			}
		}
		if len(c.Update) == 0 {
			return nil
		}
		if err := s.apply(ctx, tx, c); err != nil {
			return err
		}
		runs = c.Update
		tasks, err = tasksOf(ctx, tx, runs)
		return err
	})
	if err != nil {
		return nil, nil, sqlrow.Wrap(err, "claim runs for node %s", nodeID)
	}
	return runs, tasks, nil
}

// refIDs returns the IDs refs name.
func refIDs(refs []sundial.RunRef) []int64 {
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	return ids
}

// missedSQL reads the planned fires (sundial.Run.Missable) due before ?1
// that no node holds
// (through runs_unclaimed, in its order) and those a node holds (few:
// claimed a moment before their instant), up to ?2 of each.
const missedSQL = `SELECT * FROM (SELECT ` + sqlrow.RunCols + ` FROM runs INDEXED BY runs_unclaimed
		WHERE status = 'SCHEDULED' AND node_id = '' AND due_at < ?1
			AND deliveries = 0 AND trigger_type = 'SCHEDULE'
		ORDER BY due_at, priority DESC, id LIMIT ?2)
	UNION ALL
	SELECT * FROM (SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE status = 'SCHEDULED' AND node_id <> '' AND due_at < ?1
			AND deliveries = 0 AND trigger_type = 'SCHEDULE'
		ORDER BY due_at, id LIMIT ?2)`

// RunUnplanMissed implements sundial.Store.RunUnplanMissed (sundial.UnplanMissed).
// SQLite's own: one write transaction, which holds every task's lock.
func (s *Store) RunUnplanMissed(ctx context.Context, before time.Time, limit int,
	missed func(*sundial.Run, *sundial.Task) bool) (looked, deleted int, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return 0, 0, nil
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		looked, deleted = 0, 0
		runs, err := sqlrow.ScanRuns(tx.QueryContext(ctx, missedSQL, sqlrow.Micros(before), limit))
		if err != nil || len(runs) == 0 {
			return err
		}
		sqlrow.SortByDue(runs)
		if len(runs) > limit {
			runs = runs[:limit]
		}
		looked = len(runs)
		tasks, err := tasksOf(ctx, tx, runs)
		if err != nil {
			return err
		}
		ids, from := sqlrow.TakenFrom(runs)
		taken, err := sqlrow.ScanTaken(tx.QueryContext(ctx, takenSQL, jsonIDs(ids), sqlrow.Micros(from)))
		if err != nil {
			return err
		}
		c := sundial.UnplanMissed(runs, tasks, before, taken, sqlrow.Norm(s.clock()), missed)
		deleted = len(c.Delete) + len(c.Update)
		return s.apply(ctx, tx, c)
	})
	if err != nil {
		return 0, 0, sqlrow.Wrap(err, "unplan missed fires")
	}
	return looked, deleted, nil
}

// takenSQL reads, of the tasks ?1, the latest fire later than ?2 that a
// sweep of missed fires must not rewind them before (sqlrow.TakenCond).
const takenSQL = `SELECT task_id, MAX(scheduled_at) FROM runs
	WHERE task_id IN (SELECT value FROM json_each(?1)) AND scheduled_at > ?2 AND ` + sqlrow.TakenCond + `
	GROUP BY task_id`

// redeliverSQL reads the oldest INTERRUPTED runs: the refused ones fail,
// and so do not hold back those after them for long.
const redeliverSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs WHERE status = 'INTERRUPTED'
	ORDER BY scheduled_at, id LIMIT ?`

// RunRedeliver (see sundial.Store.RunRedeliver) reads the oldest
// INTERRUPTED runs, up to four times limit (at most 1,000), for
// sundial.Redeliver to decide.
// SQLite's own: decided and written in one write transaction, with no other
// redeliverer to skip.
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
	err = s.write(ctx, func(tx *sql.Tx) error {
		cands, err := sqlrow.ScanRuns(tx.QueryContext(ctx, redeliverSQL, sqlrow.ClampLimit(limit*4)))
		if err != nil || len(cands) == 0 {
			return err
		}
		all, deleted, err := tasksOfDeleted(ctx, tx, cands)
		if err != nil {
			return err
		}
		again, c := sundial.Redeliver(cands, all, deleted, nodeID, maxDeliveries, limit, now)
		if err := s.apply(ctx, tx, c); err != nil {
			return err
		}
		runs, tasks = again, map[int64]*sundial.Task{}
		for _, r := range again {
			tasks[r.TaskID] = all[r.TaskID]
		}
		return nil
	})
	if err != nil {
		return nil, nil, sqlrow.Wrap(err, "redeliver interrupted runs for node %s", nodeID)
	}
	return runs, tasks, nil
}

// RunCheckSend reports whether runs committed ahead may still be sent.
// SQLite's own: the batch's IDs are bound as one JSON array (json_each),
// one statement whatever its size.
func (s *Store) RunCheckSend(ctx context.Context, refs []sundial.RunRef) (_ []sundial.SendCheck, err error) {
	defer s.classify(&err)
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	out := make([]sundial.SendCheck, len(refs))
	rows, err := s.r.QueryContext(ctx, `SELECT `+sqlrow.SendCheckCols+` FROM runs
		WHERE id IN (SELECT value FROM json_each(?))`, jsonIDs(ids))
	if err == nil {
		err = sqlrow.SendChecks(rows, refs, out)
	}
	if err != nil {
		return nil, fmt.Errorf("check runs to send: %w", err)
	}
	return out, nil
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// tasksOfSQL reads the tasks whose IDs are in the JSON array ?.
const tasksOfSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks WHERE id IN (SELECT value FROM json_each(?))`

// tasksOf loads the tasks of runs by ID, deleted ones too.
func tasksOf(ctx context.Context, q querier, runs []*sundial.Run) (map[int64]*sundial.Task, error) {
	taskSet := map[int64]bool{}
	taskIDs := make([]int64, 0, len(runs))
	for _, r := range runs {
		if !taskSet[r.TaskID] {
			taskSet[r.TaskID] = true
			taskIDs = append(taskIDs, r.TaskID)
		}
	}
	tasks := make(map[int64]*sundial.Task, len(taskIDs))
	if len(taskIDs) == 0 {
		return tasks, nil
	}
	rows, err := q.QueryContext(ctx, tasksOfSQL, jsonIDs(taskIDs))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		t, err := sqlrow.ScanTask(rows)
		if err != nil {
			return nil, err
		}
		tasks[t.ID] = t
	}
	return tasks, rows.Err()
}

// jsonIDs is ids as a JSON array, for json_each: one short statement
// whatever their number, where an IN list is parsed anew for each length.
func jsonIDs(ids []int64) string {
	b := make([]byte, 0, 1+8*len(ids))
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// placeholders returns n parameter markers: "?, ?, ...".
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
