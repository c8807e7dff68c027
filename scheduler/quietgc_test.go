package scheduler

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestCollectNow(t *testing.T) {
	for _, c := range []struct {
		live, goal, heap uint64
		want             bool
	}{
		{live: 40, goal: 80, heap: 59, want: false}, // under half the room
		{live: 40, goal: 80, heap: 60, want: false}, // exactly half
		{live: 40, goal: 80, heap: 61, want: true},
		{live: 40, goal: 80, heap: 90, want: true},       // past the goal: a cycle is due anyway
		{live: 40, goal: 40, heap: 90, want: false},      // no room (GOGC=off reads as a huge goal instead)
		{live: 40, goal: 1 << 62, heap: 90, want: false}, // GOGC=off
		{live: 40, goal: 80, heap: 30, want: false},      // just collected
	} {
		if got := collectNow(c.live, c.goal, c.heap); got != c.want {
			t.Errorf("collectNow(live %d, goal %d, heap %d) = %v, want %v", c.live, c.goal, c.heap, got, c.want)
		}
	}
}

// TestQuietGCIdle: a cycle starts only for a wait of at least quietFor,
// when the heap is past half its room, one at a time, and the heap is
// looked at no more than every quietCheckEvery.
func TestQuietGCIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls, reads int
		release := make(chan struct{})
		g := newQuietGC()
		objects := uint64(50)
		g.heap = func() (uint64, uint64, uint64) { reads++; return 40, 80, objects }
		g.collect = func() { calls++; <-release }
		now := time.Now()
		step := func(d time.Duration, wait time.Duration) {
			now = now.Add(d)
			g.idle(now, wait)
			synctest.Wait() // a cycle started has reached collect
		}
		want := func(r, c int) {
			t.Helper()
			if reads != r || calls != c {
				t.Fatalf("%d reads, %d cycles; want %d, %d", reads, calls, r, c)
			}
		}

		step(0, time.Second) // under half the room
		want(1, 0)
		objects = 70
		step(quietCheckEvery/2, time.Second)             // too soon to look again
		step(quietCheckEvery, quietFor-time.Millisecond) // not quiet enough
		want(1, 0)
		step(0, quietFor)
		want(2, 1)
		step(quietCheckEvery, time.Second) // one runs: no look, no second
		want(2, 1)
		release <- struct{}{}
		synctest.Wait()
		step(quietCheckEvery, time.Second)
		want(3, 2)
		release <- struct{}{}
		synctest.Wait()
	})
}
