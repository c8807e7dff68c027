package scheduler_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/scheduler"
)

// task reads a task back from the store.
func (b *bundle) task(t *testing.T, id int64) *sundial.Task {
	t.Helper()
	tk, err := b.store.TaskGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestStartAt: a task whose start_at is ahead fires at none of its times
// before it, then on every second from it; an "@every" schedule counts
// its intervals from start_at.
func TestStartAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, expr string
		after      time.Duration // start_at, after the test's start
		want       []time.Duration
	}{
		{"on a second", "* * * * * *", 10 * time.Second, []time.Duration{10, 11, 12, 13, 14, 15}},
		{"between seconds", "* * * * * *", 10*time.Second + 300*time.Millisecond, []time.Duration{11, 12, 13, 14, 15}},
		{"every", "@every 2s", 10*time.Second + 300*time.Millisecond, nil}, // filled in below
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setup(t, scheduler.Config{})
				b.start()
				start := time.Now()
				startAt := start.Add(tc.after)
				tk := b.addTask(t, tc.expr, func(tk *sundial.Task) { tk.StartAt = &startAt })
				waitUntil(start.Add(15*time.Second + 500*time.Millisecond))
				b.stop(t)

				var want []time.Time
				for _, d := range tc.want {
					want = append(want, start.Add(d*time.Second))
				}
				if tc.expr == "@every 2s" {
					want = []time.Time{startAt, startAt.Add(2 * time.Second), startAt.Add(4 * time.Second)}
				}
				calls := b.target.snapshot()
				if len(calls) != len(want) {
					t.Fatalf("%d deliveries, want %d (%v): %+v", len(calls), len(want), want, calls)
				}
				for i, c := range calls {
					if !c.scheduled.Equal(want[i]) || !c.at.Equal(want[i]) {
						t.Errorf("delivery %d: the fire of %s at %s, want both %s", i, c.scheduled, c.at, want[i])
					}
				}
				if got := b.task(t, tk.ID); got.Status != sundial.TaskEnabled || got.FireCount < len(want) {
					t.Errorf("task = %s with fire_count %d, want ENABLED with at least %d", got.Status, got.FireCount, len(want))
				}
			})
		})
	}
}

// TestEndAt: a task fires at none of its times after end_at (a time on the
// bound fires), and ends COMPLETED with its last fire, as a one-off task
// ends with its one, whatever that fire's outcome.
func TestEndAt(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		name := "success"
		if fail {
			name = "failure"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setup(t, scheduler.Config{})
				if fail {
					b.target.status = "FAILED"
				}
				b.start()
				start := time.Now()
				endAt := start.Add(5 * time.Second)
				tk := b.addTask(t, "* * * * * *", func(tk *sundial.Task) { tk.EndAt = &endAt })
				waitUntil(start.Add(4*time.Second + 500*time.Millisecond))
				if got := b.task(t, tk.ID); got.Status != sundial.TaskEnabled {
					t.Fatalf("task before its last fire = %s, want ENABLED", got.Status)
				}
				waitUntil(start.Add(10 * time.Second))
				b.stop(t)

				calls := b.target.snapshot()
				if len(calls) != 5 || !calls[4].scheduled.Equal(endAt) {
					t.Fatalf("%d deliveries, want 5, the last at end_at %s: %+v", len(calls), endAt, calls)
				}
				got := b.task(t, tk.ID)
				if got.Status != sundial.TaskCompleted || got.NextFireTime != nil || got.FireCount != 5 {
					t.Errorf("task = %s, next fire %v, fire_count %d; want COMPLETED, none, 5", got.Status, got.NextFireTime, got.FireCount)
				}
				if got.NextFire(time.Now()) != nil {
					t.Errorf("next_fire_time of the completed task = %v, want none", got.NextFire(time.Now()))
				}
			})
		})
	}
}

// TestEndAtPassedWhileDown: a task whose end_at passed while no node ran
// (every fire missed, counted in a MISFIRE record) ends COMPLETED with the
// plan that counts them: no run is left to end it.
func TestEndAtPassedWhileDown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		start := time.Now()
		endAt := start.Add(10 * time.Second)
		tk := b.addTask(t, "* * * * * *", func(tk *sundial.Task) { tk.EndAt = &endAt })
		waitUntil(start.Add(5 * time.Minute))
		b.start()
		waitUntil(start.Add(5*time.Minute + 5*time.Second))
		b.stop(t)

		if calls := b.target.snapshot(); len(calls) != 0 {
			t.Fatalf("deliveries %+v, want none: every fire was missed", calls)
		}
		rs := b.runs(t, tk.ID)
		if len(rs) != 1 || rs[0].SkipReason != sundial.SkipMisfire || rs[0].MissedCount != 10 {
			t.Fatalf("runs = %+v, want one MISFIRE record of 10 fires", summarize(rs))
		}
		if got := b.task(t, tk.ID); got.Status != sundial.TaskCompleted || got.NextFireTime != nil || got.FireCount != 0 {
			t.Errorf("task = %s, next fire %v, fire_count %d; want COMPLETED, none, 0", got.Status, got.NextFireTime, got.FireCount)
		}
	})
}

// TestMaxRuns: a task with max_runs 3 fires exactly 3 times, then ends
// COMPLETED with the third: on a schedule planned fire by fire, on one
// planned ahead (every second), and with two nodes planning and claiming
// on one database, where each fire is counted once.
func TestMaxRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, expr string
		nodes      int
		every      time.Duration
	}{
		{"every 10s", "*/10 * * * * *", 1, 10 * time.Second},
		{"every second", "* * * * * *", 1, time.Second},
		{"every second, two nodes", "* * * * * *", 2, time.Second},
		{"every 10s, two nodes", "*/10 * * * * *", 2, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setup(t, scheduler.Config{})
				b.start()
				if tc.nodes == 2 {
					stop := startNode(t, b, b.store, "node-b", nil)
					defer stop()
				}
				start := time.Now()
				tk := b.addTask(t, tc.expr, func(tk *sundial.Task) { tk.MaxRuns = 3 })
				waitUntil(start.Add(2*time.Minute + 500*time.Millisecond))
				b.stop(t)

				calls := b.target.snapshot()
				if len(calls) != 3 {
					t.Fatalf("%d deliveries, want 3: %+v", len(calls), calls)
				}
				for i, c := range calls {
					if want := start.Add(time.Duration(i+1) * tc.every); !c.scheduled.Equal(want) || !c.at.Equal(want) {
						t.Errorf("delivery %d: the fire of %s at %s, want both %s", i, c.scheduled, c.at, want)
					}
				}
				if rs := b.runs(t, tk.ID); len(rs) != 3 {
					t.Errorf("%d runs, want 3: %+v", len(rs), summarize(rs))
				}
				got := b.task(t, tk.ID)
				if got.Status != sundial.TaskCompleted || got.FireCount != 3 || got.NextFireTime != nil {
					t.Errorf("task = %s, fire_count %d, next fire %v; want COMPLETED, 3, none", got.Status, got.FireCount, got.NextFireTime)
				}
			})
		})
	}
}

// TestMaxRunsManualNotCounted: a manual trigger is not one of a task's
// max_runs fires.
func TestMaxRunsManualNotCounted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.start()
		start := time.Now()
		tk := b.addTask(t, "*/10 * * * * *", func(tk *sundial.Task) { tk.MaxRuns = 2 })
		waitUntil(start.Add(2 * time.Second))
		if _, err := b.sched.Trigger(context.Background(), tk.ID, nil); err != nil {
			t.Fatal(err)
		}
		waitUntil(start.Add(time.Minute))
		b.stop(t)

		var scheduled, manual int
		for _, c := range b.target.snapshot() {
			switch c.trigger {
			case "SCHEDULE":
				scheduled++
			case "MANUAL":
				manual++
			}
		}
		if scheduled != 2 || manual != 1 {
			t.Errorf("%d scheduled and %d manual deliveries, want 2 and 1", scheduled, manual)
		}
		if got := b.task(t, tk.ID); got.Status != sundial.TaskCompleted || got.FireCount != 2 {
			t.Errorf("task = %s with fire_count %d, want COMPLETED with 2", got.Status, got.FireCount)
		}
	})
}

// TestJitter: each fire of a task with jitter_seconds is delivered a random
// while in [0, jitter) after its time, decided when it was planned and
// recorded as its run's due_at: with two nodes, whichever delivers a run
// delivers it at that due_at, and the fire's lag counts from it.
func TestJitter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.start()
		stop := startNode(t, b, b.store, "node-b", nil)
		start := time.Now()
		tk := b.addTask(t, "*/10 * * * * *", func(tk *sundial.Task) { tk.JitterSeconds = 5 })
		waitUntil(start.Add(5*time.Minute + 5*time.Second))
		stop()
		b.stop(t)

		calls := b.target.snapshot()
		if len(calls) != 30 {
			t.Fatalf("%d deliveries in 5 minutes, want 30", len(calls))
		}
		byRun := map[int64]call{}
		for _, c := range calls {
			if _, dup := byRun[c.runID]; dup {
				t.Fatalf("run %d delivered twice", c.runID)
			}
			byRun[c.runID] = c
		}
		delays := map[time.Duration]bool{}
		for _, r := range b.runsBefore(t, tk.ID, start.Add(5*time.Minute+time.Second)) {
			c, ok := byRun[r.ID]
			if !ok {
				t.Fatalf("run %d (%s) not delivered", r.ID, r.Status)
			}
			d := r.DueAt.Sub(r.ScheduledTime)
			if d < 0 || d >= 5*time.Second {
				t.Errorf("run %d: due %s after its time, want within [0, 5s)", r.ID, d)
			}
			if !c.at.Equal(r.DueAt) || !c.scheduled.Equal(r.ScheduledTime) {
				t.Errorf("run %d: the fire of %s delivered at %s, want at its due_at %s", r.ID, c.scheduled, c.at, r.DueAt)
			}
			delays[d] = true
		}
		if len(delays) < 15 {
			t.Errorf("%d distinct delays among 30 fires: not random", len(delays))
		}
		st, _, err := b.store.TaskStates(context.Background(), []int64{tk.ID}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if s := st[tk.ID]; s == nil || len(s.Lags) == 0 {
			t.Fatalf("task state = %+v, want lags", s)
		} else {
			for _, l := range s.Lags {
				if l.Lag != 0 {
					t.Errorf("lag %s of the fire of %s, want 0: lag counts from the jittered due time", l.Lag, l.Scheduled)
				}
			}
		}
	})
}

// TestMaxRunsAcrossOutage: the fires of a task with max_runs planned ahead
// and then missed in an outage are counted once: on the restart they are
// unplanned and counted missed (NONE) or run as catch-up (FULL), never
// planned as new fires past max_runs, and the task ends COMPLETED.
func TestMaxRunsAcrossOutage(t *testing.T) {
	t.Parallel()
	for _, mode := range []sundial.CatchUpMode{sundial.CatchUpNone, sundial.CatchUpFull} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setup(t, scheduler.Config{})
				start := time.Now()
				tk := b.addTask(t, "* * * * * *", func(tk *sundial.Task) { tk.MaxRuns, tk.CatchUpMode = 6, mode })
				b.start()
				waitUntil(start.Add(2*time.Second + 500*time.Millisecond))
				b.stop(t) // fires 1 and 2 went out; 3 to 6 stay planned
				// Past the misfire threshold (a minute) of fires 3 to 6.
				waitUntil(start.Add(3 * time.Minute))

				stop := startNode(t, b, b.store, "node-restarted", nil)
				waitUntil(start.Add(4 * time.Minute))
				stop()

				scheduled, caughtUp, missed := 0, 0, 0
				for _, r := range b.runs(t, tk.ID) {
					switch {
					case r.SkipReason == sundial.SkipMisfire:
						missed += r.MissedCount
					case r.Trigger == sundial.TriggerCatchUp:
						caughtUp++
					case r.Trigger == sundial.TriggerSchedule:
						scheduled++
					}
				}
				want := [3]int{2, 0, 4}
				if mode == sundial.CatchUpFull {
					want = [3]int{2, 4, 0}
				}
				if got := [3]int{scheduled, caughtUp, missed}; got != want {
					t.Errorf("%d scheduled, %d caught up, %d missed runs; want %v", scheduled, caughtUp, missed, want)
				}
				if n := len(b.target.snapshot()); n != want[0]+want[1] {
					t.Errorf("%d deliveries, want %d", n, want[0]+want[1])
				}
				got := b.task(t, tk.ID)
				if got.Status != sundial.TaskCompleted || got.FireCount != 6 || got.NextFireTime != nil {
					t.Errorf("task = %s, fire_count %d, next fire %v; want COMPLETED, 6, none", got.Status, got.FireCount, got.NextFireTime)
				}
			})
		})
	}
}
