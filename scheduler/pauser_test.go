package scheduler_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/scheduler"
)

// TestAutoPause: a task with pause_after_failures 3 pauses itself at its
// third failure in a row, not before: a success resets the count and a run
// cancelled by hand does not count. The task is disabled by "sundial" with
// the reason, the hook is told once, and nothing fires after.
func TestAutoPause(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var told []sundial.AutoPaused
		b := setup(t, scheduler.Config{OnAutoPause: func(p sundial.AutoPaused) {
			mu.Lock()
			told = append(told, p)
			mu.Unlock()
		}})
		b.start()
		tk := b.addTask(t, "*/10 * * * * *", func(tk *sundial.Task) { tk.PauseAfterFailures = 3 })
		first := *tk.NextFireTime
		fire := func(k int) time.Time { return first.Add(time.Duration(k-1) * 10 * time.Second) }
		setFailing := func(on bool) {
			b.target.mu.Lock()
			defer b.target.mu.Unlock()
			b.target.failTask = 0
			if on {
				b.target.failTask = tk.ID
			}
		}
		status := func() *sundial.Task {
			t.Helper()
			got, err := b.store.TaskGet(context.Background(), tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		after := func(k int) {
			waitUntil(fire(k).Add(2 * time.Second))
			synctest.Wait()
		}

		setFailing(true)
		after(2) // fires 1 and 2 failed
		if got := status(); got.Status != sundial.TaskEnabled {
			t.Fatalf("after 2 failures: %s", got.Status)
		}
		setFailing(false)
		after(3) // fire 3 succeeded: the count starts again
		setFailing(true)
		after(5) // fires 4 and 5 failed: 2 in a row
		if got := status(); got.Status != sundial.TaskEnabled {
			t.Fatalf("after a success and 2 failures: %s (%s)", got.Status, got.DisabledReason)
		}
		// Fire 6, planned, is cancelled by hand: it does not count.
		var six *sundial.Run
		for _, r := range b.runs(t, tk.ID) {
			if r.ScheduledTime.Equal(fire(6)) {
				six = r
			}
		}
		if six == nil {
			t.Fatalf("fire 6 (%s) is not planned: %+v", fire(6), summarize(b.runs(t, tk.ID)))
		}
		if _, err := b.sched.Cancel(context.Background(), six.ID); err != nil {
			t.Fatal(err)
		}
		after(6)
		if got := status(); got.Status != sundial.TaskEnabled {
			t.Fatalf("after 2 failures and a cancel: %s (%s)", got.Status, got.DisabledReason)
		}
		after(7) // fire 7 failed: the third in a row
		got := status()
		if got.Status != sundial.TaskDisabled || got.DisabledBy != sundial.AutoPauseBy || got.DisabledAt == nil ||
			!strings.Contains(got.DisabledReason, "paused after 3 consecutive failures") ||
			!strings.Contains(got.DisabledReason, "HTTP 500") {
			t.Fatalf("after the third failure: %s by %q: %q", got.Status, got.DisabledBy, got.DisabledReason)
		}
		delivered := len(b.target.snapshot())
		if delivered != 6 {
			t.Errorf("%d deliveries, want 6 (fires 1 to 7 less the cancelled one)", delivered)
		}
		after(12)
		if n := len(b.target.snapshot()); n != delivered {
			t.Errorf("%d deliveries after the pause, want none", n-delivered)
		}
		mu.Lock()
		if len(told) != 1 || told[0].Task.ID != tk.ID || len(told[0].Runs) != 3 || !told[0].Runs[0].ScheduledTime.Equal(fire(7)) {
			t.Errorf("the hook was told %+v", told)
		}
		mu.Unlock()
		b.stop(t)
	})
}
