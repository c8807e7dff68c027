package bench

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// CollectBetweenBursts keeps this process's garbage collector out of the
// aligned bursts it measures, until stop is called: the collector is off,
// and a cycle runs in the middle of every second instead, when no fire of
// an aligned burst of up to a few thousand calls is on its way (a larger
// burst lasts past the middle of its second, and the cycle falls in it as
// the collector's own would). Not for nested or concurrent use.
//
// This process is the target, and the floor's client. Its heap grows with
// every arrival recorded, and nearly all of its allocation is in the
// bursts, so its collector starts its cycles there: a cycle holds the
// target's answers back by tens of milliseconds and counts as lag. Measured,
// it raised the floor's p99 by half (docs/benchmarks.md). A cycle a second
// keeps the heap to a second's garbage; unless a memory limit is set
// already (GOMEMLIMIT), memoryLimit bounds it meanwhile.
func CollectBetweenBursts() (stop func()) {
	return collectBetweenBursts(runtime.GC)
}

// memoryLimit bounds this process's heap while its collector is off
// (CollectBetweenBursts): past it, the runtime collects as it must.
const memoryLimit = 4 << 30

func collectBetweenBursts(collect func()) (stop func()) {
	prevPercent := debug.SetGCPercent(-1)
	prevLimit := debug.SetMemoryLimit(-1) // reads it
	if prevLimit == math.MaxInt64 {
		debug.SetMemoryLimit(memoryLimit)
	}
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
		debug.SetMemoryLimit(prevLimit)
		debug.SetGCPercent(prevPercent)
	}
}
