package sqlite

import (
	"context"
	"database/sql"
	"maps"
	"slices"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// writeChunk caps the rows of one multi-row statement, well under SQLite's
// limit of bound parameters.
const writeChunk = 500

// apply writes what a rule decided (sundial.RunChanges) inside tx, the
// write transaction that read the runs: the rule's runs deleted or written
// back as it left them, its attempts recorded, its tasks rewound and ended.
func (s *Store) apply(ctx context.Context, tx *sql.Tx, c sundial.RunChanges) error {
	for part := range slices.Chunk(c.DeleteIDs(), writeChunk) {
		if _, err := tx.ExecContext(ctx, sqlrow.DeleteRunsSQL(len(part)), int64Args(part)...); err != nil {
			return err
		}
	}
	if len(c.Update) > 0 {
		update := tx.StmtContext(ctx, s.st.runUpdate)
		for _, r := range c.Update {
			if _, err := update.ExecContext(ctx, append(sqlrow.RunUpdateArgs(r), r.ID)...); err != nil {
				return err
			}
		}
	}
	for part := range slices.Chunk(c.Attempts, writeChunk/10) {
		args := make([]any, 0, 9*len(part))
		for _, a := range part {
			args = sqlrow.AttemptArgs(args, a)
		}
		if _, err := tx.ExecContext(ctx, sqlrow.AttemptInsertSQL(len(part)), args...); err != nil {
			return err
		}
	}
	for _, task := range slices.Sorted(maps.Keys(c.Rewind)) {
		at := sqlrow.Micros(c.Rewind[task])
		if _, err := tx.ExecContext(ctx, sqlrow.TaskRewindSQL, at, at, task); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlrow.RunsUnplanAfterSQL, task, at); err != nil {
			return err
		}
	}
	for _, e := range c.Ends {
		if _, err := tx.ExecContext(ctx, sqlrow.TaskEndSQL, string(e.Status), sqlrow.Micros(e.At), e.TaskID); err != nil {
			return err
		}
	}
	return nil
}

// runsByID reads the runs ids inside tx (or a read transaction), by ID;
// missing ones are absent.
func runsByID(ctx context.Context, q querier, ids []int64) (map[int64]*sundial.Run, error) {
	runs, err := sqlrow.ScanRuns(q.QueryContext(ctx, `SELECT `+sqlrow.RunCols+` FROM runs
		WHERE id IN (SELECT value FROM json_each(?))`, jsonIDs(ids)))
	if err != nil {
		return nil, err
	}
	out := make(map[int64]*sundial.Run, len(runs))
	for _, r := range runs {
		out[r.ID] = r
	}
	return out, nil
}

// tasksOfDeleted is tasksOf, and which of the tasks are deleted.
func tasksOfDeleted(ctx context.Context, q querier, runs []*sundial.Run) (map[int64]*sundial.Task, map[int64]bool, error) {
	ids := runTaskIDs(runs)
	tasks := make(map[int64]*sundial.Task, len(ids))
	deleted := map[int64]bool{}
	rows, err := q.QueryContext(ctx, `SELECT `+sqlrow.TaskCols+`, deleted FROM tasks
		WHERE id IN (SELECT value FROM json_each(?))`, jsonIDs(ids))
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var gone bool
		t, err := sqlrow.ScanTask(withExtra{rows, []any{&gone}})
		if err != nil {
			return nil, nil, err
		}
		tasks[t.ID], deleted[t.ID] = t, gone
	}
	return tasks, deleted, rows.Err()
}

// runTaskIDs returns the tasks of runs, ascending, each once.
func runTaskIDs(runs []*sundial.Run) []int64 {
	ids := make([]int64, len(runs))
	for i, r := range runs {
		ids[i] = r.TaskID
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// withExtra scans further columns after the ones its caller asks for.
type withExtra struct {
	sc    sqlrow.Scanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.extra...)...) }

func int64Args(ids []int64) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}
