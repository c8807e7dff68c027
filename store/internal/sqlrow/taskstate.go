package sqlrow

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// TaskStateCols are the columns of task_state, in the order ScanTaskState
// reads them and TaskStateArgs gives them.
const TaskStateCols = `task_id, last_success_at, last_failure_at, consecutive_failures, failing_since, lags, updated_at`

// TaskStateUpdateCols are the columns of task_state that a save writes
// back: all but task_id.
var TaskStateUpdateCols = []string{"last_success_at", "last_failure_at", "consecutive_failures", "failing_since",
	"lags", "updated_at"}

// ScanTaskState reads a row of TaskStateCols.
func ScanTaskState(sc Scanner) (*sundial.TaskState, error) {
	var (
		s                      sundial.TaskState
		success, failure, from sql.NullInt64
		lags                   string
		updated                int64
	)
	if err := sc.Scan(&s.TaskID, &success, &failure, &s.ConsecutiveFailures, &from, &lags, &updated); err != nil {
		return nil, err
	}
	s.LastSuccessAt, s.LastFailureAt, s.FailingSince = TimePtr(success), TimePtr(failure), TimePtr(from)
	s.UpdatedAt = FromMicros(updated)
	var err error
	if s.Lags, err = DecodeLags(lags); err != nil {
		return nil, fmt.Errorf("decode the lags of task %d: %w", s.TaskID, err)
	}
	return &s, nil
}

// TaskStateArgs are the values of TaskStateUpdateCols for s, as
// database/sql drivers take them.
func TaskStateArgs(s *sundial.TaskState) []any {
	return []any{NullMicros(s.LastSuccessAt), NullMicros(s.LastFailureAt), s.ConsecutiveFailures,
		NullMicros(s.FailingSince), EncodeLags(s.Lags), Micros(s.UpdatedAt)}
}

// EncodeLags writes lag samples (by scheduled time) as the lags column
// holds them: for each fire, its scheduled time in milliseconds (since the
// Unix epoch for the first, since the previous fire's for the others) and
// its lag in milliseconds, "1767225600000:12,1000:9,1000:15": about 10
// bytes a fire for a task firing every second. "" for none.
func EncodeLags(ls []sundial.LagSample) string {
	b := make([]byte, 0, 16+10*len(ls))
	var prev int64
	for i, l := range ls {
		ms := l.Scheduled.UnixMilli()
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, ms-prev, 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, l.Lag.Milliseconds(), 10)
		prev = ms
	}
	return string(b)
}

// DecodeLags reads what EncodeLags wrote.
func DecodeLags(s string) ([]sundial.LagSample, error) {
	if s == "" {
		return nil, nil
	}
	out := make([]sundial.LagSample, 0, strings.Count(s, ",")+1)
	var prev int64
	for pair := range strings.SplitSeq(s, ",") {
		at, lag, ok := strings.Cut(pair, ":")
		d, err1 := strconv.ParseInt(at, 10, 64)
		l, err2 := strconv.ParseInt(lag, 10, 64)
		if !ok || err1 != nil || err2 != nil || (len(out) > 0 && d < 0) {
			return nil, fmt.Errorf("%q is not a fire's time and lag", pair)
		}
		prev += d
		out = append(out, sundial.LagSample{Scheduled: time.UnixMilli(prev).UTC(), Lag: time.Duration(l) * time.Millisecond})
	}
	return out, nil
}

// LastRunCols are the columns of a run that ScanLastRun reads: its task's
// ID, then what sundial.LastRun holds.
const LastRunCols = `task_id, id, status, skip_reason, scheduled_at, finished_at`

// ScanLastRun reads a row of LastRunCols.
func ScanLastRun(sc Scanner) (int64, *sundial.LastRun, error) {
	var (
		taskID         int64
		r              sundial.LastRun
		status, reason string
		scheduled      int64
		finished       sql.NullInt64
	)
	if err := sc.Scan(&taskID, &r.ID, &status, &reason, &scheduled, &finished); err != nil {
		return 0, nil, err
	}
	r.Status, r.SkipReason = sundial.RunStatus(status), sundial.SkipReason(reason)
	r.ScheduledTime, r.FinishedAt = FromMicros(scheduled), TimePtr(finished)
	return taskID, &r, nil
}
