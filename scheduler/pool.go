package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
)

// Causes of a delivery cut short, recorded with the run.
var (
	errCanceled       = errors.New("canceled by request")
	errCancelPrev     = errors.New("canceled by a newer fire (overlap_action CANCEL_PREV)")
	errShutdown       = errors.New("cut off: the node stopped and the drain timeout expired")
	errStopNow        = errors.New("cut off: the node was told to stop at once while draining")
	errMembershipLost = errors.New("cut off: the node lost its cluster membership")
	errLost           = errors.New("lost: its node held it RUNNING with no call in flight")
)

// job is one delivery of one run.
type job struct {
	run     *sundial.Run
	task    *sundial.Task
	fence   int64
	attempt int
	trace   string
	// delivery numbers this delivery of the run: 1 for the first. Zero
	// means the run's Deliveries does not count it yet (+1).
	delivery int
}

// deliveryNo is the number of this delivery of the run.
func (j job) deliveryNo() int {
	if j.delivery > 0 {
		return j.delivery
	}
	return j.run.Deliveries + 1
}

// pool runs deliveries on a bounded number of workers and tracks the calls
// in flight so they can be cancelled. When its Run's context is done it
// drains: it takes no more runs, lets the queued and in-flight calls finish
// for up to the drain timeout (or until EndDrain), then cuts off the rest.
type pool struct {
	deliverer Deliverer
	log       *slog.Logger
	m         *metrics

	node           string
	workers        int
	requestTimeout time.Duration // of tasks without timeout_seconds
	async          asyncTerms
	drainTimeout   time.Duration
	drainReport    time.Duration
	endDrain       <-chan struct{} // closed by EndDrain

	// finish hands an outcome to the writer.
	finish func(result)
	// fired counts the first delivery of a run as it starts (stats); nil
	// for none.
	fired func(r *sundial.Run, started time.Time)
	// publish hands on the live event of each delivery as it begins.
	publish publishFunc

	jobs chan job
	// closing is closed when the drain begins: the pool takes no more
	// runs, and the workers stop once the queue is empty. (jobs is never
	// closed, so that a sender needs no lock against a send on a closed
	// channel.)
	closing chan struct{}

	limit *startLimiter // per-host start spacing; nil when none is set

	sealer  sundial.Sealer
	idToken func(audience, subject string) (string, error)
	// parents returns the template variables of a run about its task's
	// parents (parents.NAME.run_id, ...); nil: none.
	parents func(ctx context.Context, t *sundial.Task, r *sundial.Run) (map[string]string, error)

	mu       sync.Mutex
	inflight map[int64]*flight
	// held are the deliveries submitted and not yet written back, by run
	// and fence (a run may be delivered again here while the outcome of
	// its previous delivery is still on its way): waiting for
	// their host's turn or a worker, in flight, or in the writer's hands.
	held   map[sundial.RunRef]struct{}
	cutOff atomic.Bool // the drain was cut short (timeout or stop at once): start nothing more
}

type flight struct {
	cancel context.CancelCauseFunc
	taskID int64
}

func newPool(cfg Config, d Deliverer, log *slog.Logger, m *metrics, endDrain <-chan struct{}) *pool {
	p := &pool{deliverer: d, log: log.With("component", "pool"), m: m, node: cfg.Node.ID, workers: cfg.Workers,
		requestTimeout: cfg.RequestTimeout, async: newAsyncTerms(cfg), drainTimeout: cfg.DrainTimeout,
		drainReport: cfg.DrainReport, endDrain: endDrain,
		jobs: make(chan job, 1<<16), closing: make(chan struct{}),
		inflight: make(map[int64]*flight), held: make(map[sundial.RunRef]struct{}), publish: publishOrNone(nil)}
	p.limit = newStartLimiter(cfg.StartIntervals, p.enqueue)
	p.sealer, p.idToken = cfg.Sealer, cfg.IDToken
	return p
}

// Run starts the workers and, when ctx is done, drains.
func (p *pool) Run(ctx context.Context) error {
	var workers errgroup.Group
	for range p.workers {
		workers.Go(p.work)
	}
	<-ctx.Done()
	return p.drain(&workers)
}

// submit queues a delivery. After drain has begun, the run is left RUNNING
// for RunRelease to record as INTERRUPTED.
func (p *pool) submit(j job) {
	p.mu.Lock()
	p.held[sundial.RunRef{ID: j.run.ID, Fence: j.fence}] = struct{}{}
	p.mu.Unlock()
	if p.limit.take(j) {
		return
	}
	p.enqueue(j)
}

// enqueue hands a job to the workers. Once the drain has begun the job is
// dropped (its run stays RUNNING for RunRelease); one handed over as the
// drain begins may be delivered or dropped, as if it had come just before
// or just after.
func (p *pool) enqueue(j job) {
	select {
	case <-p.closing:
		return
	default:
	}
	select {
	case p.jobs <- j:
		p.m.queueDepth.Set(float64(len(p.jobs)))
	case <-p.closing:
	}
}

// waiting counts the admitted runs not yet started: queued for a worker
// or for their host's turn.
func (p *pool) waiting() int { return len(p.jobs) + p.limit.queued() }

// work delivers queued jobs until the drain has begun and the queue is
// empty.
func (p *pool) work() error {
	for {
		select {
		case j := <-p.jobs:
			p.run(j)
		case <-p.closing:
			for {
				select {
				case j := <-p.jobs:
					p.run(j)
				default:
					return nil
				}
			}
		}
	}
}

// run delivers one job, unless the drain was cut short.
func (p *pool) run(j job) {
	p.m.queueDepth.Set(float64(len(p.jobs)))
	if !p.cutOff.Load() {
		p.deliver(j)
	}
}

// secrets returns the parts of t's request that carry its secrets, opened:
// target_url, headers, signing secret, and the OIDC token it asks for.
func (p *pool) secrets(t *sundial.Task) (executor.Request, error) {
	open, err := sundial.OpenTask(t, p.sealer)
	if err != nil {
		return executor.Request{}, err
	}
	req := executor.Request{URL: open.TargetURL, Headers: open.Headers, SigningSecret: open.SigningSecret}
	if t.OIDC != nil {
		if p.idToken == nil {
			return executor.Request{}, errors.New("the task asks for an OIDC token and this node cannot sign one: it has no secrets key")
		}
		sub := t.Name
		if req.Bearer, err = p.idToken(t.Audience(open.TargetURL), sub); err != nil {
			return executor.Request{}, fmt.Errorf("mint the OIDC token: %w", err)
		}
	}
	return req, nil
}

// deliver makes the call and hands the outcome to the writer.
func (p *pool) deliver(j job) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	p.mu.Lock()
	p.inflight[j.run.ID] = &flight{cancel: cancel, taskID: j.task.ID}
	p.mu.Unlock()
	p.m.inFlight.Inc()

	t, r := j.task, j.run
	timeout := time.Duration(t.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = p.requestTimeout
	}
	started := time.Now()
	p.publish(startEvent(j, started, p.node))
	if j.deliveryNo() == 1 && r.Trigger != sundial.TriggerBackfill && r.Trigger != sundial.TriggerDependency {
		// The fire's first delivery: how late it started after it was
		// due (its scheduled time plus its jitter). A backfilled fire, or
		// a child's fire (scheduled at its parents' time), is late on purpose.
		p.m.lag.Observe(started.Sub(dueOf(r)).Seconds())
	}
	if j.deliveryNo() == 1 && p.fired != nil {
		p.fired(r, started)
	}
	var cbURL, cbToken string
	if t.ExecType == sundial.ExecAsync {
		cbURL, cbToken = p.async.url(r.ID), p.async.token(r.ID, j.fence)
	}
	req, err := p.secrets(t)
	req.Method, req.BodyTemplate, req.Timeout = t.HTTPMethod, t.BodyTemplate, timeout
	req.Redirects = t.RedirectPolicyOf()
	req.Vars = runVars(t, r, j.attempt, j.deliveryNo(), j.trace, p.node, cbURL, cbToken)
	if err == nil && p.parents != nil && t.HasParents() {
		req.Vars.Extra, err = p.parents(ctx, t, r)
	}
	var out executor.Outcome
	if err != nil {
		// Nothing is sent; the error names the field, never its value.
		out = executor.Outcome{Status: executor.StatusFailed, Error: err.Error(), Started: started, Finished: time.Now()}
	} else {
		out = p.deliverer.Deliver(ctx, req)
	}
	p.m.inFlight.Dec()
	p.mu.Lock()
	delete(p.inflight, r.ID)
	p.mu.Unlock()

	status := sundial.RunStatus(out.Status)
	if status == sundial.RunCanceled {
		switch cause := context.Cause(ctx); cause {
		case errShutdown, errStopNow, errMembershipLost:
			status = sundial.RunInterrupted
			out.Error = cause.Error()
		case nil:
		default:
			out.Error = cause.Error()
		}
	}
	if out.Started.IsZero() {
		out.Started = started
	}
	if out.Finished.IsZero() {
		out.Finished = time.Now()
	}
	p.m.deliveryDuration.Observe(out.Finished.Sub(out.Started).Seconds())
	fin := sundial.RunFinishParams{
		ID: r.ID, Fence: j.fence, Status: status,
		StartedAt: out.Started, FinishedAt: out.Finished,
		HTTPStatus: out.HTTPStatus, ResponseBody: out.Body, Error: out.Error,
	}
	switch {
	case status == sundial.RunSuccess && t.ExecType == sundial.ExecAsync:
		// The target took the work; its callback ends the run.
		fin.Status = sundial.RunWaitingCallback
		fin.DueAt = out.Finished.Add(p.async.timeout(t))
	case status == sundial.RunInterrupted:
		// Cut off by this node's stop or lost membership: delivered
		// again by a live node, not retried under the task's policy.
	default:
		applyRetry(t, r, j.deliveryNo(), &fin, out.RetryAfter)
	}
	p.finish(result{job: j, fin: fin})
}

// written forgets runs whose outcomes the writer has handed to the store.
func (p *pool) written(batch []result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range batch {
		delete(p.held, sundial.RunRef{ID: r.job.run.ID, Fence: r.job.fence})
	}
}

// holding adds to ids the runs submitted and not yet written back.
func (p *pool) holding(ids map[int64]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ref := range p.held {
		ids[ref.ID] = true
	}
}

// cancel stops the call of a run delivered here, if any.
func (p *pool) cancel(runID int64, cause error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.inflight[runID]
	if ok {
		f.cancel(cause)
	}
	return ok
}

// cancelAll stops every call in flight.
func (p *pool) cancelAll(cause error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.inflight {
		f.cancel(cause)
	}
}

// drain stops taking jobs and lets queued and in-flight deliveries finish
// for up to the drain timeout, logging every drain report what is still in
// flight. When the timeout expires, or endDrain is closed (stop at once),
// it cuts off the rest. It returns when the workers have stopped.
func (p *pool) drain(workers *errgroup.Group) error {
	timeout, report, end := p.drainTimeout, p.drainReport, p.endDrain
	p.limit.stop()
	close(p.closing)
	var err error
	done := make(chan struct{})
	go func() { err = workers.Wait(); close(done) }()
	deadline := time.Now().Add(timeout)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	ticker := time.NewTicker(report)
	defer ticker.Stop()
	cause := error(nil)
	for cause == nil {
		select {
		case <-done:
			return err
		case <-ticker.C:
			p.logDraining(time.Until(deadline))
		case <-timer.C:
			p.log.Warn("drain timeout expired; cutting off calls in flight", "timeout", timeout)
			cause = errShutdown
		case <-end:
			p.log.Warn("stopping at once; cutting off calls in flight", "in_flight", p.inFlight())
			cause = errStopNow
		}
	}
	p.cutOff.Store(true)
	// Jobs still queued are not started: their runs stay RUNNING and
	// RunRelease records them INTERRUPTED. Calls in flight are cancelled.
	for {
		select {
		case <-done:
			return err
		default:
		}
		p.cancelAll(cause)
		select {
		case <-done:
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// drainListed is how many calls in flight a drain progress line names.
const drainListed = 10

// logDraining writes what the drain still waits for: how many calls are in
// flight and queued, and the run and task IDs of the first few calls.
func (p *pool) logDraining(left time.Duration) {
	p.mu.Lock()
	ids := make([]int64, 0, len(p.inflight))
	for id := range p.inflight {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	n := len(ids)
	ids = ids[:min(n, drainListed)]
	tasks := make([]int64, len(ids))
	for i, id := range ids {
		tasks[i] = p.inflight[id].taskID
	}
	p.mu.Unlock()
	p.log.Info("draining: calls still in flight", "in_flight", n, "queued", len(p.jobs),
		"run_ids", ids, "task_ids", tasks, "time_left", max(left, 0).Round(time.Second))
}

// inFlight counts the calls in flight.
func (p *pool) inFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inflight)
}
