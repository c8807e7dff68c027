package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// runWriteCols are the columns of a run written back: its ID, then the
// columns a rule may change (sqlrow.RunUpdateCols).
var runWriteCols = append([]string{"id"}, sqlrow.RunUpdateCols...)

// runsWriteSQL writes n runs back as a rule left them, in one statement:
// a batch joined to runs by primary key (joinValues). The transaction holds
// the runs' locks.
func runsWriteSQL(n int) string {
	set := ""
	for i, c := range sqlrow.RunUpdateCols {
		if i > 0 {
			set += ", "
		}
		set += "r." + c + " = v." + c
	}
	return `UPDATE ` + joinValues("runs", "r", runWriteCols, n) + ` SET ` + set
}

// runWriteArgs appends the values of runWriteCols for r to args: those of
// sqlrow.RunUpdateArgs, with the text made storable (text, jsonText) and
// the response body binary (bin).
func runWriteArgs(args []any, r *sundial.Run) []any {
	return append(args, r.ID, string(r.Status), string(r.SkipReason), r.MissedCount, r.Attempt, r.Deliveries,
		r.NodeID, r.Fence, sqlrow.NullMicros(r.StartedAt), sqlrow.NullMicros(r.FinishedAt), r.HTTPStatus,
		bin(r.ResponseBody), text(r.Error), text(r.TraceID), r.CancelRequested, sqlrow.Micros(r.UpdatedAt),
		sqlrow.Micros(r.DueAt), jsonText(r.Result), jsonText(r.Progress), jsonText(r.Checkpoint), r.Priority,
		text(r.Message), r.AttemptOnRun)
}

// runWeight is about the bytes of r's arguments, for chunks.
func runWeight(r *sundial.Run) int {
	return 2*(len(r.ResponseBody)+len(r.Error)+len(r.Message)) + len(r.Result) + len(r.Progress) + len(r.Checkpoint)
}

// apply writes what a rule decided (sundial.RunChanges) inside tx, which
// holds the locks of the runs it read and of their tasks: the runs deleted
// or written back, the attempts recorded, the tasks rewound and ended.
func apply(ctx context.Context, tx *sql.Tx, c sundial.RunChanges) error {
	for part := range slices.Chunk(c.DeleteIDs(), batchIDs) {
		res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id IN (`+placeholders(len(part))+`)`, int64Args(part)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != int64(len(part)) {
			// Impossible under the row locks; run the transaction again.
			return fmt.Errorf("deleted %d of %d locked runs: %w", n, len(part), errRetry)
		}
	}
	for _, part := range chunks(len(c.Update), func(i int) int { return runWeight(c.Update[i]) }, nil) {
		args := make([]any, 0, len(runWriteCols)*len(part))
		for _, i := range part {
			args = runWriteArgs(args, c.Update[i])
		}
		if err := applyBatch(ctx, tx, runsWriteSQL(len(part)), len(part), args); err != nil {
			return err
		}
	}
	for _, part := range chunks(len(c.Attempts), func(i int) int {
		return 2 * (len(c.Attempts[i].ResponseBody) + len(c.Attempts[i].Error))
	}, nil) {
		args := make([]any, 0, 9*len(part))
		for _, i := range part {
			a := c.Attempts[i]
			finished := sql.NullInt64{Int64: sqlrow.Micros(a.FinishedAt), Valid: true}
			args = attemptArgs(args, a.RunID, a.Delivery, a.NodeID, a.Status, a.HTTPStatus, text(a.Error),
				bin(a.ResponseBody), sqlrow.NullMicros(a.StartedAt), finished)
		}
		if _, err := tx.ExecContext(ctx, attemptInsertSQL(len(part)), args...); err != nil {
			return err
		}
	}
	if err := rewind(ctx, tx, c.Rewind); err != nil {
		return err
	}
	ends := make([]taskEnd, len(c.Ends))
	for i, e := range c.Ends {
		ends[i] = taskEnd{e.TaskID, e.Status, sql.NullInt64{Int64: sqlrow.Micros(e.At), Valid: true}}
	}
	return completeTasks(ctx, tx, ends)
}

// rewindSQL rewinds n tasks to a fire unplanned (sundial.Task.Rewind):
// arguments (id, rewind_at) per task.
func rewindSQL(n int) string {
	return `UPDATE ` + joinValues("tasks", "t", []string{"id", "rewind_at"}, n) + `
		SET t.next_fire_at = LEAST(COALESCE(t.next_fire_at, v.rewind_at), v.rewind_at)`
}

// rewind rewinds the tasks of at (task ID -> fire), in ID order, and
// deletes their planned fires after it (sundial.RunChanges.Rewind).
func rewind(ctx context.Context, tx *sql.Tx, at map[int64]time.Time) error {
	order := slices.Sorted(maps.Keys(at))
	for part := range slices.Chunk(order, batchRows) {
		args := make([]any, 0, 2*len(part))
		for _, id := range part {
			args = append(args, id, sqlrow.Micros(at[id]))
		}
		if _, err := tx.ExecContext(ctx, rewindSQL(len(part)), args...); err != nil {
			return err
		}
	}
	// Then their later planned fires, each task's own range of the
	// (task_id, status, scheduled_at) index.
	for _, id := range order {
		if _, err := tx.ExecContext(ctx, sqlrow.RunsUnplanAfterSQL, id, sqlrow.Micros(at[id])); err != nil {
			return err
		}
	}
	return nil
}
