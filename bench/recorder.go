package bench

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Arrival is one delivery the target received.
type Arrival struct {
	At        time.Time // when the request reached the handler
	Scheduled time.Time // X-Sundial-Scheduled-Time
	Task      string    // X-Sundial-Task-Id
	Key       string    // Idempotency-Key
	Node      string    // X-Sundial-Node
}

// Recorder is a loopback HTTP target (Serve) that records every delivery
// and answers 204 at once.
type Recorder struct {
	mu    sync.Mutex
	got   []Arrival
	count atomic.Int64
}

func (rc *Recorder) add(a Arrival) {
	rc.mu.Lock()
	rc.got = append(rc.got, a)
	rc.mu.Unlock()
	rc.count.Add(1)
}

// Serve answers the deliveries that reach ln until stop is called. It
// serves with fasthttp rather than net/http: the target shares the
// machine with the nodes it measures, and fasthttp's server takes about a
// third less CPU per request.
func (rc *Recorder) Serve(ln net.Listener) (stop func()) {
	srv := &fasthttp.Server{
		Handler: func(c *fasthttp.RequestCtx) {
			at := time.Now()
			h := &c.Request.Header
			sched, _ := time.Parse(time.RFC3339Nano, string(h.Peek("X-Sundial-Scheduled-Time")))
			rc.add(Arrival{At: at, Scheduled: sched, Task: string(h.Peek("X-Sundial-Task-Id")),
				Key: string(h.Peek("Idempotency-Key")), Node: string(h.Peek("X-Sundial-Node"))})
			c.SetStatusCode(fasthttp.StatusNoContent)
		},
		Name:                  "sundial-bench-target",
		NoDefaultDate:         true,
		NoDefaultServerHeader: true,
		ReadTimeout:           time.Minute,
	}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	return func() {
		_ = srv.Shutdown()
		<-done
	}
}

// Count reports how many deliveries arrived so far.
func (rc *Recorder) Count() int64 { return rc.count.Load() }

// Arrivals returns a copy of what arrived so far.
func (rc *Recorder) Arrivals() []Arrival {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Arrival(nil), rc.got...)
}
