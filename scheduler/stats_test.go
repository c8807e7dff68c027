package scheduler_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/scheduler"
)

// statsWrites counts the node_stats writes a scheduler makes.
type statsWrites struct {
	sundial.Store
	mu    sync.Mutex
	saves []int // rows written by each StatsSave
}

func (s *statsWrites) StatsSave(ctx context.Context, ms []*sundial.StatsMinute) error {
	s.mu.Lock()
	s.saves = append(s.saves, len(ms))
	s.mu.Unlock()
	return s.Store.StatsSave(ctx, ms)
}

func (s *statsWrites) count() (calls, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.saves {
		rows += n
	}
	return len(s.saves), rows
}

// TestStatsPerMinute: a node counts the fires it starts (scheduled ones
// apart), the outcomes it records by class and the lags of its scheduled
// fires per minute, in memory, and writes them as one row per minute,
// replaced every flush period while the minute lasts and written a last
// time on stop: a few rows a minute, not a write per fire. What the rows
// say is what the target saw, minute by minute.
func TestStatsPerMinute(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var writes *statsWrites
		b := setupWith(t, scheduler.Config{StatsFlush: 10 * time.Second, ClaimInterval: time.Second, PollInterval: 5 * time.Second,
			CancelPoll: 5 * time.Second, CallbackSweep: time.Minute}, func(s sundial.Store) sundial.Store {
			writes = &statsWrites{Store: s}
			return writes
		})
		ctx := context.Background()
		start := time.Now() // 2000-01-01T00:00:00Z: a whole minute
		if !start.Equal(start.Truncate(time.Minute)) {
			t.Fatalf("the bubble starts at %s, not at a whole minute", start)
		}
		b.start()
		ok := b.addTask(t, "*/2 * * * * *", nil)
		bad := b.addTask(t, "*/10 * * * * *", nil)
		b.target.mu.Lock()
		b.target.failTask = bad.ID
		b.target.mu.Unlock()

		// A manual fire, at 30 s: a fire, not a scheduled one.
		waitUntil(start.Add(30 * time.Second))
		if _, err := b.sched.Trigger(ctx, ok.ID, nil); err != nil {
			t.Fatal(err)
		}

		// The first minute's row is written while the second minute
		// runs, before the node stops, with the whole minute's counts.
		waitUntil(start.Add(75 * time.Second))
		rows, err := b.store.StatsList(ctx, start, start.Add(time.Minute))
		if err != nil || len(rows) != 1 {
			t.Fatalf("StatsList of the first minute = %d rows, %v; want 1", len(rows), err)
		}
		first := rows[0]
		// Fires at 2 s ... 58 s of ok, 10 s ... 50 s of bad, the manual one.
		if first.NodeID != "node-a" || first.Fires != 29+5+1 || first.ScheduledFires != 29+5 ||
			first.Succeeded != 29+1 || first.Failed != 5 || first.Skipped != 0 || first.Canceled != 0 {
			t.Errorf("the first minute's row = %+v", first)
		}
		if first.LagCount() != first.ScheduledFires || first.Lag[0] != first.ScheduledFires || first.LagMax != 0 {
			t.Errorf("the first minute's lags = %v (max %v), want every scheduled fire on time", first.Lag, first.LagMax)
		}

		waitUntil(start.Add(130 * time.Second))
		b.stop(t)

		// Minute by minute, the rows match the target's deliveries.
		rows, err = b.store.StatsList(ctx, start, start.Add(time.Hour))
		if err != nil || len(rows) != 3 {
			t.Fatalf("StatsList = %d rows, %v; want one per minute, 3", len(rows), err)
		}
		type count struct{ fires, failed int64 }
		want := map[int64]*count{}
		for _, c := range b.target.snapshot() {
			m := c.at.Truncate(time.Minute).Unix()
			if want[m] == nil {
				want[m] = &count{}
			}
			want[m].fires++
			if c.taskID == bad.ID {
				want[m].failed++
			}
		}
		var fires int64
		for i, r := range rows {
			w := want[r.Minute.Unix()]
			if !r.Minute.Equal(start.Add(time.Duration(i)*time.Minute)) || r.NodeID != "node-a" || w == nil ||
				r.Fires != w.fires || r.Failed != w.failed || r.Succeeded != w.fires-w.failed {
				t.Errorf("row %d = %+v, want the target's %+v", i, r, w)
			}
			fires += r.Fires
		}
		// 13 writes of one or two rows for some 80 fires: the flushes
		// every 10 s (a minute changed since the last is written again)
		// and the last one on stop.
		calls, written := writes.count()
		if calls < 12 || calls > 14 || written > 2*calls || int64(written) > fires/4 {
			t.Errorf("%d StatsSave calls writing %d rows for %d fires, want one per 10 s of one or two rows", calls, written, fires)
		}
	})
}
