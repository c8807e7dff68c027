package scheduler

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/sundialhq/sundial"
)

// result is a finished delivery waiting to be written.
type result struct {
	job job
	fin sundial.RunFinish
}

// writer records outcomes in batches: one transaction for every outcome
// that arrived while the previous one was being written, so the database
// cost per delivery shrinks as the load grows.
type writer struct {
	s        *Scheduler
	in       chan result
	stopping atomic.Bool
}

func newWriter(s *Scheduler) *writer {
	return &writer{s: s, in: make(chan result, 1<<16)}
}

func (w *writer) finish(r result) { w.in <- r }

// close stops the writer once everything sent has been written.
func (w *writer) close() {
	w.stopping.Store(true)
	close(w.in)
}

// While outcomes keep arriving, the writer keeps collecting them, and
// writes once none has come for burstQuiet (or burstMax has passed, or the
// batch is full): the database work of a burst of fires then comes after the
// burst instead of competing with its deliveries. A lone outcome is written
// at once.
const (
	burstQuiet    = 5 * time.Millisecond
	burstMax      = 250 * time.Millisecond
	maxWriteBatch = 5000
)

func (w *writer) loop() {
	batch := make([]result, 0, maxWriteBatch)
	quiet := time.NewTimer(time.Hour)
	defer quiet.Stop()
	for r := range w.in {
		batch = append(batch[:0], r)
		if len(w.in) == 0 {
			w.write(batch)
			continue
		}
		deadline := time.Now().Add(burstMax)
	fill:
		for len(batch) < maxWriteBatch {
			select {
			case r, ok := <-w.in:
				if !ok {
					break fill
				}
				batch = append(batch, r)
				continue
			default:
			}
			wait := min(burstQuiet, time.Until(deadline))
			if wait <= 0 {
				break
			}
			quiet.Reset(wait)
			select {
			case r, ok := <-w.in:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			case <-quiet.C:
				break fill
			}
		}
		w.write(batch)
	}
}

func (w *writer) write(batch []result) {
	fins := make([]sundial.RunFinish, len(batch))
	for i, r := range batch {
		fins[i] = r.fin
	}
	// Outcomes are kept until the database takes them: an outage delays
	// them, it does not lose them. If another node took a run over
	// meanwhile, its fence refuses this node's late outcome. Only while
	// the scheduler stops is the wait bounded.
	ctx := context.Background()
	var ok []bool
	var err error
	backoff := 200 * time.Millisecond
	for try := 1; ; try++ {
		if ok, err = w.s.store.RunFinish(ctx, fins); err == nil {
			break
		}
		w.s.log.Error("record run outcomes", "runs", len(fins), "try", try, "err", err)
		if w.stopping.Load() && try >= 10 {
			return // the runs stay RUNNING; RunRelease or the reaper takes them up
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
	w.s.pool.written(batch)
	queueTasks := map[int64]*sundial.Task{}
	for i, r := range batch {
		f, run := r.fin, r.job.run
		if !ok[i] && f.Status == sundial.RunWaitingCallback {
			// The callback came before the call's answer was recorded, and
			// ended the run already.
			continue
		}
		if !ok[i] {
			// Fenced off: the run was taken over or finished elsewhere.
			w.s.log.Warn("run outcome refused: run no longer held", "task_id", run.TaskID, "run_id", run.ID,
				"trace_id", r.job.trace, "fence", f.Fence, "status", f.Status)
			continue
		}
		w.s.record(outcome{run: run, task: r.job.task, status: f.Status, retry: f.Retry, dueAt: f.DueAt,
			err: f.Error, trace: r.job.trace, attempt: r.job.attempt, delivery: r.job.deliveryNo(),
			httpStatus: f.HTTPStatus, started: f.StartedAt, finished: f.FinishedAt})
		if f.Status == sundial.RunWaitingCallback {
			continue // it holds its slot until the callback
		}
		if t := r.job.task; queues(t) {
			queueTasks[t.ID] = t
		}
	}
	// A slot has freed: the oldest queued run of each such task may start.
	for _, t := range queueTasks {
		w.s.startQueued(ctx, t)
	}
}
