package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// planDueSQL claims due tasks, earliest first. The literal status and
// deleted terms match the partial index tasks_due, so the scan covers the
// due tasks only, and in the index's order (next_fire_at, id): a backlog
// of due tasks is read a batch at a time, never sorted. FOR UPDATE SKIP
// LOCKED passes over tasks another transaction holds (another node's
// planner, an admission, an update), so planners on several nodes claim
// disjoint tasks and never wait for each other; a task passed over is still
// due at the next pass. PlanDue plans it with indexOrderPlans, so that stale
// statistics cannot make it sort the due tasks instead.
const planDueSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks
	WHERE status = 'ENABLED' AND NOT deleted AND next_fire_at <= $1
	ORDER BY next_fire_at, id
	LIMIT $2
	FOR UPDATE SKIP LOCKED`

// planNextSQL advances the claimed tasks' next_fire_at, and writes their
// other sqlrow.TaskPlanCols, in one statement.
const planNextSQL = `UPDATE tasks SET next_fire_at = u.next, fire_count = u.fires, counted_through = u.through,
	status = u.status, version = u.version, updated_at = u.updated
	FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[], $7::bigint[])
		AS u (id, next, fires, through, status, version, updated)
	WHERE tasks.id = u.id`

// planInsertChunk caps the runs one INSERT carries.
const planInsertChunk = 2000

// PlanDue (see sundial.Store.PlanDue) takes three round trips: BEGIN with
// the claim, the inserts with the advance of next_fire_at, COMMIT.
func (s *Store) PlanDue(ctx context.Context, until time.Time, limit int, nodeID string, now time.Time,
	plan sundial.PlanFunc) (_ []*sundial.Run, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil
	}
	now = sqlrow.Norm(now)
	var (
		tasks []*sundial.Task
		out   []*sundial.Run
	)
	b := beginBatch()
	b.Queue(customPlans)
	b.Queue(indexOrderPlans)
	b.Queue(planDueSQL, sqlrow.Micros(until), limit).Query(func(rows pgx.Rows) error {
		var err error
		tasks, err = scanTasks(rows)
		return err
	})
	err = s.inTx(ctx, b, func(tx pgx.Tx) error {
		if len(tasks) == 0 {
			return nil
		}
		type fire struct {
			task int64
			key  string
		}
		var (
			runs     []*sundial.Run
			seen     = map[fire]bool{}
			ids      = make([]int64, 0, len(tasks))
			nexts    = make([]*int64, 0, len(tasks))
			fires    = make([]int64, 0, len(tasks))
			through  = make([]*int64, 0, len(tasks))
			statuses = make([]string, 0, len(tasks))
			versions = make([]int64, 0, len(tasks))
			updated  = make([]int64, 0, len(tasks))
			inserted = map[fire]int64{}
		)
		for _, t := range tasks {
			p := plan(t)
			if p.Keep {
				continue
			}
			for _, r := range p.Runs {
				r.TaskID, r.NodeID, r.Fence, r.Priority = t.ID, nodeID, 1, t.Priority
				r.CreatedAt, r.UpdatedAt = now, now
				if err := sqlrow.PrepareNew(r, now); err != nil {
					return fmt.Errorf("plan task %d: %w", t.ID, err)
				}
				// A fire listed twice is inserted once, as the first.
				if f := (fire{r.TaskID, r.FireKey}); !seen[f] {
					seen[f] = true
					runs = append(runs, r)
				}
			}
			ids, nexts = append(ids, t.ID), append(nexts, nullMicros(p.Next))
			a := sqlrow.TaskPlanArgs(t, p, now) // in sqlrow.TaskPlanCols' order
			fires, through = append(fires, int64(t.FireCount)), append(through, nullMicros(t.CountedThrough))
			statuses, versions, updated = append(statuses, a[3].(string)), append(versions, a[4].(int64)), append(updated, a[5].(int64))
		}
		runs = sqlrow.ByInstant(runs)
		nb := &pgx.Batch{}
		for start := 0; start < len(runs); start += planInsertChunk {
			var a runArrays
			for _, r := range runs[start:min(start+planInsertChunk, len(runs))] {
				a.add(r)
			}
			nb.Queue(runsInsertSQL, a.args()...).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var f fire
					var id int64
					if err := rows.Scan(&id, &f.task, &f.key); err != nil {
						return err
					}
					inserted[f] = id
				}
				return rows.Err()
			})
		}
		nb.Queue(planNextSQL, ids, nexts, fires, through, statuses, versions, updated)
		if err := sendBatch(ctx, tx, nb); err != nil {
			return err
		}
		for _, r := range runs {
			if id, ok := inserted[fire{r.TaskID, r.FireKey}]; ok {
				r.ID = id
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, sqlrow.Wrap(badTextOr(err), "plan due tasks")
	}
	return out, nil
}
