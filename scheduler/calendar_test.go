package scheduler_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/scheduler"
)

// TestCalendarSkips: a per-second task whose calendar covers 2000-01-02
// fires up to midnight, then records every fire of that day SKIPPED with
// reason CALENDAR (one row each, not delivered, not counted as fires);
// once the calendar no longer covers the day, the fires not yet planned
// run again, on every node's next pass. Every second is accounted for
// exactly once. The task is planned 30 s ahead, not the default 2 min,
// so that the fires not yet planned come within a minute and a half.
func TestCalendarSkips(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{PlanHorizon: 30 * time.Second})
		ctx := context.Background()
		midnight := time.Date(2000, 1, 2, 0, 0, 0, 0, time.UTC)
		waitUntil(midnight.Add(-4*time.Second - 500*time.Millisecond))
		now := time.Now()
		cal := &sundial.Calendar{Name: "jan2", Entries: []string{"1999-12-25..1999-12-31", "2000-01-02"}, CreatedAt: now, UpdatedAt: now}
		if err := b.store.CalendarCreate(ctx, cal); err != nil {
			t.Fatal(err)
		}
		b.start()
		tk := b.addTask(t, "* * * * * *", func(tk *sundial.Task) { tk.Calendars = []string{"jan2"} })
		waitUntil(midnight.Add(5*time.Second + 500*time.Millisecond))

		calls := b.target.snapshot()
		if len(calls) != 4 {
			t.Fatalf("%d deliveries before the calendar's day, want 4 (23:59:56 to 23:59:59): %+v", len(calls), calls)
		}
		for i, c := range calls {
			if want := midnight.Add(time.Duration(i-4) * time.Second); !c.scheduled.Equal(want) {
				t.Errorf("delivery %d: the fire of %s, want %s", i, c.scheduled, want)
			}
		}
		skipped := 0
		for _, r := range b.runs(t, tk.ID) {
			if r.ScheduledTime.Before(midnight) {
				continue
			}
			if r.Status != sundial.RunSkipped || r.SkipReason != sundial.SkipCalendar || r.Error != "falls on calendar jan2" {
				t.Fatalf("run of %s on the calendar's day: %s %s %q, want SKIPPED CALENDAR", r.ScheduledTime, r.Status, r.SkipReason, r.Error)
			}
			skipped++
		}
		if skipped < 6 {
			t.Fatalf("%d CALENDAR runs, want at least the 6 fires from 00:00:00 to 00:00:05", skipped)
		}
		if got := b.task(t, tk.ID); got.FireCount != 4 {
			t.Errorf("fire_count %d, want 4: a fire skipped by a calendar is not counted", got.FireCount)
		}

		// The day is taken out of the calendar: the fires not yet planned
		// (a frequent task is planned up to the plan horizon ahead) run.
		cal.Entries, cal.UpdatedAt = []string{"1999-12-25..1999-12-31"}, time.Now()
		if _, err := b.store.CalendarUpdate(ctx, cal); err != nil {
			t.Fatal(err)
		}
		end := midnight.Add(90 * time.Second)
		waitUntil(end.Add(500 * time.Millisecond))
		b.stop(t)

		delivered := map[time.Time]bool{}
		for _, c := range b.target.snapshot() {
			delivered[c.scheduled] = true
		}
		byTime := map[time.Time]*sundial.Run{}
		for _, r := range b.runs(t, tk.ID) {
			if byTime[r.ScheduledTime] != nil {
				t.Fatalf("two runs of %s", r.ScheduledTime)
			}
			byTime[r.ScheduledTime] = r
		}
		resumed := false
		for at := midnight.Add(-4 * time.Second); !at.After(end); at = at.Add(time.Second) {
			r := byTime[at]
			switch {
			case r == nil:
				t.Fatalf("no run of %s", at)
			case r.Status == sundial.RunSkipped && r.SkipReason == sundial.SkipCalendar:
				if delivered[at] || resumed {
					t.Fatalf("the fire of %s is SKIPPED CALENDAR after fires ran again (or was delivered)", at)
				}
			case r.Status == sundial.RunSuccess && delivered[at]:
				resumed = resumed || !at.Before(midnight)
			default:
				t.Fatalf("run of %s: %s %s (delivered %v)", at, r.Status, r.SkipReason, delivered[at])
			}
		}
		if !resumed {
			t.Fatal("no fire ran after the calendar stopped covering the day")
		}
	})
}

// TestDSTPolicies: across America/New_York's real transitions of 2000, a
// task at 02:30 fires after the spring-forward gap (07:00Z, 03:00 EDT)
// under vixie and not that day under skip_gap; a task at 01:30 fires once
// on the fall-back day under vixie and in both passes under repeat. Each
// task's next fire after the window is the next day's.
func TestDSTPolicies(t *testing.T) {
	t.Parallel()
	utc := func(mo time.Month, d, h, mi int) time.Time { return time.Date(2000, mo, d, h, mi, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name, expr, dst string
		from, to        time.Time // the window the scheduler runs in
		want            []time.Time
		next            time.Time
	}{
		{"vixie gap", "0 30 2 * * *", "vixie", utc(4, 2, 6, 50), utc(4, 2, 7, 10),
			[]time.Time{utc(4, 2, 7, 0)}, utc(4, 3, 6, 30)},
		{"skip_gap gap", "0 30 2 * * *", "skip_gap", utc(4, 2, 6, 50), utc(4, 2, 7, 10),
			nil, utc(4, 3, 6, 30)},
		{"vixie overlap", "0 30 1 * * *", "vixie", utc(10, 29, 5, 20), utc(10, 29, 6, 40),
			[]time.Time{utc(10, 29, 5, 30)}, utc(10, 30, 6, 30)},
		{"repeat overlap", "0 30 1 * * *", "repeat", utc(10, 29, 5, 20), utc(10, 29, 6, 40),
			[]time.Time{utc(10, 29, 5, 30), utc(10, 29, 6, 30)}, utc(10, 30, 6, 30)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				// Much slower loops than the defaults: an hour and more
				// passes in a few hundred turns of them (under the race
				// detector each turn counts).
				b := setup(t, scheduler.Config{PollInterval: 30 * time.Second, Lookahead: time.Minute,
					ClaimInterval: 5 * time.Second, HeartbeatInterval: 20 * time.Second, DeadAfter: time.Minute,
					DependencyRefresh: time.Minute, CallbackSweep: time.Minute, CancelPoll: time.Minute})
				waitUntil(tc.from)
				b.start()
				tk := b.addTask(t, tc.expr, func(tk *sundial.Task) { tk.Timezone, tk.DST = "America/New_York", tc.dst })
				waitUntil(tc.to)
				b.stop(t)
				calls := b.target.snapshot()
				if len(calls) != len(tc.want) {
					t.Fatalf("%d deliveries, want %d at %v: %+v", len(calls), len(tc.want), tc.want, calls)
				}
				for i, c := range calls {
					if !c.scheduled.Equal(tc.want[i]) {
						t.Errorf("delivery %d: the fire of %s, want %s", i, c.scheduled.UTC(), tc.want[i])
					}
				}
				got := b.task(t, tk.ID)
				if got.DST != tc.dst {
					t.Errorf("task dst %q, want %q", got.DST, tc.dst)
				}
				if next := got.NextFire(time.Now()); next == nil || !next.Equal(tc.next) {
					t.Errorf("next fire %v, want %s", next, tc.next)
				}
			})
		})
	}
}
