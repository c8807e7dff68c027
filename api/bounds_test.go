package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestTaskBounds: start_at, end_at, max_runs and jitter_seconds are
// written and answered; next_fire_time keeps within the bounds; a task
// with no fire left within them is COMPLETED at once.
func TestTaskBounds(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	now := b.now()
	start, end := now.Add(time.Hour+500*time.Millisecond), now.Add(2*time.Hour)
	got := b.create(t, task("bounded", map[string]any{"cron_expr": "* * * * * *",
		"start_at": start.Format(time.RFC3339Nano), "end_at": end.Format(time.RFC3339),
		"max_runs": 10, "jitter_seconds": 30}))
	if got.StartAt == nil || !got.StartAt.Equal(start) || got.EndAt == nil || !got.EndAt.Equal(end) ||
		got.MaxRuns != 10 || got.JitterSeconds != 30 || got.FireCount != 0 || got.Status != sundial.TaskEnabled {
		t.Errorf("created = %+v", got)
	}
	if first := now.Add(time.Hour + time.Second); got.NextFireTime == nil || !got.NextFireTime.Equal(first) {
		t.Errorf("next_fire_time = %v, want the first second after start_at, %s", got.NextFireTime, first)
	}
	checkTask(t, b.get(t, got.ID), got)

	// end_at passed: no fire left, COMPLETED.
	done := b.create(t, task("ended", map[string]any{"cron_expr": "* * * * * *",
		"end_at": now.Add(-time.Minute).Format(time.RFC3339)}))
	if done.Status != sundial.TaskCompleted || done.NextFireTime != nil {
		t.Errorf("task created past its end_at = %s, next fire %v; want COMPLETED, none", done.Status, done.NextFireTime)
	}
	rec := b.do(t, http.MethodPost, taskPath(done.ID, "/enable"), nil)
	wantError(t, rec, http.StatusConflict, errorDetail{Code: sundial.EConflict, Field: "status"})
	// A later end_at runs it again.
	var again sundial.Task
	want(t, b.patch(t, done.ID, fmt.Sprintf(`{"end_at":%q}`, now.Add(time.Hour).Format(time.RFC3339))), http.StatusOK, &again)
	if again.Status != sundial.TaskEnabled || again.NextFireTime == nil {
		t.Errorf("task given a later end_at = %s, next fire %v; want ENABLED with a next fire", again.Status, again.NextFireTime)
	}
}

// TestTaskMaxRunsCounted: fire_count is the planner's; an edit keeps it,
// a task whose count reached max_runs has no next fire and ends COMPLETED
// when written, and a larger max_runs gives it fires again.
func TestTaskMaxRunsCounted(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := context.Background()
	now := b.now()
	tk := b.create(t, task("counted", map[string]any{"cron_expr": "* * * * * *", "max_runs": 2}))
	// The planner plans (and counts) both fires.
	_, err := b.store.PlanDue(ctx, now.Add(10*time.Second), 10, "", now, func(t *sundial.Task) sundial.Plan {
		t.Count(*t.NextFireTime)
		t.Count(t.NextFireTime.Add(time.Second))
		return sundial.Plan{}
	})
	if err != nil {
		t.Fatal(err)
	}
	got := b.get(t, tk.ID)
	if got.FireCount != 2 || got.NextFireTime == nil || !got.NextFireTime.Equal(now.Add(time.Second)) {
		t.Errorf("after 2 fires planned: fire_count %d, next fire %v; want 2, the first (still to go out)", got.FireCount, got.NextFireTime)
	}
	b.setNow(now.Add(time.Minute)) // both fires have gone
	if got = b.get(t, tk.ID); got.NextFireTime != nil {
		t.Errorf("next_fire_time after the last fire = %v, want none", got.NextFireTime)
	}
	var patched sundial.Task
	want(t, b.patch(t, tk.ID, `{"description":"edited"}`), http.StatusOK, &patched)
	if patched.FireCount != 2 || patched.Status != sundial.TaskCompleted || patched.NextFireTime != nil {
		t.Errorf("edited = %s, fire_count %d, next fire %v; want COMPLETED, 2, none", patched.Status, patched.FireCount, patched.NextFireTime)
	}
	// Sent back as GET answers it, the COMPLETED task is unchanged.
	cur := b.get(t, tk.ID)
	var put sundial.Task
	want(t, b.do(t, http.MethodPut, taskPath(tk.ID), cur), http.StatusOK, &put)
	if put.Version != patched.Version || put.Status != sundial.TaskCompleted {
		t.Errorf("sent back: version %d, %s; want %d, COMPLETED", put.Version, put.Status, patched.Version)
	}
	want(t, b.patch(t, tk.ID, `{"max_runs":3}`), http.StatusOK, &patched)
	if patched.FireCount != 2 || patched.Status != sundial.TaskEnabled || patched.NextFireTime == nil {
		t.Errorf("given max_runs 3 = %s, fire_count %d, next fire %v; want ENABLED, 2, a next fire", patched.Status, patched.FireCount, patched.NextFireTime)
	}
}

// TestTaskBoundsRefused: bad bounds are 400s naming the field, and create
// nothing.
func TestTaskBoundsRefused(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	now := b.now()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"end_at before start_at", map[string]any{"start_at": at(time.Hour), "end_at": at(time.Minute)}, "end_at"},
		{"end_at equal to start_at", map[string]any{"start_at": at(time.Hour), "end_at": at(time.Hour)}, "end_at"},
		{"start_at not a time", map[string]any{"start_at": "tomorrow"}, "start_at"},
		{"end_at a number", map[string]any{"end_at": 1700000000}, "end_at"},
		{"max_runs negative", map[string]any{"max_runs": -1}, "max_runs"},
		{"max_runs not an integer", map[string]any{"max_runs": "3"}, "max_runs"},
		{"jitter_seconds over an hour", map[string]any{"jitter_seconds": 3601}, "jitter_seconds"},
		{"jitter_seconds negative", map[string]any{"jitter_seconds": -5}, "jitter_seconds"},
		{"one-off with max_runs", map[string]any{"cron_expr": nil, "delay_seconds": 60, "max_runs": 2}, "max_runs"},
		{"one-off with end_at", map[string]any{"cron_expr": nil, "delay_seconds": 60, "end_at": at(time.Hour)}, "end_at"},
		{"fire_count", map[string]any{"fire_count": 3}, "fire_count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := b.do(t, http.MethodPost, "/api/v1/tasks", task("refused", tc.body))
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400; body %s", rec.Code, rec.Body)
			}
			if e := errorOf(t, rec); e.Code != sundial.EInvalid || e.Field != tc.field {
				t.Errorf("error = %+v, want invalid %s", e, tc.field)
			}
		})
	}
	var list struct {
		Items []sundial.Task `json:"items"`
	}
	want(t, b.do(t, http.MethodGet, "/api/v1/tasks", nil), http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Errorf("%d tasks after refused creates, want none", len(list.Items))
	}
}

// TestTaskUpcomingBounded: the upcoming fires of a task stop at its
// end_at and at its max_runs.
func TestTaskUpcomingBounded(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	now := b.now()
	for _, tc := range []struct {
		name string
		body map[string]any
		want int
	}{
		{"max_runs", map[string]any{"cron_expr": "* * * * * *", "max_runs": 3}, 3},
		{"end_at", map[string]any{"cron_expr": "*/10 * * * * *", "end_at": now.Add(time.Minute).Format(time.RFC3339)}, 6},
		{"unbounded", map[string]any{"cron_expr": "* * * * * *"}, 10},
	} {
		tk := b.create(t, task("upcoming-"+tc.name, tc.body))
		var got upcomingResponse
		want(t, b.do(t, http.MethodGet, taskPath(tk.ID, "/upcoming?limit=10"), nil), http.StatusOK, &got)
		if len(got.Next) != tc.want {
			t.Errorf("%s: %d upcoming fires %v, want %d", tc.name, len(got.Next), got.Next, tc.want)
		}
	}
}
