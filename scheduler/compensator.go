package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sundialhq/sundial"
)

// compensator is seed 000's safety net: a poller that finds runs stuck
// before start (due more than Threshold ago and still not started) that
// this node holds but has lost track of, or that no live node holds, and
// starts them through the normal start path. Its interval starts at Base,
// grows by Increment after every round that finds nothing, up to Max, and
// goes back to Base when a round finds work. The search for stuck runs is
// skipped while the local start queue is not empty, so that it never races
// the normal path; the sweep of runs this node lost while RUNNING is not
// (no run it holds is lost).
type compensator struct {
	cfg CompensatorConfig
	log *slog.Logger

	// queueSize reports the runs this node has due but not yet started.
	queueSize func() int
	// find returns stuck runs: due before dueBefore and not started.
	find func(ctx context.Context, dueBefore time.Time) ([]*sundial.Run, error)
	// start hands stuck runs to the normal start path and reports how many
	// it took.
	start func(ctx context.Context, runs []*sundial.Run) int
	// recoverLost sends back for delivery this node's RUNNING runs started
	// before startedBefore that it lost track of, and reports how many.
	recoverLost func(ctx context.Context, startedBefore time.Time) (int, error)

	wake chan struct{}

	mu          sync.Mutex
	multiplier  int
	lastPoll    time.Time // zero: poll at once
	rounds      int64
	skipped     int64
	compensated int64
}

// newCompensator returns a compensator with cfg, whose defaults are set
// (Config.setDefaults).
func newCompensator(cfg CompensatorConfig, log *slog.Logger) *compensator {
	return &compensator{cfg: cfg, log: log.With("component", "compensator"), multiplier: 1, wake: make(chan struct{}, 1), lastPoll: time.Now()}
}

// interval is seed 000's formula: Base + (multiplier-1) * Increment, at
// most Max. Call with mu held.
func (c *compensator) interval() time.Duration {
	return min(c.cfg.Base+time.Duration(c.multiplier-1)*c.cfg.Increment, c.cfg.Max)
}

// increase grows the interval by one increment unless it is at Max.
func (c *compensator) increase() {
	if c.interval() < c.cfg.Max {
		c.multiplier++
	}
}

// Trigger forces a round now and resets the interval (seed 000's manual
// trigger: lastPollTime = 0, resetInterval()).
func (c *compensator) Trigger() {
	c.log.Info("Manually triggering task start compensation")
	c.mu.Lock()
	c.lastPoll = time.Time{}
	c.multiplier = 1
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Status returns the current state.
func (c *compensator) Status() sundial.CompensationStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.statusLocked(time.Now())
}

func (c *compensator) statusLocked(now time.Time) sundial.CompensationStatus {
	next := max(c.lastPoll.Add(c.interval()).Sub(now), 0)
	return sundial.CompensationStatus{
		IntervalMS:   c.interval().Milliseconds(),
		Multiplier:   c.multiplier,
		QueueSize:    c.queueSize(),
		LastPoll:     c.lastPoll,
		NextPollInMS: next.Milliseconds(),
		Rounds:       c.rounds,
		Skipped:      c.skipped,
		Compensated:  c.compensated,
	}
}

// Run polls until ctx is done, and logs the status line every Monitor
// period.
func (c *compensator) Run(ctx context.Context) error {
	monitor := time.NewTicker(c.cfg.Monitor)
	defer monitor.Stop()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		c.mu.Lock()
		wait := time.Until(c.lastPoll.Add(c.interval()))
		c.mu.Unlock()
		timer.Reset(max(wait, 0))
		select {
		case <-ctx.Done():
			return nil
		case <-monitor.C:
			c.logStatus()
			continue
		case <-c.wake:
			continue
		case <-timer.C:
		}
		c.round(ctx)
	}
}

// logStatus writes seed 000's monitoring line, its numbers as attributes:
// durations as durations, the last poll as a time (RFC 3339 in UTC).
func (c *compensator) logStatus() {
	c.mu.Lock()
	st := c.statusLocked(time.Now())
	c.mu.Unlock()
	c.log.LogAttrs(context.Background(), slog.LevelInfo, "Task compensation polling status",
		slog.Duration("interval", time.Duration(st.IntervalMS)*time.Millisecond),
		slog.Int("multiplier", st.Multiplier),
		slog.Int("queue_size", st.QueueSize),
		slog.Time("last_poll", st.LastPoll.UTC()),
		slog.Duration("next_poll_in", time.Duration(st.NextPollInMS)*time.Millisecond),
		slog.Int64("rounds", st.Rounds),
		slog.Int64("skipped_rounds", st.Skipped),
		slog.Int64("compensated_runs", st.Compensated))
}

// round is one poll: skip if the local start queue has work, else look for
// stuck runs, start them, and adapt the interval.
func (c *compensator) round(ctx context.Context) {
	now := time.Now()
	c.mu.Lock()
	c.lastPoll = now
	c.rounds++
	c.mu.Unlock()

	// Runs this node lost while RUNNING are recovered whatever its queue
	// holds: a run in the queue is held, never lost, so this sweep cannot
	// race the normal path (and a node kept busy must not lose runs for
	// good).
	lost := 0
	if c.recoverLost != nil {
		var err error
		if lost, err = c.recoverLost(ctx, now.Add(-c.cfg.Threshold)); err != nil && ctx.Err() == nil {
			c.log.Error("find runs lost while running", "err", err)
		}
		c.mu.Lock()
		c.compensated += int64(lost)
		if lost > 0 {
			c.multiplier = 1
		}
		c.mu.Unlock()
	}
	if n := c.queueSize(); n > 0 {
		c.log.Debug(fmt.Sprintf("Task start queue has %d pending tasks, skipping compensation", n))
		c.mu.Lock()
		c.skipped++
		c.mu.Unlock()
		return
	}
	stuck, err := c.find(ctx, now.Add(-c.cfg.Threshold))
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("find runs stuck before start", "err", err)
		}
		return
	}
	if len(stuck) == 0 {
		c.mu.Lock()
		if lost == 0 {
			c.increase()
		} else {
			c.multiplier = 1
		}
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	c.multiplier = 1
	c.mu.Unlock()
	c.log.Info(fmt.Sprintf("Found %d tasks need compensation", len(stuck)))
	for _, r := range stuck {
		c.log.Info(fmt.Sprintf("Compensating task start: taskId=%d, waitingTime=%dms", r.TaskID, now.Sub(r.ScheduledTime).Milliseconds()),
			"run_id", r.ID, "node_id", r.NodeID)
	}
	n := c.start(ctx, stuck)
	c.mu.Lock()
	c.compensated += int64(n)
	c.mu.Unlock()
}
