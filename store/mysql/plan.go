package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// planCandidatesSQL reads the earliest due tasks without locking them: a
// range scan of tasks_due (status, deleted, next_fire_at, id), which covers
// the query and is in its order, so it stops after its LIMIT however many
// tasks are due: no sort. The optional keyset condition (%s) continues
// after the previous round's last candidate.
const planCandidatesSQL = `SELECT id, next_fire_at FROM tasks FORCE INDEX (tasks_due)
	WHERE status = 'ENABLED' AND deleted = 0 AND next_fire_at <= ?%s
	ORDER BY next_fire_at, id
	LIMIT ?`

const planAfterSQL = ` AND (next_fire_at > ? OR (next_fire_at = ? AND id > ?))`

// planLockSQL locks the candidates still due by primary key, skipping those
// another planner holds. By primary key, so that only these rows are locked.
const planLockSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks FORCE INDEX (PRIMARY)
	WHERE id IN (%s) AND status = 'ENABLED' AND deleted = 0 AND next_fire_at <= ?
	FOR UPDATE SKIP LOCKED`

// planRounds caps how often PlanDue reads further candidates when other
// planners hold the first ones.
const planRounds = 4

// PlanDue (see sundial.Store.PlanDue): concurrent planners skip each other's
// tasks instead of waiting (see the package documentation). Should the
// transaction be retried after a deadlock, plan is called again for the
// tasks claimed then.
func (s *Store) PlanDue(ctx context.Context, until time.Time, limit int, nodeID string, now time.Time,
	plan sundial.PlanFunc) (_ []*sundial.Run, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil
	}
	now = sqlrow.Norm(now)
	var out []*sundial.Run
	err = s.write(ctx, func(tx *sql.Tx) error {
		out = nil
		tasks, err := claimDue(ctx, tx, sqlrow.Micros(until), limit)
		if err != nil {
			return err
		}
		var (
			runs  []*sundial.Run
			seen  = map[runKey]bool{}
			nexts = make([]any, 0, planWidth*len(tasks))
		)
		for _, t := range tasks {
			p := plan(t)
			if p.Keep {
				continue
			}
			for _, r := range p.Runs {
				r.TaskID, r.NodeID, r.Fence, r.Priority = t.ID, nodeID, 1, t.Priority
				r.CreatedAt, r.UpdatedAt = now, now
				if err := prepareNew(r, now); err != nil {
					return fmt.Errorf("plan task %d: %w", t.ID, err)
				}
				// A fire listed twice is one run.
				if k := (runKey{t.ID, r.FireKey}); !seen[k] {
					seen[k] = true
					runs = append(runs, r)
				}
			}
			nexts = append(append(nexts, t.ID), sqlrow.TaskPlanArgs(t, p, now)...)
		}
		if out, err = insertPlanned(ctx, tx, sqlrow.ByInstant(runs)); err != nil {
			return err
		}
		for _, part := range chunks(len(nexts)/planWidth, nil, nil) {
			args := nexts[planWidth*part[0] : planWidth*(part[len(part)-1]+1)]
			if _, err := tx.ExecContext(ctx, planNextSQL(len(part)), args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan due tasks: %w", err)
	}
	return out, nil
}

// planWidth is the number of values a planned task's row of planNextSQL
// has: its ID and its sqlrow.TaskPlanCols.
var planWidth = 1 + len(sqlrow.TaskPlanCols)

// planNextSQL writes the sqlrow.TaskPlanCols of n planned tasks, a batch
// joined to tasks by primary key (joinValues).
func planNextSQL(n int) string {
	set := ""
	for i, c := range sqlrow.TaskPlanCols {
		if i > 0 {
			set += ", "
		}
		set += "t." + c + " = v.p_" + c
	}
	cols := []string{"id"}
	for _, c := range sqlrow.TaskPlanCols {
		cols = append(cols, "p_"+c)
	}
	return `UPDATE ` + joinValues("tasks", "t", cols, n) + ` SET ` + set
}

// claimDue locks up to limit due tasks, earliest first.
func claimDue(ctx context.Context, tx *sql.Tx, until int64, limit int) ([]*sundial.Task, error) {
	var (
		tasks []*sundial.Task
		after []any // the keyset of the last candidate read
		// The tasks locked in earlier rounds. One whose next fire another
		// planner moved on between its read and its lock lies past the
		// keyset: a later round reads it again, and must not plan it twice.
		held = map[int64]bool{}
	)
	for round := 0; round < planRounds && len(tasks) < limit; round++ {
		want := limit - len(tasks)
		cond := ""
		args := []any{until}
		if after != nil {
			cond = planAfterSQL
			args = append(args, after...)
		}
		args = append(args, want)
		rows, err := tx.QueryContext(ctx, fmt.Sprintf(planCandidatesSQL, cond), args...)
		if err != nil {
			return nil, err
		}
		var ids []any
		read := 0
		for rows.Next() {
			var id, next int64
			if err := rows.Scan(&id, &next); err != nil {
				rows.Close()
				return nil, err
			}
			read++
			if !held[id] {
				ids = append(ids, id)
			}
			after = []any{next, next, id}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if read == 0 {
			break
		}
		if len(ids) > 0 {
			locked, err := sqlrow.ScanTasks(tx.QueryContext(ctx, fmt.Sprintf(planLockSQL, placeholders(len(ids))), append(ids, until)...))
			if err != nil {
				return nil, err
			}
			for _, t := range locked {
				held[t.ID] = true
			}
			tasks = append(tasks, locked...)
		}
		if read < want {
			break // no more due tasks
		}
	}
	slices.SortFunc(tasks, func(a, b *sundial.Task) int {
		return cmp.Or(cmp.Compare(sqlrow.Micros(*a.NextFireTime), sqlrow.Micros(*b.NextFireTime)),
			cmp.Compare(a.ID, b.ID))
	})
	return tasks, nil
}

// insertPlanned inserts the runs whose (task, fire key) does not exist yet
// and returns them, in order, with their IDs. The caller holds the locks of
// their tasks, and every insert of a run holds its task's lock, so no other
// transaction inserts these keys meanwhile.
func insertPlanned(ctx context.Context, tx *sql.Tx, runs []*sundial.Run) ([]*sundial.Run, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	existing, err := runIDsByKey(ctx, tx, runs)
	if err != nil {
		return nil, err
	}
	var fresh []*sundial.Run
	for _, r := range runs {
		if _, ok := existing[runKey{r.TaskID, r.FireKey}]; !ok {
			fresh = append(fresh, r)
		}
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	for _, part := range chunks(len(fresh), func(i int) int { return len(fresh[i].ResponseBody) + len(fresh[i].Error) }, nil) {
		args := make([]any, 0, runInsertWidth*len(part))
		for _, i := range part {
			args = runInsertArgs(args, fresh[i])
		}
		if _, err := tx.ExecContext(ctx, runInsertSQL(len(part)), args...); err != nil {
			if isDup(err) {
				return nil, fmt.Errorf("insert planned runs: %v: %w", err, errRetry)
			}
			return nil, err
		}
	}
	ids, err := runIDsByKey(ctx, tx, fresh)
	if err != nil {
		return nil, err
	}
	for _, r := range fresh {
		id, ok := ids[runKey{r.TaskID, r.FireKey}]
		if !ok {
			return nil, fmt.Errorf("planned run of task %d with fire key %q not found after insert", r.TaskID, r.FireKey)
		}
		r.ID = id
	}
	return fresh, nil
}

type runKey struct {
	task int64
	key  string
}

// runIDsByKey returns the IDs of the runs that exist with the (task, fire
// key) of runs.
func runIDsByKey(ctx context.Context, tx *sql.Tx, runs []*sundial.Run) (map[runKey]int64, error) {
	out := make(map[runKey]int64, len(runs))
	for _, part := range chunks(len(runs), func(i int) int { return len(runs[i].FireKey) }, nil) {
		args := make([]any, 0, 2*len(part))
		for _, i := range part {
			args = append(args, runs[i].TaskID, runs[i].FireKey)
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, task_id, fire_key FROM runs
			WHERE (task_id, fire_key) IN (`+tuples(len(part), 2)+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var (
				id int64
				k  runKey
			)
			if err := rows.Scan(&id, &k.task, &k.key); err != nil {
				rows.Close()
				return nil, err
			}
			out[k] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
