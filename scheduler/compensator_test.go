package scheduler

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
)

// compHarness drives a compensator with scripted answers.
type compHarness struct {
	c      *compensator
	mu     sync.Mutex
	polls  []time.Duration // when find was called, since the start
	queue  int
	stuck  [][]*sundial.Run // answers of find, in order; then none
	starts int
	logs   *lockedLog
	t0     time.Time
}

// lockedLog is a log sink safe to read while the compensator writes.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newCompHarness(cfg CompensatorConfig) *compHarness {
	h := &compHarness{logs: &lockedLog{}, t0: time.Now()}
	h.c = newCompensator(cfg, slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	h.c.queueSize = func() int { h.mu.Lock(); defer h.mu.Unlock(); return h.queue }
	h.c.find = func(ctx context.Context, dueBefore time.Time) ([]*sundial.Run, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.polls = append(h.polls, time.Since(h.t0))
		if len(h.stuck) == 0 {
			return nil, nil
		}
		next := h.stuck[0]
		h.stuck = h.stuck[1:]
		return next, nil
	}
	h.c.start = func(ctx context.Context, runs []*sundial.Run) int {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.starts += len(runs)
		return len(runs)
	}
	return h
}

func (h *compHarness) run(t *testing.T) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel
}

func (h *compHarness) pollTimes() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.polls...)
}

// TestCompensatorInterval checks seed 000's table: 10 s, then 10 s more
// after every empty round, up to 300 s, where it stays.
func TestCompensatorInterval(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newCompHarness(CompensatorConfig{})
		h.run(t)
		// Rounds k = 1..32 wait 10k s (k <= 30), then 300 s.
		var want []time.Duration
		var at time.Duration
		for k := 1; k <= 32; k++ {
			at += min(time.Duration(k)*10*time.Second, 300*time.Second)
			want = append(want, at)
		}
		time.Sleep(at + time.Second)
		got := h.pollTimes()
		if len(got) != len(want) {
			t.Fatalf("%d rounds, want %d: %v", len(got), len(want), got)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d at %s, want %s (all: %v)", i+1, got[i], want[i], got)
			}
		}
		if st := h.c.Status(); st.Multiplier != 30 || st.IntervalMS != 300000 {
			t.Errorf("status %+v, want multiplier 30 and interval 300000ms", st)
		}
	})
}

// TestCompensatorResetsOnWork: a round that finds stuck runs starts them
// and goes back to the base interval.
func TestCompensatorResetsOnWork(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newCompHarness(CompensatorConfig{})
		stuck := []*sundial.Run{{ID: 1, TaskID: 7, ScheduledTime: time.Now().Add(-time.Minute)}}
		h.stuck = [][]*sundial.Run{nil, nil, stuck} // rounds at 10, 30, 60 s
		h.run(t)
		time.Sleep(60*time.Second + 10*time.Second + time.Second) // the round after work: 10 s later
		got := h.pollTimes()
		want := []time.Duration{10 * time.Second, 30 * time.Second, 60 * time.Second, 70 * time.Second}
		if len(got) != len(want) {
			t.Fatalf("rounds at %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("rounds at %v, want %v", got, want)
			}
		}
		if h.starts != 1 || h.c.Status().Compensated != 1 {
			t.Errorf("started %d, status %+v; want the stuck run started once", h.starts, h.c.Status())
		}
		if !strings.Contains(h.logs.String(), "Found 1 tasks need compensation") ||
			!strings.Contains(h.logs.String(), "Compensating task start: taskId=7, waitingTime=120000ms") {
			t.Errorf("logs lack the seed's compensation lines:\n%s", h.logs)
		}
	})
}

// TestCompensatorSkipsWhileQueueBusy: with runs waiting in the local start
// queue the round is skipped and the interval stays.
func TestCompensatorSkipsWhileQueueBusy(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newCompHarness(CompensatorConfig{})
		h.queue = 3
		h.run(t)
		time.Sleep(35 * time.Second) // rounds at 10, 20, 30 s: all skipped, interval stays 10 s
		if got := h.pollTimes(); len(got) != 0 {
			t.Fatalf("find called at %v while the queue was busy", got)
		}
		st := h.c.Status()
		if st.Skipped != 3 || st.Multiplier != 1 || st.QueueSize != 3 {
			t.Errorf("status %+v, want 3 skipped rounds at multiplier 1 with queue 3", st)
		}
		if !strings.Contains(h.logs.String(), "Task start queue has 3 pending tasks, skipping compensation") {
			t.Errorf("no skip line in logs:\n%s", h.logs)
		}
	})
}

// TestCompensatorTrigger: a manual trigger resets the interval and polls at
// once.
func TestCompensatorTrigger(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newCompHarness(CompensatorConfig{})
		h.run(t)
		time.Sleep(61 * time.Second) // rounds at 10, 30, 60 s: multiplier 4
		if m := h.c.Status().Multiplier; m != 4 {
			t.Fatalf("multiplier %d before the trigger, want 4", m)
		}
		h.c.Trigger()
		synctest.Wait()
		got := h.pollTimes()
		if len(got) != 4 || got[3] != 61*time.Second {
			t.Fatalf("rounds at %v, want a fourth at once (61s)", got)
		}
		if m := h.c.Status().Multiplier; m != 2 {
			t.Errorf("multiplier %d after the triggered empty round, want 2", m)
		}
	})
}

// TestCompensatorMonitorLine: every Monitor period the seed's status line.
// At 45 s the rounds at 10 and 30 s have run: the state is the seed's own
// example (interval 30000ms, multiplier 3, next poll in 15000ms).
func TestCompensatorMonitorLine(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newCompHarness(CompensatorConfig{Monitor: 45 * time.Second})
		h.run(t)
		time.Sleep(45*time.Second + time.Millisecond)
		want := "Task compensation polling status: interval=30000ms, multiplier=3, queueSize=0, lastPoll=" +
			itoa(h.t0.Add(30*time.Second).UnixMilli()) + ", nextPollIn=15000ms"
		if !strings.Contains(h.logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, h.logs)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
