package bench

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// CollectBetweenBursts keeps this process's garbage collector out of the
// aligned bursts it measures, until stop is called: the collector is off,
// and a cycle runs in the middle of every second instead, when no fire of
// an aligned burst is on its way.
//
// This process is the target. Its heap grows with every arrival recorded,
// and its collector starts a cycle when the heap reaches its goal, which
// is in a burst, the only time it allocates: the cycle then holds the
// target's answers back by tens of milliseconds, for the floor and the
// nodes alike, and counts as the scheduler's lag. A cycle a second keeps
// the heap to a second's garbage.
func CollectBetweenBursts() (stop func()) {
	return collectBetweenBursts(runtime.GC)
}

func collectBetweenBursts(collect func()) (stop func()) {
	was := debug.SetGCPercent(-1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			now := time.Now()
			at := now.Truncate(time.Second).Add(time.Second / 2)
			if !at.After(now) {
				at = at.Add(time.Second)
			}
			select {
			case <-done:
				return
			case <-time.After(at.Sub(now)):
				collect()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		debug.SetGCPercent(was)
	}
}
