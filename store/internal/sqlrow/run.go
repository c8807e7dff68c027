package sqlrow

import (
	"cmp"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// RunCols are the columns of a run, in the order ScanRun reads them.
const RunCols = `id, task_id, fire_key, trigger_type, scheduled_at, status, skip_reason, missed_count,
	attempt, deliveries, node_id, fence, started_at, finished_at, http_status, response_body, error,
	trace_id, idempotency_key, cancel_requested, created_at, updated_at, due_at, result_json,
	progress_json, checkpoint_json, priority, start_ahead, params_json, message, attempt_on_run, rerun_of`

// RunWriteCols are the columns a new run is inserted with: RunCols but id
// and attempt_on_run (a new run has none: its default).
const RunWriteCols = `task_id, fire_key, trigger_type, scheduled_at, status, skip_reason, missed_count,
	attempt, deliveries, node_id, fence, started_at, finished_at, http_status, response_body, error,
	trace_id, idempotency_key, cancel_requested, created_at, updated_at, due_at, result_json,
	progress_json, checkpoint_json, priority, start_ahead, params_json, message, rerun_of`

// RunWriteArgs are the values of RunWriteCols for r, as database/sql
// drivers take them.
func RunWriteArgs(r *sundial.Run) []any {
	return []any{r.TaskID, r.FireKey, string(r.Trigger), Micros(r.ScheduledTime), string(r.Status),
		string(r.SkipReason), r.MissedCount, r.Attempt, r.Deliveries, r.NodeID, r.Fence,
		NullMicros(r.StartedAt), NullMicros(r.FinishedAt), r.HTTPStatus, r.ResponseBody, r.Error,
		r.TraceID, r.IdempotencyKey, r.CancelRequested, Micros(r.CreatedAt), Micros(r.UpdatedAt),
		Micros(r.DueAt), NullJSON(r.Result), NullJSON(r.Progress), NullJSON(r.Checkpoint), r.Priority,
		r.StartAhead, NullJSON(r.Params), r.Message, NullID(r.RerunOf)}
}

// NullID is an ID as a nullable column: NULL for 0 (none).
func NullID(id int64) sql.NullInt64 { return sql.NullInt64{Int64: id, Valid: id != 0} }

// ScanRun reads a row of RunCols from any of the drivers: database/sql's
// (SQLite, MySQL) and pgx's (PostgreSQL), whose Scan takes the same
// destinations. The columns whose type differs between the dialects
// (booleans stored as integers, a body stored as text or bytes) are read
// through flag and text, which take either form.
func ScanRun(sc Scanner) (*sundial.Run, error) {
	r := new(sundial.Run)
	// The columns read into other types than the run's: one struct, one
	// allocation (each variable whose address Scan takes would be one).
	var v struct {
		trigger, status, reason string
		scheduled, created, upd int64
		started, finished       sql.NullInt64
		cancelRequested, ahead  flag
		onRun                   flag
		body                    text
		due                     int64
		result, progress, chk   sql.NullString
		params                  sql.NullString
		rerunOf                 sql.NullInt64
	}
	err := sc.Scan(&r.ID, &r.TaskID, &r.FireKey, &v.trigger, &v.scheduled, &v.status, &v.reason, &r.MissedCount,
		&r.Attempt, &r.Deliveries, &r.NodeID, &r.Fence, &v.started, &v.finished, &r.HTTPStatus,
		&v.body, &r.Error, &r.TraceID, &r.IdempotencyKey, &v.cancelRequested, &v.created, &v.upd,
		&v.due, &v.result, &v.progress, &v.chk, &r.Priority, &v.ahead, &v.params, &r.Message, &v.onRun, &v.rerunOf)
	if err != nil {
		return nil, err
	}
	r.Trigger = sundial.Trigger(v.trigger)
	r.Status = sundial.RunStatus(v.status)
	r.SkipReason = sundial.SkipReason(v.reason)
	r.ScheduledTime = FromMicros(v.scheduled)
	r.StartedAt = TimePtr(v.started)
	r.FinishedAt = TimePtr(v.finished)
	r.ResponseBody = string(v.body)
	r.CancelRequested = bool(v.cancelRequested)
	r.StartAhead = bool(v.ahead)
	r.AttemptOnRun = bool(v.onRun)
	r.CreatedAt = FromMicros(v.created)
	r.UpdatedAt = FromMicros(v.upd)
	r.DueAt = FromMicros(v.due)
	r.Result, r.Progress, r.Checkpoint = JSONOf(v.result), JSONOf(v.progress), JSONOf(v.chk)
	r.Params = JSONOf(v.params)
	r.RerunOf = v.rerunOf.Int64
	return r, nil
}

// flag reads a boolean column as each dialect stores it: a boolean
// (PostgreSQL), or an integer (SQLite; MySQL, whose text protocol gives
// its digits as bytes).
type flag bool

func (f *flag) Scan(v any) error {
	switch x := v.(type) {
	case bool:
		*f = flag(x)
	case int64:
		*f = x != 0
	case []byte:
		*f = len(x) > 0 && string(x) != "0"
	case nil:
		*f = false
	default:
		return fmt.Errorf("read a flag from %T", v)
	}
	return nil
}

// text reads a text column stored as text or as bytes (PostgreSQL's
// BYTEA response bodies).
type text string

func (t *text) Scan(v any) error {
	switch x := v.(type) {
	case string:
		*t = text(x)
	case []byte:
		*t = text(x)
	case nil:
		*t = ""
	default:
		return fmt.Errorf("read text from %T", v)
	}
	return nil
}

// ScanRuns reads the rows of RunCols that a query returned, and closes
// them. It passes on the query's error.
func ScanRuns(rows *sql.Rows, err error) ([]*sundial.Run, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*sundial.Run
	for rows.Next() {
		r, err := ScanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// CheckNew refuses a run that cannot be inserted: a new run is SCHEDULED,
// or SKIPPED as a record of a fire that will not run, and has a fire key.
// An empty status is SCHEDULED.
func CheckNew(r *sundial.Run) error {
	if r.Status != "" && r.Status != sundial.RunScheduled && r.Status != sundial.RunSkipped {
		return sundial.Errorf(sundial.EInvalid, "status", "a new run is SCHEDULED or SKIPPED, not %s", r.Status)
	}
	if r.FireKey == "" {
		return sundial.Errorf(sundial.EInvalid, "fire_key", "a run needs a fire key")
	}
	return nil
}

// PrepareNew fills the defaults of a run about to be inserted and
// normalises its times to what the database gives back; now is its
// creation time if it has none. A run CheckNew refuses is refused, its
// status set to SCHEDULED if it had none.
func PrepareNew(r *sundial.Run, now time.Time) error {
	if r.Status == "" {
		r.Status = sundial.RunScheduled
	}
	if err := CheckNew(r); err != nil {
		return err
	}
	if r.Trigger == "" {
		r.Trigger = sundial.TriggerSchedule
	}
	if r.IdempotencyKey == "" {
		r.IdempotencyKey = sundial.IdempotencyKeyFor(r.TaskID, r.FireKey)
	}
	if r.Fence == 0 {
		r.Fence = 1
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	if r.Status == sundial.RunSkipped && r.FinishedAt == nil {
		f := r.CreatedAt
		r.FinishedAt = &f
	}
	r.ResponseBody = sundial.CutResponseBody(r.ResponseBody)
	r.ScheduledTime = Norm(r.ScheduledTime)
	if r.DueAt.IsZero() {
		r.DueAt = r.ScheduledTime
	}
	r.DueAt = Norm(r.DueAt)
	r.StartedAt = NormPtr(r.StartedAt)
	r.FinishedAt = NormPtr(r.FinishedAt)
	r.CreatedAt = Norm(r.CreatedAt)
	r.UpdatedAt = Norm(r.UpdatedAt)
	return nil
}

// SendCheckCols are the columns of a run RunCheckSend reads for
// sundial.CheckSend, in the order of SendChecks.
const SendCheckCols = `id, fence, status, cancel_requested`

// SendChecks reads rows of SendCheckCols into out, the verdicts of
// sundial.CheckSend for refs: SendDrop for a run with no row. It closes
// rows.
func SendChecks(rows *sql.Rows, refs []sundial.RunRef, out []sundial.SendCheck) error {
	defer rows.Close()
	at := make(map[int64]int, len(refs))
	for i, r := range refs {
		at[r.ID] = i
	}
	for rows.Next() {
		var (
			id, fence int64
			status    string
			cancel    bool
		)
		if err := rows.Scan(&id, &fence, &status, &cancel); err != nil {
			return err
		}
		if i, ok := at[id]; ok {
			out[i] = sundial.CheckSend(refs[i].Fence,
				&sundial.Run{Fence: fence, Status: sundial.RunStatus(status), CancelRequested: cancel})
		}
	}
	return rows.Err()
}

// SortByDue orders runs by due time, then ID: the order in which fires
// are handled.
func SortByDue(runs []*sundial.Run) {
	slices.SortFunc(runs, func(a, b *sundial.Run) int {
		return cmp.Or(a.DueAt.Compare(b.DueAt), cmp.Compare(a.ID, b.ID))
	})
}

// ByInstant returns the planned runs in the order a PlanDue inserts them:
// by scheduled time, then task, the order of their plans among equals.
// The runs of a task are planned a span ahead (a span of each task at a
// different pass), so that in the order of the plans the runs due in the
// same second would be as far apart in the table as the tasks refilled in
// a pass, and each claim and outcome would write as many pages; in this
// order they lie together, as the runs each pass plans for one second.
func ByInstant(runs []*sundial.Run) []*sundial.Run {
	slices.SortStableFunc(runs, func(a, b *sundial.Run) int {
		return cmp.Or(a.ScheduledTime.Compare(b.ScheduledTime), cmp.Compare(a.TaskID, b.TaskID))
	})
	return runs
}

// startClears are the columns of a run that the end of a delivery writes
// (its answer, its error, its callback's message, and whether its attempt
// is on the run), with their empty values. Every write that starts a
// delivery (makes a run RUNNING) empties them: what the previous delivery
// left belongs to its attempt, not to the delivery under way (see
// sundial.Run.StartDelivery).
var startClears = [][2]string{{"http_status", "0"}, {"response_body", "''"}, {"error", "''"}, {"message", "''"},
	{"attempt_on_run", "FALSE"}}

// StartClears returns the SET assignments that empty what the previous
// delivery left on a run (each column to 0 or the empty string), each
// column prefixed by prefix ("r." in a multi-table UPDATE).
func StartClears(prefix string) string {
	var b strings.Builder
	for i, c := range startClears {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(prefix + c[0] + " = " + c[1])
	}
	return b.String()
}

// StartClearsIf is StartClears for the rows where the SQL condition cond
// holds (the runs a claim starts), the others keeping their values.
func StartClearsIf(cond string) string {
	var b strings.Builder
	for i, c := range startClears {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c[0] + " = CASE WHEN " + cond + " THEN " + c[1] + " ELSE " + c[0] + " END")
	}
	return b.String()
}

// TakenCond selects, among the runs of the tasks a sweep of missed fires
// looks at, those later than its first parameter that the sweep must not
// rewind their task before (sundial.UnplanMissed's taken): SCHEDULE runs
// neither Planned nor a calendar's skip. The runs_task_scheduled index
// serves it, a range of each task's recent runs.
const TakenCond = `trigger_type = 'SCHEDULE' AND NOT (status = 'SCHEDULED' AND deliveries = 0)
	AND NOT (status = 'SKIPPED' AND skip_reason = 'CALENDAR')`

// TakenFrom returns the IDs of the tasks of runs, ascending and each once,
// and the earliest scheduled time among runs: what a sweep of missed fires
// asks TakenCond about.
func TakenFrom(runs []*sundial.Run) ([]int64, time.Time) {
	ids := make([]int64, 0, len(runs))
	var from time.Time
	for i, r := range runs {
		ids = append(ids, r.TaskID)
		if i == 0 || r.ScheduledTime.Before(from) {
			from = r.ScheduledTime
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), from
}

// ScanTaken reads rows of (task_id, MAX(scheduled_at)) from a TakenCond
// query into the taken of sundial.UnplanMissed.
func ScanTaken(rows *sql.Rows, err error) (map[int64]time.Time, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	taken := map[int64]time.Time{}
	for rows.Next() {
		var id, at int64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, err
		}
		taken[id] = FromMicros(at)
	}
	return taken, rows.Err()
}
