package scheduler

import (
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestPlanTaskCalendar: planTask records a fire on one of the task's
// calendars SKIPPED (CALENDAR), without counting it; fires missed on a
// calendar's day are neither caught up nor counted missed; a task without
// calendars is planned as before, whatever the calendars known.
func TestPlanTaskCalendar(t *testing.T) {
	t.Parallel()
	c := &sundial.Calendar{Name: "xmas", Entries: []string{"2026-12-25"}}
	rule, err := c.Compile()
	if err != nil {
		t.Fatal(err)
	}
	cals := sundial.CalendarSet{"xmas": rule}
	hour := func(d, h int) time.Time { return time.Date(2026, 12, d, h, 0, 0, 0, time.UTC) }
	type got struct {
		at      time.Time
		status  sundial.RunStatus
		reason  sundial.SkipReason
		trigger sundial.Trigger
		missed  int
	}
	plan := func(tk *sundial.Task, now time.Time) ([]got, sundial.Plan) {
		p := planTask(tk, now, now.Add(testLookahead), testMisfire, testMaxRuns, 0, cals)
		var out []got
		for _, r := range p.Runs {
			out = append(out, got{r.ScheduledTime, r.Status, r.SkipReason, r.Trigger, r.MissedCount})
		}
		return out, p
	}

	// Scheduled fires: 23:00 on the 24th runs, midnight on the 25th is skipped.
	tk := cronTask(t, 1, "0 0 * * * *", "UTC", hour(24, 22).Add(59*time.Minute))
	tk.Calendars, tk.MaxRuns = []string{"xmas"}, 10
	runs, p := plan(tk, hour(24, 22).Add(59*time.Minute+55*time.Second))
	if len(runs) != 1 || runs[0] != (got{hour(24, 23), sundial.RunScheduled, "", sundial.TriggerSchedule, 0}) {
		t.Fatalf("pass before 23:00: %+v", runs)
	}
	tk.NextFireTime = p.Next
	runs, p = plan(tk, hour(24, 23).Add(59*time.Minute+55*time.Second))
	if len(runs) != 1 || runs[0] != (got{hour(25, 0), sundial.RunSkipped, sundial.SkipCalendar, sundial.TriggerSchedule, 0}) ||
		p.Runs[0].Error != "falls on calendar xmas" || p.Runs[0].FireKey != sundial.ScheduledFireKey(hour(25, 0)) {
		t.Fatalf("pass before midnight: %+v %+v", runs, p.Runs)
	}
	if tk.FireCount != 1 || !p.Next.Equal(hour(25, 1)) || p.End != "" {
		t.Errorf("fire_count %d, next %v, end %q; want 1 (the skip not counted), 01:00, none", tk.FireCount, p.Next, p.End)
	}

	// Missed fires, from 21:00 on the 24th to 03:00 on the 25th: the 24th's
	// are caught up (FULL) or counted (NONE), the 25th's passed over.
	for _, mode := range []sundial.CatchUpMode{sundial.CatchUpFull, sundial.CatchUpNone} {
		tk := cronTask(t, 2, "0 0 * * * *", "UTC", hour(24, 20).Add(30*time.Minute))
		tk.Calendars, tk.CatchUpMode = []string{"xmas"}, mode
		runs, p := plan(tk, hour(25, 3).Add(30*time.Minute))
		var want []got
		if mode == sundial.CatchUpFull {
			want = []got{{hour(24, 21), sundial.RunScheduled, "", sundial.TriggerCatchUp, 0},
				{hour(24, 22), sundial.RunScheduled, "", sundial.TriggerCatchUp, 0},
				{hour(24, 23), sundial.RunScheduled, "", sundial.TriggerCatchUp, 0}}
		} else {
			want = []got{{hour(24, 21), sundial.RunSkipped, sundial.SkipMisfire, sundial.TriggerSchedule, 3}}
		}
		if len(runs) != len(want) {
			t.Fatalf("%s: %+v, want %+v", mode, runs, want)
		}
		for i := range want {
			if runs[i] != want[i] {
				t.Errorf("%s: run %d %+v, want %+v", mode, i, runs[i], want[i])
			}
		}
		if !p.Next.Equal(hour(25, 4)) {
			t.Errorf("%s: next %v, want 04:00", mode, p.Next)
		}
	}

	// Every missed fire on the calendar: nothing recorded at all.
	tk = cronTask(t, 3, "0 0 * * * *", "UTC", hour(25, 0).Add(30*time.Minute))
	tk.Calendars = []string{"xmas"}
	if runs, _ := plan(tk, hour(25, 5).Add(30*time.Minute)); len(runs) != 0 {
		t.Errorf("missed fires all on the calendar: %+v, want no run", runs)
	}

	// Without calendars of its own, a task fires on the 25th.
	tk = cronTask(t, 4, "0 0 * * * *", "UTC", hour(24, 23).Add(59*time.Minute))
	if runs, _ := plan(tk, hour(24, 23).Add(59*time.Minute+55*time.Second)); len(runs) != 1 || runs[0].status != sundial.RunScheduled {
		t.Errorf("a task without calendars: %+v", runs)
	}
}
