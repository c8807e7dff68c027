package scheduler

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sundialhq/sundial"
)

// memberStore is what membership and takeover need of the store.
type memberStore interface {
	NodeRegister(ctx context.Context, n *sundial.Node) error
	NodeHeartbeat(ctx context.Context, id string) error
	NodeReap(ctx context.Context, deadAfter time.Duration, now time.Time) ([]string, error)
	NodeLeave(ctx context.Context, id string) error
	RunRelease(ctx context.Context, nodeID, reason string, now time.Time) error
	RunsOwned(ctx context.Context, nodeID string) ([]*sundial.Run, error)
	RunFinish(ctx context.Context, finishes []sundial.RunFinishParams) (ok []bool, err error)
	RunRedeliver(ctx context.Context, nodeID string, maxDeliveries, limit int, now time.Time) ([]*sundial.Run, map[int64]*sundial.Task, error)
}

// membership keeps this node in the cluster and takes over the runs of the
// nodes that left it: it registers the node (join), renews its heartbeat,
// declares dead the nodes that stopped renewing theirs (their runs are
// released), delivers again the runs whose delivery was cut off, and hands
// its own runs back when the node stops (leave). A node that cannot renew
// its heartbeat for DeadAfter stops taking fires until it can, and takes
// back the runs it still holds when it does.
type membership struct {
	store memberStore
	log   *slog.Logger

	node          sundial.Node
	heartbeat     time.Duration
	deadAfter     time.Duration
	maxDeliveries int

	// dropAll empties the dispatcher's heap.
	dropAll func()
	// cancelAll stops every call of the pool.
	cancelAll func(cause error)
	// reaped asks the planner for a pass: dead nodes' fires were handed
	// back.
	reaped func()
	// inHeap reports whether the dispatcher holds a run in its heap.
	inHeap func(runID int64) bool
	// holding adds to ids the runs this node holds in memory: in the
	// dispatcher, or delivered and not yet written back.
	holding func(ids map[int64]bool)
	// claim takes runs over for this node and puts them in the heap.
	claim func(ctx context.Context, refs []sundial.RunRef) (int, error)
	// add puts runs claimed for delivery in the dispatcher's heap.
	add func(runs []*sundial.Run, tasks map[int64]*sundial.Task, redelivered bool)
	// record logs and counts an outcome the store recorded.
	record func(outcome)
	// publish hands on the live events of the runs delivered again.
	publish publishFunc

	ok atomic.Bool // membership renewed within DeadAfter
}

func newMembership(cfg Config, store memberStore, log *slog.Logger) *membership {
	return &membership{store: store, log: log.With("component", "membership"), node: cfg.Node,
		heartbeat: cfg.HeartbeatInterval, deadAfter: cfg.DeadAfter, maxDeliveries: cfg.MaxDeliveries,
		publish: publishOrNone(nil)}
}

// healthy reports whether this node holds its membership.
func (m *membership) healthy() bool { return m.ok.Load() }

// join registers the node as ALIVE.
func (m *membership) join(ctx context.Context) error {
	node := m.node
	node.State = sundial.NodeAlive
	if err := m.store.NodeRegister(ctx, &node); err != nil {
		return err
	}
	m.ok.Store(true)
	return nil
}

// leave hands this node's runs back (RunRelease) and marks it LEFT. The
// scheduler calls it last, after the writer has flushed; it uses a context
// of its own, as the scheduler's is done.
func (m *membership) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.store.RunRelease(ctx, m.node.ID, "node stopped", time.Now()); err != nil {
		m.log.Error("release runs on stop", "node_id", m.node.ID, "err", err)
	}
	if err := m.store.NodeLeave(ctx, m.node.ID); err != nil {
		m.log.Error("leave cluster", "node_id", m.node.ID, "err", err)
	}
}

// Run renews this node's heartbeat and declares dead the nodes that
// stopped renewing theirs, releasing their runs to the others, until ctx
// is done. A node that cannot renew its own for DeadAfter stops taking
// fires until it can.
func (m *membership) Run(ctx context.Context) error {
	ticker := time.NewTicker(m.heartbeat)
	defer ticker.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		err := m.store.NodeHeartbeat(ctx, m.node.ID)
		switch {
		case err == nil:
			lastOK = time.Now()
			if !m.ok.Swap(true) {
				m.log.Info("membership renewed", "node_id", m.node.ID)
				m.readopt(ctx)
			}
		case sundial.ErrorCode(err) == sundial.ENotFound:
			// Declared dead by the others: rejoin as a new member.
			m.log.Warn("membership lost; rejoining", "node_id", m.node.ID)
			m.ok.Store(false)
			m.dropAll()
			node := m.node
			if err := m.store.NodeRegister(ctx, &node); err == nil {
				lastOK = time.Now()
				m.ok.Store(true)
			}
			continue
		default:
			if ctx.Err() != nil {
				return nil
			}
			m.log.Error("heartbeat", "node_id", m.node.ID, "err", err)
			if time.Since(lastOK) >= m.deadAfter && m.ok.Swap(false) {
				m.log.Error("membership expired; stopping fires", "node_id", m.node.ID)
				m.dropAll()
				m.cancelAll(errMembershipLost)
			}
			continue
		}
		dead, err := m.store.NodeReap(ctx, m.deadAfter, time.Now())
		if err != nil {
			if ctx.Err() == nil {
				m.log.Error("reap dead nodes", "err", err)
			}
			continue
		}
		for _, id := range dead {
			m.log.Warn("node declared dead; its runs were released", "dead_node_id", id, "node_id", m.node.ID)
		}
		if len(dead) > 0 {
			m.reaped()
		}
		m.redeliver(ctx)
	}
}

// readopt takes back into the heap the SCHEDULED runs this node still
// holds after its membership expired and was renewed without the others
// declaring it dead: the heap was dropped when the membership expired, and
// nothing else would start them before the compensator, tens of seconds
// later. Each is claimed afresh (a new fence).
func (m *membership) readopt(ctx context.Context) {
	owned, err := m.store.RunsOwned(ctx, m.node.ID)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Error("find runs held through a membership loss", "err", err)
		}
		return
	}
	var refs []sundial.RunRef
	for _, r := range owned {
		if r.Status == sundial.RunScheduled && !m.inHeap(r.ID) {
			refs = append(refs, sundial.RunRef{ID: r.ID, Fence: r.Fence})
		}
	}
	if len(refs) == 0 {
		return
	}
	n, err := m.claim(ctx, refs)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Error("take back runs held through a membership loss", "runs", len(refs), "err", err)
		}
		return
	}
	m.log.Warn("took back runs held through a membership loss", "runs", n, "node_id", m.node.ID)
}

// redeliver takes up runs whose delivery was cut off (their node died or
// stopped mid-call) and delivers them again, with the same Idempotency-Key
// and the next delivery count.
func (m *membership) redeliver(ctx context.Context) {
	for ctx.Err() == nil {
		runs, tasks, err := m.store.RunRedeliver(ctx, m.node.ID, m.maxDeliveries, 100, time.Now())
		if err != nil {
			if ctx.Err() == nil {
				m.log.Error("redeliver interrupted runs", "err", err)
			}
			return
		}
		for _, r := range runs {
			m.log.Warn("delivering an interrupted run again", "task_id", r.TaskID, "run_id", r.ID,
				"delivery", r.Deliveries+1, "idempotency_key", r.IdempotencyKey)
			m.publish(storedEvent(r, tasks[r.TaskID], m.node.ID))
		}
		m.add(runs, tasks, true)
		if len(runs) < 100 {
			return
		}
	}
}

// interruptLost is the compensator's sweep of this node's own deliveries:
// RUNNING runs it holds in the database, started before startedBefore,
// that it no longer holds in memory (no call, no outcome on its way: a
// run committed by a claim whose answer was lost, or dropped with the
// heap when the membership expired). Each is recorded INTERRUPTED, fenced,
// with an attempt, and delivered again as a delivery cut off by a node's
// stop would be. It returns how many it interrupted.
func (m *membership) interruptLost(ctx context.Context, startedBefore time.Time) (int, error) {
	// Memory first: a run that enters memory after this snapshot was
	// started just now, not before startedBefore.
	held := map[int64]bool{}
	m.holding(held)
	owned, err := m.store.RunsOwned(ctx, m.node.ID)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	var (
		lost []sundial.RunFinishParams
		runs []*sundial.Run
	)
	for _, r := range owned {
		if r.Status != sundial.RunRunning || held[r.ID] || r.StartedAt == nil || !r.StartedAt.Before(startedBefore) {
			continue
		}
		lost = append(lost, sundial.RunFinishParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunInterrupted,
			StartedAt: *r.StartedAt, FinishedAt: now, Error: errLost.Error()})
		runs = append(runs, r)
	}
	if len(lost) == 0 {
		return 0, nil
	}
	ok, err := m.store.RunFinish(ctx, lost)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, applied := range ok {
		if applied {
			n++
			r := runs[i]
			m.record(outcome{run: r, status: sundial.RunInterrupted, err: lost[i].Error, trace: r.TraceID,
				attempt: r.Attempt, delivery: r.Deliveries, started: lost[i].StartedAt, finished: now})
		}
	}
	if n > 0 {
		m.redeliver(ctx)
	}
	return n, nil
}
