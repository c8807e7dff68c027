package bench

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Arrival is one delivery the target received.
type Arrival struct {
	At        time.Time // when the request reached the handler
	Scheduled time.Time // X-Sundial-Scheduled-Time
	Task      string    // X-Sundial-Task-Id
	Key       string    // Idempotency-Key
	Node      string    // X-Sundial-Node
}

// Recorder is a loopback HTTP target that records every delivery and
// answers 204 at once.
type Recorder struct {
	mu    sync.Mutex
	got   []Arrival
	count atomic.Int64
}

// ServeHTTP records the delivery.
func (rc *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	sched, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Sundial-Scheduled-Time"))
	a := Arrival{At: at, Scheduled: sched, Task: r.Header.Get("X-Sundial-Task-Id"),
		Key: r.Header.Get("Idempotency-Key"), Node: r.Header.Get("X-Sundial-Node")}
	rc.mu.Lock()
	rc.got = append(rc.got, a)
	rc.mu.Unlock()
	rc.count.Add(1)
	w.WriteHeader(http.StatusNoContent)
}

// Count reports how many deliveries arrived so far.
func (rc *Recorder) Count() int64 { return rc.count.Load() }

// Arrivals returns a copy of what arrived so far.
func (rc *Recorder) Arrivals() []Arrival {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Arrival(nil), rc.got...)
}
