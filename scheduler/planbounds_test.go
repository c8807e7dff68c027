package scheduler

import (
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestPlanTaskCountsOnce: a task's fires are counted as they are planned,
// each scheduled time once: planned again from a cursor moved back (a
// rewind after an outage, an edit), they are not counted again, and
// max_runs still stops the plan at the same fire.
func TestPlanTaskCountsOnce(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := cronTask(t, 1, "* * * * * *", "UTC", start)
	tk.MaxRuns = 5
	p := planTask(tk, start, start.Add(testLookahead), testMisfire, testMaxRuns, testHorizon, nil)
	if len(p.Runs) != 5 || p.Next != nil || p.End != "" || tk.FireCount != 5 {
		t.Fatalf("first plan: %d runs, next %v, end %q, fire_count %d; want 5, none, none, 5", len(p.Runs), p.Next, p.End, tk.FireCount)
	}
	last := p.Runs[4].ScheduledTime
	if tk.CountedThrough == nil || !tk.CountedThrough.Equal(last) {
		t.Fatalf("counted through %v, want %s", tk.CountedThrough, last)
	}
	// The fires from the third on are unplanned and the task rewound.
	rewound := p.Runs[2].ScheduledTime
	tk.NextFireTime = &rewound
	p = planTask(tk, start, start.Add(testLookahead), testMisfire, testMaxRuns, testHorizon, nil)
	if got := planned(p); len(got) != 3 || !got[0].Equal(rewound) || !got[2].Equal(last) {
		t.Errorf("plan after the rewind = %v, want the 3 fires from %s to %s", got, rewound, last)
	}
	if tk.FireCount != 5 || p.Next != nil {
		t.Errorf("after the rewind: fire_count %d, next %v; want 5, none", tk.FireCount, p.Next)
	}
}

// TestPlanTaskBoundsCatchUp: the fires missed in an outage are bounded
// too: FULL runs at most the fires max_runs leaves, a MISFIRE record
// counts none, and a plan that leaves a bounded task with no fire and no
// run to end it with ends it (Plan.End).
func TestPlanTaskBoundsCatchUp(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	later := start.Add(10 * time.Minute)
	for _, tc := range []struct {
		name     string
		mod      func(*sundial.Task)
		runs     int // CATCH_UP and SCHEDULE runs
		fires    int // fire_count after
		end      bool
		nextNone bool
	}{
		{"full, max_runs", func(tk *sundial.Task) { tk.CatchUpMode, tk.MaxRuns = sundial.CatchUpFull, 3 }, 3, 3, false, true},
		{"compact, max_runs", func(tk *sundial.Task) { tk.CatchUpMode, tk.MaxRuns = sundial.CatchUpCompact, 3 }, 3, 3, false, true},
		{"none, max_runs", func(tk *sundial.Task) { tk.MaxRuns = 3 }, 3, 3, false, true},
		{"none, end_at passed", func(tk *sundial.Task) { e := start.Add(time.Minute); tk.EndAt = &e }, 0, 0, true, true},
		{"full, end_at passed", func(tk *sundial.Task) {
			e := start.Add(30 * time.Second)
			tk.EndAt, tk.CatchUpMode = &e, sundial.CatchUpFull
		}, 30, 30, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := cronTask(t, 1, "* * * * * *", "UTC", start)
			tc.mod(tk)
			p := planTask(tk, later, later.Add(testLookahead), testMisfire, testMaxRuns, testHorizon, nil)
			n := 0
			for _, r := range p.Runs {
				if r.Status == sundial.RunScheduled {
					n++
				}
			}
			if n != tc.runs || tk.FireCount != tc.fires || (p.End != "") != tc.end || (p.Next == nil) != tc.nextNone {
				t.Errorf("%d runs, fire_count %d, end %q, next %v; want %d, %d, end %v, no next %v",
					n, tk.FireCount, p.End, p.Next, tc.runs, tc.fires, tc.end, tc.nextNone)
			}
		})
	}
}

// TestPlanTaskJitter: a scheduled fire is due within [0, jitter) after its
// time, in whole milliseconds; catch-up runs are not jittered.
func TestPlanTaskJitter(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := cronTask(t, 1, "* * * * * *", "UTC", start)
	tk.JitterSeconds = 2
	p := planTask(tk, start, start.Add(testLookahead), testMisfire, testMaxRuns, 0, nil)
	if len(p.Runs) == 0 {
		t.Fatal("nothing planned")
	}
	for _, r := range p.Runs {
		d := r.DueAt.Sub(r.ScheduledTime)
		if d < 0 || d >= 2*time.Second || d%time.Millisecond != 0 {
			t.Errorf("the fire of %s is due %s after it, want within [0, 2s) in whole milliseconds", r.ScheduledTime, d)
		}
	}
	tk = cronTask(t, 2, "* * * * * *", "UTC", start)
	tk.JitterSeconds, tk.CatchUpMode = 2, sundial.CatchUpFull
	later := start.Add(5 * time.Minute)
	for _, r := range planTask(tk, later, later.Add(testLookahead), testMisfire, testMaxRuns, 0, nil).Runs {
		if r.Trigger == sundial.TriggerCatchUp && !r.DueAt.IsZero() && !r.DueAt.Equal(r.ScheduledTime) {
			t.Errorf("catch-up run of %s due at %s, want at its time", r.ScheduledTime, r.DueAt)
		}
	}
}
