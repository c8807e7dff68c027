package sqlstore

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

func TestRunFilter(t *testing.T) {
	t.Parallel()
	dollar := func(n int) string { return "$" + strconv.Itoa(n) }
	from, to := time.Unix(10, 0), time.Unix(20, 0)
	now, before := time.Unix(15, 0), time.Unix(12, 0)
	all := sundial.RunListParams{TaskID: 7, Status: []sundial.RunStatus{sundial.RunQueued}, From: from, To: to,
		ExcludePlannedAfter: now, BeforeTime: before, BeforeID: 9}
	for _, tc := range []struct {
		name  string
		f     sundial.RunListParams
		ph    sqlrow.Placeholder
		where string
		args  []any
	}{
		{"none", sundial.RunListParams{}, sqlrow.Question, "", nil},
		{"question", all, sqlrow.Question,
			"task_id = ? AND status IN (?) AND scheduled_at >= ? AND scheduled_at < ? AND " +
				"(status <> 'SCHEDULED' OR deliveries > 0 OR scheduled_at <= ?) AND " +
				"scheduled_at <= ? AND (scheduled_at < ? OR id < ?)",
			[]any{int64(7), "QUEUED", sqlrow.Micros(from), sqlrow.Micros(to), sqlrow.Micros(now), sqlrow.Micros(before), sqlrow.Micros(before), int64(9)}},
		{"dollar", sundial.RunListParams{Status: []sundial.RunStatus{sundial.RunQueued, sundial.RunFailed},
			BeforeTime: before, BeforeID: 9}, dollar,
			"status IN ($1, $2) AND scheduled_at <= $3 AND (scheduled_at < $4 OR id < $5)",
			[]any{"QUEUED", "FAILED", sqlrow.Micros(before), sqlrow.Micros(before), int64(9)}},
	} {
		where, args := runFilter(tc.f, tc.ph)
		if where != tc.where || !slices.Equal(args, tc.args) {
			t.Errorf("%s: runFilter = %q %v, want %q %v", tc.name, where, args, tc.where, tc.args)
		}
	}
}
