package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sundialhq/sundial"
)

// planStore is what the planner needs of the store.
type planStore interface {
	PlanDue(ctx context.Context, until time.Time, limit int, nodeID string, now time.Time, plan sundial.PlanFunc) ([]*sundial.Run, error)
	RunUnplanMissed(ctx context.Context, before time.Time, limit int, missed func(*sundial.Run, *sundial.Task) bool) (looked, deleted int, err error)
	calendarStore
}

// planner materialises the fires of due tasks into runs held by no node:
// every poll interval (jittered), or at once when poked, it claims the
// tasks due within the lookahead and plans them with planTask. Before it
// counts fires it never planned as missed, it unplans the planned fires
// that also came too late (unplanMissed), so that an outage is counted
// once.
type planner struct {
	store planStore
	log   *slog.Logger
	// calendars are the tasks' calendars, compiled, read afresh each pass
	// when they changed.
	calendars calendarCache

	pollInterval   time.Duration
	lookahead      time.Duration
	misfire        time.Duration // the server's misfire threshold
	batch          int           // tasks per PlanDue
	unplanBatch    int           // planned fires per step of unplanMissed
	maxAhead       int           // fires one PlanDue plans past the lookahead (maxPlannedAhead)
	maxRunsPerTask int
	horizon        time.Duration // how far ahead a frequent task is planned (refillAt)
	// claimWindow: a run planned due sooner than this after now is due
	// before the claimer's next regular claim.
	claimWindow time.Duration

	// healthy reports whether this node holds its membership.
	healthy func() bool
	// record logs and counts an outcome the store recorded (a MISFIRE
	// record, a skip).
	record func(outcome)
	// claimSoon asks the claimer for a claim now.
	claimSoon func()

	wake chan struct{}
	// sweepWanted asks the next pass to unplan missed fires first: a claim
	// found some, or a sweep failed.
	sweepWanted atomic.Bool
	// swept is closed once the first pass has swept (see Run).
	swept     chan struct{}
	sweptOnce sync.Once
}

func newPlanner(cfg Config, store planStore, log *slog.Logger) *planner {
	p := &planner{
		store:          store,
		log:            log.With("component", "planner"),
		pollInterval:   cfg.PollInterval,
		lookahead:      cfg.Lookahead,
		misfire:        cfg.MisfireThreshold,
		batch:          cfg.PlanBatch,
		unplanBatch:    cfg.unplanBatch,
		maxAhead:       cfg.maxPlannedAhead,
		maxRunsPerTask: cfg.MaxRunsPerTask,
		horizon:        cfg.PlanHorizon,
		claimWindow:    cfg.StartAhead + 2*cfg.ClaimInterval,
		wake:           make(chan struct{}, 1),
		swept:          make(chan struct{}),
	}
	p.calendars = calendarCache{store: store, log: p.log}
	// A node starting sweeps first: see Run.
	p.sweepWanted.Store(true)
	return p
}

// started is closed once the planner's first pass has swept.
func (p *planner) started() <-chan struct{} { return p.swept }

// poke asks for a pass now.
func (p *planner) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// sweep asks for a pass now that unplans missed fires first: a claim found
// a planned fire past its deadline.
func (p *planner) sweep() {
	p.sweepWanted.Store(true)
	p.poke()
}

// Run plans every poll interval (with jitter, so nodes do not collide) and
// when poked, until ctx is done.
//
// Its first pass unplans the missed fires first, and the claimer starts
// claiming once it has (started): after an outage, the fires planned before
// it that were missed are unplanned, with their tasks' later planned fires
// (sundial.RunChanges.Rewind), before any fire is claimed, so that none of
// those tasks' fires is delivered until the planner has counted the missed
// ones and planned the rest anew. Otherwise a fire claimed and delivered
// on the restart could also be counted missed by a pass that swept a
// moment later.
func (p *planner) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-p.wake:
		}
		if p.healthy() {
			p.planOnce(ctx)
		}
		timer.Reset(p.nextPlanDelay(time.Now()))
	}
}

// nextPlanDelay returns the wait before the next planner pass: one poll
// interval, moved to the middle between two whole seconds when the interval
// is a second or more (fires are densest on whole seconds, and the planner's
// writes would compete with their deliveries), and jittered by up to ±10%
// (at most ±100ms) so that nodes do not collide.
func (p *planner) nextPlanDelay(now time.Time) time.Duration {
	poll := p.pollInterval
	at := now.Add(poll)
	if poll >= time.Second {
		at = at.Truncate(time.Second).Add(500 * time.Millisecond)
	}
	spread := min(poll/10, 100*time.Millisecond)
	at = at.Add(time.Duration(randN(int64(2*spread)+1)) - spread)
	return max(at.Sub(now), poll/2)
}

// planOnce runs PlanDue until no due task is left within the lookahead.
//
// Fires missed in an outage are counted once, in one record per task and
// outage (or one COMPACT run, or FULL's runs): before the planner counts
// the fires it never planned, the fires it had planned that also came too
// late are unplanned (RunUnplanMissed), so that the count starts from the
// first of them. A task whose unplanned fires are missed is therefore left
// as it is by PlanDue until a sweep has run at a time when they were
// already missed: every fire it had planned before them was missed then,
// and the sweep unplanned it.
func (p *planner) planOnce(ctx context.Context) {
	var swept time.Time // the last sweep of this pass
	if p.sweepWanted.Swap(false) {
		swept = p.unplanMissed(ctx)
	}
	p.sweptOnce.Do(func() { close(p.swept) })
	cals, err := p.calendars.load(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Error("read calendars", "err", err)
		}
		if cals == nil {
			return // none read yet: no task is planned without its calendars
		}
	}
	passEnd := time.Now().Add(p.refillWindow())
	limit := p.batch // tasks read (and, on PostgreSQL and MySQL, locked) per PlanDue
	for ctx.Err() == nil {
		now := time.Now()
		until := now.Add(p.lookahead)
		tasks := make(map[int64]*sundial.Task)
		deferred := false
		ahead := 0 // fires planned past the lookahead in this transaction
		kept := 0  // tasks left for a later transaction (sundial.Plan.Keep)
		// A task not due before the next pass may wait for a later
		// transaction, or pass, once this one has its share of fires
		// planned past the lookahead.
		keepAfter := now.Add(2*p.pollInterval + p.claimWindow)
		// Planned runs belong to no node: every node claims its share
		// shortly before they are due (the claimer).
		runs, err := p.store.PlanDue(ctx, until, limit, "", now,
			func(t *sundial.Task) sundial.Plan {
				tasks[t.ID] = t
				if missedUnplanned(t, now, p.misfire) &&
					(swept.IsZero() || !missedUnplanned(t, swept, p.misfire)) {
					deferred = true
					return sundial.Plan{Next: t.NextFireTime}
				}
				horizon := p.horizon
				if ahead >= p.maxAhead {
					if t.NextFireTime != nil && t.NextFireTime.After(keepAfter) {
						kept++
						return sundial.Plan{Keep: true}
					}
					horizon = 0 // up to the lookahead; further at a later pass
				}
				plan := planTask(t, now, until, t.MissAfter(p.misfire), p.maxRunsPerTask, horizon, cals)
				for _, r := range plan.Runs {
					if r.ScheduledTime.After(until) {
						ahead++
					}
				}
				return plan
			})
		if err != nil {
			if ctx.Err() == nil {
				p.log.Error("plan due tasks", "err", err)
			}
			return
		}
		if deferred {
			if swept = p.unplanMissed(ctx); swept.IsZero() {
				return // the sweep failed: the next pass tries again
			}
		}
		for _, r := range runs {
			if r.Status == sundial.RunSkipped {
				p.record(outcome{run: r, task: tasks[r.TaskID], status: r.Status, attempt: r.Attempt})
			}
		}
		for _, r := range runs {
			if r.Status == sundial.RunScheduled && r.ScheduledTime.Before(now.Add(p.claimWindow)) {
				p.claimSoon() // due before the next regular claim
				break
			}
		}
		if kept > 0 {
			// The tasks kept are later than the rest, whose fires this
			// transaction planned: the next one takes them up, unless the
			// pass has had its time.
			if time.Now().After(passEnd) {
				return
			}
			// Read about as many as this one planned, not a whole batch
			// to keep most of it again: each task read is locked (a write
			// on PostgreSQL).
			limit = min(p.batch, max(2*(len(tasks)-kept), 32))
			continue
		}
		if len(tasks) < limit && !deferred {
			return
		}
	}
}

// refillWindow is how long a pass goes on planning frequent tasks past
// the lookahead (refillAt) in transactions of at most maxPlannedAhead such
// fires each: a quarter of the poll interval. A pass starts near the middle
// of a second (nextPlanDelay), so its writes end before the fires of the
// next whole second, the densest, go out; and SQLite's single writer is
// never held for long, so claims and outcomes pass between its
// transactions. The tasks it has not reached by then wait for the next
// pass, as long as they are not due before it.
func (p *planner) refillWindow() time.Duration { return p.pollInterval / 4 }

// maxPlannedAhead bounds the fires one PlanDue transaction plans past the
// lookahead (refillAt): once it has planned as many, the other tasks it
// reads are kept for the next transaction (sundial.Plan.Keep), or, if due
// before the next pass, planned up to the lookahead only, and further at a
// later pass. Many frequent tasks due for a refill at once (a slot of
// refillAt, or tasks created together) then fill their spans over a few
// short transactions and passes rather than in one long transaction, during
// which SQLite's single writer would hold every claim back and the
// database's CPU would be taken from the deliveries of the next second.
// On SQLite 1,000 fires take about 50 ms to insert.
const maxPlannedAhead = 1_000

// minMissAfter is the least lateness at which a fire can be missed: the
// shortest starting_deadline_seconds, and the least misfire threshold.
const minMissAfter = time.Second

// missedUnplanned reports whether the planner is about to count fires of
// t that it never planned as missed: t is a cron task whose next unplanned
// fire is later than its deadline.
func missedUnplanned(t *sundial.Task, now time.Time, threshold time.Duration) bool {
	return !t.OneOff() && t.NextFireTime != nil && now.Sub(*t.NextFireTime) > t.MissAfter(threshold)
}

// unplanMissed unplans the planned fires, whoever holds them, that are
// later than their task's deadline, so that the planner counts them with
// the fires it never planned, under the task's catch-up mode. It returns
// the time it looked from: every planned fire missed by then is gone. A
// sweep that fails returns the zero time and asks the next pass for
// another.
func (p *planner) unplanMissed(ctx context.Context) time.Time {
	batch := p.unplanBatch
	start := time.Now()
	for ctx.Err() == nil {
		looked, deleted, err := p.store.RunUnplanMissed(ctx, start.Add(-minMissAfter), batch,
			func(r *sundial.Run, t *sundial.Task) bool {
				// Late from its DueAt: its time plus its jitter.
				return t != nil && !t.OneOff() && start.Sub(r.DueAt) > t.MissAfter(p.misfire)
			})
		if err != nil {
			if ctx.Err() == nil {
				p.log.Error("unplan missed fires", "err", err)
			}
			p.sweepWanted.Store(true)
			return time.Time{}
		}
		if deleted > 0 {
			p.log.Info("planned fires came too late to start; the catch-up mode decides", "fires", deleted)
		}
		if looked < batch || deleted == 0 {
			// (A full batch of late fires none of which is missed, a
			// batch (10,000) of fires inside their deadlines, ends the sweep
			// early: the next claim of one that is missed asks again.)
			return start
		}
	}
	return time.Time{}
}
