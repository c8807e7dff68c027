package scheduler

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
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
	recs   recorder
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
	cfg.setDefaults()
	h := &compHarness{logs: &lockedLog{}, recs: newRecorder(), t0: time.Now()}
	h.c = newCompensator(cfg, slog.New(slog.NewMultiHandler(
		slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}), h.recs)))
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

// TestCompensatorMonitorLine: every Monitor period the seed's status line,
// with its numbers as attributes. At 45 s the rounds at 10 and 30 s have
// run: the state is the seed's own example (interval 30 s, multiplier 3,
// next poll in 15 s).
func TestCompensatorMonitorLine(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newCompHarness(CompensatorConfig{Monitor: 45 * time.Second})
		h.run(t)
		time.Sleep(45*time.Second + time.Millisecond)
		var got map[string]slog.Value
		for _, r := range h.recs.all() {
			if r.Message == "Task compensation polling status" {
				got = r.attrs
			}
		}
		if got == nil {
			t.Fatalf("no status line in the log:\n%s", h.logs)
		}
		want := map[string]slog.Value{
			"component":        slog.StringValue("compensator"),
			"interval":         slog.DurationValue(30 * time.Second),
			"multiplier":       slog.IntValue(3),
			"queue_size":       slog.IntValue(0),
			"last_poll":        slog.TimeValue(h.t0.Add(30 * time.Second).UTC()),
			"next_poll_in":     slog.DurationValue(15 * time.Second),
			"rounds":           slog.Int64Value(2),
			"skipped_rounds":   slog.Int64Value(0),
			"compensated_runs": slog.Int64Value(0),
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || !g.Equal(v) {
				t.Errorf("status line %s = %v, want %v", k, g, v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("status line has %d attributes, want %d: %v", len(got), len(want), got)
		}
		// The text form: durations and an RFC 3339 time, not milliseconds.
		line := "last_poll=" + h.t0.Add(30*time.Second).UTC().Format("2006-01-02T15:04:05.000Z07:00")
		if !strings.Contains(h.logs.String(), "interval=30s") || !strings.Contains(h.logs.String(), line) {
			t.Errorf("text log lacks interval=30s and %s:\n%s", line, h.logs)
		}
	})
}

// record is one log record: its message and attributes, those of the
// logger included.
type record struct {
	Message string
	attrs   map[string]slog.Value
}

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu    *sync.Mutex
	recs  *[]record
	attrs []slog.Attr
}

func newRecorder() recorder { return recorder{mu: new(sync.Mutex), recs: new([]record)} }

func (r recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	out := record{Message: rec.Message, attrs: map[string]slog.Value{}}
	for _, a := range r.attrs {
		out.attrs[a.Key] = a.Value.Resolve()
	}
	rec.Attrs(func(a slog.Attr) bool {
		out.attrs[a.Key] = a.Value.Resolve()
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.recs = append(*r.recs, out)
	return nil
}

func (r recorder) WithAttrs(as []slog.Attr) slog.Handler {
	r.attrs = append(slices.Clone(r.attrs), as...)
	return r
}

func (r recorder) WithGroup(string) slog.Handler { return r }

func (r recorder) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(*r.recs)
}
