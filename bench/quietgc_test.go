package bench

import (
	"runtime/debug"
	"testing"
	"testing/synctest"
	"time"
)

// TestCollectBetweenBursts: the collector is off while it runs, a cycle
// runs in the middle of each second, and stop puts the collector back as
// it was.
func TestCollectBetweenBursts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var at []time.Duration
		start := time.Now().Truncate(time.Second).Add(200 * time.Millisecond)
		time.Sleep(time.Until(start))
		stop := collectBetweenBursts(func() { at = append(at, time.Since(start)) })
		if p := debug.SetGCPercent(-1); p != -1 {
			t.Errorf("GC percent %d while running, want -1 (off)", p)
		}
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		stop()
		want := []time.Duration{300 * time.Millisecond, 1300 * time.Millisecond, 2300 * time.Millisecond}
		if len(at) != len(want) {
			t.Fatalf("cycles at %v after the start (.2 s past a whole second), want %v", at, want)
		}
		for i := range want {
			if at[i] != want[i] {
				t.Errorf("cycle %d at %v, want %v", i, at[i], want[i])
			}
		}
		if p := debug.SetGCPercent(100); p == -1 {
			t.Error("the collector is still off after stop")
		}
	})
}
