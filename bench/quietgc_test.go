package bench

import (
	"math"
	"runtime/debug"
	"testing"
	"testing/synctest"
	"time"
)

// TestCollectBetweenBursts: the collector is off while it runs, with a
// memory limit, a cycle runs in the middle of each second (the next one
// when started at a middle), and stop puts the collector and the limit
// back as they were.
func TestCollectBetweenBursts(t *testing.T) {
	orig := debug.SetGCPercent(137)
	origLimit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(orig)
		debug.SetMemoryLimit(origLimit)
	})
	for _, c := range []struct {
		name  string
		start time.Duration // past a whole second
		want  []time.Duration
	}{
		{"from .2 s", 200 * time.Millisecond, []time.Duration{300 * time.Millisecond, 1300 * time.Millisecond, 2300 * time.Millisecond}},
		{"from .5 s", 500 * time.Millisecond, []time.Duration{time.Second, 2 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var at []time.Duration
				start := time.Now().Truncate(time.Second).Add(time.Second + c.start)
				time.Sleep(time.Until(start))
				stop := collectBetweenBursts(func() { at = append(at, time.Since(start)) })
				if p := debug.SetGCPercent(-1); p != -1 {
					t.Errorf("GC percent %d while running, want -1 (off)", p)
				}
				if l := debug.SetMemoryLimit(-1); l != memoryLimit {
					t.Errorf("memory limit %d while running, want %d", l, memoryLimit)
				}
				time.Sleep(2500 * time.Millisecond)
				synctest.Wait()
				stop()
				if len(at) != len(c.want) {
					t.Fatalf("cycles at %v after the start, want %v", at, c.want)
				}
				for i := range c.want {
					if at[i] != c.want[i] {
						t.Errorf("cycle %d at %v, want %v", i, at[i], c.want[i])
					}
				}
				if p := debug.SetGCPercent(137); p != 137 {
					t.Errorf("GC percent %d after stop, want 137 as before", p)
				}
				if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
					t.Errorf("memory limit %d after stop, want none as before", l)
				}
			})
		})
	}
}
