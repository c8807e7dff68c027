package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sundialhq/sundial"
)

// statsStore is what stats needs of the store.
type statsStore interface {
	StatsSave(ctx context.Context, ms []*sundial.StatsMinute) error
}

// stats counts what this node does, minute by minute (sundial.StatsMinute:
// the fires it starts, the outcomes it records by class, the lags of the
// scheduled fires it starts), in memory, and writes each minute's
// counters as one row of node_stats, replaced as they grow: every flush
// period (Config.StatsFlush, 10 s) for the minutes that changed since the
// last write, and when the scheduler stops. A fire costs a few additions
// under a lock, never a write: a node writes about six rows a minute,
// whatever its load. GET /api/v1/stats sums the rows of every node.
type stats struct {
	store statsStore
	log   *slog.Logger
	node  string
	flush time.Duration

	mu sync.Mutex
	// minutes holds the counters of the minutes not yet written for good,
	// by the minute's start; dirty those changed since their last write.
	minutes map[time.Time]*sundial.StatsMinute
	dirty   map[time.Time]bool
}

func newStats(cfg Config, store statsStore, log *slog.Logger) *stats {
	return &stats{store: store, log: log.With("component", "stats"), node: cfg.Node.ID, flush: cfg.StatsFlush,
		minutes: map[time.Time]*sundial.StatsMinute{}, dirty: map[time.Time]bool{}}
}

// at returns the counters of the minute of t, marked changed. The caller
// holds mu.
func (s *stats) at(t time.Time) *sundial.StatsMinute {
	minute := t.UTC().Truncate(time.Minute)
	m := s.minutes[minute]
	if m == nil {
		m = &sundial.StatsMinute{NodeID: s.node, Minute: minute}
		s.minutes[minute] = m
	}
	s.dirty[minute] = true
	return m
}

// fired counts the first delivery of run r, started at started: a fire;
// the lag of a scheduled one (trigger SCHEDULE) from the time it was due.
func (s *stats) fired(r *sundial.Run, started time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.at(started)
	m.Fires++
	if r.Trigger == sundial.TriggerSchedule {
		m.ScheduledFires++
		m.AddLag(started.Sub(dueOf(r)))
	}
}

// observe counts an outcome the store has recorded (writer.record) by
// its class, in the minute it ended: a success, a failure (FAILED,
// TIMEOUT, FAILED_TIMEOUT), a skip, a cancel. A retry, an INTERRUPTED
// delivery and a WAITING_CALLBACK are not ends.
func (s *stats) observe(o outcome) {
	if o.retry {
		return
	}
	var count func(m *sundial.StatsMinute)
	switch o.status {
	case sundial.RunSuccess:
		count = func(m *sundial.StatsMinute) { m.Succeeded++ }
	case sundial.RunFailed, sundial.RunTimeout, sundial.RunFailedTimeout:
		count = func(m *sundial.StatsMinute) { m.Failed++ }
	case sundial.RunSkipped:
		count = func(m *sundial.StatsMinute) { m.Skipped++ }
	case sundial.RunCanceled:
		count = func(m *sundial.StatsMinute) { m.Canceled++ }
	default:
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	count(s.at(endOf(o, now)))
}

// Run writes the changed minutes every flush period until ctx is done,
// then writes them a last time and returns. The scheduler stops it after
// the writer: every outcome is recorded by then.
func (s *stats) Run(ctx context.Context) error {
	ticker := time.NewTicker(s.flush)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateStopWait)
			defer cancel()
			if err := s.save(stop, time.Now()); err != nil {
				s.log.Error("save node stats on stop; this node's last counts are lost", "err", err)
			}
			return nil
		case <-ticker.C:
		}
		if err := s.save(ctx, time.Now()); err != nil && ctx.Err() == nil {
			s.log.Error("save node stats; tried again at the next flush", "err", err)
		}
	}
}

// save writes the minutes changed since their last write, as they stand
// at now, in one call. A minute the store refused stays changed, for the
// next call; a minute before now's that is written and unchanged is
// forgotten, as is one older than the retention (the store was down for
// that long).
func (s *stats) save(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	batch := make([]*sundial.StatsMinute, 0, len(s.dirty))
	for minute := range s.dirty {
		m := *s.minutes[minute]
		m.UpdatedAt = now
		batch = append(batch, &m)
	}
	clear(s.dirty)
	s.mu.Unlock()
	var err error
	if len(batch) > 0 {
		err = s.store.StatsSave(ctx, batch)
	}
	current := now.UTC().Truncate(time.Minute)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		for _, m := range batch {
			s.dirty[m.Minute] = true
		}
	}
	for minute := range s.minutes {
		if (minute.Before(current) && !s.dirty[minute]) || now.Sub(minute) > sundial.StatsRetention {
			delete(s.minutes, minute)
			delete(s.dirty, minute)
		}
	}
	return err
}
