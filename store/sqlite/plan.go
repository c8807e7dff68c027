package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// The literal status and deleted terms let SQLite use the partial index
// tasks_due: the scan covers the due tasks only, in the index's order, so a
// large backlog of due tasks is read a batch at a time and never sorted.
const planDueSQL = `SELECT ` + sqlrow.TaskCols + ` FROM tasks INDEXED BY tasks_due
	WHERE status = 'ENABLED' AND deleted = 0 AND next_fire_at <= ?
	ORDER BY next_fire_at, id
	LIMIT ?`

// planNextSQL writes a planned task's sqlrow.TaskPlanCols.
var planNextSQL = `UPDATE tasks SET ` + strings.Join(sqlrow.TaskPlanCols, " = ?, ") + ` = ? WHERE id = ?`

// PlanDue (see sundial.Store.PlanDue): the single writer holds every task,
// so no other planner can claim one meanwhile.
// SQLite's own: the write transaction holds every task's lock, so the due
// tasks are read in tasks_due's order (planDueSQL) with no row lock to
// skip.
func (s *Store) PlanDue(ctx context.Context, until time.Time, limit int, nodeID string, now time.Time,
	plan sundial.PlanFunc) (_ []*sundial.Run, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return nil, nil
	}
	now = sqlrow.Norm(now)
	var out []*sundial.Run
	err = s.write(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		tasks, err := sqlrow.ScanTasks(tx.QueryContext(ctx, planDueSQL, sqlrow.Micros(until), limit))
		if err != nil {
			return err
		}
		insert := tx.StmtContext(ctx, s.st.runInsert)
		next := tx.StmtContext(ctx, s.st.planNext)
		var runs []*sundial.Run
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
				runs = append(runs, r)
			}
			if _, err := next.ExecContext(ctx, append(sqlrow.TaskPlanArgs(t, p, now), t.ID)...); err != nil {
				return err
			}
		}
		for _, r := range sqlrow.ByInstant(runs) {
			ok, err := insertRun(ctx, insert, r)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan due tasks: %w", err)
	}
	return out, nil
}
