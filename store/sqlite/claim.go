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
// the runs the previous one took.

// Unclaimed runs, most urgent first: by due time (a fresh run is due at its
// scheduled time, a retry after its backoff), then priority (the task's,
// copied onto the run) among runs due at the same instant. runs_unclaimed
// is in that order, so a claim is a range scan that stops at its limit
// whatever the backlog or the lookahead: no sort.
var (
	claimProbeSQL = `SELECT 1 FROM runs INDEXED BY runs_unclaimed
		WHERE status = 'SCHEDULED' AND node_id = '' AND due_at <= ? LIMIT 1`
	// claimDueSQL gives node ?1 the runs due by ?3, up to ?4 of them, at
	// ?2 (its clock), starts those that ClaimStart (?5 By, ?6 FreshAfter)
	// selects, and returns them (in no order). c.starts is that selection.
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
	start sundial.ClaimStart) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	if limit <= 0 {
		return nil, nil, nil
	}
	// Every node asks many times a second; most often nothing is due. Look
	// on a reader first so that an idle claim does not take the writer.
	var one int
	err := s.r.QueryRowContext(ctx, claimProbeSQL, sqlrow.Micros(until)).Scan(&one)
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
// matches.
func (s *Store) RunClaim(ctx context.Context, nodeID string, refs []sundial.RunRef) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	var (
		runs  []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	err := s.write(ctx, func(tx *sql.Tx) error {
		var ids []int64
		for _, ref := range refs {
			res, err := tx.ExecContext(ctx, `UPDATE runs SET node_id = ?, fence = fence + 1, updated_at = ?
				WHERE id = ? AND fence = ? AND status IN ('SCHEDULED', 'QUEUED')`,
				nodeID, sqlrow.Micros(s.clock()), ref.ID, ref.Fence)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				ids = append(ids, ref.ID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		var err error
		runs, tasks, err = runsAndTasks(ctx, tx, ids)
		return err
	})
	if err != nil {
		return nil, nil, sqlrow.Wrap(err, "claim runs for node %s", nodeID)
	}
	return runs, tasks, nil
}

// RunUnplan deletes SCHEDULED runs held by nodeID and rewinds their tasks;
// runs delivered before are handed back to no node instead.
func (s *Store) RunUnplan(ctx context.Context, nodeID string, refs []sundial.RunRef) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		earliest := map[int64]int64{}
		for _, ref := range refs {
			var task, at int64
			err := tx.QueryRowContext(ctx, `DELETE FROM runs
				WHERE id = ? AND fence = ? AND node_id = ? AND status = 'SCHEDULED' AND trigger_type <> 'MANUAL'
					AND deliveries = 0
				RETURNING task_id, scheduled_at`, ref.ID, ref.Fence, nodeID).Scan(&task, &at)
			if err == sql.ErrNoRows {
				// A retry or a redelivery is no planner's to make again.
				if _, err := tx.ExecContext(ctx, `UPDATE runs SET node_id = '', updated_at = ?
					WHERE id = ? AND fence = ? AND node_id = ? AND status = 'SCHEDULED' AND deliveries > 0`,
					sqlrow.Micros(s.clock()), ref.ID, ref.Fence, nodeID); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			if cur, ok := earliest[task]; !ok || at < cur {
				earliest[task] = at
			}
		}
		for task, at := range earliest {
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET next_fire_at = min(COALESCE(next_fire_at, ?1), ?1)
				WHERE id = ?2`, at, task); err != nil {
				return err
			}
		}
		return nil
	})
	return sqlrow.Wrap(err, "unplan runs of node %s", nodeID)
}

// missedSQL reads the planned fires due before ?1 that no node holds
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

// RunUnplanMissed deletes the planned fires that missed reports too late
// to start, whoever holds them, and rewinds their tasks.
func (s *Store) RunUnplanMissed(ctx context.Context, before time.Time, limit int,
	missed func(*sundial.Run, *sundial.Task) bool) (looked, deleted int, err error) {
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
		earliest := map[int64]int64{}
		for _, r := range runs {
			if !missed(r, tasks[r.TaskID]) {
				continue
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, r.ID); err != nil {
				return err
			}
			deleted++
			at := sqlrow.Micros(r.ScheduledTime)
			if cur, ok := earliest[r.TaskID]; !ok || at < cur {
				earliest[r.TaskID] = at
			}
		}
		for task, at := range earliest {
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET next_fire_at = min(COALESCE(next_fire_at, ?1), ?1)
				WHERE id = ?2`, at, task); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, sqlrow.Wrap(err, "unplan missed fires")
	}
	return looked, deleted, nil
}

// RunRedeliver schedules INTERRUPTED runs again for nodeID, or fails those
// that cannot be delivered again.
func (s *Store) RunRedeliver(ctx context.Context, nodeID string, maxDeliveries, limit int, now time.Time) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	if limit <= 0 {
		return nil, nil, nil
	}
	var (
		runs  []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT r.id, r.task_id, r.trigger_type, r.deliveries, r.error, t.deleted,
				r.cancel_requested FROM runs r
			JOIN tasks t ON t.id = r.task_id
			WHERE r.status = 'INTERRUPTED' ORDER BY r.scheduled_at, r.id LIMIT ?`, sqlrow.ClampLimit(limit*4))
		if err != nil {
			return err
		}
		type cand struct {
			id, task, deliveries int64
			trigger, reason      string
			deleted              bool
			canceled             bool
		}
		var cands []cand
		for rows.Next() {
			var c cand
			if err := rows.Scan(&c.id, &c.task, &c.trigger, &c.deliveries, &c.reason, &c.deleted, &c.canceled); err != nil {
				rows.Close()
				return err
			}
			cands = append(cands, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		var ids []int64
		for _, c := range cands {
			var why string
			switch {
			case c.deleted:
				why = "its task was deleted"
			case c.canceled:
				why = "its cancellation was requested"
			case c.deliveries >= int64(maxDeliveries):
				why = fmt.Sprintf("no delivery left (%d of %d made)", c.deliveries, maxDeliveries)
			}
			if why != "" {
				if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'FAILED', error = ?1,
					finished_at = ?2, updated_at = ?2 WHERE id = ?3`,
					strings.TrimPrefix(c.reason+"; "+why, "; "), sqlrow.Micros(now), c.id); err != nil {
					return err
				}
				// A one-off task's only fire has failed for good.
				if c.trigger == string(sundial.TriggerSchedule) {
					if _, err := tx.ExecContext(ctx, failOneOffSQL, sqlrow.Micros(now), c.task); err != nil {
						return err
					}
				}
				continue
			}
			if len(ids) == limit {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'SCHEDULED', node_id = ?1,
				fence = fence + 1, finished_at = NULL, updated_at = ?2, due_at = ?2 WHERE id = ?3`,
				nodeID, sqlrow.Micros(now), c.id); err != nil {
				return err
			}
			ids = append(ids, c.id)
		}
		if len(ids) == 0 {
			return nil
		}
		runs, tasks, err = runsAndTasks(ctx, tx, ids)
		return err
	})
	if err != nil {
		return nil, nil, sqlrow.Wrap(err, "redeliver interrupted runs for node %s", nodeID)
	}
	return runs, tasks, nil
}

// RunFindStuck returns SCHEDULED runs due before dueBefore held by nodeID,
// by no node, or by a node that is not ALIVE.
func (s *Store) RunFindStuck(ctx context.Context, nodeID string, dueBefore time.Time, limit int) ([]*sundial.Run, error) {
	runs, err := sqlrow.ScanRuns(s.r.QueryContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs
		WHERE status = 'SCHEDULED' AND due_at < ?
		AND (node_id = ? OR node_id = '' OR node_id NOT IN (SELECT id FROM nodes WHERE state = 'ALIVE'))
		ORDER BY due_at, id LIMIT ?`, sqlrow.Micros(dueBefore), nodeID, sqlrow.ClampLimit(limit)))
	if err != nil {
		return nil, fmt.Errorf("find stuck runs: %w", err)
	}
	return runs, nil
}

// RunCancelRequested returns the active runs of nodeID asked to cancel.
func (s *Store) RunCancelRequested(ctx context.Context, nodeID string) ([]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM runs
		WHERE status IN ('RUNNING', 'WAITING_CALLBACK') AND node_id = ? AND cancel_requested = 1`, nodeID)
	if err != nil {
		return nil, fmt.Errorf("find runs to cancel: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("find runs to cancel: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// RunCheckSend reports whether runs committed ahead may still be sent.
func (s *Store) RunCheckSend(ctx context.Context, refs []sundial.RunRef) ([]sundial.SendCheck, error) {
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	out := make([]sundial.SendCheck, len(refs))
	rows, err := s.r.QueryContext(ctx, `SELECT id, fence, status, cancel_requested FROM runs
		WHERE id IN (SELECT value FROM json_each(?))`, jsonIDs(ids))
	if err == nil {
		err = sqlrow.SendChecks(rows, refs, out)
	}
	if err != nil {
		return nil, fmt.Errorf("check runs to send: %w", err)
	}
	return out, nil
}

// runsAndTasks loads runs by ID, in the given order, and their tasks.
func runsAndTasks(ctx context.Context, tx *sql.Tx, ids []int64) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	got, err := sqlrow.ScanRuns(tx.QueryContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs
		WHERE id IN (SELECT value FROM json_each(?))`, jsonIDs(ids)))
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[int64]*sundial.Run, len(got))
	for _, r := range got {
		byID[r.ID] = r
	}
	runs := make([]*sundial.Run, 0, len(ids))
	for _, id := range ids {
		if r := byID[id]; r != nil {
			runs = append(runs, r)
		}
	}
	tasks, err := tasksOf(ctx, tx, runs)
	return runs, tasks, err
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
