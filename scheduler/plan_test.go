package scheduler

import (
	"slices"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// The defaults planTask is called with.
const (
	testLookahead = 10 * time.Second
	testMisfire   = time.Minute
	testMaxRuns   = 100
	testHorizon   = 2 * time.Minute
)

// cronTask is a valid cron task id firing on expr in zone, its first fire
// the first after at.
func cronTask(t *testing.T, id int64, expr, zone string, at time.Time) *sundial.Task {
	t.Helper()
	tk := &sundial.Task{ID: id, Name: "t", CronExpr: expr, Timezone: zone, TargetURL: "https://example.com/"}
	if err := tk.Normalize(at); err != nil {
		t.Fatal(err)
	}
	tk.NextFireTime = tk.NextAfter(at)
	return tk
}

// passes plans tk as the planner does, a pass every second from start for
// d with horizon: when the task is due within the lookahead, planTask plans
// it and its next fire moves on. It returns the fires planned, in the
// order they were planned, and the planner's writes of the task.
func passes(t *testing.T, tk *sundial.Task, start time.Time, d, horizon time.Duration) (fires []time.Time, writes int) {
	fires, perWrite := passesEach(t, tk, start, d, horizon)
	return fires, len(perWrite)
}

// passesEach is passes, with the fires each write of the task planned.
func passesEach(t *testing.T, tk *sundial.Task, start time.Time, d, horizon time.Duration) (fires []time.Time, perWrite []int) {
	t.Helper()
	for now := start; now.Before(start.Add(d)); now = now.Add(time.Second) {
		if !tk.DueBy(now.Add(testLookahead)) {
			continue
		}
		p := planTask(tk, now, now.Add(testLookahead), testMisfire, testMaxRuns, horizon, nil)
		for _, r := range p.Runs {
			if r.Status != sundial.RunScheduled || r.Trigger != sundial.TriggerSchedule {
				t.Fatalf("pass at %s planned %+v, want scheduled fires only", now, r)
			}
			if now.After(start) && r.ScheduledTime.Before(now.Add(testLookahead-time.Second)) {
				t.Errorf("the fire of %s was planned at %s, less than a lookahead ahead", r.ScheduledTime, now)
			}
			fires = append(fires, r.ScheduledTime)
		}
		tk.NextFireTime = p.Next
		perWrite = append(perWrite, len(p.Runs))
	}
	return fires, perWrite
}

// schedule is every fire of tk from its first before end.
func schedule(t *testing.T, tk *sundial.Task, end time.Time) []time.Time {
	t.Helper()
	var out []time.Time
	for at := *tk.NextFireTime; at.Before(end); at = *tk.NextAfter(at) {
		out = append(out, at)
	}
	return out
}

// TestPlanTaskFrequent: a task firing every second is planned a span of
// 90 fires at a time (maxRuns at its gap less the lookahead, sooner than
// the horizon), every fire once and in order, at least a lookahead ahead:
// its row is written once for 90 fires.
func TestPlanTaskFrequent(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	for _, expr := range []string{"* * * * * *", "@every 1s"} {
		tk := cronTask(t, 7, expr, "UTC", start)
		want := schedule(t, tk, start.Add(time.Hour))
		fires, writes := passes(t, tk, start, time.Hour, testHorizon)
		// Planned up to an hour and a span at most.
		if len(fires) < len(want) || !slices.EqualFunc(fires[:len(want)], want, time.Time.Equal) || len(fires) > len(want)+testMaxRuns {
			t.Fatalf("%s: %d fires planned, want the %d of the hour in order, then at most a span", expr, len(fires), len(want))
		}
		if per := float64(writes) / float64(len(fires)); per > 1.0/88 {
			t.Errorf("%s: %d writes of the task for %d fires (%.4f a fire), want about 1/90", expr, writes, len(fires), per)
		}
	}
}

// TestPlanTaskHorizon: a task firing every 5 s (24 fires in the 2-minute
// horizon, fewer than maxRuns) is planned a horizon at a time; one firing
// every 10 s (two fires in a lookahead) too; past the lookahead, the
// horizon changes nothing when it is no longer than the lookahead.
func TestPlanTaskHorizon(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		expr     string
		perWrite int // fires each write of the task plans, but the first
		horizon  time.Duration
	}{
		{"*/5 * * * * *", 24, testHorizon},
		{"*/10 * * * * *", 12, testHorizon},
		{"* * * * * *", 60, time.Minute},
		{"* * * * * *", 90, time.Hour},
		// A pass a second, each planning the one fire that came within
		// the lookahead.
		{"* * * * * *", 1, testLookahead},
	} {
		tk := cronTask(t, 3, c.expr, "UTC", start)
		want := schedule(t, tk, start.Add(time.Hour))
		fires, perWrite := passesEach(t, tk, start, time.Hour, c.horizon)
		if len(fires) < len(want) || !slices.EqualFunc(fires[:len(want)], want, time.Time.Equal) {
			t.Fatalf("%s, horizon %s: fires planned out of order or missing", c.expr, c.horizon)
		}
		// The first write plans up to a cut; each other write a span.
		for i, n := range perWrite[1:] {
			if n != c.perWrite {
				t.Fatalf("%s, horizon %s: write %d of %d planned %d fires, want %d", c.expr, c.horizon, i+1, len(perWrite), n, c.perWrite)
			}
		}
	}
}

// TestPlanTaskRareUnchanged: a task whose next two fires are more than a
// lookahead apart is planned exactly as without a horizon, so that a
// million rare tasks plan no more runs than before; so is a one-off task.
func TestPlanTaskRareUnchanged(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	for _, expr := range []string{"*/15 * * * * *", "@every 11s", "0 * * * * *", "7 * * * * *", "0 0 * * * *", "0 30 2 * * *", "0 0,1 * * * *"} {
		for _, at := range []time.Duration{0, 3 * time.Second, 10*time.Second + 500*time.Millisecond, 59 * time.Second} {
			now := start.Add(at)
			tk := cronTask(t, 11, expr, "Europe/Berlin", start)
			for range 5 {
				with := planTask(tk, now, now.Add(testLookahead), testMisfire, testMaxRuns, testHorizon, nil)
				without := planTask(tk, now, now.Add(testLookahead), testMisfire, testMaxRuns, 0, nil)
				if !samePlan(with, without) {
					t.Fatalf("%s at +%s: planned %v with the horizon, %v without", expr, at, planned(with), planned(without))
				}
				if with.Next == nil {
					break
				}
				tk.NextFireTime = with.Next
				now = with.Next.Add(-testLookahead)
			}
		}
	}
	runAt := start.Add(time.Second)
	one := &sundial.Task{ID: 5, Name: "o", RunAt: &runAt, TargetURL: "https://example.com/"}
	if err := one.Normalize(start); err != nil {
		t.Fatal(err)
	}
	one.NextFireTime = &runAt
	if p := planTask(one, start, start.Add(testLookahead), testMisfire, testMaxRuns, testHorizon, nil); len(p.Runs) != 1 || p.Next != nil {
		t.Errorf("one-off task planned %v, next %v; want its one run", planned(p), p.Next)
	}
}

func planned(p sundial.Plan) []time.Time {
	var out []time.Time
	for _, r := range p.Runs {
		out = append(out, r.ScheduledTime)
	}
	return out
}

func samePlan(a, b sundial.Plan) bool {
	if !slices.EqualFunc(planned(a), planned(b), time.Time.Equal) || (a.Next == nil) != (b.Next == nil) {
		return false
	}
	return a.Next == nil || a.Next.Equal(*b.Next)
}

// TestPlanTaskRefillsSpread: a thousand tasks firing every second,
// created together (consecutive IDs, the same first fire), are not
// refilled in the same pass: they fall into the span's nine slots of a
// lookahead, about a ninth of them in each, and one slot is refilled every
// lookahead; the first pass plans about half a span of each, and the
// lookahead.
func TestPlanTaskRefillsSpread(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	const n = 1000
	tasks := make([]*sundial.Task, n)
	for i := range tasks {
		tasks[i] = cronTask(t, int64(1000+i), "* * * * * *", "UTC", start)
	}
	var refills []int // tasks refilled by each pass that refilled any
	last := start
	for now := start; now.Before(start.Add(10 * time.Minute)); now = now.Add(time.Second) {
		refilled, runs := 0, 0
		for _, tk := range tasks {
			if !tk.DueBy(now.Add(testLookahead)) {
				continue
			}
			p := planTask(tk, now, now.Add(testLookahead), testMisfire, testMaxRuns, testHorizon, nil)
			tk.NextFireTime = p.Next
			refilled++
			runs += len(p.Runs)
		}
		if now.Equal(start) {
			if refilled != n || runs < 50*n || runs > 60*n {
				t.Errorf("first pass: %d tasks, %d runs; want every task, about %d runs", refilled, runs, 55*n)
			}
			continue
		}
		if refilled == 0 {
			continue
		}
		if gap := now.Sub(last); len(refills) > 0 && gap != testLookahead {
			t.Errorf("refills at +%s, %s after the ones before; want one slot every %s", now.Sub(start), gap, testLookahead)
		}
		refills = append(refills, refilled)
		last = now
	}
	for _, k := range refills {
		if k < n/9*8/10 || k > n/9*12/10 {
			t.Errorf("refills of %v tasks, want about %d each (a ninth)", refills, n/9)
			break
		}
	}
}

// TestPlanTaskDST: across daylight saving changes, a frequent task planned
// a horizon ahead gets the fires of its schedule, each once, as planned a
// lookahead at a time: the wall times that do not exist are not fired,
// those repeated are fired again (cron's rules, see package cron).
func TestPlanTaskDST(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		expr, zone string
		from       time.Time
		fires      int // in the 20 minutes from from
	}{
		// Berlin springs forward at 01:00Z on 2026-03-29 (02:00 CET to
		// 03:00 CEST): hour 2 does not exist, hour 1 ends at 01:00Z.
		{"*/5 * 1 * * *", "Europe/Berlin", time.Date(2026, 3, 29, 0, 50, 0, 0, time.UTC), 120},
		{"*/5 * 2 * * *", "Europe/Berlin", time.Date(2026, 3, 29, 0, 50, 0, 0, time.UTC), 0},
		{"*/5 * * * * *", "Europe/Berlin", time.Date(2026, 3, 29, 0, 50, 0, 0, time.UTC), 240},
		// It falls back at 01:00Z on 2026-10-25 (03:00 CEST to 02:00 CET):
		// hour 2 is fired twice, from 00:00Z and from 01:00Z.
		{"*/5 * 2 * * *", "Europe/Berlin", time.Date(2026, 10, 25, 0, 50, 0, 0, time.UTC), 240},
		// New York falls back at 06:00Z on 2026-11-01 (02:00 EDT to 01:00
		// EST): hour 1 again.
		{"*/5 * 1 * * *", "America/New_York", time.Date(2026, 11, 1, 5, 50, 0, 0, time.UTC), 240},
		// Sydney falls back at 16:00Z on 2026-04-04 (03:00 AEDT to 02:00
		// AEST): every second of the instants, once.
		{"* * * * * *", "Australia/Sydney", time.Date(2026, 4, 4, 15, 50, 0, 0, time.UTC), 1200},
	} {
		end := c.from.Add(20 * time.Minute)
		b := cronTask(t, 9, c.expr, c.zone, c.from.Add(-time.Nanosecond))
		var want []time.Time
		if b.NextFireTime != nil {
			want = schedule(t, b, end)
		}
		if len(want) != c.fires {
			t.Fatalf("%s in %s from %s: the schedule has %d fires in 20 minutes, the test wants %d", c.expr, c.zone, c.from, len(want), c.fires)
		}
		fires, _ := passes(t, b, c.from, 20*time.Minute, testHorizon)
		var got []time.Time
		for _, f := range fires {
			if f.Before(end) {
				got = append(got, f)
			}
		}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s in %s from %s: planned %d fires before %s, want the schedule's %d", c.expr, c.zone, c.from, len(got), end, len(want))
		}
	}
}

// TestPlanTaskCatchUpWithHorizon: after an outage, the missed fires are
// counted (or run) as without a horizon, and the fires after them planned
// in order, as far as the refill boundary, at most maxRuns of them.
func TestPlanTaskCatchUpWithHorizon(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	now := start.Add(10 * time.Minute)
	const misfire = 5 * time.Second
	further := 0
	for _, mode := range []sundial.CatchUpMode{sundial.CatchUpNone, sundial.CatchUpCompact, sundial.CatchUpFull} {
		for id := int64(1); id <= 10; id++ {
			tk := cronTask(t, id, "* * * * * *", "UTC", start)
			tk.CatchUpMode, tk.CatchUpLimit = mode, 30
			with := planTask(tk, now, now.Add(testLookahead), misfire, testMaxRuns, testHorizon, nil)
			without := planTask(tk, now, now.Add(testLookahead), misfire, testMaxRuns, 0, nil)
			// The same up to the lookahead; the fires after it follow.
			n := len(without.Runs)
			for i := range n {
				w, o := with.Runs[i], without.Runs[i]
				if w.FireKey != o.FireKey || w.Status != o.Status || w.Trigger != o.Trigger || w.MissedCount != o.MissedCount {
					t.Fatalf("%s: run %d is %+v with the horizon, %+v without", mode, i, w, o)
				}
			}
			last := without.Runs[n-1].ScheduledTime
			scheduled := 0
			for i, r := range with.Runs {
				if r.Trigger == sundial.TriggerSchedule && r.Status == sundial.RunScheduled {
					scheduled++
				}
				if want := last.Add(time.Duration(i-n+1) * time.Second); i >= n && (r.Trigger != sundial.TriggerSchedule || !r.ScheduledTime.Equal(want)) {
					t.Fatalf("%s: fire %d after the lookahead is %s (%s), want %s", mode, i-n, r.ScheduledTime, r.Trigger, want)
				}
			}
			if scheduled > testMaxRuns {
				t.Errorf("%s: %d scheduled fires, want at most %d", mode, scheduled, testMaxRuns)
			}
			if want := with.Runs[len(with.Runs)-1].ScheduledTime.Add(time.Second); !with.Next.Equal(want) {
				t.Errorf("%s: next %s, want %s", mode, with.Next, want)
			}
			if len(with.Runs) > n {
				further++
			}
		}
	}
	if further == 0 {
		t.Error("no task was planned past the lookahead after its outage")
	}
}
