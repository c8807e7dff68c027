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
	"golang.org/x/sync/errgroup"

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
	PlanHorizon       time.Duration // a frequent task's fires are planned this far ahead in one pass, if further than Lookahead (refillAt) [2m]
	Workers           int           // concurrent HTTP deliveries [16]
	RequestTimeout    time.Duration // delivery timeout of tasks without timeout_seconds [15s]
	HeartbeatInterval time.Duration // [1s]
	DeadAfter         time.Duration // a node silent this long is dead [3s]
	Retention         time.Duration // finished runs older than this are purged [7 days]
	NodeRetention     time.Duration // nodes gone (LEFT or DEAD) longer than this are deleted [24h]
	AuditRetention    time.Duration // audit entries older than this are purged [90 days]
	// DependencyRefresh is how often a node reads the tasks that have
	// parents again, and skips the joins past their deadline [2s]
	// (joiner.go).
	DependencyRefresh time.Duration
	DrainTimeout      time.Duration // on stop, in-flight calls get this long to finish [30s]
	DrainReport       time.Duration // while draining, how often what is still in flight is logged [5s]
	ClaimInterval     time.Duration // how often a node claims runs coming due [50ms]
	CancelPoll        time.Duration // how often a node looks for cancellations asked on other nodes [500ms]
	ClaimBatch        int           // runs claimed per transaction [250]
	// MaxDeliveries bounds the deliveries of one fire when nodes die or
	// stop during its call [3]: past it an interrupted run is FAILED.
	MaxDeliveries int
	// StateFlush is how often, at most, a node saves the health of a task
	// whose runs succeed (its lags, its last success) [5m]; a failure is
	// saved at once, and so is every outcome of a task that fires less
	// often than this (see health.go).
	StateFlush time.Duration
	// StatsFlush is how often a node writes its counters of the current
	// minute (fires, outcomes, lags: one row of node_stats, replaced each
	// time; see stats.go) [10s]. GET /api/v1/stats is at most this late.
	StatsFlush time.Duration
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
	// Sealer opens a task's sealed secrets (header values, target_url's
	// userinfo, signing_secret) just before a delivery. Nil: a delivery of
	// a task with a sealed value fails, saying the node has no key.
	Sealer sundial.Sealer
	// IDToken mints the OIDC ID token of a delivery of a task with oidc,
	// for its audience and subject. Nil: such a delivery fails, saying so.
	IDToken func(audience, subject string) (string, error)
	// Events, when set, is handed the live event of every change of a run
	// this node makes (see events.go): the node's event hub. It must not
	// block.
	Events func(...sundial.Event)
	// QuietGC runs Go's garbage collector when the node has nothing to
	// send for a while and the heap has used half its room, so that a
	// cycle does not fall in a burst of fires (quietgc.go) [on].
	QuietGC bool
	// OnAutoPause, when set, is told of every task this node pauses
	// after its pause_after_failures (see pauser.go): the hook where the
	// alerting of a pause plugs in. Each pause is told once in the
	// cluster, by the node that made it. It must not block long.
	OnAutoPause func(sundial.AutoPaused)
	// Notify, when set, turns alerts on (alerter.go, docs/alerts.md): it
	// sends a notification to a channel whose secrets are open (package
	// alert's Sender.Send). Nil: no rule is judged, nothing is sent.
	Notify func(ctx context.Context, ch *sundial.AlertChannel, m sundial.AlertMessage) error
	// AlertSweep is how often each node reloads the alert rules and
	// channels, resolves the open incidents whose condition cleared and
	// sends the repeats due [10s].
	AlertSweep time.Duration

	// admitLaneCap is the room of each admission lane [4096]: tests make
	// it small to fill a lane with a small burst.
	admitLaneCap int
	// unplanBatch is how many planned fires one step of the sweep of
	// missed fires reads (unplanMissed) [10000]: tests make it small to
	// sweep in many steps without planning tens of thousands of fires.
	unplanBatch int
	// maxPlannedAhead bounds the fires one PlanDue plans past the
	// lookahead [maxPlannedAhead, 1000]: tests make it small to need
	// several passes without thousands of tasks.
	maxPlannedAhead int
}

// CompensatorConfig holds the numbers of seed 000's start-compensation
// poller. Zero fields take the seed's values, in brackets.
type CompensatorConfig struct {
	Base      time.Duration // first interval, and the interval after a round that found work [10s]
	Increment time.Duration // added after every round that found nothing [10s]
	Max       time.Duration // the interval never grows past this [300s]
	Threshold time.Duration // a run this late and still not started is stuck [30s]
	Monitor   time.Duration // how often the status line is logged [60s]
}

// DefaultConfig returns the scheduler's defaults, the values in brackets
// on Config's fields: the one place they are written. New fills the zero
// fields of its Config from it; cmd/sundial starts its configuration from
// it.
func DefaultConfig() Config {
	return Config{
		PollInterval:      time.Second,
		Lookahead:         10 * time.Second,
		StartAhead:        300 * time.Millisecond,
		MisfireThreshold:  time.Minute,
		PlanBatch:         500,
		MaxRunsPerTask:    100,
		PlanHorizon:       2 * time.Minute,
		Workers:           16,
		RequestTimeout:    executor.DefaultTimeout,
		HeartbeatInterval: time.Second,
		DeadAfter:         3 * time.Second,
		Retention:         7 * 24 * time.Hour,
		NodeRetention:     24 * time.Hour,
		AuditRetention:    90 * 24 * time.Hour,
		DependencyRefresh: 2 * time.Second,
		DrainTimeout:      30 * time.Second,
		DrainReport:       5 * time.Second,
		ClaimInterval:     50 * time.Millisecond,
		CancelPoll:        500 * time.Millisecond,
		ClaimBatch:        250,
		MaxDeliveries:     3,
		StateFlush:        5 * time.Minute,
		StatsFlush:        10 * time.Second,
		Compensator: CompensatorConfig{
			Base:      10 * time.Second,
			Increment: 10 * time.Second,
			Max:       300 * time.Second,
			Threshold: 30 * time.Second,
			Monitor:   60 * time.Second,
		},
		CallbackURL:     "http://127.0.0.1:8080",
		CallbackTimeout: 10 * time.Minute,
		CallbackSweep:   time.Second,
		AlertSweep:      10 * time.Second,
		admitLaneCap:    4096,
		unplanBatch:     10000,
		maxPlannedAhead: maxPlannedAhead,
		QuietGC:         true,
	}
}

// setDefaults fills the zero fields of c from DefaultConfig, and raises
// Lookahead to two poll intervals.
func (c *Config) setDefaults() {
	d := DefaultConfig()
	for _, f := range []struct{ v, def *time.Duration }{
		{&c.PollInterval, &d.PollInterval}, {&c.Lookahead, &d.Lookahead}, {&c.StartAhead, &d.StartAhead},
		{&c.ClaimInterval, &d.ClaimInterval}, {&c.CancelPoll, &d.CancelPoll}, {&c.MisfireThreshold, &d.MisfireThreshold},
		{&c.RequestTimeout, &d.RequestTimeout}, {&c.HeartbeatInterval, &d.HeartbeatInterval},
		{&c.DeadAfter, &d.DeadAfter}, {&c.Retention, &d.Retention}, {&c.NodeRetention, &d.NodeRetention},
		{&c.AuditRetention, &d.AuditRetention}, {&c.DependencyRefresh, &d.DependencyRefresh},
		{&c.DrainTimeout, &d.DrainTimeout}, {&c.DrainReport, &d.DrainReport},
		{&c.CallbackTimeout, &d.CallbackTimeout}, {&c.CallbackSweep, &d.CallbackSweep},
		{&c.PlanHorizon, &d.PlanHorizon},
		{&c.StateFlush, &d.StateFlush}, {&c.StatsFlush, &d.StatsFlush}, {&c.AlertSweep, &d.AlertSweep},
	} {
		positive(f.v, *f.def)
	}
	c.Lookahead = max(c.Lookahead, 2*c.PollInterval)
	for _, f := range []struct{ v, def *int }{
		{&c.PlanBatch, &d.PlanBatch}, {&c.MaxRunsPerTask, &d.MaxRunsPerTask}, {&c.Workers, &d.Workers},
		{&c.ClaimBatch, &d.ClaimBatch}, {&c.MaxDeliveries, &d.MaxDeliveries}, {&c.admitLaneCap, &d.admitLaneCap},
		{&c.unplanBatch, &d.unplanBatch}, {&c.maxPlannedAhead, &d.maxPlannedAhead},
	} {
		positive(f.v, *f.def)
	}
	if c.CallbackURL == "" {
		c.CallbackURL = d.CallbackURL
	}
	c.Compensator.setDefaults()
}

func (c *CompensatorConfig) setDefaults() {
	d := DefaultConfig().Compensator
	positive(&c.Base, d.Base)
	positive(&c.Increment, d.Increment)
	positive(&c.Max, d.Max)
	positive(&c.Threshold, d.Threshold)
	positive(&c.Monitor, d.Monitor)
}

// positive sets *v to def unless it is above zero.
func positive[T time.Duration | int](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Scheduler plans, admits and delivers the fires of every task in the store,
// together with the other nodes on the same database. It composes the
// components of doc.go, each of which gets only what it uses.
type Scheduler struct {
	cfg   Config
	store sundial.Store // for the requests of the API: Trigger, Cancel
	log   *slog.Logger

	planner      *planner
	claimer      *claimer
	disp         *dispatcher
	pool         *pool
	writer       *writer
	health       *health
	stats        *stats
	pauser       *pauser
	alerter      *alerter // nil: alerts off (no Config.Notify)
	joiner       *joiner
	members      *membership
	callbacks    *callbacks
	housekeeping *housekeeping
	comp         *compensator
	publish      publishFunc

	running atomic.Bool

	endDrain     chan struct{} // closed by EndDrain
	endDrainOnce sync.Once
}

// component is the lifecycle every part of the scheduler shares: Run works
// until ctx is done, finishes what it must, and returns.
type component interface {
	Run(ctx context.Context) error
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
	m := newMetrics(reg)
	s := &Scheduler{
		cfg:      cfg,
		store:    store,
		log:      log.With("component", "scheduler"),
		endDrain: make(chan struct{}),
	}
	s.planner = newPlanner(cfg, store, log)
	s.claimer = newClaimer(cfg, store, log)
	s.disp = newDispatcher(cfg, store, log, m.heapSize)
	s.pool = newPool(cfg, d, log, m, s.endDrain)
	s.writer = newWriter(store, log, m, cfg.Node.ID)
	s.health = newHealth(cfg, store, log)
	s.stats = newStats(cfg, store, log)
	s.pauser = newPauser(cfg, store, log)
	if cfg.Notify != nil {
		s.alerter = newAlerter(cfg, store, log, reg)
	}
	s.joiner = newJoiner(cfg, store, log)
	s.members = newMembership(cfg, store, log)
	s.callbacks = newCallbacks(cfg, store, log)
	s.housekeeping = newHousekeeping(cfg, store, log, m.purged)
	s.comp = newCompensator(cfg.Compensator, log)

	// The wiring: each component reaches the others only through these.
	healthy, record := s.members.healthy, s.writer.record
	publish := publishOrNone(cfg.Events)
	s.publish = publish
	s.disp.publish, s.pool.publish, s.writer.publish, s.members.publish = publish, publish, publish, publish

	s.planner.healthy, s.planner.record, s.planner.claimSoon = healthy, record, s.claimer.poke

	s.claimer.healthy, s.claimer.add, s.claimer.inHeap, s.claimer.missed, s.claimer.ready =
		healthy, s.disp.add, s.disp.has, s.planner.sweep, s.planner.started()

	s.disp.submit, s.disp.finish, s.disp.record, s.disp.cancel = s.pool.submit, s.writer.finish, record, s.pool.cancel

	s.pool.finish, s.pool.fired = s.writer.finish, s.stats.fired
	if cfg.QuietGC {
		gc := newQuietGC()
		s.disp.idle = func(now time.Time, wait time.Duration) {
			if s.pool.waiting() == 0 {
				gc.idle(now, wait)
			}
		}
	}

	s.writer.written, s.writer.slotFreed = s.pool.written, s.disp.slotFreed
	s.writer.observe = func(o outcome) {
		s.health.observe(o)
		s.stats.observe(o)
		s.pauser.observe(o)
		s.joiner.observe(o)
	}
	if a := s.alerter; a != nil {
		s.writer.observe = func(o outcome) {
			s.health.observe(o)
			s.stats.observe(o)
			s.pauser.observe(o)
			s.joiner.observe(o)
			a.observe(o)
		}
		s.pauser.paused = func(p sundial.AutoPaused) {
			a.paused(p)
			if cfg.OnAutoPause != nil {
				cfg.OnAutoPause(p)
			}
		}
	}
	s.joiner.made = func(r *sundial.Run, t *sundial.Task) {
		if r.Status == sundial.RunSkipped {
			record(outcome{run: r, task: t, status: r.Status, err: r.Error, attempt: r.Attempt})
			return
		}
		s.publish(storedEvent(r, t, s.cfg.Node.ID))
		s.claimer.poke()
	}
	s.pool.parents = s.parentVars
	s.pauser.changed = s.planner.poke

	s.members.dropAll, s.members.cancelAll, s.members.reaped = s.disp.dropAll, s.pool.cancelAll, s.planner.poke
	s.members.inHeap, s.members.claim, s.members.add, s.members.record = s.disp.has, s.claimer.claim, s.disp.add, record
	s.members.holding = func(ids map[int64]bool) {
		s.disp.holding(ids)
		s.pool.holding(ids)
	}

	s.callbacks.healthy, s.callbacks.record, s.callbacks.slotFreed = healthy, record, s.disp.slotFreed

	s.housekeeping.cancel = s.pool.cancel

	s.comp.queueSize = func() int { return s.pool.waiting() + s.disp.due(time.Now()) }
	s.comp.find, s.comp.start, s.comp.recoverLost = s.claimer.findStuck, s.claimer.startStuck, s.members.interruptLost
	return s, nil
}

// Run registers the node and runs the components until ctx is done. Then
// it stops them in order: the planner, claimer, dispatcher (which first
// sends the fires it had committed), membership, callbacks, housekeeping
// and compensator together; then the pool, which stops taking calls and
// gives those in flight up to the drain timeout (or until EndDrain),
// logging what is still in flight every DrainReport, and cuts off the rest
// (recorded INTERRUPTED); then the writer, once it has written every
// outcome; then health and stats, once they have saved the tasks' states
// and this node's counters of the minute (stats.go). Last the
// node hands its planned fires back and leaves the cluster.
//
// A component that fails stops the others as ctx would; Run returns its
// error after the same orderly stop.
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.members.join(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing to hand back
		}
		return fmt.Errorf("register node: %w", err)
	}
	s.running.Store(true)
	s.log.Info("scheduler started", "node_id", s.cfg.Node.ID, "poll_interval", s.cfg.PollInterval,
		"lookahead", s.cfg.Lookahead, "workers", s.cfg.Workers)

	// The pool, the writer and health outlive ctx: each stops after the
	// stage before it has stopped.
	poolCtx, stopPool := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPool()
	writerCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	healthCtx, stopHealth := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHealth()
	var pool, writer, health errgroup.Group
	health.Go(func() error { return s.health.Run(healthCtx) })
	health.Go(func() error { return s.stats.Run(healthCtx) })
	writer.Go(func() error { return s.writer.Run(writerCtx) })
	pool.Go(func() error { return s.pool.Run(poolCtx) })

	loops, loopCtx := errgroup.WithContext(ctx)
	loopers := []component{s.planner, s.claimer, s.disp, s.members, s.callbacks, s.housekeeping, s.comp, s.pauser, s.joiner}
	if s.alerter != nil {
		loopers = append(loopers, s.alerter)
	}
	for _, c := range loopers {
		loops.Go(func() error { return c.Run(loopCtx) })
	}
	<-loopCtx.Done()
	s.running.Store(false)
	errLoops := loops.Wait()
	stopPool()
	errPool := pool.Wait()
	stopWriter()
	errWriter := writer.Wait()
	stopHealth()
	errHealth := health.Wait()

	s.members.leave()
	s.log.Info("scheduler stopped", "node_id", s.cfg.Node.ID)
	return errors.Join(errLoops, errPool, errWriter, errHealth)
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

// AlertsChanged makes this node reload its alert rules and channels now,
// after the API changed one (other nodes reload at their next sweep).
func (s *Scheduler) AlertsChanged() {
	if s.alerter != nil {
		poke(s.alerter.reload)
	}
}

// TriggerCompensation forces a compensation round now.
func (s *Scheduler) TriggerCompensation() { s.comp.Trigger() }

// Ready reports whether the scheduler is running and holds its membership.
func (s *Scheduler) Ready() bool { return s.running.Load() && s.members.healthy() }

// NodeID returns this node's identity.
func (s *Scheduler) NodeID() string { return s.cfg.Node.ID }

// CallbackSecret returns the secret callback tokens are signed with.
func (s *Scheduler) CallbackSecret() []byte { return s.cfg.CallbackSecret }

// Poke asks the planner for a pass now, after a task was created or changed,
// so that a fire due within the next poll interval is not late.
func (s *Scheduler) Poke() {
	s.planner.poke()
	s.joiner.refresh()
}

// parentVars are the template variables of run r of task t about its
// parents (sundial.ParentVars): from the join that fired r, for a run
// with trigger DEPENDENCY; empty for another run of a task with parents.
func (s *Scheduler) parentVars(ctx context.Context, t *sundial.Task, r *sundial.Run) (map[string]string, error) {
	if !t.HasParents() {
		return nil, nil
	}
	var j *sundial.DepJoin
	if r.Trigger == sundial.TriggerDependency {
		var err error
		if j, err = s.store.DepJoinGet(ctx, t.ID, sundial.LogicalTime(r)); err != nil && sundial.ErrorCode(err) != sundial.ENotFound {
			return nil, err
		}
	}
	return sundial.ParentVars(t, j), nil
}

// Trigger makes a manual run of a task now, with params in place of the
// task's for every delivery of the run (nil: the task's), and admits it at
// once under the task's concurrency policy, as the dispatcher admits a
// fire at its instant. It returns the run as admission left it: RUNNING
// (handed to the delivery pool), QUEUED, or SKIPPED with its reason. Only
// if the database could not decide does the run come back SCHEDULED, for
// the dispatcher to admit shortly.
func (s *Scheduler) Trigger(ctx context.Context, taskID int64, params json.RawMessage) (*sundial.Run, error) {
	return s.trigger(ctx, taskID, params, 0)
}

// Rerun makes a manual run of the task of run of, with of's params (none:
// the task's as they are now), that records of as the run it runs again
// (Run.RerunOf), and admits it as Trigger does. The task must be live.
func (s *Scheduler) Rerun(ctx context.Context, of *sundial.Run) (*sundial.Run, error) {
	return s.trigger(ctx, of.TaskID, of.Params, of.ID)
}

// trigger is Trigger, the run made recording rerunOf (0: none).
func (s *Scheduler) trigger(ctx context.Context, taskID int64, params json.RawMessage, rerunOf int64) (*sundial.Run, error) {
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
		RerunOf:       rerunOf,
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
	s.publish(storedEvent(r, t, s.cfg.Node.ID))
	// The run exists: it is decided whatever becomes of the request. The
	// caller gets a copy, as the delivery pool or the dispatcher holds the
	// run.
	ctx = context.WithoutCancel(ctx)
	got, err := s.disp.admit(ctx, r)
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
		s.writer.record(outcome{run: r, task: t, status: r.Status, err: r.Error, attempt: r.Attempt})
	case sundial.RunRunning:
		s.pool.cancel(r.ID, errCanceled)
	case sundial.RunWaitingCallback:
		// No call is in flight: the wait for the callback ends here.
		t, err := s.store.TaskGet(ctx, r.TaskID)
		if err != nil && sundial.ErrorCode(err) != sundial.ENotFound {
			return nil, err
		}
		return s.callbacks.cancel(ctx, r, t)
	}
	return r, nil
}

// Complete ends the run of a callback whose token was issued for fence.
// A failure is retried when the task's retry policy has attempts left. A
// token of an earlier delivery, or a run already ended, is EConflict; the
// store applies both checks atomically.
func (s *Scheduler) Complete(ctx context.Context, r *sundial.Run, t *sundial.Task, fence int64, cb sundial.CallbackReport) (*sundial.Run, error) {
	return s.callbacks.complete(ctx, r, t, fence, cb)
}

// Progress saves what a long job reports about run r (its progress and a
// checkpoint to resume from) and extends the run's callback deadline.
func (s *Scheduler) Progress(ctx context.Context, r *sundial.Run, t *sundial.Task, fence int64, progress, checkpoint json.RawMessage) (*sundial.Run, error) {
	return s.callbacks.progress(ctx, r, t, fence, progress, checkpoint)
}
