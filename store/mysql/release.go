package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// RunRelease implements sundial.Store.RunRelease; see release.
// MySQL's own: it locks the runs' tasks, then the runs (release).
func (s *Store) RunRelease(ctx context.Context, nodeID, reason string, now time.Time) (err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	err = s.write(ctx, func(tx *sql.Tx) error { return release(ctx, tx, nodeID, reason, now) })
	return sqlrow.Wrap(err, "release runs of node %s", nodeID)
}

// releaseTasksSQL finds the tasks of the runs a node holds that a release
// may change (SCHEDULED and RUNNING: sundial.ReleaseOf), to lock them
// first.
var releaseTasksSQL = `SELECT DISTINCT task_id FROM runs
	WHERE status IN ` + sqlrow.Statuses(releases) + ` AND node_id = ? ORDER BY task_id`

// releaseRunsSQL locks and reads those runs.
var releaseRunsSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
	WHERE status IN ` + sqlrow.Statuses(releases) + ` AND node_id = ? ORDER BY id FOR UPDATE`

// releases reports whether a release may change a run in status s.
func releases(s sundial.RunStatus) bool { return s == sundial.RunScheduled || s == sundial.RunRunning }

// release gives up nodeID's runs inside tx, as sundial.Release decides:
// planned fires are deleted and their tasks rewound, runs delivered before
// handed back to no node, manual ones skipped (MISFIRE), running ones
// interrupted, each with an INTERRUPTED attempt of nodeID. QUEUED runs
// stay: the queue is the task's, drained by whichever node frees a slot
// (RunQueuedNext).
//
// The tasks of the runs are locked first, in ID order, then the runs: the
// lock order of PlanDue and RunAdmit. A run admitted or started meanwhile is
// read as it is then.
func release(ctx context.Context, tx *sql.Tx, nodeID, reason string, now time.Time) error {
	taskIDs, err := int64s(tx.QueryContext(ctx, releaseTasksSQL, nodeID))
	if err != nil {
		return err
	}
	if err := lockTaskRows(ctx, tx, taskIDs); err != nil {
		return err
	}
	runs, err := sqlrow.ScanRuns(tx.QueryContext(ctx, releaseRunsSQL, nodeID))
	if err != nil {
		return err
	}
	return apply(ctx, tx, sundial.Release(runs, text(reason), now))
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
