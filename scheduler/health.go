package scheduler

import (
	"container/heap"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sundialhq/sundial"
)

// stateStore is what health needs of the store.
type stateStore interface {
	TaskStateSave(ctx context.Context, changes []*sundial.TaskState, now time.Time) error
}

// How health saves: an urgent change waits stateDelay for others to go
// with it, up to maxStateBatch tasks a transaction; a save that failed is
// tried again after a pause that doubles up to stateRetryMax.
const (
	stateDelay    = 500 * time.Millisecond
	maxStateBatch = 1000
	stateRetryMin = time.Second
	stateRetryMax = 30 * time.Second
	stateStopWait = 10 * time.Second // on stop, how long the last save may take
)

// health keeps the saved health of the tasks (sundial.TaskState, from
// which the state block of a task answer is made) up to date with the
// outcomes this node records, without a write per fire. writer.record
// hands it every outcome (observe); it keeps, per task, what it recorded
// since it last saved the task's state (a change), and saves changes in
// batches from its own loop, never in the transaction of an outcome:
//
//   - at once (within stateDelay) after a failure, after the first success
//     that follows one, and when it has not saved the task's state within
//     the last flush period (StateFlush): so a task that fires less often
//     than that is saved at every outcome;
//   - otherwise flush after its last save, with everything recorded since:
//     a healthy task firing every second writes one row every flush
//     period (every 300 fires with the default five minutes);
//   - and all of them when the scheduler stops.
//
// A task it has saved and that records nothing for a flush period is
// forgotten: its next outcome is saved at once anyway.
type health struct {
	store stateStore
	log   *slog.Logger
	flush time.Duration // Config.StateFlush

	mu    sync.Mutex
	tasks map[int64]*taskHealth
	// urgent are the tasks to save within stateDelay of the first of them
	// (urgentSince).
	urgent      []int64
	urgentSince time.Time
	// checks holds, per saved task, when its flush period ends: its
	// change is saved then, or the task forgotten.
	checks checkHeap
	// After a failed save, nothing is saved before notBefore.
	notBefore time.Time
	backoff   time.Duration
	wake      chan struct{}
}

// taskHealth is what health keeps of one task.
type taskHealth struct {
	// change is what was recorded since the last save; nil for nothing.
	change *sundial.TaskState
	// savedAt is when this node last saved the task's state; zero for
	// never.
	savedAt time.Time
	// failing says the last outcome recorded was a failure.
	failing bool
	// urgent says the task is in health.urgent.
	urgent bool
	// check is the time of the task's entry in health.checks; zero for
	// none. An entry of another time is stale.
	check time.Time
}

func newHealth(cfg Config, store stateStore, log *slog.Logger) *health {
	return &health{store: store, log: log.With("component", "health"), flush: cfg.StateFlush,
		tasks: map[int64]*taskHealth{}, wake: make(chan struct{}, 1)}
}

// observe takes an outcome the store has recorded (writer.record): the end
// of a first delivery gives its fire's lag (the call's start after the
// time it was due, its scheduled time plus its jitter: an ASYNC call's answer, or a failure that is retried,
// too); a final success or failure changes the task's health. A retry, a
// skip, an INTERRUPTED delivery or a WAITING_CALLBACK change nothing
// else.
func (h *health) observe(o outcome) {
	r := o.run
	// A backfilled fire is late on purpose: its lag tells nothing.
	lag := o.delivery == 1 && !o.started.IsZero() && r.Trigger != sundial.TriggerBackfill && r.Trigger != sundial.TriggerDependency
	final := !o.retry && (o.status == sundial.RunSuccess || o.status.Failure())
	if !lag && !final {
		return
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.tasks[r.TaskID]
	if e == nil {
		e = &taskHealth{}
		h.tasks[r.TaskID] = e
	}
	if e.change == nil {
		e.change = &sundial.TaskState{TaskID: r.TaskID}
	}
	if lag {
		// From the fire's due time: its scheduled time plus its jitter.
		e.change.AddLag(r.ScheduledTime, o.started.Sub(dueOf(r)))
	}
	urgent := now.Sub(e.savedAt) >= h.flush
	if final {
		failed := o.status.Failure()
		urgent = urgent || failed || e.failing
		e.failing = failed
		e.change.Record(o.status, endOf(o, now))
	}
	if urgent {
		h.markUrgent(r.TaskID, e, now)
	}
}

// endOf is when the run of o ended: the end of its call, or the end the
// store recorded (a callback, a cancel), else now.
func endOf(o outcome, now time.Time) time.Time {
	switch {
	case !o.finished.IsZero():
		return o.finished
	case o.run.FinishedAt != nil:
		return *o.run.FinishedAt
	}
	return now
}

// markUrgent puts the task id in the urgent list. The caller holds mu.
func (h *health) markUrgent(id int64, e *taskHealth, now time.Time) {
	if e.urgent {
		return
	}
	e.urgent = true
	if len(h.urgent) == 0 {
		h.urgentSince = now
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
	h.urgent = append(h.urgent, id)
}

// Run saves changes as they come due until ctx is done, then saves every
// change it holds and returns. The scheduler stops it after the writer:
// every outcome is recorded by then.
func (h *health) Run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.mu.Lock()
		next := h.next()
		h.mu.Unlock()
		if next.IsZero() {
			next = time.Now().Add(time.Hour)
		}
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			h.saveAll(ctx)
			return nil
		case <-h.wake:
		case <-timer.C:
		}
		h.saveDue(ctx, time.Now())
	}
}

// next is when the loop has something to do: the urgent tasks' delay is
// up, or a flush period ends; zero for nothing. The caller holds mu.
func (h *health) next() time.Time {
	var next time.Time
	if len(h.urgent) > 0 {
		next = h.urgentSince.Add(stateDelay)
	}
	if len(h.checks) > 0 && (next.IsZero() || h.checks[0].at.Before(next)) {
		next = h.checks[0].at
	}
	if !next.IsZero() && next.Before(h.notBefore) {
		next = h.notBefore
	}
	return next
}

// saveDue saves the changes due at now, in batches.
func (h *health) saveDue(ctx context.Context, now time.Time) {
	for {
		h.mu.Lock()
		var batch []*sundial.TaskState
		if !now.Before(h.notBefore) {
			batch = h.takeDue(now)
		}
		h.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		if !h.save(ctx, batch, now) || len(batch) < maxStateBatch {
			return
		}
	}
}

// takeDue takes up to maxStateBatch changes due at now: the urgent ones
// once their delay is up, and those whose flush period has ended; it
// forgets the tasks whose period ended with nothing recorded. The caller
// holds mu.
func (h *health) takeDue(now time.Time) []*sundial.TaskState {
	var batch []*sundial.TaskState
	take := func(e *taskHealth) {
		if e.change != nil {
			batch = append(batch, e.change)
			e.change = nil
		}
	}
	if len(h.urgent) > 0 && !now.Before(h.urgentSince.Add(stateDelay)) {
		n := min(len(h.urgent), maxStateBatch)
		for _, id := range h.urgent[:n] {
			e := h.tasks[id]
			e.urgent = false
			take(e)
		}
		h.urgent = h.urgent[n:]
		if len(h.urgent) == 0 {
			h.urgent = nil
		}
	}
	for len(batch) < maxStateBatch && len(h.checks) > 0 && !h.checks[0].at.After(now) {
		c := heap.Pop(&h.checks).(check)
		e := h.tasks[c.task]
		if e == nil || !e.check.Equal(c.at) {
			continue // stale: saved again since
		}
		e.check = time.Time{}
		switch {
		case e.change != nil:
			take(e)
		case !e.urgent:
			delete(h.tasks, c.task) // nothing for a flush period: forgotten
		}
	}
	return batch
}

// save writes a batch taken at now, and reports whether it did. A batch
// the store refused is given back, to be saved after a pause.
func (h *health) save(ctx context.Context, batch []*sundial.TaskState, now time.Time) bool {
	err := h.store.TaskStateSave(ctx, batch, now)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			h.log.Error("save task states", "tasks", len(batch), "err", err)
		}
		h.backoff = min(max(2*h.backoff, stateRetryMin), stateRetryMax)
		h.notBefore = time.Now().Add(h.backoff)
		for _, c := range batch {
			e := h.tasks[c.TaskID]
			if e == nil {
				e = &taskHealth{}
				h.tasks[c.TaskID] = e
			}
			if e.change != nil {
				c.Merge(e.change) // what came since, merged into what was taken
			}
			e.change = c
			h.markUrgent(c.TaskID, e, now)
		}
		return false
	}
	h.backoff, h.notBefore = 0, time.Time{}
	for _, c := range batch {
		e := h.tasks[c.TaskID]
		if e == nil {
			continue
		}
		e.savedAt = now
		e.check = now.Add(h.flush)
		heap.Push(&h.checks, check{at: e.check, task: c.TaskID})
	}
	h.log.Debug("task states saved", "tasks", len(batch))
	return true
}

// saveAll saves every change held, on stop: the scheduler's context is
// done, so the saves get a context of their own, bounded by stateStopWait.
func (h *health) saveAll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateStopWait)
	defer cancel()
	h.mu.Lock()
	var all []*sundial.TaskState
	for _, e := range h.tasks {
		if e.change != nil {
			all = append(all, e.change)
			e.change = nil
		}
	}
	h.urgent = nil
	h.mu.Unlock()
	for len(all) > 0 {
		n := min(len(all), maxStateBatch)
		if err := h.store.TaskStateSave(ctx, all[:n], time.Now()); err != nil {
			h.log.Error("save task states on stop; their lag samples are lost, their outcomes are read from the runs",
				"tasks", len(all), "err", err)
			return
		}
		all = all[n:]
	}
}

// check is an entry of checkHeap: when a task's flush period ends.
type check struct {
	at   time.Time
	task int64
}

// checkHeap is a min-heap of checks by time.
type checkHeap []check

func (c checkHeap) Len() int           { return len(c) }
func (c checkHeap) Less(i, j int) bool { return c[i].at.Before(c[j].at) }
func (c checkHeap) Swap(i, j int)      { c[i], c[j] = c[j], c[i] }
func (c *checkHeap) Push(x any)        { *c = append(*c, x.(check)) }
func (c *checkHeap) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}
