package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// RunRelease gives up nodeID's runs on shutdown.
func (s *Store) RunRelease(ctx context.Context, nodeID, reason string, now time.Time) (err error) {
	defer s.classify(&err)
	err = s.write(ctx, func(tx *sql.Tx) error { return release(ctx, tx, nodeID, reason, now) })
	return sqlrow.Wrap(err, "release runs of node %s", nodeID)
}

// release gives up nodeID's runs inside tx:
//   - planned SCHEDULED runs never delivered are deleted and their tasks'
//     next_fire_at rewound to the earliest of them, so that a planner plans
//     them again;
//   - SCHEDULED runs delivered before (waiting for a retry, or redelivered)
//     are handed back to no node as they are, for any node to claim: no
//     planner would make them again;
//   - MANUAL SCHEDULED runs never delivered, which no planner would make
//     again, are recorded as SKIPPED (MISFIRE) with the reason;
//   - RUNNING runs become INTERRUPTED with the reason and a new fence, so a
//     late write from the old owner is refused, each recorded as an
//     INTERRUPTED attempt of nodeID (interrupt).
//
// QUEUED runs stay: the queue is the task's, drained by whichever node frees
// a slot (RunQueuedNext).
//
// The tasks to rewind are locked first, in ID order, then their runs: the
// lock order of PlanDue and RunAdmit. A run admitted or started meanwhile is
// no longer SCHEDULED when its lock is granted, and stays.
func release(ctx context.Context, tx *sql.Tx, nodeID, reason string, now time.Time) error {
	at := sqlrow.Micros(now)
	reason = text(reason)
	taskIDs, err := int64s(tx.QueryContext(ctx, `SELECT DISTINCT task_id FROM runs
		WHERE status = 'SCHEDULED' AND node_id = ? AND trigger_type <> 'MANUAL' AND deliveries = 0
		ORDER BY task_id`, nodeID))
	if err != nil {
		return err
	}
	for _, part := range chunks(len(taskIDs), nil, nil) {
		args := make([]any, len(part))
		for j, i := range part {
			args[j] = taskIDs[i]
		}
		if _, err := int64s(tx.QueryContext(ctx, `SELECT id FROM tasks
			WHERE id IN (`+placeholders(len(args))+`) ORDER BY id FOR UPDATE`, args...)); err != nil {
			return err
		}
	}

	// The runs to delete, read under their locks.
	rows, err := tx.QueryContext(ctx, `SELECT id, task_id, scheduled_at FROM runs
		WHERE status = 'SCHEDULED' AND node_id = ? AND trigger_type <> 'MANUAL' AND deliveries = 0 FOR UPDATE`, nodeID)
	if err != nil {
		return err
	}
	var (
		ids    []int64
		rewind = map[int64]int64{} // task ID -> earliest scheduled_at
		order  []int64
	)
	for rows.Next() {
		var id, task, sched int64
		if err := rows.Scan(&id, &task, &sched); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
		if cur, seen := rewind[task]; !seen {
			rewind[task] = sched
			order = append(order, task)
		} else if sched < cur {
			rewind[task] = sched
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, part := range chunks(len(ids), nil, nil) {
		args := make([]any, len(part))
		for j, i := range part {
			args[j] = ids[i]
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id IN (`+placeholders(len(args))+`)`, args...); err != nil {
			return err
		}
	}
	for _, part := range chunks(len(order), nil, nil) {
		args := make([]any, 0, 2*len(part))
		for _, i := range part {
			args = append(args, order[i], rewind[order[i]])
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+joinValues("tasks", "t", []string{"id", "rewind_at"}, len(part))+`
			SET t.next_fire_at = LEAST(COALESCE(t.next_fire_at, v.rewind_at), v.rewind_at)`, args...); err != nil {
			return err
		}
	}

	// What stays of the node's SCHEDULED runs: those delivered before go
	// back to no node, then the manual ones are skipped.
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET node_id = '', updated_at = ?
		WHERE status = 'SCHEDULED' AND node_id = ? AND deliveries > 0`, at, nodeID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs
		SET status = 'SKIPPED', skip_reason = 'MISFIRE', missed_count = 1, error = ?,
			finished_at = ?, updated_at = ?
		WHERE status = 'SCHEDULED' AND node_id = ?`, reason, at, at, nodeID); err != nil {
		return err
	}
	return interrupt(ctx, tx, nodeID, reason, at)
}

// interruptLockSQL locks nodeID's RUNNING runs: a range of runs_claim.
const interruptLockSQL = `SELECT id, deliveries, started_at FROM runs
	WHERE status = 'RUNNING' AND node_id = ? FOR UPDATE`

// interrupt makes nodeID's RUNNING runs INTERRUPTED with the reason,
// finished at at, and a new fence, each recorded as an INTERRUPTED attempt
// of nodeID. The runs are locked first and then changed by primary key, so
// that the attempts are those of exactly the runs interrupted: a run that
// starts on nodeID meanwhile is neither.
func interrupt(ctx context.Context, tx *sql.Tx, nodeID, reason string, at int64) error {
	rows, err := tx.QueryContext(ctx, interruptLockSQL, nodeID)
	if err != nil {
		return err
	}
	type running struct {
		id         int64
		deliveries int
		started    sql.NullInt64
	}
	var runs []running
	for rows.Next() {
		var r running
		if err := rows.Scan(&r.id, &r.deliveries, &r.started); err != nil {
			rows.Close()
			return err
		}
		runs = append(runs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	finished := sql.NullInt64{Int64: at, Valid: true}
	for _, part := range chunks(len(runs), func(int) int { return 2 * len(reason) }, nil) {
		ids := make([]any, 0, len(part))
		atts := make([]any, 0, 9*len(part))
		for _, i := range part {
			r := runs[i]
			ids = append(ids, r.id)
			atts = attemptArgs(atts, r.id, r.deliveries, nodeID, sundial.RunInterrupted, 0, reason, []byte{},
				r.started, finished)
		}
		if _, err := tx.ExecContext(ctx, attemptInsertSQL(len(part)), atts...); err != nil {
			return err
		}
		args := append([]any{reason, at, at}, ids...)
		if err := applyBatch(ctx, tx, `UPDATE runs
			SET status = 'INTERRUPTED', error = ?, finished_at = ?, updated_at = ?, fence = fence + 1
			WHERE id IN (`+placeholders(len(ids))+`)`, len(ids), args); err != nil {
			return err
		}
	}
	return nil
}

// int64s reads a one-column result of integers.
func int64s(rows *sql.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
