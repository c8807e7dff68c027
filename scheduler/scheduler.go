package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
)

// Deliverer makes one HTTP delivery: *executor.Executor in production, an
// in-memory target in tests that run on a fake clock.
type Deliverer interface {
	Deliver(ctx context.Context, req executor.Request) executor.Outcome
}

// Config tunes the scheduler. Zero fields take the defaults in brackets.
type Config struct {
	Node              sundial.Node  // this process; ID required
	PollInterval      time.Duration // how often the planner claims due tasks [1s]
	Lookahead         time.Duration // how far ahead fires are planned [10s]; at least 2 poll intervals
	StartAhead        time.Duration // unconstrained fires are committed RUNNING this long before their instant [300ms]
	MisfireThreshold  time.Duration // a fire later than this is missed and follows the catch-up mode [60s]
	PlanBatch         int           // tasks claimed per planner transaction [500]
	MaxRunsPerTask    int           // runs planned per task per pass [100]
	Workers           int           // concurrent HTTP deliveries [16]
	RequestTimeout    time.Duration // delivery timeout of tasks without timeout_seconds [15s]
	HeartbeatInterval time.Duration // [1s]
	DeadAfter         time.Duration // a node silent this long is dead [3s]
	Retention         time.Duration // finished runs older than this are purged [7 days]
	NodeRetention     time.Duration // nodes gone (LEFT or DEAD) longer than this are deleted [24h]
	DrainTimeout      time.Duration // on stop, in-flight calls get this long to finish [30s]
	DrainReport       time.Duration // while draining, how often what is still in flight is logged [5s]
	ClaimInterval     time.Duration // how often a node claims runs coming due [50ms]
	ClaimBatch        int           // runs claimed per transaction [250]
	// MaxDeliveries bounds the deliveries of one fire when nodes die or
	// stop during its call [3]: past it an interrupted run is FAILED.
	MaxDeliveries int
	// Compensator holds the numbers of seed 000's start compensation.
	Compensator CompensatorConfig
	// StartIntervals spaces the starts of deliveries to a host (as written
	// in the target URL, host[:port]): seed 000's start rate limit. A start
	// that comes too soon waits its turn; none is dropped.
	StartIntervals map[string]time.Duration
	// CallbackURL is the base URL targets of ASYNC runs call back on
	// (this node's API, or a load balancer in front of every node):
	// "/api/v1/runs/{id}/callback" is appended [http://127.0.0.1:8080].
	CallbackURL string
	// CallbackSecret signs callback tokens; every node of a cluster must
	// share it. Required for ASYNC tasks.
	CallbackSecret []byte
	// CallbackTimeout is how long an ASYNC run waits for its callback when
	// its task does not say (callback_timeout_sec) [10m].
	CallbackTimeout time.Duration
	// CallbackSweep is how often expired callback deadlines are looked
	// for [1s].
	CallbackSweep time.Duration

	// admitLaneCap is the room of each admission lane [4096]: tests make
	// it small to fill a lane with a small burst.
	admitLaneCap int
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.PollInterval, time.Second)
	def(&c.Lookahead, 10*time.Second)
	c.Lookahead = max(c.Lookahead, 2*c.PollInterval)
	def(&c.StartAhead, 300*time.Millisecond)
	def(&c.ClaimInterval, 50*time.Millisecond)
	def(&c.MisfireThreshold, time.Minute)
	def(&c.RequestTimeout, 15*time.Second)
	def(&c.HeartbeatInterval, time.Second)
	def(&c.DeadAfter, 3*time.Second)
	def(&c.Retention, 7*24*time.Hour)
	def(&c.NodeRetention, 24*time.Hour)
	def(&c.DrainTimeout, 30*time.Second)
	def(&c.DrainReport, 5*time.Second)
	def(&c.CallbackTimeout, 10*time.Minute)
	def(&c.CallbackSweep, time.Second)
	if c.CallbackURL == "" {
		c.CallbackURL = "http://127.0.0.1:8080"
	}
	if c.PlanBatch <= 0 {
		c.PlanBatch = 500
	}
	if c.MaxRunsPerTask <= 0 {
		c.MaxRunsPerTask = 100
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = 250
	}
	if c.MaxDeliveries <= 0 {
		c.MaxDeliveries = 3
	}
	if c.admitLaneCap <= 0 {
		c.admitLaneCap = 4096
	}
}

// Scheduler plans, admits and delivers the fires of every task in the store,
// together with the other nodes on the same database.
type Scheduler struct {
	cfg     Config
	store   sundial.Store
	deliver Deliverer
	log     *slog.Logger
	m       *metrics

	pokePlanner chan struct{}
	disp        *dispatcher
	pool        *pool
	writer      *writer
	comp        *compensator
	running     atomic.Bool
	healthy     atomic.Bool // membership renewed within DeadAfter
	// sweepWanted asks the next planner pass to unplan missed fires first:
	// a claim found some.
	sweepWanted atomic.Bool

	endDrain     chan struct{} // closed by EndDrain
	endDrainOnce sync.Once
}

// New returns a scheduler; Run starts it.
func New(cfg Config, store sundial.Store, d Deliverer, log *slog.Logger, reg prometheus.Registerer) (*Scheduler, error) {
	if cfg.Node.ID == "" {
		return nil, errors.New("scheduler: node ID is required")
	}
	cfg.setDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{
		cfg:         cfg,
		store:       store,
		deliver:     d,
		log:         log.With("component", "scheduler"),
		m:           newMetrics(reg),
		pokePlanner: make(chan struct{}, 1),
		endDrain:    make(chan struct{}),
	}
	s.writer = newWriter(s)
	s.pool = newPool(s)
	s.disp = newDispatcher(s)
	s.comp = newCompensator(cfg.Compensator, log)
	s.comp.queueSize = func() int { return s.pool.waiting() + s.disp.due(time.Now()) }
	s.comp.find = s.findStuck
	s.comp.start = s.startStuck
	s.comp.recoverLost = s.interruptLost
	return s, nil
}

// interruptLost is the compensator's sweep of this node's own deliveries:
// RUNNING runs it holds in the database, started before startedBefore,
// that it no longer holds in memory (no call, no outcome on its way: a
// run committed by a claim whose answer was lost, or dropped with the
// heap when the membership expired). Each is recorded INTERRUPTED, fenced,
// with an attempt, and delivered again as a delivery cut off by a node's
// stop would be. It returns how many it interrupted.
func (s *Scheduler) interruptLost(ctx context.Context, startedBefore time.Time) (int, error) {
	// Memory first: a run that enters memory after this snapshot was
	// started just now, not before startedBefore.
	held := map[int64]bool{}
	s.disp.holding(held)
	s.pool.holding(held)
	owned, err := s.store.RunsOwned(ctx, s.cfg.Node.ID)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	var (
		lost []sundial.RunFinish
		runs []*sundial.Run
	)
	for _, r := range owned {
		if r.Status != sundial.RunRunning || held[r.ID] || r.StartedAt == nil || !r.StartedAt.Before(startedBefore) {
			continue
		}
		lost = append(lost, sundial.RunFinish{ID: r.ID, Fence: r.Fence, Status: sundial.RunInterrupted,
			StartedAt: *r.StartedAt, FinishedAt: now, Error: errLost.Error()})
		runs = append(runs, r)
	}
	if len(lost) == 0 {
		return 0, nil
	}
	ok, err := s.store.RunFinish(ctx, lost)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, applied := range ok {
		if applied {
			n++
			r := runs[i]
			s.record(outcome{run: r, status: sundial.RunInterrupted, err: lost[i].Error, trace: r.TraceID,
				attempt: r.Attempt, delivery: r.Deliveries, started: lost[i].StartedAt, finished: now})
		}
	}
	if n > 0 {
		s.redeliver(ctx)
	}
	return n, nil
}

// findStuck is the compensator's query: runs due long ago and not started
// that this node holds but no longer has in its heap (the hand-off was
// lost), or that no live node holds.
func (s *Scheduler) findStuck(ctx context.Context, dueBefore time.Time) ([]*sundial.Run, error) {
	runs, err := s.store.RunFindStuck(ctx, s.cfg.Node.ID, dueBefore, 100)
	if err != nil {
		return nil, err
	}
	stuck := runs[:0]
	for _, r := range runs {
		if r.NodeID != s.cfg.Node.ID || !s.disp.has(r.ID) {
			stuck = append(stuck, r)
		}
	}
	return stuck, nil
}

// startStuck starts stuck runs through the normal start path: claimed by
// this node (a new fence), then into the heap, due at once.
func (s *Scheduler) startStuck(ctx context.Context, stuck []*sundial.Run) int {
	refs := make([]sundial.RunRef, len(stuck))
	for i, r := range stuck {
		refs[i] = sundial.RunRef{ID: r.ID, Fence: r.Fence}
	}
	runs, tasks, err := s.store.RunClaim(ctx, s.cfg.Node.ID, refs)
	if err != nil {
		s.log.Error("claim stuck runs", "err", err)
		return 0
	}
	// As a claim's: a first delivery past its task's deadline is left to
	// the planner, which counts it under the catch-up mode.
	s.disp.take(ctx, runs, tasks, time.Now())
	return len(runs)
}

// startQueued hands the oldest QUEUED run of t to admission: a slot may
// have freed. A run queued on another node is taken over first.
func (s *Scheduler) startQueued(ctx context.Context, t *sundial.Task) {
	q, err := s.store.RunQueuedNext(ctx, t.ID)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("find queued run", "task_id", t.ID, "err", err)
		}
		return
	}
	if q == nil {
		return
	}
	if q.NodeID != s.cfg.Node.ID {
		runs, _, err := s.store.RunClaim(ctx, s.cfg.Node.ID, []sundial.RunRef{{ID: q.ID, Fence: q.Fence}})
		if err != nil || len(runs) == 0 {
			return // taken by another node meanwhile
		}
		q = runs[0]
	}
	s.disp.addAdmitted(q, t)
}

// EndDrain ends the drain of a stopping Run at once, as the drain timeout
// would: calls still in flight are cancelled and recorded INTERRUPTED
// (delivered again by a live node), then Run hands back its planned fires
// and leaves. Called before Run's context is done, it takes effect when the
// drain begins. It is safe to call more than once.
func (s *Scheduler) EndDrain() {
	s.endDrainOnce.Do(func() { close(s.endDrain) })
}

// CompensationStatus returns the state of seed 000's compensator.
func (s *Scheduler) CompensationStatus() sundial.CompensationStatus { return s.comp.Status() }

// TriggerCompensation forces a compensation round now.
func (s *Scheduler) TriggerCompensation() { s.comp.Trigger() }

// Ready reports whether the scheduler is running and holds its membership.
func (s *Scheduler) Ready() bool { return s.running.Load() && s.healthy.Load() }

// NodeID returns this node's identity.
func (s *Scheduler) NodeID() string { return s.cfg.Node.ID }

// Poke asks the planner for a pass now, after a task was created or changed,
// so that a fire due within the next poll interval is not late.
func (s *Scheduler) Poke() {
	select {
	case s.pokePlanner <- struct{}{}:
	default:
	}
}

// Run registers the node and runs the planner, dispatcher, delivery pool
// and housekeeping until ctx is cancelled. Then it stops taking fires, gives
// in-flight calls up to the drain timeout (or until EndDrain), logging what
// is still in flight every DrainReport, records what was cut off as
// INTERRUPTED, hands its planned fires back and leaves the cluster.
func (s *Scheduler) Run(ctx context.Context) error {
	node := s.cfg.Node
	node.State = sundial.NodeAlive
	if err := s.store.NodeRegister(ctx, &node); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing to hand back
		}
		return fmt.Errorf("register node: %w", err)
	}
	s.healthy.Store(true)
	s.running.Store(true)
	s.log.Info("scheduler started", "node_id", node.ID, "poll_interval", s.cfg.PollInterval,
		"lookahead", s.cfg.Lookahead, "workers", s.cfg.Workers)

	var wg sync.WaitGroup
	loops := []func(context.Context){s.planLoop, s.disp.loop, s.disp.claimLoop, s.membershipLoop,
		s.purgeLoop, s.cancelLoop, s.callbackLoop, s.comp.Run}
	for _, loop := range loops {
		wg.Go(func() { loop(ctx) })
	}
	writerDone := make(chan struct{})
	go func() { s.writer.loop(); close(writerDone) }()
	s.pool.start()

	<-ctx.Done()
	s.running.Store(false)
	wg.Wait() // planner, dispatcher (after sending what it had committed), housekeeping
	s.pool.drain(s.cfg.DrainTimeout, s.cfg.DrainReport, s.endDrain)
	s.writer.close()
	<-writerDone

	// The context is done; finish the bookkeeping with a fresh one.
	bg, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.store.RunRelease(bg, node.ID, "node stopped", time.Now()); err != nil {
		s.log.Error("release runs on stop", "node_id", node.ID, "err", err)
	}
	if err := s.store.NodeLeave(bg, node.ID); err != nil {
		s.log.Error("leave cluster", "node_id", node.ID, "err", err)
	}
	s.log.Info("scheduler stopped", "node_id", node.ID)
	return nil
}

// planLoop claims due tasks every poll interval (with jitter, so nodes do
// not collide) and hands their runs to the dispatcher.
func (s *Scheduler) planLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.pokePlanner:
		}
		if s.healthy.Load() {
			s.planOnce(ctx)
		}
		timer.Reset(s.nextPlanDelay(time.Now()))
	}
}

// nextPlanDelay returns the wait before the next planner pass: one poll
// interval, moved to the middle between two whole seconds when the interval
// is a second or more (fires are densest on whole seconds, and the planner's
// writes would compete with their deliveries), and jittered by up to ±10%
// (at most ±100ms) so that nodes do not collide.
func (s *Scheduler) nextPlanDelay(now time.Time) time.Duration {
	poll := s.cfg.PollInterval
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
func (s *Scheduler) planOnce(ctx context.Context) {
	var swept time.Time // the last sweep of this pass
	if s.sweepWanted.Swap(false) {
		swept = s.unplanMissed(ctx)
	}
	for ctx.Err() == nil {
		now := time.Now()
		tasks := make(map[int64]*sundial.Task)
		deferred := false
		// Planned runs belong to no node: every node claims its share
		// shortly before they are due (dispatcher.claimLoop).
		runs, err := s.store.PlanDue(ctx, now.Add(s.cfg.Lookahead), s.cfg.PlanBatch, "", now,
			func(t *sundial.Task) sundial.Plan {
				tasks[t.ID] = t
				if missedUnplanned(t, now, s.cfg.MisfireThreshold) &&
					(swept.IsZero() || !missedUnplanned(t, swept, s.cfg.MisfireThreshold)) {
					deferred = true
					return sundial.Plan{Next: t.NextFireTime}
				}
				return planTask(t, now, now.Add(s.cfg.Lookahead), t.MissAfter(s.cfg.MisfireThreshold), s.cfg.MaxRunsPerTask)
			})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("plan due tasks", "err", err)
			}
			return
		}
		if deferred {
			if swept = s.unplanMissed(ctx); swept.IsZero() {
				return // the sweep failed: the next pass tries again
			}
		}
		for _, r := range runs {
			if r.Status == sundial.RunSkipped {
				s.record(outcome{run: r, task: tasks[r.TaskID], status: r.Status, attempt: r.Attempt})
			}
		}
		for _, r := range runs {
			if r.Status == sundial.RunScheduled && r.ScheduledTime.Before(now.Add(s.cfg.StartAhead+2*s.cfg.ClaimInterval)) {
				s.disp.pokeClaim() // due before the next regular claim
				break
			}
		}
		if len(tasks) < s.cfg.PlanBatch && !deferred {
			return
		}
	}
}

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
func (s *Scheduler) unplanMissed(ctx context.Context) time.Time {
	const batch = 10000
	start := time.Now()
	for ctx.Err() == nil {
		looked, deleted, err := s.store.RunUnplanMissed(ctx, start.Add(-minMissAfter), batch,
			func(r *sundial.Run, t *sundial.Task) bool {
				return t != nil && !t.OneOff() && start.Sub(r.ScheduledTime) > t.MissAfter(s.cfg.MisfireThreshold)
			})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("unplan missed fires", "err", err)
			}
			s.sweepWanted.Store(true)
			return time.Time{}
		}
		if deleted > 0 {
			s.log.Info("planned fires came too late to start; the catch-up mode decides", "fires", deleted)
		}
		if looked < batch || deleted == 0 {
			// (A full batch of late fires none of which is missed, a
			// batch of 10,000 fires inside their deadlines, ends the sweep
			// early: the next claim of one that is missed asks again.)
			return start
		}
	}
	return time.Time{}
}

// membershipLoop renews this node's heartbeat and declares dead the nodes
// that stopped renewing theirs, releasing their runs to the others. A node
// that cannot renew its own for DeadAfter stops taking fires until it can.
func (s *Scheduler) membershipLoop(ctx context.Context) {
	ticker := time.NewTicker(s.cfg.HeartbeatInterval)
	defer ticker.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		err := s.store.NodeHeartbeat(ctx, s.cfg.Node.ID)
		switch {
		case err == nil:
			lastOK = time.Now()
			if !s.healthy.Swap(true) {
				s.log.Info("membership renewed", "node_id", s.cfg.Node.ID)
				s.readopt(ctx)
			}
		case sundial.ErrorCode(err) == sundial.ENotFound:
			// Declared dead by the others: rejoin as a new member.
			s.log.Warn("membership lost; rejoining", "node_id", s.cfg.Node.ID)
			s.healthy.Store(false)
			s.disp.dropAll()
			node := s.cfg.Node
			if err := s.store.NodeRegister(ctx, &node); err == nil {
				lastOK = time.Now()
				s.healthy.Store(true)
			}
			continue
		default:
			if ctx.Err() != nil {
				return
			}
			s.log.Error("heartbeat", "node_id", s.cfg.Node.ID, "err", err)
			if time.Since(lastOK) >= s.cfg.DeadAfter && s.healthy.Swap(false) {
				s.log.Error("membership expired; stopping fires", "node_id", s.cfg.Node.ID)
				s.disp.dropAll()
				s.pool.cancelAll(errMembershipLost)
			}
			continue
		}
		dead, err := s.store.NodeReap(ctx, s.cfg.DeadAfter, time.Now())
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("reap dead nodes", "err", err)
			}
			continue
		}
		for _, id := range dead {
			s.log.Warn("node declared dead; its runs were released", "dead_node_id", id, "node_id", s.cfg.Node.ID)
		}
		if len(dead) > 0 {
			s.Poke()
		}
		s.redeliver(ctx)
	}
}

// readopt takes back into the heap the SCHEDULED runs this node still
// holds after its membership expired and was renewed without the others
// declaring it dead: the heap was dropped when the membership expired, and
// nothing else would start them before the compensator, tens of seconds
// later. Each is claimed afresh (a new fence).
func (s *Scheduler) readopt(ctx context.Context) {
	owned, err := s.store.RunsOwned(ctx, s.cfg.Node.ID)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("find runs held through a membership loss", "err", err)
		}
		return
	}
	var refs []sundial.RunRef
	for _, r := range owned {
		if r.Status == sundial.RunScheduled && !s.disp.has(r.ID) {
			refs = append(refs, sundial.RunRef{ID: r.ID, Fence: r.Fence})
		}
	}
	if len(refs) == 0 {
		return
	}
	runs, tasks, err := s.store.RunClaim(ctx, s.cfg.Node.ID, refs)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("take back runs held through a membership loss", "runs", len(refs), "err", err)
		}
		return
	}
	s.log.Warn("took back runs held through a membership loss", "runs", len(runs), "node_id", s.cfg.Node.ID)
	s.disp.take(ctx, runs, tasks, time.Now())
}

// redeliver takes up runs whose delivery was cut off (their node died or
// stopped mid-call) and delivers them again, with the same Idempotency-Key
// and the next delivery count.
func (s *Scheduler) redeliver(ctx context.Context) {
	for ctx.Err() == nil {
		runs, tasks, err := s.store.RunRedeliver(ctx, s.cfg.Node.ID, s.cfg.MaxDeliveries, 100, time.Now())
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("redeliver interrupted runs", "err", err)
			}
			return
		}
		for _, r := range runs {
			s.log.Warn("delivering an interrupted run again", "task_id", r.TaskID, "run_id", r.ID,
				"delivery", r.Deliveries+1, "idempotency_key", r.IdempotencyKey)
		}
		s.disp.add(runs, tasks, true)
		if len(runs) < 100 {
			return
		}
	}
}

// cancelLoop stops, within half a second, the calls of this node whose
// cancellation was asked on another node (POST /runs/{id}/cancel, or a
// CANCEL_PREV admission there).
func (s *Scheduler) cancelLoop(ctx context.Context) {
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		ids, err := s.store.RunCancelRequested(ctx, s.cfg.Node.ID)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("find runs to cancel", "err", err)
			}
			continue
		}
		for _, id := range ids {
			s.pool.cancel(id, errCanceled)
		}
	}
}

// purgeLoop is the housekeeping: every minute it deletes run history older
// than the retention period, in small batches so that it never holds the
// database for long, and the nodes gone (LEFT or DEAD) for longer than the
// node retention.
func (s *Scheduler) purgeLoop(ctx context.Context) {
	ticker := time.NewTicker(time.Minute)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		s.purgeRuns(ctx)
		s.pruneNodes(ctx)
	}
}

// purgeRuns deletes finished runs older than the retention period.
func (s *Scheduler) purgeRuns(ctx context.Context) {
	const batch = 500
	for ctx.Err() == nil {
		n, err := s.store.RunPurge(ctx, time.Now().Add(-s.cfg.Retention), batch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("purge run history", "err", err)
			}
			return
		}
		s.m.purged.Add(float64(n))
		if n < batch {
			return
		}
	}
}

// pruneNodes deletes the nodes whose last heartbeat is older than the node
// retention and that are no longer members, so that GET /api/v1/nodes
// does not list every process that ever ran.
func (s *Scheduler) pruneNodes(ctx context.Context) {
	n, err := s.store.NodePrune(ctx, time.Now().Add(-s.cfg.NodeRetention))
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.log.Error("prune departed nodes", "err", err)
		}
	case n > 0:
		s.log.Info("pruned departed nodes", "nodes", n,
			"node_retention", s.cfg.NodeRetention)
	}
}

// Trigger makes a manual run of a task now, with params in place of the
// task's for every delivery of the run (nil: the task's), and admits it at
// once under the task's concurrency policy, as the dispatcher admits a
// fire at its instant. It returns the run as admission left it: RUNNING
// (handed to the delivery pool), QUEUED, or SKIPPED with its reason. Only
// if the database could not decide does the run come back SCHEDULED, for
// the dispatcher to admit shortly.
func (s *Scheduler) Trigger(ctx context.Context, taskID int64, params json.RawMessage) (*sundial.Run, error) {
	if !s.Ready() {
		// Stopping (its pool takes no more calls), or cut off from the
		// cluster: another node, or this one shortly, takes the trigger.
		return nil, &sundial.Error{Code: sundial.EUnavailable,
			Message: "this node is stopping or has lost its cluster membership; try again shortly"}
	}
	t, err := s.store.TaskGet(ctx, taskID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	r := &sundial.Run{
		TaskID:        t.ID,
		FireKey:       fmt.Sprintf("manual:%d-%d", now.UnixNano(), randN(1<<30)),
		Trigger:       sundial.TriggerManual,
		Params:        sundial.NormParams(params),
		ScheduledTime: now.UTC(),
		Status:        sundial.RunScheduled,
		Attempt:       1,
		NodeID:        s.cfg.Node.ID,
		Fence:         1,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	if err := s.store.RunInsert(ctx, r); err != nil {
		return nil, err
	}
	// The run exists: it is decided whatever becomes of the request. The
	// caller gets a copy, as the delivery pool or the dispatcher holds the
	// run.
	ctx = context.WithoutCancel(ctx)
	got, err := s.admit(ctx, r)
	switch {
	case err == nil:
		c := *got
		return &c, nil
	case sundial.ErrorCode(err) == sundial.ENotFound:
		// Changed since it was made (its task was deleted): as it is now.
		return s.store.RunGet(ctx, r.ID)
	}
	s.log.Error("admit manual run; the dispatcher admits it again", "task_id", t.ID, "run_id", r.ID, "err", err)
	c := *r
	s.disp.addAdmitted(r, t)
	return &c, nil
}

// Cancel cancels a run: one not yet started at once, one in flight on this
// node by stopping its call (the outcome is recorded CANCELED).
func (s *Scheduler) Cancel(ctx context.Context, runID int64) (*sundial.Run, error) {
	r, err := s.store.RunCancel(ctx, runID, time.Now())
	if err != nil {
		return nil, err
	}
	switch r.Status {
	case sundial.RunCanceled:
		s.disp.forget(r.ID)
		t, _ := s.store.TaskGet(ctx, r.TaskID) // for the log line only; nil when deleted
		s.record(outcome{run: r, task: t, status: r.Status, err: r.Error, attempt: r.Attempt})
	case sundial.RunRunning:
		s.pool.cancel(r.ID, errCanceled)
	case sundial.RunWaitingCallback:
		// No call is in flight: the wait for the callback ends here.
		t, err := s.store.TaskGet(ctx, r.TaskID)
		if err != nil && sundial.ErrorCode(err) != sundial.ENotFound {
			return nil, err
		}
		c := sundial.RunCompletion{ID: r.ID, Fence: r.Fence, Status: sundial.RunCanceled,
			Error: errCanceled.Error(), FinishedAt: time.Now(), CompleteTask: oneOffEnd(t, r, sundial.RunCanceled)}
		done, err := s.store.RunComplete(ctx, c)
		if err != nil {
			return nil, err
		}
		s.recordCompletion(done, t, c)
		s.slotFreed(ctx, t)
		return done, nil
	}
	return r, nil
}
