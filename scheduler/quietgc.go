package scheduler

import (
	"runtime"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// quietGC runs Go's garbage collector while the node has nothing to send,
// so that a cycle does not fall in a burst of fires.
//
// Fires are densest on whole seconds (a thousand tasks on "* * * * * *"
// go out in the same few tens of milliseconds), and the collector starts
// a cycle when the heap reaches its goal, wherever that falls: a cycle in
// a burst takes a quarter of the CPU for its marking and makes the
// goroutines that allocate help it, and the burst's last calls go out
// 20 to 40 ms later (measured on two cores, docs/benchmarks.md). So when
// the dispatcher is about to wait (nothing due for at least quietFor, and
// no call waiting for a worker), and the heap has used more than half of
// its room before the next cycle, a cycle is started then, in the quiet.
// A burst then starts with at least half the room, and a node whose bursts
// allocate less than that never collects during one. Under a steady load
// with no quiet moments, or with the collector off (GOGC=off), it does
// nothing, and the runtime collects as it would.
type quietGC struct {
	running atomic.Bool
	mu      sync.Mutex
	checked time.Time // the last look at the heap
	samples [3]rtmetrics.Sample
	// heap reads the live heap of the last cycle, the goal of the next,
	// and the heap's objects now, live or dead; collect starts a cycle
	// (runtime.GC). Tests replace both.
	heap    func() (live, goal, objects uint64)
	collect func()
}

// quietFor is the least wait before the next fire that counts as quiet: a
// cycle of a heap of a few tens of MB takes about as long on two cores.
const quietFor = 150 * time.Millisecond

// quietCheckEvery bounds how often the heap is looked at.
const quietCheckEvery = 100 * time.Millisecond

func newQuietGC() *quietGC {
	g := &quietGC{collect: runtime.GC}
	g.samples[0].Name = "/gc/heap/live:bytes"
	g.samples[1].Name = "/gc/heap/goal:bytes"
	g.samples[2].Name = "/memory/classes/heap/objects:bytes"
	g.heap = g.readHeap
	return g
}

func (g *quietGC) readHeap() (live, goal, objects uint64) {
	rtmetrics.Read(g.samples[:])
	return g.samples[0].Value.Uint64(), g.samples[1].Value.Uint64(), g.samples[2].Value.Uint64()
}

// idle is told that nothing is due for wait, at now. It starts a cycle in
// the background if the heap is past half its room and none is running.
func (g *quietGC) idle(now time.Time, wait time.Duration) {
	if wait < quietFor || g.running.Load() {
		return
	}
	g.mu.Lock()
	if now.Sub(g.checked) < quietCheckEvery {
		g.mu.Unlock()
		return
	}
	g.checked = now
	live, goal, heap := g.heap()
	g.mu.Unlock()
	if !collectNow(live, goal, heap) || !g.running.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer g.running.Store(false)
		g.collect()
	}()
}

// collectNow reports whether a heap of heap bytes (live and dead objects)
// has used more than half of its room: the bytes from the live heap of the
// last cycle to the goal of the next.
func collectNow(live, goal, heap uint64) bool {
	if goal <= live || heap <= live {
		return false
	}
	return heap-live > (goal-live)/2
}
