package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// planAhead plans every due fire of every task up to until, as the
// planner does with its lookahead: each fire becomes a SCHEDULED run and
// the task's cursor moves past until.
func planAhead(t *testing.T, b *storeBundle, until time.Time) {
	t.Helper()
	_, err := b.store.PlanDue(t.Context(), until, 100, "", b.now(), func(tk *sundial.Task) sundial.Plan {
		var p sundial.Plan
		next := tk.NextFireTime
		for next != nil && !next.After(until) {
			p.Runs = append(p.Runs, &sundial.Run{TaskID: tk.ID, FireKey: sundial.ScheduledFireKey(*next),
				Trigger: sundial.TriggerSchedule, ScheduledTime: *next, Status: sundial.RunScheduled, Attempt: 1,
				CreatedAt: b.now(), UpdatedAt: b.now()})
			if tk.OneOff() {
				next = nil
				break
			}
			next = tk.NextAfter(*next)
		}
		p.Next = next
		return p
	})
	if err != nil {
		t.Fatalf("PlanDue: %v", err)
	}
}

// wantNextFire fails the test unless the task's answers (GET, the list)
// show next_fire_time want.
func wantNextFire(t *testing.T, b *storeBundle, id int64, next *time.Time) {
	t.Helper()
	if got := b.get(t, id).NextFireTime; !sameTime(got, next) {
		t.Errorf("GET next_fire_time = %v, want %v", got, next)
	}
	var list listResponse[*sundial.Task]
	want(t, b.do(t, http.MethodGet, "/api/v1/tasks", nil), http.StatusOK, &list)
	for _, tk := range list.Items {
		if tk.ID == id && !sameTime(tk.NextFireTime, next) {
			t.Errorf("list next_fire_time = %v, want %v", tk.NextFireTime, next)
		}
	}
}

// TestNextFireTimePlannedAhead: once the planner has planned a task's
// fires ahead, its next_fire_time is still its next fire, not the first
// fire the planner has yet to plan.
func TestNextFireTimePlannedAhead(t *testing.T) {
	t.Parallel()
	onEveryBackend(t, func(t *testing.T, b *storeBundle) {
		start := time.Date(2026, 1, 1, 0, 0, 0, 500_000_000, time.UTC)
		b.setNow(start)
		every := b.create(t, task("every-second", map[string]any{"cron_expr": "* * * * * *"}))
		once := b.create(t, oneOffBody(map[string]any{"delay_seconds": 5}))
		sec := func(n int) *time.Time { return timeP(start.Truncate(time.Second).Add(time.Duration(n) * time.Second)) }
		wantNextFire(t, b, every.ID, sec(1))
		runAt := start.Add(5 * time.Second)
		wantNextFire(t, b, once.ID, &runAt)

		// The planner plans ten seconds ahead (the default lookahead).
		planAhead(t, b, start.Add(10*time.Second))
		if got, err := b.store.TaskGet(t.Context(), every.ID); err != nil || !sameTime(got.NextFireTime, sec(11)) {
			t.Fatalf("the planner's cursor is %v (%v), want %v", got.NextFireTime, err, sec(11))
		}
		wantNextFire(t, b, every.ID, sec(1))
		wantNextFire(t, b, once.ID, &runAt)

		// Three seconds on, the fires before are gone.
		b.setNow(start.Add(3 * time.Second))
		wantNextFire(t, b, every.ID, sec(4))
		wantNextFire(t, b, once.ID, &runAt)

		// Enabling an enabled task changes nothing, and answers with the
		// next fire too.
		var got sundial.Task
		want(t, b.do(t, http.MethodPost, taskPath(every.ID, "/enable"), nil), http.StatusOK, &got)
		if !sameTime(got.NextFireTime, sec(4)) {
			t.Errorf("enable: next_fire_time = %v, want %v", got.NextFireTime, sec(4))
		}

		// The one-off task's fire has gone: it has no next fire.
		b.setNow(start.Add(6 * time.Second))
		wantNextFire(t, b, once.ID, nil)

		// Disabled, a task has no next fire.
		want(t, b.do(t, http.MethodPost, taskPath(every.ID, "/disable"), nil), http.StatusOK, &got)
		if got.NextFireTime != nil {
			t.Errorf("disable: next_fire_time = %v, want null", got.NextFireTime)
		}
		wantNextFire(t, b, every.ID, nil)
	})
}
