package postgres

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// The writes of a rule's sundial.RunChanges, each one statement from
// unnest(arrays) whatever the number of runs, found by primary key. The
// transaction that queues them holds the locks of the runs the rule read.

// runUpdateTypes are the array types of sqlrow.RunUpdateCols, in order.
var runUpdateTypes = []string{"text", "text", "integer", "integer", "integer", "text", "bigint",
	"bigint", "bigint", "integer", "bytea", "text", "text", "boolean",
	"bigint", "bigint", "text", "text", "text", "integer", "text", "boolean"}

// runsWriteSQL writes runs back as a rule left them: $1 their IDs, then one
// array per column of sqlrow.RunUpdateCols.
var runsWriteSQL = func() string {
	if len(runUpdateTypes) != len(sqlrow.RunUpdateCols) {
		panic("postgres: runUpdateTypes does not match sqlrow.RunUpdateCols")
	}
	arrays := []string{"$1::bigint[]"}
	set := make([]string, len(sqlrow.RunUpdateCols))
	for i, c := range sqlrow.RunUpdateCols {
		arrays = append(arrays, "$"+strconv.Itoa(i+2)+"::"+runUpdateTypes[i]+"[]")
		set[i] = c + " = u." + c
	}
	return `UPDATE runs SET ` + strings.Join(set, ", ") + `
	FROM unnest(` + strings.Join(arrays, ", ") + `) AS u (id, ` + strings.Join(sqlrow.RunUpdateCols, ", ") + `)
	WHERE runs.id = ANY($1) AND runs.id = u.id`
}()

// runsWriteArgs are the arrays of runsWriteSQL for runs.
func runsWriteArgs(runs []*sundial.Run) []any {
	n := len(runs)
	var (
		id, fence, updated, due                           = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		started, finished                                 = make([]*int64, n), make([]*int64, n)
		status, skip, node, errText, trace, message       = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		missed, attempt, deliveries, httpStatus, priority = make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
		body                                              = make([][]byte, n)
		cancel, onRun                                     = make([]bool, n), make([]bool, n)
		result, progress, checkpoint                      = make([]*string, n), make([]*string, n), make([]*string, n)
	)
	for i, r := range runs {
		id[i], fence[i], updated[i], due[i] = r.ID, r.Fence, sqlrow.Micros(r.UpdatedAt), sqlrow.Micros(r.DueAt)
		started[i], finished[i] = nullMicros(r.StartedAt), nullMicros(r.FinishedAt)
		status[i], skip[i], node[i] = string(r.Status), string(r.SkipReason), r.NodeID
		errText[i], trace[i], message[i] = cleanText(r.Error), cleanText(r.TraceID), cleanText(r.Message)
		missed[i], attempt[i], deliveries[i] = int32(r.MissedCount), int32(r.Attempt), int32(r.Deliveries)
		httpStatus[i], priority[i] = int32(r.HTTPStatus), int32(r.Priority)
		body[i], cancel[i], onRun[i] = []byte(r.ResponseBody), r.CancelRequested, r.AttemptOnRun
		result[i], progress[i], checkpoint[i] = nullJSON(r.Result), nullJSON(r.Progress), nullJSON(r.Checkpoint)
	}
	return []any{id, status, skip, missed, attempt, deliveries, node, fence, started, finished, httpStatus, body,
		errText, trace, cancel, updated, due, result, progress, checkpoint, priority, message, onRun}
}

// runsDeleteSQL deletes the runs $1.
const runsDeleteSQL = `DELETE FROM runs WHERE id = ANY($1)`

// attemptsInsertSQL records attempts, one array per column.
const attemptsInsertSQL = `INSERT INTO run_attempts (` + sqlrow.AttemptCols + `)
	SELECT * FROM unnest($1::bigint[], $2::integer[], $3::text[], $4::text[], $5::integer[], $6::text[],
		$7::bytea[], $8::bigint[], $9::bigint[])`

// attemptsArgs are the arrays of attemptsInsertSQL for as.
func attemptsArgs(as []*sundial.Attempt) []any {
	n := len(as)
	var (
		run, finished         = make([]int64, n), make([]int64, n)
		delivery, httpStatus  = make([]int32, n), make([]int32, n)
		node, status, errText = make([]string, n), make([]string, n), make([]string, n)
		body                  = make([][]byte, n)
		started               = make([]*int64, n)
	)
	for i, a := range as {
		run[i], finished[i], delivery[i], httpStatus[i] = a.RunID, sqlrow.Micros(a.FinishedAt), int32(a.Delivery), int32(a.HTTPStatus)
		node[i], status[i], errText[i] = a.NodeID, string(a.Status), cleanText(a.Error)
		body[i], started[i] = []byte(a.ResponseBody), nullMicros(a.StartedAt)
	}
	return []any{run, delivery, node, status, httpStatus, errText, body, started, finished}
}

// tasksRewindSQL rewinds the tasks $1 to the fires $2 unplanned
// (sundial.Task.Rewind): LEAST ignores NULL, so a task with no next fire
// gets the fire.
const tasksRewindSQL = `UPDATE tasks SET next_fire_at = LEAST(tasks.next_fire_at, u.at)
	FROM unnest($1::bigint[], $2::bigint[]) AS u (id, at)
	WHERE tasks.id = ANY($1) AND tasks.id = u.id`

// runsUnplanAfterSQL deletes the planned fires of the tasks $1 later than
// the fires $2 they were rewound to (sundial.RunChanges.Rewind), queued
// after the rewind, which locks the tasks first.
const runsUnplanAfterSQL = `DELETE FROM runs USING unnest($1::bigint[], $2::bigint[]) AS u (id, at)
	WHERE runs.task_id = u.id AND runs.status = 'SCHEDULED' AND runs.scheduled_at > u.at
	AND runs.deliveries = 0 AND runs.trigger_type IN ('SCHEDULE', 'CATCH_UP')`

// runsLockSQL locks the runs $1 in ID order, and reads them.
const runsLockSQL = `SELECT ` + sqlrow.RunCols + ` FROM runs WHERE id = ANY($1) ORDER BY id FOR UPDATE`

// queueChanges queues onto b the writes of c, for a transaction that holds
// the locks of the runs c's rule read and of their tasks; b is planned for
// its arguments (customPlans), as every unnest batch.
func queueChanges(b *pgx.Batch, c sundial.RunChanges) {
	if len(c.Delete) > 0 {
		b.Queue(runsDeleteSQL, c.DeleteIDs())
	}
	if len(c.Update) > 0 {
		b.Queue(runsWriteSQL, runsWriteArgs(c.Update)...)
	}
	if len(c.Attempts) > 0 {
		b.Queue(attemptsInsertSQL, attemptsArgs(c.Attempts)...)
	}
	if len(c.Rewind) > 0 {
		ids := slices.Sorted(maps.Keys(c.Rewind))
		at := make([]int64, len(ids))
		for i, id := range ids {
			at[i] = sqlrow.Micros(c.Rewind[id])
		}
		b.Queue(tasksRewindSQL, ids, at)
		b.Queue(runsUnplanAfterSQL, ids, at)
	}
	for _, e := range c.Ends {
		b.Queue(completeTaskSQL, string(e.Status), sqlrow.Micros(e.At), e.TaskID)
	}
}

// changesBatch returns a batch, planned for its arguments, of the writes of
// c.
func changesBatch(c sundial.RunChanges) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(customPlans)
	queueChanges(b, c)
	return b
}

// lockedRuns returns a callback that reads rows of sqlrow.RunCols into *out.
func lockedRuns(out *[]*sundial.Run) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var err error
		*out, err = scanRuns(rows)
		return err
	}
}
