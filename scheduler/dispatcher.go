package scheduler

import (
	"container/heap"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
)

// stage is what the dispatcher does with an item when it comes due.
// An unconstrained run (a "fast" one) goes through commit, check and send;
// any other through admit.
type stage uint8

const (
	// stageAdmit: the task's policies decide at the run's instant
	// (RunAdmit), in the admission lane of its task.
	stageAdmit stage = iota
	// stageCommit: a fast run, committed RUNNING in a batch StartAhead
	// before its instant (RunStart).
	stageCommit
	// stageCheck: a fast run committed RUNNING, checked checkAhead before
	// its instant (RunCheckSend): a change of its task may have taken it
	// back.
	stageCheck
	// stageSend: a fast run checked, handed to the pool at its instant.
	stageSend
)

// item is a run this node owns and has yet to fire.
type item struct {
	run   *sundial.Run
	task  *sundial.Task // as planned
	due   time.Time     // when the dispatcher must act on it next
	stage stage
	index int
}

// committed reports whether the item's run is RUNNING in the database.
func (it *item) committed() bool { return it.stage == stageCheck || it.stage == stageSend }

// job is the delivery of a committed run: its run's Deliveries counts it.
func (it *item) job() job {
	r := it.run
	return job{run: r, task: it.task, fence: r.Fence, attempt: r.Attempt, trace: r.TraceID, delivery: max(r.Deliveries, 1)}
}

// runHeap orders items by due time, then run ID.
type runHeap []*item

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].run.ID < h[j].run.ID
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *runHeap) Push(x any)   { it := x.(*item); it.index = len(*h); *h = append(*h, it) }
func (h *runHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}

// dispatchStore is what the dispatcher needs of the store.
type dispatchStore interface {
	RunStart(ctx context.Context, starts []sundial.RunStartParams) (ok []bool, err error)
	RunCheckSend(ctx context.Context, refs []sundial.RunRef) ([]sundial.SendCheck, error)
	RunAdmit(ctx context.Context, id, fence int64, now time.Time, decide sundial.AdmitFunc) (*sundial.Run, error)
	RunQueuedNext(ctx context.Context, taskID int64) (*sundial.Run, error)
	RunClaim(ctx context.Context, nodeID string, refs []sundial.RunRef) ([]*sundial.Run, map[int64]*sundial.Task, error)
}

// dispatcher holds the runs this node has claimed in a timer heap and acts
// on each at its instant, by its stage: unconstrained runs are committed
// RUNNING in one batch StartAhead before it, checked checkAhead before it
// (a change of the task may have taken them back) and sent at it; the
// others are admitted at it, one transaction per run, in order per task.
// It also starts the oldest QUEUED run of a task when a slot frees.
type dispatcher struct {
	store dispatchStore
	log   *slog.Logger

	node       string
	startAhead time.Duration
	heapSize   prometheus.Gauge

	// submit hands a run to the delivery pool.
	submit func(job)
	// finish hands an outcome to the writer.
	finish func(result)
	// record logs and counts an outcome the store recorded (a skip).
	record func(outcome)
	// cancel stops a call of this node (CANCEL_PREV).
	cancel func(runID int64, cause error) bool
	// publish hands on the live event of a run queued.
	publish publishFunc
	// idle, when set, is told how long the timer loop is about to wait
	// with nothing due (quietGC).
	idle func(now time.Time, wait time.Duration)

	mu   sync.Mutex
	h    runHeap
	byID map[int64]*item
	wake chan struct{}

	admitQ  []chan *item // per-task ordered admission lanes
	commitQ chan []*item // batches of fast runs to commit ahead
	checkQ  chan []*item // batches of committed runs to check before sending
}

const admitLanes = 4

// checkAhead is how long before its instant a committed run is checked
// (RunCheckSend). With commitBatch it must stay well under
// sundial.SendMargin: a change of the task that took the run back is then
// visible to the check.
const checkAhead = 20 * time.Millisecond

func newDispatcher(cfg Config, store dispatchStore, log *slog.Logger, heapSize prometheus.Gauge) *dispatcher {
	d := &dispatcher{store: store, log: log.With("component", "dispatcher"), node: cfg.Node.ID,
		startAhead: cfg.StartAhead, heapSize: heapSize, byID: make(map[int64]*item), wake: make(chan struct{}, 1),
		commitQ: make(chan []*item, 256), checkQ: make(chan []*item, 256), publish: publishOrNone(nil)}
	for range admitLanes {
		d.admitQ = append(d.admitQ, make(chan *item, cfg.admitLaneCap))
	}
	return d
}

// add takes claimed runs into the heap, each due at its DueAt. Runs
// delivered before (a retry after its backoff, a delivery cut off by a
// node's death) were admitted before: they skip admission.
func (d *dispatcher) add(runs []*sundial.Run, tasks map[int64]*sundial.Task, redelivered bool) {
	if len(runs) == 0 {
		return
	}
	d.mu.Lock()
	for _, r := range runs {
		// A claim commits the fast runs due soon (sundial.ClaimStartParams).
		started := r.Status == sundial.RunRunning
		if r.Status != sundial.RunScheduled && !started {
			continue
		}
		t := tasks[r.TaskID]
		if t == nil {
			continue
		}
		if old, dup := d.byID[r.ID]; dup {
			if r.Fence <= old.run.Fence {
				continue
			}
			// Claimed again after a change of its task handed it back:
			// the item held is fenced off. (One being committed or
			// checked is dropped when it comes back: see held.)
			if old.index >= 0 {
				heap.Remove(&d.h, old.index)
			}
		}
		fast := started || redelivered || r.Deliveries > 0 || (r.Trigger != sundial.TriggerManual && unconstrained(t))
		it := &item{run: r, task: t, due: r.DueAt, stage: stageAdmit}
		switch {
		case started:
			it.stage, it.due = stageCheck, r.DueAt.Add(-checkAhead)
		case fast:
			it.stage, it.due = stageCommit, r.DueAt.Add(-d.startAhead)
		}
		heap.Push(&d.h, it)
		d.byID[r.ID] = it
	}
	d.heapSize.Set(float64(len(d.h)))
	d.mu.Unlock()
	d.poke()
}

// addAdmitted takes a run that must go through admission at its instant
// (a manual trigger, or a queued run whose slot may have freed).
func (d *dispatcher) addAdmitted(r *sundial.Run, t *sundial.Task) {
	d.mu.Lock()
	if _, dup := d.byID[r.ID]; !dup {
		it := &item{run: r, task: t, due: r.ScheduledTime, stage: stageAdmit}
		heap.Push(&d.h, it)
		d.byID[r.ID] = it
	}
	d.mu.Unlock()
	d.poke()
}

// has reports whether the run is in the heap.
func (d *dispatcher) has(runID int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.byID[runID]
	return ok
}

// holding adds to ids the runs in the heap, and those taken out of it to
// be committed or checked.
func (d *dispatcher) holding(ids map[int64]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id := range d.byID {
		ids[id] = true
	}
}

// due counts the runs in the heap whose instant has passed: with the
// delivery queue, this node's local start queue.
func (d *dispatcher) due(now time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, it := range d.h {
		if !it.run.DueAt.After(now) {
			n++
		}
	}
	return n
}

// settle puts an item popped from the heap, back from the database, in
// the heap again if keep, or else forgets its run. An item superseded
// meanwhile by a later claim of its run is dropped either way. Called with
// d.mu held.
func (d *dispatcher) settle(it *item, keep bool) {
	switch {
	case d.byID[it.run.ID] != it:
	case keep:
		heap.Push(&d.h, it)
	default:
		delete(d.byID, it.run.ID)
	}
}

// forget drops a run (cancelled, or deleted with its task's change).
func (d *dispatcher) forget(runID int64) {
	d.mu.Lock()
	if it, ok := d.byID[runID]; ok && it.index >= 0 {
		heap.Remove(&d.h, it.index)
		delete(d.byID, runID)
	}
	d.mu.Unlock()
}

// dropAll forgets every run: the node lost its membership and the runs
// have been, or will be, released to the other nodes.
func (d *dispatcher) dropAll() {
	d.mu.Lock()
	d.h = nil
	d.byID = make(map[int64]*item)
	d.heapSize.Set(0)
	d.mu.Unlock()
}

func (d *dispatcher) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// commitBatch is how far past now the dispatcher looks for fast runs to
// commit together, so that fires due close together share a transaction.
const commitBatch = 20 * time.Millisecond

// Run acts on the heap until ctx is done, then sends the runs it has
// committed (finish) and returns. Its lanes (admission, commit, check) run
// until then on a context of their own, so that a commit in progress
// lands.
func (d *dispatcher) Run(ctx context.Context) error {
	var lanes errgroup.Group
	laneCtx, stopLanes := context.WithCancel(context.WithoutCancel(ctx))
	for _, q := range d.admitQ {
		lanes.Go(func() error { return d.admitLane(laneCtx, q) })
	}
	lanes.Go(func() error { return d.committer(laneCtx) })
	lanes.Go(func() error { return d.checker(laneCtx) })

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			// Let a commit in progress land, then send what is committed.
			stopLanes()
			err := lanes.Wait()
			d.sendCommitted()
			return err
		}
		wait := d.step(ctx)
		if d.idle != nil {
			d.idle(time.Now(), wait)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-timer.C:
		}
	}
}

// step acts on every item that is due and returns how long to wait for the
// next one.
func (d *dispatcher) step(ctx context.Context) time.Duration {
	now := time.Now()
	var commit, check, send, admit []*item
	d.mu.Lock()
	for len(d.h) > 0 {
		it := d.h[0]
		// Fast runs due soon after the first of a batch join it.
		joins := it.due.Before(now.Add(commitBatch)) &&
			(it.stage == stageCommit && len(commit) > 0 || it.stage == stageCheck && len(check) > 0)
		if it.due.After(now) && !joins {
			break
		}
		heap.Pop(&d.h)
		switch it.stage {
		case stageCommit:
			commit = append(commit, it)
		case stageCheck:
			check = append(check, it)
		case stageSend:
			delete(d.byID, it.run.ID)
			send = append(send, it)
		case stageAdmit:
			delete(d.byID, it.run.ID)
			admit = append(admit, it)
		}
	}
	d.mu.Unlock()

	// Channels are sent on with d.mu released: an admission lane may need
	// the lock (a queued run starting goes through addAdmitted), and a
	// full lane must slow this loop down, not stop the lane.
	for _, it := range send {
		d.submit(it.job())
	}
	for _, it := range admit {
		d.admitQ[it.run.TaskID%admitLanes] <- it
	}
	if len(commit) > 0 {
		// The commit waits for the database (whose single writer may be
		// busy planning); the timer loop must not.
		d.commitQ <- commit
	}
	if len(check) > 0 {
		d.checkQ <- check
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	d.heapSize.Set(float64(len(d.h)))
	if len(d.h) == 0 {
		return time.Hour
	}
	return max(time.Until(d.h[0].due), 0)
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// committer commits the batches the timer loop hands it, in order.
func (d *dispatcher) committer(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case batch := <-d.commitQ:
			d.commit(ctx, batch)
			d.poke()
		}
	}
}

// commit marks fast runs RUNNING in one transaction and puts those that
// applied back in the heap, due at their instant. A run that did not apply
// was cancelled or removed by a change of its task: it is dropped.
func (d *dispatcher) commit(ctx context.Context, items []*item) {
	starts := make([]sundial.RunStartParams, len(items))
	for i, it := range items {
		it.run.TraceID = executor.NewTraceID()
		starts[i] = sundial.RunStartParams{ID: it.run.ID, Fence: it.run.Fence, Attempt: max(it.run.Attempt, 1),
			StartedAt: laterOf(it.run.DueAt, time.Now()), TraceID: it.run.TraceID}
	}
	ok, err := d.store.RunStart(ctx, starts)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("commit fires", "runs", len(items), "err", err)
		}
		// Leave them to membership and the compensator; try again shortly.
		d.mu.Lock()
		for _, it := range items {
			it.due = time.Now().Add(100 * time.Millisecond)
			d.settle(it, true)
		}
		d.mu.Unlock()
		return
	}
	d.mu.Lock()
	for i, it := range items {
		if ok[i] {
			it.stage = stageCheck
			// As RunStart wrote it.
			it.run.Status, it.run.Attempt, it.run.Deliveries = sundial.RunRunning, starts[i].Attempt, it.run.Deliveries+1
			it.run.HTTPStatus, it.run.ResponseBody, it.run.Error, it.run.Message = 0, "", "", ""
			it.due = it.run.DueAt.Add(-checkAhead)
		}
		d.settle(it, ok[i])
	}
	d.mu.Unlock()
}

// checker checks the batches of committed runs the timer loop hands it.
func (d *dispatcher) checker(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case batch := <-d.checkQ:
			send := d.check(ctx, batch)
			d.mu.Lock()
			for _, it := range batch {
				if send[it] {
					it.stage, it.due = stageSend, it.run.DueAt
				}
				d.settle(it, send[it])
			}
			d.mu.Unlock()
			d.poke()
		}
	}
}

// check asks the database which committed runs may still be sent, just
// before their instant: a change of a run's task may have taken it back
// (it is dropped), or its cancellation been asked (it is recorded CANCELED
// unsent). It returns the runs to send. If the database does not answer,
// the runs go out: a fire is not lost for want of a check.
func (d *dispatcher) check(ctx context.Context, items []*item) map[*item]bool {
	refs := make([]sundial.RunRef, len(items))
	for i, it := range items {
		refs[i] = sundial.RunRef{ID: it.run.ID, Fence: it.run.Fence}
	}
	send := make(map[*item]bool, len(items))
	verdicts, err := d.store.RunCheckSend(ctx, refs)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("check fires before sending; sending them unchecked", "runs", len(items), "err", err)
		}
		for _, it := range items {
			send[it] = true
		}
		return send
	}
	for i, it := range items {
		switch verdicts[i] {
		case sundial.SendGo:
			send[it] = true
		case sundial.SendCancel:
			d.cancelUnsent(it)
		default:
			d.log.Info("fire taken back by a change of its task before it was sent", "task_id", it.run.TaskID,
				"run_id", it.run.ID, "scheduled_time", it.run.ScheduledTime)
		}
	}
	return send
}

// cancelUnsent records CANCELED a committed run whose cancellation was asked
// before it was sent.
func (d *dispatcher) cancelUnsent(it *item) {
	now := time.Now()
	fin := sundial.RunFinishParams{ID: it.run.ID, Fence: it.run.Fence, Status: sundial.RunCanceled,
		StartedAt: now, FinishedAt: now, Error: "canceled by request before it was sent"}
	fin.CompleteTask = sundial.TaskEndOf(it.task, it.run, sundial.RunCanceled)
	d.finish(result{job: it.job(), fin: fin})
}

// admitLane admits runs one at a time, so that the runs of one task are
// decided in order.
func (d *dispatcher) admitLane(ctx context.Context, q chan *item) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case it := <-q:
			if _, err := d.admit(ctx, it.run); err != nil && sundial.ErrorCode(err) != sundial.ENotFound && ctx.Err() == nil {
				d.log.Error("admit run", "run_id", it.run.ID, "task_id", it.run.TaskID, "err", err)
			}
		}
	}
}

// admit decides what run, SCHEDULED or QUEUED and held by this node,
// becomes under its task's policies (Admit, applied by RunAdmit under the
// task's lock), and acts on the decision: a RUNNING run is handed to the
// delivery pool, a QUEUED one waits for a slot (or, when a slot is free,
// the oldest queued run of the task starts), a SKIPPED one is counted, and
// the calls a CANCEL_PREV decision cancelled are stopped. It returns the
// run as decided, or RunAdmit's error (ENotFound: the run is gone, fenced
// off or no longer waiting). Every admission goes through here: the
// dispatcher's, at a run's instant, and a manual trigger's, in its request.
func (d *dispatcher) admit(ctx context.Context, run *sundial.Run) (*sundial.Run, error) {
	var (
		task     *sundial.Task
		decision sundial.Admission
		freeSlot bool
	)
	trace := executor.NewTraceID()
	r, err := d.store.RunAdmit(ctx, run.ID, run.Fence, time.Now(), func(st sundial.AdmitState) sundial.Admission {
		task = st.Task
		freeSlot = st.Task.MaxConcurrency > 0 && st.Active < st.Task.MaxConcurrency
		decision = Admit(st)
		decision.TraceID = trace
		if decision.Status == sundial.RunSkipped {
			// A one-off task's only fire skipped: the task has failed.
			decision.CompleteTask = sundial.TaskEndOf(st.Task, st.Run, sundial.RunSkipped)
		}
		return decision
	})
	if err != nil {
		return nil, err
	}
	switch r.Status {
	case sundial.RunRunning:
		// RunAdmit counted this delivery in r.Deliveries.
		d.submit(job{run: r, task: task, fence: r.Fence, attempt: r.Attempt, trace: r.TraceID,
			delivery: max(r.Deliveries, 1)})
	case sundial.RunSkipped:
		d.record(outcome{run: r, task: task, status: r.Status, attempt: r.Attempt})
	case sundial.RunQueued:
		d.log.Info("run queued", "task_id", r.TaskID, "run_id", r.ID, "scheduled_time", r.ScheduledTime)
		if run.Status != sundial.RunQueued {
			d.publish(storedEvent(r, task, d.node)) // queued now, not again
		}
		if freeSlot && run.Status != sundial.RunQueued {
			// Queued behind older runs while a slot is free: start the
			// oldest.
			d.startQueued(ctx, task)
		}
	}
	// RunAdmit marked the runs to cancel; stop the calls made from here.
	// (Calls on other nodes see the mark when they next look.)
	for _, id := range decision.Cancel {
		d.cancel(id, errCancelPrev)
	}
	return r, nil
}

// startQueued hands the oldest QUEUED run of t to admission: a slot may
// have freed. A run queued on another node is taken over first.
func (d *dispatcher) startQueued(ctx context.Context, t *sundial.Task) {
	q, err := d.store.RunQueuedNext(ctx, t.ID)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("find queued run", "task_id", t.ID, "err", err)
		}
		return
	}
	if q == nil {
		return
	}
	if q.NodeID != d.node {
		runs, _, err := d.store.RunClaim(ctx, d.node, []sundial.RunRef{{ID: q.ID, Fence: q.Fence}})
		if err != nil || len(runs) == 0 {
			return // taken by another node meanwhile
		}
		q = runs[0]
	}
	d.addAdmitted(q, t)
}

// slotFreed starts the oldest queued run of t (nil: a deleted task) after
// one of its active runs ended.
func (d *dispatcher) slotFreed(ctx context.Context, t *sundial.Task) {
	if queues(t) {
		d.startQueued(ctx, t)
	}
}

// sendCommitted sends (once checked) the fast runs already committed
// RUNNING, which are due within StartAhead, and leaves the rest to
// RunRelease.
func (d *dispatcher) sendCommitted() {
	d.mu.Lock()
	// Batches handed to the checker and not taken are committed too.
	for len(d.checkQ) > 0 {
		for _, it := range <-d.checkQ {
			d.settle(it, true)
		}
	}
	var send []*item
	for _, it := range d.h {
		if it.committed() {
			send = append(send, it)
		}
	}
	d.h = nil
	d.byID = make(map[int64]*item)
	d.mu.Unlock()
	slices.SortFunc(send, func(a, b *item) int { return a.run.DueAt.Compare(b.run.DueAt) })
	// Each group of runs due within commitBatch is checked checkAhead
	// before its first instant, as in step.
	for len(send) > 0 {
		n := 1
		for n < len(send) && send[n].run.DueAt.Before(send[0].run.DueAt.Add(commitBatch)) {
			n++
		}
		group := send[:n]
		send = send[n:]
		time.Sleep(time.Until(group[0].run.DueAt.Add(-checkAhead)))
		ctx, cancel := context.WithTimeout(context.Background(), checkAhead)
		ok := d.check(ctx, group)
		cancel()
		for _, it := range group {
			if ok[it] {
				time.Sleep(time.Until(it.run.DueAt))
				d.submit(it.job())
			}
		}
	}
}
