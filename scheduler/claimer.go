package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/sundialhq/sundial"
)

// claimStore is what the claimer needs of the store.
type claimStore interface {
	RunClaimDue(ctx context.Context, nodeID string, until time.Time, limit int, start sundial.ClaimStartParams) ([]*sundial.Run, map[int64]*sundial.Task, error)
	RunClaim(ctx context.Context, nodeID string, refs []sundial.RunRef) ([]*sundial.Run, map[int64]*sundial.Task, error)
	RunFindStuck(ctx context.Context, nodeID string, dueBefore time.Time, limit int) ([]*sundial.Run, error)
}

// claimer takes this node's share of the runs coming due: every claim
// interval (jittered), or at once when poked, it claims the unheld runs due
// within StartAhead plus one interval (RunClaimDue), so each is in the
// dispatcher's heap before it must be committed. It also claims the runs
// other components hand it (take and claim): runs held through a
// membership loss, and the compensator's stuck runs.
type claimer struct {
	store claimStore
	log   *slog.Logger

	node       string
	interval   time.Duration // ClaimInterval
	startAhead time.Duration
	misfire    time.Duration // the server's misfire threshold
	batch      int           // runs per RunClaimDue

	// healthy reports whether this node holds its membership.
	healthy func() bool
	// add puts claimed runs in the dispatcher's heap.
	add func(runs []*sundial.Run, tasks map[int64]*sundial.Task, redelivered bool)
	// inHeap reports whether the dispatcher holds a run in its heap.
	inHeap func(runID int64) bool
	// missed asks the planner to unplan the missed fires a claim found.
	missed func()
	// ready, when not nil, is closed when claims may start: the planner's
	// first pass has swept (planner.Run).
	ready <-chan struct{}

	wake chan struct{}
}

func newClaimer(cfg Config, store claimStore, log *slog.Logger) *claimer {
	return &claimer{
		store:      store,
		log:        log.With("component", "claimer"),
		node:       cfg.Node.ID,
		interval:   cfg.ClaimInterval,
		startAhead: cfg.StartAhead,
		misfire:    cfg.MisfireThreshold,
		batch:      cfg.ClaimBatch,
		wake:       make(chan struct{}, 1),
	}
}

// Run claims every claim interval (jittered) and when poked, until ctx is
// done.
func (c *claimer) Run(ctx context.Context) error {
	if c.ready != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-c.ready:
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-c.wake:
		}
		if c.healthy() {
			c.claimOnce(ctx)
		}
		iv := c.interval
		timer.Reset(iv - iv/5 + time.Duration(randN(int64(iv/5)*2+1)))
	}
}

// poke asks for a claim now: the planner has just made runs that may be
// due before the next one.
func (c *claimer) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// claimOnce claims until nothing more is due within the window. A run found
// later than the misfire threshold (the cluster was down when it was due)
// is given back to the planner, which applies the task's catch-up mode.
func (c *claimer) claimOnce(ctx context.Context) {
	for ctx.Err() == nil {
		now := time.Now()
		// The claim itself commits the fast runs it takes (first
		// deliveries only if not missed: see take), StartAhead plus up to
		// one interval before their instant.
		until := now.Add(c.startAhead + c.interval)
		runs, tasks, err := c.store.RunClaimDue(ctx, c.node, until, c.batch,
			sundial.ClaimStartParams{By: until, FreshAfter: now.Add(-c.misfire)})
		if err != nil {
			if ctx.Err() == nil {
				c.log.Error("claim due runs", "err", err)
			}
			return
		}
		c.take(runs, tasks, now)
		if len(runs) < c.batch {
			return
		}
	}
}

// take puts runs just claimed into the heap. A first delivery found later
// than its task's deadline (the cluster was down, or this node too busy,
// when it was due) was missed: it is left out, and the planner, asked to,
// unplans it and counts it under the task's catch-up mode.
func (c *claimer) take(runs []*sundial.Run, tasks map[int64]*sundial.Task, now time.Time) {
	fresh := runs[:0:0]
	missed := false
	for _, r := range runs {
		// Catch-up runs are late on purpose, retries are due when their
		// backoff ends, and a one-off task fires however late: only a
		// cron task's scheduled fire can have been missed. Its lateness
		// counts from its DueAt: its time plus its jitter.
		if t := tasks[r.TaskID]; r.Trigger == sundial.TriggerSchedule && r.Deliveries == 0 &&
			t != nil && !t.OneOff() && now.Sub(r.DueAt) > t.MissAfter(c.misfire) {
			missed = true
		} else {
			fresh = append(fresh, r)
		}
	}
	c.add(fresh, tasks, false)
	if missed {
		c.missed()
	}
}

// claim takes over the given runs for this node (a new fence each) and
// puts them into the heap as a claim of due runs would. It returns how
// many it took.
func (c *claimer) claim(ctx context.Context, refs []sundial.RunRef) (int, error) {
	runs, tasks, err := c.store.RunClaim(ctx, c.node, refs)
	if err != nil {
		return 0, err
	}
	// As a claim's: a first delivery past its task's deadline is left to
	// the planner, which counts it under the catch-up mode.
	c.take(runs, tasks, time.Now())
	return len(runs), nil
}

// findStuck is the compensator's query: runs due long ago and not started
// that this node holds but no longer has in its heap (the hand-off was
// lost), or that no live node holds.
func (c *claimer) findStuck(ctx context.Context, dueBefore time.Time) ([]*sundial.Run, error) {
	runs, err := c.store.RunFindStuck(ctx, c.node, dueBefore, 100)
	if err != nil {
		return nil, err
	}
	stuck := runs[:0]
	for _, r := range runs {
		if r.NodeID != c.node || !c.inHeap(r.ID) {
			stuck = append(stuck, r)
		}
	}
	return stuck, nil
}

// startStuck starts the compensator's stuck runs through the normal start
// path: claimed by this node (a new fence), then into the heap, due at
// once.
func (c *claimer) startStuck(ctx context.Context, stuck []*sundial.Run) int {
	refs := make([]sundial.RunRef, len(stuck))
	for i, r := range stuck {
		refs[i] = sundial.RunRef{ID: r.ID, Fence: r.Fence}
	}
	n, err := c.claim(ctx, refs)
	if err != nil {
		c.log.Error("claim stuck runs", "err", err)
		return 0
	}
	return n
}
