package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/scheduler"
)

// rowsWritten is how many rows of table the store has written with op
// (inserted, updated, deleted).
func (b *bundle) rowsWritten(table, op string) int64 {
	for _, r := range b.store.RowsWritten() {
		if r.Table == table {
			switch op {
			case "inserted":
				return r.Inserted
			case "updated":
				return r.Updated
			case "deleted":
				return r.Deleted
			}
		}
	}
	return 0
}

// TestPlanAheadTaskWrites: a task firing every second has its fires
// planned a span ahead (90 fires), so that its row is written when it is
// first planned and then once for 90 fires, instead of once a fire; every
// fire still goes out once, on its second. Five minutes (300 fires, three
// spans refilled) tell once a span from once a fire as well as ten did.
func TestPlanAheadTaskWrites(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.start()
		start := time.Now()
		tk := b.addTask(t, "* * * * * *", nil)
		updates0 := b.rowsWritten("tasks", "updated")
		const fires = 300
		waitUntil(start.Add(fires*time.Second + 500*time.Millisecond))
		updates := b.rowsWritten("tasks", "updated") - updates0
		b.stop(t)

		calls := b.target.snapshot()
		if len(calls) != fires {
			t.Fatalf("%d deliveries in %d s, want %d", len(calls), fires, fires)
		}
		for i, c := range calls {
			if want := start.Add(time.Duration(i+1) * time.Second); !c.scheduled.Equal(want) || !c.at.Equal(want) {
				t.Fatalf("delivery %d: the fire of %s, at %s; want both %s", i, c.scheduled, c.at, want)
			}
		}
		if updates == 0 || updates > 2+fires/90 {
			t.Errorf("the task's row was written %d times for %d fires, want at most %d (once, then once for 90 fires)", updates, len(calls), 2+fires/90)
		}
		if runs := b.runs(t, tk.ID); len(runs) > fires+100 {
			t.Errorf("%d runs after %d fires, want at most 100 planned ahead", len(runs), fires)
		}
	})
}

// TestPlanAheadTakeBack: a change of a task takes back every fire it has
// planned ahead: an edit plans anew from the new schedule, a disable and a
// delete leave no fire to go out after the change.
func TestPlanAheadTakeBack(t *testing.T) {
	t.Parallel()
	for _, change := range []string{"edit", "disable", "delete"} {
		t.Run(change, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				b := setup(t, scheduler.Config{})
				b.start()
				start := time.Now()
				tk := b.addTask(t, "* * * * * *", nil)
				// By 50.5 s the task (ID 1, whose first cut is at 50 s) was
				// refilled up to 140 s.
				waitUntil(start.Add(50*time.Second + 500*time.Millisecond))
				planned, err := b.store.RunUpcoming(ctx, tk.ID, 1000)
				if err != nil {
					t.Fatal(err)
				}
				if len(planned) < 80 {
					b.stop(t)
					t.Fatalf("%d fires planned ahead at +50.5s, want at least 80", len(planned))
				}
				at := time.Now()
				switch change {
				case "edit", "disable":
					cur, err := b.store.TaskGet(ctx, tk.ID)
					if err != nil {
						t.Fatal(err)
					}
					upd := *cur
					if change == "edit" {
						upd.CronExpr = "*/2 * * * * *"
					} else {
						upd.Status = sundial.TaskDisabled
					}
					if err := upd.NormalizeReplacing(cur, at); err != nil {
						t.Fatal(err)
					}
					upd.NextFireTime = upd.FirstFire(at)
					if err := b.store.TaskUpdate(ctx, &upd, at); err != nil {
						t.Fatal(err)
					}
				case "delete":
					if err := b.store.TaskDelete(ctx, tk.ID, at); err != nil {
						t.Fatal(err)
					}
				}
				b.sched.Poke()
				waitUntil(start.Add(80*time.Second + 500*time.Millisecond))
				left, err := b.store.RunUpcoming(ctx, tk.ID, 1000)
				if err != nil {
					t.Fatal(err)
				}
				b.stop(t)

				cutoff := at.Add(sundial.SendMargin)
				var after []time.Duration
				for _, c := range b.target.snapshot() {
					if c.scheduled.After(cutoff) {
						after = append(after, c.scheduled.Sub(start))
					}
				}
				switch change {
				case "edit":
					// The fires of 52 s to 80 s, every other second.
					if len(after) != 15 {
						t.Errorf("%d fires after the edit, want the 15 of the new schedule to 80 s: %v", len(after), after)
					}
					for _, d := range after {
						if d%(2*time.Second) != 0 {
							t.Errorf("the fire of +%s went out after the edit to every other second", d)
						}
					}
					for _, r := range left {
						if r.ScheduledTime.Unix()%2 != 0 {
							t.Errorf("a fire of the old schedule is still planned at %s", r.ScheduledTime)
						}
					}
				default:
					if len(after) != 0 || len(left) != 0 {
						t.Errorf("after the %s: fires of %v went out, %d are planned; want none", change, after, len(left))
					}
				}
			})
		})
	}
}

// TestCatchUpAfterOutageWithPlannedAhead: fires planned far ahead by many
// tasks, then an outage longer than all of them: the planned fires are
// unplanned (in more than one batch) and counted with the fires never
// planned, once each, in one MISFIRE record per task; none of them goes
// out; the fires after the restart do.
//
// The sweep reads 100 planned fires a step here, not 10,000: ten tasks
// plan more than five steps' worth, as 250 tasks would more than one
// step of 10,000, at a twenty-fifth of the deliveries and rows.
func TestCatchUpAfterOutageWithPlannedAhead(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const batch = 100
		cfg := scheduler.WithUnplanBatch(scheduler.Config{MisfireThreshold: 5 * time.Second, Workers: 64}, batch)
		b := setup(t, cfg)
		b.start()
		start := time.Now()
		const n = 10
		tasks := make([]*sundial.Task, n)
		for i := range tasks {
			tasks[i] = b.addTask(t, "* * * * * *", nil)
		}
		waitUntil(start.Add(20*time.Second + 500*time.Millisecond))
		b.stop(t) // fires 1 to 20 went out; the fires planned after them stay, held by no node
		planned := 0
		for _, tk := range tasks {
			up, err := b.store.RunUpcoming(ctx, tk.ID, 1000)
			if err != nil {
				t.Fatal(err)
			}
			planned += len(up)
		}
		if planned <= 5*batch {
			t.Fatalf("%d fires planned ahead at the stop, want more than five of the sweep's steps of %d", planned, batch)
		}

		// Down until 10 minutes: fires 21 to 595 are more than 5 s late at
		// the restart, 596 to 600 less.
		waitUntil(start.Add(10*time.Minute + 500*time.Millisecond))
		reg := prometheus.NewRegistry()
		restartFor(t, cfg, b.store, b.target, reg, 5*time.Second)

		const missed = 595 - 21 + 1
		calls := map[string]int{}
		for _, c := range b.target.snapshot() {
			calls[c.key]++
			if d := c.scheduled.Sub(start); d > 20*time.Second && d < 596*time.Second {
				t.Fatalf("the missed fire of +%s went out", d)
			}
		}
		for _, tk := range tasks {
			var misfires []*sundial.Run
			for _, r := range b.runs(t, tk.ID) {
				if r.SkipReason == sundial.SkipMisfire {
					misfires = append(misfires, r)
				}
			}
			if len(misfires) != 1 || misfires[0].MissedCount != missed || !misfires[0].ScheduledTime.Equal(start.Add(21*time.Second)) {
				t.Fatalf("task %d: MISFIRE records %v, want one of %d fires from +21s", tk.ID, summarize(misfires), missed)
			}
			for f := 596; f <= 605; f++ {
				key := sundial.IdempotencyKeyFor(tk.ID, sundial.ScheduledFireKey(start.Add(time.Duration(f)*time.Second)))
				if calls[key] != 1 {
					t.Fatalf("task %d: the fire of +%ds was called %d times, want once", tk.ID, f, calls[key])
				}
			}
		}
		if got := counterValue(t, reg, "sundial_fires_missed_total"); got != n*missed {
			t.Errorf("sundial_fires_missed_total = %v, want %d", got, n*missed)
		}
	})
}

// TestPlanAheadDST: a task firing every 5 s in one hour of Berlin's wall
// clock, planned ahead across the changes of 2000: on the night Berlin
// falls back, hour 2 is fired twice, every 5 s without a gap or a double;
// on the night it springs forward, hour 1 ends at 01:00Z, and nothing is
// planned in the hour that does not exist.
func TestPlanAheadDST(t *testing.T) {
	t.Parallel()
	berlin := func(tk *sundial.Task) { tk.Timezone = "Europe/Berlin" }
	for _, c := range []struct {
		name, expr string
		from       time.Time
		fires      int           // in the 4 minutes from from
		next       time.Duration // the first fire after them, from from
	}{
		// 2000-10-29 01:00Z: 03:00 CEST is 02:00 CET.
		{"fall back", "*/5 * 2 * * *", time.Date(2000, 10, 29, 0, 58, 0, 0, time.UTC), 49, 4*time.Minute + 5*time.Second},
		// 2000-03-26 01:00Z: 02:00 CET is 03:00 CEST; hour 1 comes back at
		// 23:00Z (01:00 CEST on the 27th).
		{"spring forward", "*/5 * 1 * * *", time.Date(2000, 3, 26, 0, 58, 0, 0, time.UTC), 24, 22*time.Hour + 2*time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				waitUntil(c.from.Add(-500 * time.Millisecond))
				b := setup(t, scheduler.Config{})
				b.start()
				tk := b.addTask(t, c.expr, berlin)
				waitUntil(c.from.Add(4*time.Minute + 500*time.Millisecond))
				up, err := b.store.RunUpcoming(ctx, tk.ID, 1000)
				if err != nil {
					t.Fatal(err)
				}
				cur, err := b.store.TaskGet(ctx, tk.ID)
				if err != nil {
					t.Fatal(err)
				}
				b.stop(t)
				calls := b.target.snapshot()
				if len(calls) != c.fires {
					t.Fatalf("%d deliveries, want %d", len(calls), c.fires)
				}
				for i, cl := range calls {
					if want := c.from.Add(time.Duration(5*i) * time.Second); !cl.scheduled.Equal(want) || !cl.at.Equal(want) {
						t.Fatalf("delivery %d: the fire of %s, at %s; want both %s", i, cl.scheduled, cl.at, want)
					}
				}
				// The next fire: planned, or the planner's cursor.
				want, first := c.from.Add(c.next), cur.NextFireTime
				if len(up) > 0 {
					first = &up[0].ScheduledTime
				}
				if first == nil || !first.Equal(want) {
					t.Errorf("next fire after the window: %v, want %s", first, want)
				}
				for i := 1; i < len(up); i++ {
					if d := up[i].ScheduledTime.Sub(up[i-1].ScheduledTime); d != 5*time.Second {
						t.Errorf("planned fires %s and %s are %s apart, want 5s", up[i-1].ScheduledTime, up[i].ScheduledTime, d)
					}
				}
			})
		})
	}
}

// planCounter counts, for each PlanDue, the runs it inserted past the
// lookahead (until).
type planCounter struct {
	sundial.Store
	mu    sync.Mutex
	ahead []int
}

func (p *planCounter) PlanDue(ctx context.Context, until time.Time, limit int, node string, now time.Time, plan sundial.PlanFunc) ([]*sundial.Run, error) {
	runs, err := p.Store.PlanDue(ctx, until, limit, node, now, plan)
	n := 0
	for _, r := range runs {
		if r.ScheduledTime.After(until) {
			n++
		}
	}
	p.mu.Lock()
	p.ahead = append(p.ahead, n)
	p.mu.Unlock()
	return runs, err
}

// TestPlanAheadBounded: 40 tasks firing every second, created at once,
// are planned past the lookahead over a few passes, none of which plans
// more than its bound of fires past it (and the plan of one task); every
// fire goes out once, on its second, meanwhile. The bound is 100 here, not
// MaxPlannedAhead: 40 tasks need many passes under it, as 400 did under
// 1,000, at a tenth of the deliveries.
func TestPlanAheadBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		counter := &planCounter{}
		const n, bound = 40, 100
		b := setupWith(t, scheduler.WithMaxPlannedAhead(scheduler.Config{Workers: 64}, bound), func(s sundial.Store) sundial.Store {
			counter.Store = s
			return counter
		})
		start := time.Now()
		tasks := make([]*sundial.Task, n)
		for i := range tasks {
			tk := &sundial.Task{Name: fmt.Sprintf("bounded-%d", i), CronExpr: "* * * * * *", HTTPMethod: "POST",
				TargetURL: "http://127.0.0.1:9/hook"}
			if err := tk.Normalize(start); err != nil {
				t.Fatal(err)
			}
			tk.NextFireTime = tk.NextAfter(start)
			tasks[i] = tk
		}
		if _, err := b.store.TaskCreateMany(context.Background(), tasks, start); err != nil {
			t.Fatal(err)
		}
		b.start()
		waitUntil(start.Add(20*time.Second + 500*time.Millisecond))
		b.stop(t)

		counter.mu.Lock()
		ahead := slices.Clone(counter.ahead)
		counter.mu.Unlock()
		total, passes := 0, 0
		for _, a := range ahead {
			if a > bound+100 {
				t.Errorf("a PlanDue planned %d fires past the lookahead, want at most %d and one task's", a, bound)
			}
			if a > 0 {
				passes++
			}
			total += a
		}
		// About half a span of each task past the lookahead, in more than
		// one pass.
		if total < n*30 || passes < 2 {
			t.Errorf("%d fires planned past the lookahead in %d passes, want about %d in more than one", total, passes, n*45)
		}
		calls := map[string]int{}
		for _, c := range b.target.snapshot() {
			if !c.at.Equal(c.scheduled) {
				t.Fatalf("the fire of %s went out at %s", c.scheduled, c.at)
			}
			calls[c.key]++
		}
		for _, tk := range tasks {
			for f := 1; f <= 20; f++ {
				key := sundial.IdempotencyKeyFor(tk.ID, sundial.ScheduledFireKey(start.Add(time.Duration(f)*time.Second)))
				if calls[key] != 1 {
					t.Fatalf("task %d: the fire of +%ds went out %d times, want once", tk.ID, f, calls[key])
				}
			}
		}
	})
}

// lateStore is a store whose first claim of due runs (RunClaimDue) takes
// claimLate and claims nothing, and whose sweeps of missed fires (RunUnplanMissed) take
// sweepLate to come back: the claimer finds some of a task's fires missed
// and starts its later ones in the same claim, and the planner plans the
// swept tasks a moment later than the sweep judged their fires.
type lateStore struct {
	sundial.Store
	claimLate, sweepLate time.Duration
	once                 *sync.Once
}

func (s lateStore) RunClaimDue(ctx context.Context, nodeID string, until time.Time, limit int,
	start sundial.ClaimStartParams) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	late := false
	s.once.Do(func() { late = true })
	if late {
		// A claim that took long and found nothing: the next one finds
		// the fires planned meanwhile, some already late.
		time.Sleep(s.claimLate)
		return nil, nil, nil
	}
	return s.Store.RunClaimDue(ctx, nodeID, until, limit, start)
}

func (s lateStore) RunUnplanMissed(ctx context.Context, before time.Time, limit int,
	missed func(*sundial.Run, *sundial.Task) bool) (int, int, error) {
	looked, deleted, err := s.Store.RunUnplanMissed(ctx, before, limit, missed)
	time.Sleep(s.sweepLate)
	return looked, deleted, err
}

// TestCatchUpCountsWhatTheSweepLeft: a restart after an outage, where the
// first claim takes 1.7 s and finds nothing, and sweeps take 1 s: the next
// claim finds the first fires the planner planned after the outage missed,
// and starts the next one. The sweep of the missed ones must not leave the
// planner counting the fire that went out as missed too; under FULL, the
// missed ones run, once each. Every second from the first fire to the
// last is accounted for exactly once: called, or counted by a MISFIRE
// record (NONE) or a COMPACT run.
func TestCatchUpCountsWhatTheSweepLeft(t *testing.T) {
	t.Parallel()
	for _, mode := range []sundial.CatchUpMode{sundial.CatchUpNone, sundial.CatchUpCompact, sundial.CatchUpFull} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				cfg := scheduler.Config{MisfireThreshold: time.Second, Lookahead: 2 * time.Second}
				b := setup(t, cfg)
				b.start()
				start := time.Now()
				tk := b.addTask(t, "* * * * * *", func(tk *sundial.Task) {
					tk.CatchUpMode, tk.OverlapAction = mode, sundial.OverlapParallel
				})
				waitUntil(start.Add(5*time.Second + 500*time.Millisecond))
				b.stop(t)
				waitUntil(start.Add(15*time.Second + 500*time.Millisecond))

				restartFor(t, cfg, lateStore{b.store, 1700 * time.Millisecond, time.Second, &sync.Once{}},
					b.target, nil, 5*time.Second)

				covered := map[int64]int{}
				var first, last int64
				mark := func(sec int64) {
					covered[sec]++
					if first == 0 || sec < first {
						first = sec
					}
					last = max(last, sec)
				}
				compact := 0 // fires the COMPACT runs count
				for _, c := range b.target.snapshot() {
					// A COMPACT run is due at the restart: it counts the
					// seconds none of the others accounts for (below).
					if mode != sundial.CatchUpCompact || c.trigger != string(sundial.TriggerCatchUp) {
						mark(c.scheduled.Unix())
					}
				}
				for _, r := range b.runs(t, tk.ID) {
					switch {
					case mode == sundial.CatchUpFull && r.ScheduledTime.Before(start.Add(20*time.Second)) && r.Status != sundial.RunSuccess:
						t.Errorf("run %d of +%s is %s, want every fire run under FULL", r.ID, r.ScheduledTime.Sub(start), r.Status)
					case r.SkipReason == sundial.SkipMisfire:
						for k := range int64(r.MissedCount) {
							mark(r.ScheduledTime.Unix() + k)
						}
					case r.Trigger == sundial.TriggerCatchUp && mode == sundial.CatchUpCompact:
						compact += r.MissedCount
					}
				}
				if mode == sundial.CatchUpCompact {
					if compact == 0 {
						t.Fatal("no COMPACT run after the outage")
					}
					gap := 0
					for sec := first; sec <= last; sec++ {
						if covered[sec] == 0 {
							gap++
							covered[sec]++
						}
					}
					if gap != compact {
						t.Errorf("the COMPACT runs count %d fires; %d seconds went unrun", compact, gap)
					}
				}
				for sec := first; sec <= last; sec++ {
					if covered[sec] != 1 {
						t.Errorf("the fire of +%ds is accounted for %d times, want once",
							sec-start.Truncate(time.Second).Unix(), covered[sec])
					}
				}
			})
		})
	}
}
