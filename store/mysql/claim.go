package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// Claims: how the nodes of a cluster share the runs. See the package
// documentation for the locking.

// batchIDs caps the IDs of one IN list. IDs are interpolated (a statement
// is text, not a prepared statement), so the cap only keeps statements and
// the range optimizer's work small.
const batchIDs = 1000

// claimRounds caps how often RunClaimDue and RunRedeliver read further
// candidates when the first ones are taken or do not qualify.
const claimRounds = 4

// claimCandidatesSQL reads the most urgent unowned due runs without locking
// them: earliest due first, then (among runs due at the same instant, as in
// a burst) the highest priority, then ID. That is the order of runs_claim
// (status, node_id, due_at, priority DESC, id), which covers the read: a
// range scan of (SCHEDULED, no node, due_at <= ?) that stops after its
// LIMIT, no sort, whatever the number of unowned due runs; an idle call
// reads no entry. The optional keyset condition (%s) continues after the
// previous round's last candidate.
const claimCandidatesSQL = `SELECT id, due_at, priority FROM runs FORCE INDEX (runs_claim)
	WHERE status = 'SCHEDULED' AND node_id = '' AND due_at <= ?%s
	ORDER BY due_at, priority DESC, id
	LIMIT ?`

const claimAfterSQL = ` AND (due_at > ? OR (due_at = ? AND (priority < ? OR (priority = ? AND id > ?))))`

// claimLockSQL locks the candidates still unowned and due by primary key,
// skipping those another claimer holds. The claim judges which of them it starts
// (sundial.ClaimStartParams.Starts) on the locked rows as they are.
const claimLockSQL = `SELECT ` + sqlrow.RunCols + `
	FROM runs FORCE INDEX (PRIMARY)
	WHERE id IN (%s) AND status = 'SCHEDULED' AND node_id = '' AND due_at <= ?
	FOR UPDATE SKIP LOCKED`

// claimSetSQL gives locked runs to a node (arguments: node, updated_at,
// then the IDs), by primary key so that only the locked rows are read; the
// status condition (%s) repeats what was checked under the lock.
const claimSetSQL = `UPDATE runs FORCE INDEX (PRIMARY) SET node_id = ?, fence = fence + 1, updated_at = ?
	WHERE id IN (%s) AND %s`

var claimStartCols = []string{"id", "attempt", "started_at", "trace_id"}

// claimStartSQL gives n locked runs to a node and starts them, in one write
// of each, as sundial.ClaimStartParams.Claim left them (arguments: the (id,
// attempt, started_at, trace_id) rows, then node and updated_at): RUNNING,
// one more delivery under a new fence, and nothing left of the previous
// delivery (sqlrow.StartClears). The assignments read no column another
// one sets, so their order (which a multi-table UPDATE does not define)
// does not matter.
func claimStartSQL(n int) string {
	return `UPDATE ` + joinValues("runs", "r", claimStartCols, n) + `
	SET r.node_id = ?, r.fence = r.fence + 1, r.updated_at = ?, r.status = 'RUNNING',
		r.attempt = v.attempt, r.started_at = v.started_at, r.trace_id = v.trace_id,
		r.deliveries = r.deliveries + 1, ` + sqlrow.StartClears("r.") + `
	WHERE r.status = 'SCHEDULED' AND r.node_id = ''`
}

type claimCand struct {
	id, at, prio int64
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// claimCandidates reads up to n unowned runs due at until, most urgent
// first, after the candidate after when it is not nil.
func claimCandidates(ctx context.Context, q querier, until int64, after *claimCand, n int) ([]claimCand, error) {
	cond, args := "", []any{until}
	if after != nil {
		cond = claimAfterSQL
		args = append(args, after.at, after.at, after.prio, after.prio, after.id)
	}
	rows, err := q.QueryContext(ctx, fmt.Sprintf(claimCandidatesSQL, cond), append(args, n)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []claimCand
	for rows.Next() {
		var c claimCand
		if err := rows.Scan(&c.id, &c.at, &c.prio); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// RunClaimDue claims for nodeID up to limit SCHEDULED runs that no node
// holds and that are due at until, most urgent first (due time, then the
// priority the run has from its task, descending, then ID), and starts
// those start selects (sundial.ClaimStartParams) as RunStart would. The first
// candidates are read before the transaction, so an idle call is one
// statement; the claim then locks them by primary key with SKIP LOCKED,
// which read also selects the runs to start, and writes each run once:
// one UPDATE gives the others to nodeID, one more (when any) gives and
// starts the selected ones. Runs another claimer holds are skipped, never
// waited for, and further candidates read (up to claimRounds reads) until
// limit runs are held. The claim takes no task lock; it reads the tasks of
// the runs it claimed.
func (s *Store) RunClaimDue(ctx context.Context, nodeID string, until time.Time, limit int, start sundial.ClaimStartParams) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil, nil
	}
	u := sqlrow.Micros(until)
	first, err := claimCandidates(ctx, s.db, u, nil, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("claim due runs: %w", err)
	}
	if len(first) == 0 {
		return nil, nil, nil
	}
	var (
		out   []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	err = s.write(ctx, func(tx *sql.Tx) error {
		out, tasks = nil, nil
		cands, want := first, limit
		for round := 1; ; round++ {
			ids := make([]int64, len(cands))
			for i, c := range cands {
				ids[i] = c.id
			}
			got, err := lockAndClaim(ctx, tx, nodeID, ids, u, start, s.clock)
			if err != nil {
				return err
			}
			out = append(out, got...)
			if len(out) >= limit || len(cands) < want || round == claimRounds {
				break
			}
			// Others hold some candidates: read the next ones.
			want = limit - len(out)
			if cands, err = claimCandidates(ctx, tx, u, &cands[len(cands)-1], want); err != nil {
				return err
			}
			if len(cands) == 0 {
				break
			}
		}
		slices.SortFunc(out, func(a, b *sundial.Run) int {
			return cmp.Or(cmp.Compare(sqlrow.Micros(a.DueAt), sqlrow.Micros(b.DueAt)),
				cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.ID, b.ID))
		})
		var err error
		tasks, err = readTasks(ctx, tx, runTaskIDs(out))
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("claim due runs: %w", err)
	}
	return out, tasks, nil
}

// lockAndClaim locks those of the runs ids still unowned and due at until,
// skipping the ones other transactions hold, gives them to nodeID, and
// starts those start selects.
func lockAndClaim(ctx context.Context, tx *sql.Tx, nodeID string, ids []int64, until int64,
	start sundial.ClaimStartParams, clock func() time.Time) ([]*sundial.Run, error) {
	var out []*sundial.Run
	for part := range slices.Chunk(ids, batchIDs) {
		var claimed, started []*sundial.Run
		locked, err := sqlrow.ScanRuns(tx.QueryContext(ctx, fmt.Sprintf(claimLockSQL, placeholders(len(part))),
			append(int64Args(part), until)...))
		if err != nil {
			return nil, err
		}
		now := sqlrow.Micros(clock())
		for _, r := range locked {
			if start.Starts(r) {
				started = append(started, r)
			} else {
				claimed = append(claimed, r)
			}
		}
		if len(claimed) > 0 {
			if err := claimLocked(ctx, tx, nodeID, claimed, now, `status = 'SCHEDULED' AND node_id = ''`); err != nil {
				return nil, err
			}
		}
		for sub := range slices.Chunk(started, batchRows) {
			if err := claimStart(ctx, tx, nodeID, sub, start, now); err != nil {
				return nil, err
			}
		}
		out = append(append(out, claimed...), started...)
	}
	return out, nil
}

// claimStart gives the runs this transaction has locked to nodeID and
// starts them at now, as start.Claim decides, each with a new trace ID, in
// the database and in runs.
func claimStart(ctx context.Context, tx *sql.Tx, nodeID string, runs []*sundial.Run, start sundial.ClaimStartParams, now int64) error {
	args := make([]any, 0, 4*len(runs)+2)
	for _, r := range runs {
		start.Claim(r, nodeID, sqlrow.FromMicros(now), executor.NewTraceID())
		args = append(args, r.ID, r.Attempt, sqlrow.NullMicros(r.StartedAt), r.TraceID)
	}
	return applyBatch(ctx, tx, claimStartSQL(len(runs)), len(runs), append(args, nodeID, now))
}

// claimLocked gives the runs this transaction has locked to nodeID with
// fence+1 and updated_at now, in the database and in runs. cond is what the
// caller checked under the locks: a row no longer matching it means the
// locks did not hold, and the transaction is run again.
func claimLocked(ctx context.Context, tx *sql.Tx, nodeID string, runs []*sundial.Run, now int64, cond string) error {
	ids := make([]int64, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	res, err := tx.ExecContext(ctx, fmt.Sprintf(claimSetSQL, placeholders(len(ids)), cond),
		append([]any{nodeID, now}, int64Args(ids)...)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != int64(len(ids)) {
		return fmt.Errorf("claim matched %d of %d locked runs: %w", n, len(ids), errRetry)
	}
	for _, r := range runs {
		r.ClaimFor(nodeID, sqlrow.FromMicros(now))
	}
	return nil
}

// RunClaim takes over the given SCHEDULED or QUEUED runs for nodeID, each
// only if its fence matches, and returns them (in the order of refs) with
// their tasks. It locks the runs' tasks (shared, in ID order), then the
// runs, waiting for other holders: a run being started or finished
// meanwhile is then seen with its new status or fence, and not taken.
func (s *Store) RunClaim(ctx context.Context, nodeID string, refs []sundial.RunRef) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if len(refs) == 0 {
		return nil, nil, nil
	}
	ids := refIDs(refs)
	var (
		out   []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	err = s.write(ctx, func(tx *sql.Tx) error {
		out, tasks = nil, nil
		taskIDs, err := taskIDsOfRuns(ctx, tx, ids)
		if err != nil {
			return err
		}
		locked, err := lockTasks(ctx, tx, taskIDs, false, false)
		if err != nil {
			return err
		}
		cur, now, err := lockRunsFull(ctx, tx, ids, s.clock)
		if err != nil {
			return err
		}
		taken := map[int64]bool{}
		for _, ref := range refs {
			r, ok := cur[ref.ID]
			if !ok || taken[ref.ID] || !ref.Claimable(r) {
				continue
			}
			taken[ref.ID] = true
			out = append(out, r)
		}
		for part := range slices.Chunk(out, batchIDs) {
			if err := claimLocked(ctx, tx, nodeID, part, now, `status IN `+sqlrow.Statuses(sundial.RunStatus.Waiting)); err != nil {
				return err
			}
		}
		tasks = map[int64]*sundial.Task{}
		for _, r := range out {
			t, ok := locked[r.TaskID]
			if !ok {
				return fmt.Errorf("task %d of run %d not found", r.TaskID, r.ID)
			}
			tasks[r.TaskID] = t
		}
		return nil
	})
	if err != nil {
		return nil, nil, sqlrow.Wrap(err, "claim runs")
	}
	return out, tasks, nil
}

// missedCandidatesSQL reads, without locking, the planned fires due before
// ? (the first two arguments) that no node holds and those a node holds,
// up to ? of each, through runs_claim.
const missedCandidatesSQL = `(SELECT ` + sqlrow.RunCols + ` FROM runs FORCE INDEX (runs_claim)
		WHERE status = 'SCHEDULED' AND node_id = '' AND due_at < ? AND deliveries = 0 AND trigger_type = 'SCHEDULE'
		ORDER BY due_at, priority DESC, id LIMIT ?)
	UNION ALL
	(SELECT ` + sqlrow.RunCols + ` FROM runs FORCE INDEX (runs_claim)
		WHERE status = 'SCHEDULED' AND node_id > '' AND due_at < ? AND deliveries = 0 AND trigger_type = 'SCHEDULE'
		ORDER BY due_at, id LIMIT ?)`

// RunUnplanMissed (see sundial.Store.RunUnplanMissed), like RunUnplan,
// locks the runs' tasks in ID order, then the runs, and checks each run
// again under its lock.
func (s *Store) RunUnplanMissed(ctx context.Context, before time.Time, limit int,
	missed func(*sundial.Run, *sundial.Task) bool) (looked, deleted int, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return 0, 0, nil
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		looked, deleted = 0, 0
		at := sqlrow.Micros(before)
		runs, err := sqlrow.ScanRuns(tx.QueryContext(ctx, missedCandidatesSQL, at, limit, at, limit))
		if err != nil || len(runs) == 0 {
			return err
		}
		sqlrow.SortByDue(runs)
		runs = runs[:min(len(runs), limit)]
		looked = len(runs)
		taskIDs := make([]int64, 0, len(runs))
		for _, r := range runs {
			taskIDs = append(taskIDs, r.TaskID)
		}
		slices.Sort(taskIDs)
		tasks, err := lockTasks(ctx, tx, slices.Compact(taskIDs), true, false)
		if err != nil {
			return err
		}
		var ids []int64
		for _, r := range runs {
			if missed(r, tasks[r.TaskID]) {
				ids = append(ids, r.ID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		cur, _, err := lockRunsFull(ctx, tx, ids, s.clock)
		if err != nil {
			return err
		}
		// Decided again under the locks: started, or gone, since it was read.
		locked := make([]*sundial.Run, 0, len(ids))
		for _, id := range ids {
			if r := cur[id]; r != nil {
				locked = append(locked, r)
			}
		}
		tids, from := sqlrow.TakenFrom(locked)
		args := make([]any, 0, len(tids)+1)
		for _, id := range tids {
			args = append(args, id)
		}
		taken, err := sqlrow.ScanTaken(tx.QueryContext(ctx, fmt.Sprintf(takenSQL, placeholders(len(tids))),
			append(args, sqlrow.Micros(from))...))
		if err != nil {
			return err
		}
		// missed answered on the candidates, once each.
		c := sundial.UnplanMissed(locked, tasks, before, taken, s.clock(),
			func(*sundial.Run, *sundial.Task) bool { return true })
		deleted = len(c.Delete) + len(c.Update)
		return apply(ctx, tx, c)
	})
	if err != nil {
		return 0, 0, sqlrow.Wrap(err, "unplan missed fires")
	}
	return looked, deleted, nil
}

// takenSQL reads, of the tasks in %s, the latest fire later than the last
// parameter that a sweep of missed fires must not rewind them before
// (sqlrow.TakenCond).
const takenSQL = `SELECT task_id, MAX(scheduled_at) FROM runs FORCE INDEX (runs_task_scheduled)
	WHERE task_id IN (%s) AND scheduled_at > ? AND ` + sqlrow.TakenCond + `
	GROUP BY task_id`

// redeliverCandidatesSQL reads INTERRUPTED runs, oldest (by scheduled time,
// then ID) first, without locking them: the INTERRUPTED range of
// runs_claim, few runs, sorted. The optional keyset condition (%s)
// continues after the previous round.
const redeliverCandidatesSQL = `SELECT id, task_id, scheduled_at FROM runs FORCE INDEX (runs_claim)
	WHERE status = 'INTERRUPTED'%s
	ORDER BY scheduled_at, id
	LIMIT ?`

const redeliverAfterSQL = ` AND (scheduled_at > ? OR (scheduled_at = ? AND id > ?))`

// RunRedeliver (see sundial.Store.RunRedeliver, sundial.Redeliver) takes
// the oldest by scheduled time, then ID; failed runs do not count in
// limit. Each round reads candidates without locking, locks their tasks
// (shared, in ID order) so that none is deleted meanwhile, then the runs by
// primary key with SKIP LOCKED: two redeliverers do not wait for each
// other. (Failing a one-off task upgrades its shared lock; two
// redeliverers never fail the same run, so a deadlock there is rare, and
// retried.)
func (s *Store) RunRedeliver(ctx context.Context, nodeID string, maxDeliveries, limit int, now time.Time) (_ []*sundial.Run, _ map[int64]*sundial.Task, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil, nil
	}
	now = sqlrow.Norm(now)
	var (
		out   []*sundial.Run
		tasks map[int64]*sundial.Task
	)
	err = s.write(ctx, func(tx *sql.Tx) error {
		out, tasks = nil, map[int64]*sundial.Task{}
		var after []any
		for round := 1; round <= claimRounds && len(out) < limit; round++ {
			want := limit - len(out)
			cond, args := "", []any{}
			if after != nil {
				cond, args = redeliverAfterSQL, after
			}
			rows, err := tx.QueryContext(ctx, fmt.Sprintf(redeliverCandidatesSQL, cond), append(args, want)...)
			if err != nil {
				return err
			}
			var ids, taskIDs []int64
			for rows.Next() {
				var id, task, sched int64
				if err := rows.Scan(&id, &task, &sched); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, id)
				taskIDs = append(taskIDs, task)
				after = []any{sched, sched, id}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if len(ids) == 0 {
				break
			}
			slices.Sort(taskIDs)
			all, deleted, err := lockTasksDeleted(ctx, tx, slices.Compact(taskIDs))
			if err != nil {
				return err
			}
			var locked []*sundial.Run
			for part := range slices.Chunk(ids, batchIDs) {
				got, err := sqlrow.ScanRuns(tx.QueryContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs FORCE INDEX (PRIMARY)
					WHERE id IN (`+placeholders(len(part))+`) AND status = 'INTERRUPTED'
					FOR UPDATE SKIP LOCKED`, int64Args(part)...))
				if err != nil {
					return err
				}
				locked = append(locked, got...)
			}
			slices.SortFunc(locked, func(a, b *sundial.Run) int {
				return cmp.Or(cmp.Compare(sqlrow.Micros(a.ScheduledTime), sqlrow.Micros(b.ScheduledTime)), cmp.Compare(a.ID, b.ID))
			})
			again, c := sundial.Redeliver(locked, all, deleted, nodeID, maxDeliveries, limit-len(out), now)
			if err := apply(ctx, tx, c); err != nil {
				return err
			}
			for _, r := range again {
				tasks[r.TaskID] = all[r.TaskID]
			}
			out = append(out, again...)
			if len(ids) < want {
				break // no more INTERRUPTED runs
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("redeliver interrupted runs: %w", err)
	}
	return out, tasks, nil
}

// lockTasksDeleted locks the tasks ids (ascending), deleted ones too,
// shared, and returns them by ID with those that are deleted.
func lockTasksDeleted(ctx context.Context, tx *sql.Tx, ids []int64) (map[int64]*sundial.Task, map[int64]bool, error) {
	tasks := make(map[int64]*sundial.Task, len(ids))
	deleted := map[int64]bool{}
	for part := range slices.Chunk(ids, batchIDs) {
		rows, err := tx.QueryContext(ctx, `SELECT `+sqlrow.TaskCols+`, deleted FROM tasks FORCE INDEX (PRIMARY)
			WHERE id IN (`+placeholders(len(part))+`) ORDER BY id LOCK IN SHARE MODE`, int64Args(part)...)
		if err != nil {
			return nil, nil, err
		}
		for rows.Next() {
			var gone bool
			t, err := sqlrow.ScanTask(withExtra{rows, []any{&gone}})
			if err != nil {
				rows.Close()
				return nil, nil, err
			}
			tasks[t.ID], deleted[t.ID] = t, gone
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	}
	return tasks, deleted, nil
}

// RunCheckSend reports whether runs committed ahead may still be sent.
// MySQL's own: the IDs are bound batchIDs at a time in IN lists.
func (s *Store) RunCheckSend(ctx context.Context, refs []sundial.RunRef) (_ []sundial.SendCheck, err error) {
	defer s.classify(&err)
	out := make([]sundial.SendCheck, len(refs))
	for lo := 0; lo < len(refs); lo += batchIDs {
		part := refs[lo:min(lo+batchIDs, len(refs))]
		ids := make([]int64, len(part))
		for i, r := range part {
			ids[i] = r.ID
		}
		rows, err := s.db.QueryContext(ctx, `SELECT `+sqlrow.SendCheckCols+` FROM runs
			WHERE id IN (`+placeholders(len(ids))+`)`, int64Args(ids)...)
		if err == nil {
			err = sqlrow.SendChecks(rows, part, out[lo:])
		}
		if err != nil {
			return nil, fmt.Errorf("check runs to send: %w", err)
		}
	}
	return out, nil
}

// taskIDsOfRuns returns, in ascending order, the tasks of the runs ids that
// exist. It locks nothing: a run's task never changes.
func taskIDsOfRuns(ctx context.Context, tx *sql.Tx, ids []int64) ([]int64, error) {
	var out []int64
	for part := range slices.Chunk(ids, batchIDs) {
		got, err := int64s(tx.QueryContext(ctx, `SELECT DISTINCT task_id FROM runs
			WHERE id IN (`+placeholders(len(part))+`)`, int64Args(part)...))
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// lockTasks locks the tasks ids (ascending), exclusively or shared, and
// returns them by ID; liveOnly leaves deleted tasks out (unlocked: a
// deleted task stays deleted).
func lockTasks(ctx context.Context, tx *sql.Tx, ids []int64, exclusive, liveOnly bool) (map[int64]*sundial.Task, error) {
	mode := `LOCK IN SHARE MODE`
	if exclusive {
		mode = `FOR UPDATE`
	}
	cond := ``
	if liveOnly {
		cond = ` AND deleted = 0`
	}
	out := make(map[int64]*sundial.Task, len(ids))
	for part := range slices.Chunk(ids, batchIDs) {
		rows, err := tx.QueryContext(ctx, `SELECT `+sqlrow.TaskCols+` FROM tasks FORCE INDEX (PRIMARY)
			WHERE id IN (`+placeholders(len(part))+`)`+cond+` ORDER BY id `+mode, int64Args(part)...)
		if err != nil {
			return nil, err
		}
		if err := scanTasksInto(rows, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readTasks reads the tasks ids, deleted or not, by ID, without locking.
func readTasks(ctx context.Context, q querier, ids []int64) (map[int64]*sundial.Task, error) {
	out := make(map[int64]*sundial.Task, len(ids))
	for part := range slices.Chunk(ids, batchIDs) {
		rows, err := q.QueryContext(ctx, `SELECT `+sqlrow.TaskCols+` FROM tasks FORCE INDEX (PRIMARY)
			WHERE id IN (`+placeholders(len(part))+`)`, int64Args(part)...)
		if err != nil {
			return nil, err
		}
		if err := scanTasksInto(rows, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scanTasksInto(rows *sql.Rows, out map[int64]*sundial.Task) error {
	defer rows.Close()
	for rows.Next() {
		t, err := sqlrow.ScanTask(rows)
		if err != nil {
			return err
		}
		out[t.ID] = t
	}
	return rows.Err()
}

// lockRunsFull locks the runs ids by primary key, waiting for other
// holders, and returns them by ID with the clock's reading once they are
// locked.
func lockRunsFull(ctx context.Context, tx *sql.Tx, ids []int64, clock func() time.Time) (map[int64]*sundial.Run, int64, error) {
	out := make(map[int64]*sundial.Run, len(ids))
	for part := range slices.Chunk(ids, batchIDs) {
		got, err := sqlrow.ScanRuns(tx.QueryContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs FORCE INDEX (PRIMARY)
			WHERE id IN (`+placeholders(len(part))+`) FOR UPDATE`, int64Args(part)...))
		if err != nil {
			return nil, 0, err
		}
		for _, r := range got {
			out[r.ID] = r
		}
	}
	return out, sqlrow.Micros(clock()), nil
}

// withExtra scans further columns after the ones its caller asks for.
type withExtra struct {
	sc    sqlrow.Scanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.extra...)...) }

func refIDs(refs []sundial.RunRef) []int64 {
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func runTaskIDs(runs []*sundial.Run) []int64 {
	ids := make([]int64, len(runs))
	for i, r := range runs {
		ids[i] = r.TaskID
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func int64Args(ids []int64) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}
