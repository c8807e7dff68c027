package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/scheduler"
)

// startCounter counts the runs committed by RunStart, that is, not by the
// claim that took them (sundial.ClaimStartParams).
type startCounter struct {
	sundial.Store
	n atomic.Int64
}

func (c *startCounter) RunStart(ctx context.Context, s []sundial.RunStartParams) ([]bool, error) {
	c.n.Add(int64(len(s)))
	return c.Store.RunStart(ctx, s)
}

// TestClaimStartsFastRuns: the claim that gives a node an unconstrained
// task's fire also commits it, so that fire is written once between its
// plan and its outcome; it still goes out on its second, as the first
// delivery, with a trace id. A task whose policies may hold a fire back is
// admitted at the instant, as before.
func TestClaimStartsFastRuns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		counter := &startCounter{}
		b := setupWith(t, scheduler.Config{}, func(st sundial.Store) sundial.Store {
			counter.Store = st
			return counter
		})
		b.start()
		start := time.Now()
		fast := b.addTask(t, "* * * * * *", nil)
		held := b.addTask(t, "* * * * * *", func(tk *sundial.Task) { tk.OverlapAction = sundial.OverlapSkip })
		waitUntil(start.Add(3*time.Second + 500*time.Millisecond))
		b.stop(t)

		if n := counter.n.Load(); n != 0 {
			t.Errorf("RunStart committed %d runs; want none, each claim committing the runs it took", n)
		}
		byRun := map[int64]call{}
		for _, c := range b.target.snapshot() {
			byRun[c.runID] = c
		}
		for _, tk := range []*sundial.Task{fast, held} {
			rs := b.runs(t, tk.ID)
			if len(rs) < 3 {
				t.Fatalf("task %d has %d runs, want 3", tk.ID, len(rs))
			}
			for i, r := range rs[:3] {
				want := start.Add(time.Duration(i+1) * time.Second)
				c, sent := byRun[r.ID]
				if r.Status != sundial.RunSuccess || !sent || !c.at.Equal(want) || c.attempt != 1 || r.TraceID == "" ||
					r.Deliveries != 1 || r.StartedAt == nil || !r.StartedAt.Equal(want) {
					t.Errorf("task %d run %d: %+v, sent %v at %s; want SUCCESS, sent once at %s, attempt 1, one delivery, a trace id",
						tk.ID, r.ID, r, sent, c.at, want)
				}
				atts, err := b.store.RunAttempts(context.Background(), r.ID)
				if err != nil || len(atts) != 1 || atts[0].Delivery != 1 {
					t.Errorf("attempts of run %d = %+v, %v; want one, delivery 1", r.ID, atts, err)
				}
			}
		}
	})
}
