package scheduler

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
)

// item is a run this node owns and has yet to fire.
type item struct {
	run  *sundial.Run
	task *sundial.Task // as planned
	due  time.Time     // when the dispatcher must act on it next
	fast bool          // unconstrained: committed ahead, no admission
	// committed: a fast run already marked RUNNING, to check checkAhead
	// before its instant; checked: found still to send, at its instant.
	committed, checked bool
	index              int
}

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

// dispatcher claims this node's share of the runs coming due, holds them in
// a timer heap and acts on each at its instant: unconstrained runs are
// committed RUNNING in one batch StartAhead before it, checked checkAhead
// before it (a change of the task may have taken them back) and sent at it;
// the others are admitted at it, one transaction per run, in order per
// task.
type dispatcher struct {
	s    *Scheduler
	mu   sync.Mutex
	h    runHeap
	byID map[int64]*item
	wake chan struct{}

	admitQ    []chan *item  // per-task ordered admission lanes
	commitQ   chan []*item  // batches of fast runs to commit ahead
	checkQ    chan []*item  // batches of committed runs to check before sending
	claimWake chan struct{} // ask for a claim now
}

const admitLanes = 4

// checkAhead is how long before its instant a committed run is checked
// (RunCheckSend). With commitBatch it must stay well under
// sundial.SendMargin: a change of the task that took the run back is then
// visible to the check.
const checkAhead = 20 * time.Millisecond

func newDispatcher(s *Scheduler) *dispatcher {
	d := &dispatcher{s: s, byID: make(map[int64]*item), wake: make(chan struct{}, 1),
		commitQ: make(chan []*item, 256), checkQ: make(chan []*item, 256), claimWake: make(chan struct{}, 1)}
	for range admitLanes {
		d.admitQ = append(d.admitQ, make(chan *item, s.cfg.admitLaneCap))
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
		// A claim commits the fast runs due soon (sundial.ClaimStart).
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
		it := &item{run: r, task: t, due: r.DueAt, fast: fast, committed: started}
		switch {
		case started:
			it.due = r.DueAt.Add(-checkAhead)
		case fast:
			it.due = r.DueAt.Add(-d.s.cfg.StartAhead)
		}
		heap.Push(&d.h, it)
		d.byID[r.ID] = it
	}
	d.s.m.heapSize.Set(float64(len(d.h)))
	d.mu.Unlock()
	d.poke()
}

// addAdmitted takes a run that must go through admission at its instant
// (a manual trigger, or a queued run whose slot may have freed).
func (d *dispatcher) addAdmitted(r *sundial.Run, t *sundial.Task) {
	d.mu.Lock()
	if _, dup := d.byID[r.ID]; !dup {
		it := &item{run: r, task: t, due: r.ScheduledTime}
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
	d.s.m.heapSize.Set(0)
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

func (d *dispatcher) loop(ctx context.Context) {
	var lanes sync.WaitGroup
	laneCtx, stopLanes := context.WithCancel(context.WithoutCancel(ctx))
	for _, q := range d.admitQ {
		lanes.Go(func() { d.admitLane(laneCtx, q) })
	}
	lanes.Go(func() { d.committer(laneCtx) })
	lanes.Go(func() { d.checker(laneCtx) })

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			// Let a commit in progress land, then send what is committed.
			stopLanes()
			lanes.Wait()
			d.finish()
			return
		}
		wait := d.step(ctx)
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
		joins := it.fast && it.due.Before(now.Add(commitBatch)) &&
			(!it.committed && len(commit) > 0 || it.committed && !it.checked && len(check) > 0)
		if it.due.After(now) && !joins {
			break
		}
		heap.Pop(&d.h)
		switch {
		case it.fast && !it.committed:
			commit = append(commit, it)
		case it.fast && !it.checked:
			check = append(check, it)
		case it.fast:
			delete(d.byID, it.run.ID)
			send = append(send, it)
		default:
			delete(d.byID, it.run.ID)
			admit = append(admit, it)
		}
	}
	d.mu.Unlock()

	// Channels are sent on with d.mu released: an admission lane may need
	// the lock (a queued run starting goes through addAdmitted), and a
	// full lane must slow this loop down, not stop the lane.
	for _, it := range send {
		d.s.pool.submit(it.job())
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
	d.s.m.heapSize.Set(float64(len(d.h)))
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
func (d *dispatcher) committer(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
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
	starts := make([]sundial.RunStart, len(items))
	for i, it := range items {
		it.run.TraceID = executor.NewTraceID()
		starts[i] = sundial.RunStart{ID: it.run.ID, Fence: it.run.Fence, Attempt: max(it.run.Attempt, 1),
			StartedAt: laterOf(it.run.DueAt, time.Now()), TraceID: it.run.TraceID}
	}
	ok, err := d.s.store.RunStart(ctx, starts)
	if err != nil {
		if ctx.Err() == nil {
			d.s.log.Error("commit fires", "runs", len(items), "err", err)
		}
		// Leave them to the reaper and the compensator; try again shortly.
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
			it.committed = true
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
func (d *dispatcher) checker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case batch := <-d.checkQ:
			send := d.check(ctx, batch)
			d.mu.Lock()
			for _, it := range batch {
				if send[it] {
					it.checked, it.due = true, it.run.DueAt
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
	verdicts, err := d.s.store.RunCheckSend(ctx, refs)
	if err != nil {
		if ctx.Err() == nil {
			d.s.log.Error("check fires before sending; sending them unchecked", "runs", len(items), "err", err)
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
			d.s.log.Info("fire taken back by a change of its task before it was sent", "task_id", it.run.TaskID,
				"run_id", it.run.ID, "scheduled_time", it.run.ScheduledTime)
		}
	}
	return send
}

// cancelUnsent records CANCELED a committed run whose cancellation was asked
// before it was sent.
func (d *dispatcher) cancelUnsent(it *item) {
	now := time.Now()
	fin := sundial.RunFinish{ID: it.run.ID, Fence: it.run.Fence, Status: sundial.RunCanceled,
		StartedAt: now, FinishedAt: now, Error: "canceled by request before it was sent"}
	fin.CompleteTask = oneOffEnd(it.task, it.run, sundial.RunCanceled)
	d.s.writer.finish(result{job: it.job(), fin: fin})
}

// admitLane admits runs one at a time, so that the runs of one task are
// decided in order.
func (d *dispatcher) admitLane(ctx context.Context, q chan *item) {
	for {
		select {
		case <-ctx.Done():
			return
		case it := <-q:
			d.admit(ctx, it)
		}
	}
}

// admit runs the policies for one run at its instant.
func (d *dispatcher) admit(ctx context.Context, it *item) {
	if _, err := d.s.admit(ctx, it.run); err != nil && sundial.ErrorCode(err) != sundial.ENotFound && ctx.Err() == nil {
		d.s.log.Error("admit run", "run_id", it.run.ID, "task_id", it.run.TaskID, "err", err)
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
func (s *Scheduler) admit(ctx context.Context, run *sundial.Run) (*sundial.Run, error) {
	var (
		task     *sundial.Task
		decision sundial.Admission
		freeSlot bool
	)
	trace := executor.NewTraceID()
	r, err := s.store.RunAdmit(ctx, run.ID, run.Fence, time.Now(), func(st sundial.AdmitState) sundial.Admission {
		task = st.Task
		freeSlot = st.Task.MaxConcurrency > 0 && st.Active < st.Task.MaxConcurrency
		decision = Admit(st)
		decision.TraceID = trace
		if decision.Status == sundial.RunSkipped {
			// A one-off task's only fire skipped: the task has failed.
			decision.CompleteTask = oneOffEnd(st.Task, st.Run, sundial.RunSkipped)
		}
		return decision
	})
	if err != nil {
		return nil, err
	}
	switch r.Status {
	case sundial.RunRunning:
		// RunAdmit counted this delivery in r.Deliveries.
		s.pool.submit(job{run: r, task: task, fence: r.Fence, attempt: r.Attempt, trace: r.TraceID,
			delivery: max(r.Deliveries, 1)})
	case sundial.RunSkipped:
		s.record(outcome{run: r, task: task, status: r.Status, attempt: r.Attempt})
	case sundial.RunQueued:
		s.log.Info("run queued", "task_id", r.TaskID, "run_id", r.ID, "scheduled_time", r.ScheduledTime)
		if freeSlot && run.Status != sundial.RunQueued {
			// Queued behind older runs while a slot is free: start the
			// oldest.
			s.startQueued(ctx, task)
		}
	}
	// RunAdmit marked the runs to cancel; stop the calls made from here.
	// (Calls on other nodes see the mark when they next look.)
	for _, id := range decision.Cancel {
		s.pool.cancel(id, errCancelPrev)
	}
	return r, nil
}

// finish sends (once checked) the fast runs already committed RUNNING, which are due
// within StartAhead, and leaves the rest to RunRelease.
func (d *dispatcher) finish() {
	d.mu.Lock()
	// Batches handed to the checker and not taken are committed too.
	for len(d.checkQ) > 0 {
		for _, it := range <-d.checkQ {
			d.settle(it, true)
		}
	}
	var send []*item
	for _, it := range d.h {
		if it.committed {
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
				d.s.pool.submit(it.job())
			}
		}
	}
}

// claimLoop takes this node's share of the runs coming due: every claim
// interval (jittered) it claims the unowned runs due within StartAhead plus
// one interval, so each is in the heap before it must be committed.
func (d *dispatcher) claimLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-d.claimWake:
		}
		if d.s.healthy.Load() {
			d.claimOnce(ctx)
		}
		iv := d.s.cfg.ClaimInterval
		timer.Reset(iv - iv/5 + time.Duration(randN(int64(iv/5)*2+1)))
	}
}

// pokeClaim asks for a claim now: the planner has just made runs that may
// be due before the next one.
func (d *dispatcher) pokeClaim() {
	select {
	case d.claimWake <- struct{}{}:
	default:
	}
}

// claimOnce claims until nothing more is due within the window. A run found
// later than the misfire threshold (the cluster was down when it was due)
// is given back to the planner, which applies the task's catch-up mode.
func (d *dispatcher) claimOnce(ctx context.Context) {
	cfg := d.s.cfg
	for ctx.Err() == nil {
		now := time.Now()
		// The claim itself commits the fast runs it takes (first
		// deliveries only if not missed: see take), StartAhead plus up to
		// one interval before their instant.
		until := now.Add(cfg.StartAhead + cfg.ClaimInterval)
		runs, tasks, err := d.s.store.RunClaimDue(ctx, cfg.Node.ID, until, cfg.ClaimBatch,
			sundial.ClaimStart{By: until, FreshAfter: now.Add(-cfg.MisfireThreshold)})
		if err != nil {
			if ctx.Err() == nil {
				d.s.log.Error("claim due runs", "err", err)
			}
			return
		}
		d.take(ctx, runs, tasks, now)
		if len(runs) < cfg.ClaimBatch {
			return
		}
	}
}

// take puts runs just claimed into the heap. A first delivery found later
// than its task's deadline (the cluster was down, or this node too busy,
// when it was due) was missed: it is left out, and the planner, asked to,
// unplans it and counts it under the task's catch-up mode.
func (d *dispatcher) take(ctx context.Context, runs []*sundial.Run, tasks map[int64]*sundial.Task, now time.Time) {
	cfg := d.s.cfg
	fresh := runs[:0:0]
	missed := false
	for _, r := range runs {
		// Catch-up runs are late on purpose, retries are due when their
		// backoff ends, and a one-off task fires however late: only a
		// cron task's scheduled fire can have been missed.
		if t := tasks[r.TaskID]; r.Trigger == sundial.TriggerSchedule && r.Deliveries == 0 &&
			t != nil && !t.OneOff() && now.Sub(r.ScheduledTime) > t.MissAfter(cfg.MisfireThreshold) {
			missed = true
		} else {
			fresh = append(fresh, r)
		}
	}
	d.add(fresh, tasks, false)
	if missed {
		d.s.sweepWanted.Store(true)
		d.s.Poke()
	}
}
