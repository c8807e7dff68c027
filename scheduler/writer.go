package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/sundialhq/sundial"
)

// result is a finished delivery waiting to be written.
type result struct {
	job job
	fin sundial.RunFinishParams
}

// finishStore is what the writer needs of the store.
type finishStore interface {
	RunFinish(ctx context.Context, finishes []sundial.RunFinishParams) (ok []bool, err error)
}

// writer records the outcomes of this node's deliveries in batches: one
// transaction for every outcome that arrived while the previous one was
// being written, so the database cost per delivery shrinks as the load
// grows. Every outcome the store records, whichever path recorded it, is
// logged and counted by its record.
type writer struct {
	store finishStore
	log   *slog.Logger
	m     *metrics

	// written tells the pool which deliveries are written back.
	written func([]result)
	// slotFreed starts the oldest queued run of a task whose run ended.
	slotFreed func(ctx context.Context, t *sundial.Task)
	// publish hands on the live event of each outcome.
	publish publishFunc
	node    string
	// observe hands every outcome recorded to health; nil for none.
	observe func(outcome)

	in chan result
}

func newWriter(store finishStore, log *slog.Logger, m *metrics, node string) *writer {
	return &writer{store: store, log: log.With("component", "writer"), m: m, in: make(chan result, 1<<16),
		publish: publishOrNone(nil), node: node}
}

// finish hands the outcome of a delivery to the writer.
func (w *writer) finish(r result) { w.in <- r }

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

// Run writes outcomes until ctx is done, then writes those already handed
// to it and returns. The scheduler stops it after the pool has drained:
// nothing more comes then.
func (w *writer) Run(ctx context.Context) error {
	batch := make([]result, 0, maxWriteBatch)
	quiet := time.NewTimer(time.Hour)
	defer quiet.Stop()
	for {
		var r result
		select {
		case r = <-w.in:
		case <-ctx.Done():
			// Flush: the writes of a stopping writer retry a bounded
			// number of times.
			for len(w.in) > 0 {
				batch = batch[:0]
				for len(batch) < maxWriteBatch && len(w.in) > 0 {
					batch = append(batch, <-w.in)
				}
				w.write(ctx, batch)
			}
			return nil
		}
		batch = append(batch[:0], r)
		if len(w.in) == 0 {
			w.write(ctx, batch)
			continue
		}
		deadline := time.Now().Add(burstMax)
	fill:
		for len(batch) < maxWriteBatch {
			select {
			case r := <-w.in:
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
			case r := <-w.in:
				batch = append(batch, r)
			case <-quiet.C:
				break fill
			}
		}
		w.write(ctx, batch)
	}
}

// write records a batch of outcomes. Until ctx is done (the scheduler
// stops), it tries again until the store takes them.
func (w *writer) write(ctx context.Context, batch []result) {
	fins := make([]sundial.RunFinishParams, len(batch))
	for i, r := range batch {
		fins[i] = r.fin
	}
	// Outcomes are kept until the database takes them: an outage delays
	// them, it does not lose them. If another node took a run over
	// meanwhile, its fence refuses this node's late outcome. Only while
	// the scheduler stops is the wait bounded.
	stopping := ctx
	ctx = context.WithoutCancel(ctx)
	var ok []bool
	var err error
	backoff := 200 * time.Millisecond
	for try := 1; ; try++ {
		if ok, err = w.store.RunFinish(ctx, fins); err == nil {
			break
		}
		w.log.Error("record run outcomes", "runs", len(fins), "try", try, "err", err)
		if stopping.Err() != nil && try >= 10 {
			return // the runs stay RUNNING; RunRelease or a node that reaps this one takes them up
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
	w.written(batch)
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
			w.log.Warn("run outcome refused: run no longer held", "task_id", run.TaskID, "run_id", run.ID,
				"trace_id", r.job.trace, "fence", f.Fence, "status", f.Status)
			continue
		}
		w.record(outcome{run: run, task: r.job.task, status: f.Status, retry: f.Retry, dueAt: f.DueAt,
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
		w.slotFreed(ctx, t)
	}
}

// outcome is what the store recorded of a run: the end of a delivery (the
// writer), a callback or an expired callback deadline, a cancel, an
// admission's skip, a MISFIRE record. Every outcome is logged and counted
// in one place, record, whichever path recorded it.
type outcome struct {
	run        *sundial.Run
	task       *sundial.Task // nil: deleted
	status     sundial.RunStatus
	retry      bool      // back to SCHEDULED for another delivery
	dueAt      time.Time // the retry's time, or the callback deadline
	err        string
	trace      string
	attempt    int
	delivery   int
	httpStatus int
	// started and finished bound the call that ended; zero when the
	// outcome came without one (a callback, a deadline, a cancel).
	started, finished time.Time
}

// record logs an outcome the store has recorded and counts it in the
// metrics (the run's own error text under run_error, apart from err, the
// key of Go errors): a retry in sundial_retries_total, a final status in
// sundial_fires_total, missed fires in sundial_fires_missed_total. An
// INTERRUPTED delivery is logged, not counted: it is delivered again. It
// publishes the outcome's live event, and hands it to health (observe),
// which keeps the task's state.
func (w *writer) record(o outcome) {
	w.publish(outcomeEvent(o, w.node))
	if w.observe != nil {
		w.observe(o)
	}
	r := o.run
	// What is counted, and the log line: its level, message and the
	// attributes of its kind. The extra attributes are built only for the
	// lines that are not a plain success.
	level, msg := slog.LevelWarn, "run finished"
	var extra func() []any
	switch {
	case o.retry:
		w.m.retries.Inc()
		msg = "run will be retried"
		extra = func() []any { return []any{slog.Time("retry_at", o.dueAt), slog.String("run_error", o.err)} }
	case o.status == sundial.RunWaitingCallback:
		level, msg = slog.LevelInfo, "run waiting for its callback"
		extra = func() []any { return []any{slog.Time("deadline", o.dueAt)} }
	case o.status == sundial.RunSkipped && r.SkipReason == sundial.SkipMisfire:
		w.m.fires.WithLabelValues(string(o.status)).Inc()
		w.m.missed.Add(float64(r.MissedCount))
		msg = "fires missed"
		extra = func() []any { return []any{slog.Int("missed", r.MissedCount)} }
	case o.status == sundial.RunSkipped:
		w.m.fires.WithLabelValues(string(o.status)).Inc()
		level, msg = slog.LevelInfo, "run skipped"
		extra = func() []any { return []any{slog.String("skip_reason", string(r.SkipReason))} }
	case o.status == sundial.RunInterrupted:
		// Not final, not counted: a live node delivers it again
		// (RunRedeliver).
		msg = "run interrupted"
		extra = func() []any { return []any{slog.String("run_error", o.err)} }
	case o.status == sundial.RunSuccess:
		w.m.fires.WithLabelValues(string(o.status)).Inc()
		level = slog.LevelInfo
	default:
		w.m.fires.WithLabelValues(string(o.status)).Inc()
		extra = func() []any { return []any{slog.String("run_error", o.err)} }
	}
	ctx := context.Background()
	if !w.log.Enabled(ctx, level) {
		return // a fire a second per task: its attributes are not built for nothing
	}
	attrs := []any{slog.Int64("task_id", r.TaskID)}
	if o.task != nil {
		attrs = append(attrs, slog.String("task_name", o.task.Name))
	}
	attrs = append(attrs, slog.Int64("run_id", r.ID), slog.String("status", string(o.status)),
		slog.Time("scheduled_time", r.ScheduledTime))
	if o.trace != "" {
		attrs = append(attrs, slog.String("trace_id", o.trace))
	}
	if o.attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", o.attempt))
	}
	if o.delivery > 0 {
		attrs = append(attrs, slog.Int("delivery", o.delivery))
	}
	if !o.started.IsZero() {
		attrs = append(attrs, slog.Int64("lag_ms", o.started.Sub(dueOf(r)).Milliseconds()),
			slog.Int64("duration_ms", o.finished.Sub(o.started).Milliseconds()), slog.Int("http_status", o.httpStatus))
	}
	if extra != nil {
		attrs = append(attrs, extra()...)
	}
	w.log.Log(ctx, level, msg, attrs...)
}

// dueOf is when the run r was due, which its lag counts from: its DueAt
// (a fire's first delivery: its scheduled time plus its jitter; a retry:
// the end of its backoff), or its scheduled time for a run without one.
func dueOf(r *sundial.Run) time.Time {
	if r.DueAt.IsZero() {
		return r.ScheduledTime
	}
	return r.DueAt
}
