package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// The admission reads take the run's ID as $1 and find its task and
// scheduled time by primary key, so that all of them go in the round trip
// that begins the transaction, after the statement that locks the task.
const (
	admitTask = `(SELECT task_id FROM runs WHERE id = $1)`
	admitAt   = `(SELECT scheduled_at FROM runs WHERE id = $1)`
)

var (
	// admitLockSQL locks the run's live task: admissions of one task wait
	// for each other here, on every node.
	admitLockSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks WHERE id = ` + admitTask + ` AND NOT deleted FOR UPDATE`

	admitRunSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE id = $1 AND fence = $2 AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Waiting)

	// Pending (sundial.RunStatus.Pending): every other active or QUEUED
	// run of the task, and the SCHEDULED ones before this run by
	// (scheduled_at, id).
	admitPendingSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ` + admitTask + ` AND status IN ` + sqlrow.Statuses(sundial.RunStatus.Pending) + ` AND id <> $1
		UNION ALL
		SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ` + admitTask + ` AND status = 'SCHEDULED' AND (scheduled_at, id) < (` + admitAt + `, $1)
		ORDER BY scheduled_at, id`
)

// admitLastFrom finds LastEffective: the latest run (by scheduled_at, id)
// other than this one whose status is effective
// (sundial.RunStatus.Effective). It probes the index once per effective
// status instead of walking back over the SCHEDULED runs planned ahead and
// the history of skips.
var admitLastFrom = `FROM (VALUES ` + effectiveValues() + `) AS s (status)
	CROSS JOIN LATERAL (
		SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE runs.task_id = ` + admitTask + ` AND runs.status = s.status AND runs.id <> $1
		ORDER BY runs.scheduled_at DESC, runs.id DESC
		LIMIT 1
	) AS l
	ORDER BY l.scheduled_at DESC, l.id DESC
	LIMIT 1`

// effectiveValues renders the effective statuses as the rows of a VALUES
// list: ('A'), ('B').
func effectiveValues() string {
	var rows []string
	for _, st := range sundial.RunStatuses() {
		if st.Effective() {
			rows = append(rows, "('"+string(st)+"')")
		}
	}
	return strings.Join(rows, ", ")
}

var (
	admitLastSQL = `SELECT l.* ` + admitLastFrom

	// SkipsSinceLast (sundial.AdmitState): the first SKIPPED runs, but
	// for CALENDAR, after LastEffective by
	// (scheduled_at, id), or from the first if there is none. The bounds
	// are scalar subqueries, evaluated once, so the index scan starts there.
	admitSkipsSQL = `WITH last AS (SELECT l.scheduled_at, l.id ` + admitLastFrom + `)
		SELECT ` + sqlrow.RunCols + ` FROM runs
		WHERE task_id = ` + admitTask + ` AND status = 'SKIPPED' AND skip_reason <> 'CALENDAR'
			AND (scheduled_at, id) > (COALESCE((SELECT scheduled_at FROM last), -9223372036854775808),
				COALESCE((SELECT id FROM last), 0))
		ORDER BY scheduled_at, id
		LIMIT $2`
)

// admitWriteSQL writes the admitted run back as the decision left it
// (runsWriteSQL, of one run), guarded by its fence and status as read (the
// two arguments after runsWriteSQL's): RunStart, RunCancel and RunRelease
// change runs without the task lock.
var admitWriteSQL = runsWriteSQL + fmt.Sprintf(` AND runs.fence = $%d AND runs.status = $%d RETURNING runs.id`,
	len(sqlrow.RunUpdateCols)+2, len(sqlrow.RunUpdateCols)+3)

// RunAdmit (see sundial.Store.RunAdmit) holds the task's row lock, in three
// round trips: BEGIN with the lock and every read, the writes, COMMIT.
func (s *Store) RunAdmit(ctx context.Context, id, fence int64, now time.Time, decide sundial.AdmitFunc) (_ *sundial.Run, err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	var (
		task         *sundial.Task
		pendingRuns  []*sundial.Run
		last, skips  []*sundial.Run
		out, readRun *sundial.Run
	)
	b := beginBatch()
	b.Queue(admitLockSQL, id).QueryRow(func(row pgx.Row) error {
		var err error
		task, err = sqlrow.ScanTask(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the run's check below says why
		}
		return err
	})
	b.Queue(admitRunSQL, id, fence).QueryRow(func(row pgx.Row) error {
		r, err := scanRun(row)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return sqlrow.NotFound("", "run %d is not waiting for admission under fence %d", id, fence)
		case err != nil:
			return err
		case task == nil:
			return sqlrow.NotFound("", "task %d of run %d not found", r.TaskID, id)
		}
		readRun = r
		return nil
	})
	b.Queue(admitPendingSQL, id).Query(lockedRuns(&pendingRuns))
	b.Queue(admitLastSQL, id).Query(lockedRuns(&last))
	b.Queue(admitSkipsSQL, id, sundial.MaxSkipsSinceLast).Query(lockedRuns(&skips))
	err = s.inTx(ctx, b, func(tx pgx.Tx) error {
		var lastRun *sundial.Run
		if len(last) > 0 {
			lastRun = last[0]
		}
		from := readRun.Status
		d := decide(sundial.AdmitStateOf(task, readRun, pendingRuns, lastRun, skips))
		if err := d.Check(id, from); err != nil {
			return err
		}
		var c sundial.RunChanges
		if cancel := slices.DeleteFunc(slices.Clone(d.Cancel), func(c int64) bool { return c == id }); len(cancel) > 0 {
			// CANCEL_PREV: the runs to cancel (and this one), locked in ID
			// order as RunStart and RunFinish lock runs, then cancelled as
			// RunCancel does.
			var locked []*sundial.Run
			lb := &pgx.Batch{}
			lb.Queue(runsLockSQL, append(slices.Clone(cancel), id)).Query(lockedRuns(&locked))
			if err := sendBatch(ctx, tx, lb); err != nil {
				return err
			}
			for _, prev := range locked {
				if prev.ID == id || !slices.Contains(cancel, prev.ID) || prev.TaskID != task.ID || prev.Status.Final() {
					continue
				}
				pc, err := sundial.Cancel(task, prev, now)
				if err != nil {
					return err
				}
				c.Add(pc)
			}
		}
		// The decision applies to a copy: decide may keep its state.
		admitted := *readRun
		d.Apply(&admitted, now)
		if end := d.EndsTask(); end != "" {
			// A one-off task whose only fire is skipped ends with it. The
			// task's lock is this transaction's since its first statement.
			c.Ends = append(c.Ends, sundial.TaskEnd{TaskID: task.ID, Status: end, At: now})
		}
		wb := &pgx.Batch{}
		wb.Queue(customPlans)
		wb.Queue(admitWriteSQL, append(runsWriteArgs([]*sundial.Run{&admitted}), fence, string(from))...).QueryRow(
			func(row pgx.Row) error {
				var got int64
				if err := row.Scan(&got); errors.Is(err, pgx.ErrNoRows) {
					// Changed since it was read, by a statement that does
					// not take the task lock: no longer this admission's to
					// decide.
					return sqlrow.NotFound("", "run %d is not waiting for admission under fence %d", id, fence)
				} else if err != nil {
					return err
				}
				out = &admitted
				return nil
			})
		queueChanges(wb, c)
		return sendBatch(ctx, tx, wb)
	})
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "admit run %d", id)
	}
	return out, nil
}
