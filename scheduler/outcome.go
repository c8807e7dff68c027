package scheduler

import (
	"log/slog"
	"time"

	"github.com/sundialhq/sundial"
)

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
// metrics: a retry in sundial_retries_total, a final status in
// sundial_fires_total, missed fires in sundial_fires_missed_total. An
// INTERRUPTED delivery is logged, not counted: it is delivered again.
func (s *Scheduler) record(o outcome) {
	r := o.run
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
		attrs = append(attrs, slog.Int64("lag_ms", o.started.Sub(r.ScheduledTime).Milliseconds()),
			slog.Int64("duration_ms", o.finished.Sub(o.started).Milliseconds()), slog.Int("http_status", o.httpStatus))
	}
	switch {
	case o.retry:
		s.m.retries.Inc()
		s.log.Warn("run will be retried", append(attrs, slog.Time("retry_at", o.dueAt), slog.String("error", o.err))...)
	case o.status == sundial.RunWaitingCallback:
		s.log.Info("run waiting for its callback", append(attrs, slog.Time("deadline", o.dueAt))...)
	case o.status == sundial.RunSkipped && r.SkipReason == sundial.SkipMisfire:
		s.m.fires.WithLabelValues(string(o.status)).Inc()
		s.m.missed.Add(float64(r.MissedCount))
		s.log.Warn("fires missed", append(attrs, slog.Int("missed", r.MissedCount))...)
	case o.status == sundial.RunSkipped:
		s.m.fires.WithLabelValues(string(o.status)).Inc()
		s.log.Info("run skipped", append(attrs, slog.String("skip_reason", string(r.SkipReason)))...)
	case o.status == sundial.RunInterrupted:
		// Not final: a live node delivers it again (RunRedeliver).
		s.log.Warn("run interrupted", append(attrs, slog.String("error", o.err))...)
	case o.status == sundial.RunSuccess:
		s.m.fires.WithLabelValues(string(o.status)).Inc()
		s.log.Info("run finished", attrs...)
	default:
		s.m.fires.WithLabelValues(string(o.status)).Inc()
		s.log.Warn("run finished", append(attrs, slog.String("error", o.err))...)
	}
}
