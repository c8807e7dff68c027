package sqlstore

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/label"
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
		where, args := runFilter(tc.f, tc.ph, nil)
		if where != tc.where || !slices.Equal(args, tc.args) {
			t.Errorf("%s: runFilter = %q %v, want %q %v", tc.name, where, args, tc.where, tc.args)
		}
	}
}

func TestSelectorCond(t *testing.T) {
	t.Parallel()
	sel, err := label.Parse("a=x,b!=y,c in (p,q),d notin (r),e,!f")
	if err != nil {
		t.Fatal(err)
	}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "?"
	}
	value := func(key string) string { return "L(" + arg(key) + ")" }
	got := selectorCond(sel, value, arg)
	want := "L(?) IN (?) AND (L(?) IS NULL OR L(?) NOT IN (?)) AND L(?) IN (?, ?) AND " +
		"(L(?) IS NULL OR L(?) NOT IN (?)) AND L(?) IS NOT NULL AND L(?) IS NULL"
	// Each placeholder's argument, in the order the placeholders stand.
	wantArgs := []any{"a", "x", "b", "b", "y", "c", "p", "q", "d", "d", "r", "e", "f"}
	if got != want || !slices.Equal(args, wantArgs) {
		t.Errorf("selectorCond = %q %v, want %q %v", got, args, want, wantArgs)
	}
}

func TestRunFilterLabels(t *testing.T) {
	t.Parallel()
	sel, _ := label.Parse("team=payments")
	labelOf := func(col, key string, arg func(any) string) string { return "L(" + col + ", " + arg(key) + ")" }
	where, args := runFilter(sundial.RunListParams{Trigger: []sundial.Trigger{sundial.TriggerManual}, FinishedFrom: time.Unix(1, 0),
		FinishedTo: time.Unix(2, 0), Selector: sel}, sqlrow.Question, labelOf)
	want := "trigger_type IN (?) AND finished_at >= ? AND finished_at < ? AND " +
		"task_id IN (SELECT t.id FROM tasks AS t WHERE L(t.labels_json, ?) IN (?))"
	wantArgs := []any{"MANUAL", sqlrow.Micros(time.Unix(1, 0)), sqlrow.Micros(time.Unix(2, 0)), "team", "payments"}
	if where != want || !slices.Equal(args, wantArgs) {
		t.Errorf("runFilter = %q %v, want %q %v", where, args, want, wantArgs)
	}
}
