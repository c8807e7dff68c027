// Package event holds a node's Hub of live events (sundial.Event): the
// events its scheduler and API publish go out through the cluster's
// sundial.EventRelay, and the events of every node come back through it;
// the hub keeps the latest of them in order, so that a client that
// reconnects resumes after the last one it had, and wakes the streams of
// GET /api/v1/events that read them. On a relay whose sending costs
// (sundial.EventDemandRelay), the nodes send only while a stream is open
// somewhere (demand.go). See docs/design.md, "Live events".
package event

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sundialhq/sundial"
)

// Defaults of Options.
const (
	DefaultCapacity  = 20000
	DefaultRetention = 10 * time.Minute
)

// Slack is how far before the time of an event ID a resume goes back when
// the hub does not hold that event (another node's event it has under
// another ID, or none): events from Slack before it on are sent again,
// some of which the client may have had. It covers the differences
// between the nodes' clocks and the time an event takes to travel.
const Slack = time.Second

// queueLen bounds the events this node made and has not sent yet; past
// it, events are dropped (and counted), and the streams told.
const queueLen = 1 << 16

// publishBatch bounds the events of one call of the relay's Publish.
const publishBatch = 500

// Options configure NewHub. Zero fields take the defaults in brackets.
type Options struct {
	// Node is this node's ID: the IDs of the events made here are unique
	// in the cluster by a mark drawn from it.
	Node string
	// Relay carries the events between the nodes; nil for a node alone
	// (SQLite), whose events the hub takes at once.
	Relay sundial.EventRelay
	// Capacity is how many events the hub holds for resumes [20000].
	Capacity int
	// Retention is how long the hub holds an event for resumes [10m].
	Retention time.Duration
	Logger    *slog.Logger          // nil: discard
	Registry  prometheus.Registerer // nil: no metrics
	// Now is the hub's clock, for Retention and the start of what it
	// holds [time.Now].
	Now func() time.Time
	// DemandTTL is how long the hub sends its events to the cluster
	// after it last heard that a node has a stream open, with a
	// sundial.EventDemandRelay [DefaultDemandTTL].
	DemandTTL time.Duration
}

// Entry is one event the hub holds, or a reset: a point past which events
// may be missing.
type Entry struct {
	Pos      uint64 // the entry's position in this hub: 1, 2, ...
	ID       string
	Kind     sundial.EventKind
	At       time.Time
	TaskID   int64
	TaskName string
	// Reset, when set, makes the entry a reset, not an event.
	Reset *Reset

	added time.Time // when the hub took it in, by its clock (Options.Retention)

	// The event, encoded when a stream first sends it (Data): most
	// events of a busy node are sent to no stream at all.
	event   sundial.Event
	encode  sync.Once
	encoded []byte
}

// Data is the event as JSON, encoded once for every stream that sends it.
func (en *Entry) Data() []byte {
	en.encode.Do(func() {
		// An Event always encodes; most fit in buf.
		var buf [512]byte
		if b, err := en.event.AppendJSON(buf[:0]); err == nil {
			en.encoded = slices.Clone(b)
		}
	})
	return en.encoded
}

// Reset says that a stream misses events: where it resumes from is no
// longer held, or events were lost on their way.
type Reset struct {
	Reason  string `json:"reason"` // one of the Reset* constants
	Message string `json:"message"`
}

// Reasons of a Reset.
const (
	// ResetExpired: the events after the client's ID or time are no
	// longer held (see Options.Capacity and Retention), or were never all
	// held (with a demand relay, no stream wanted them: demand.go); the
	// stream goes on from the oldest held.
	ResetExpired = "expired"
	// ResetBehind: the stream read too slowly; the events it had not
	// read were dropped, and it goes on from the oldest held.
	ResetBehind = "behind"
	// ResetLost: events were lost on their way between the nodes (the
	// database could not be reached, or a node made events faster than it
	// could send them).
	ResetLost = "lost"
)

// Hub holds a node's live events; see the package comment. Publish hands
// it this node's events; Run, with a relay, sends them out and takes in
// every node's; the API's streams read it (After, Since, Head, Read,
// Wait).
type Hub struct {
	relay     sundial.EventRelay
	node      string
	log       *slog.Logger
	now       func() time.Time
	capacity  int
	retention time.Duration
	mark      string        // this hub's mark in the IDs of its events
	seq       atomic.Uint64 // the last sequence number of an event made here
	out       chan sundial.Event
	dropping  atomic.Bool // events are being dropped: one reset says so
	ready     chan struct{}
	readyOnce sync.Once
	m         hubMetrics
	demand    *demand       // with a sundial.EventDemandRelay (demand.go), touched by Run alone
	nudge     chan struct{} // wakes Run to tend the demand

	mu       sync.Mutex
	ring     []*Entry // circular: the oldest at ring[head]
	head, n  int
	next     uint64            // the position of the next entry
	byID     map[string]uint64 // the position of each event held
	complete time.Time         // every event made since is held, or was (evicted), while holding
	wake     chan struct{}     // closed, and replaced, when an entry is added

	// The demand (demand.go).
	heardUntil time.Time // the hub holds the cluster's events until then: it heard an interest lately
	holdFrom   uint64    // the position from which it has held them, since it last heard an interest after none
	graceUntil time.Time // it sends its events until then though it heard no interest (it started, or was deaf)
	interests  []sundial.EventInterest
	streams    int       // streams open on this node
	openAt     time.Time // when they opened (the count went from 0 to 1), or the earliest time one resumed from
	closed     bool      // the last of them closed since Run last tended the demand: it announces once more
	asked      bool      // a node that started asked whether a stream is open: this one answers, if it has one
}

type hubMetrics struct {
	published, received, lost prometheus.Counter
	streams, sending          prometheus.Gauge
}

// NewHub returns a hub; with a relay, Run must run for events to flow.
func NewHub(o Options) *Hub {
	if o.Capacity <= 0 {
		o.Capacity = DefaultCapacity
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Hub{relay: o.Relay, node: o.Node, log: o.Logger.With("component", "events"), now: o.Now, capacity: o.Capacity,
		retention: o.Retention, mark: mark(o.Node), ready: make(chan struct{}), ring: make([]*Entry, o.Capacity),
		next: 1, byID: make(map[string]uint64), wake: make(chan struct{})}
	h.complete = h.now()
	if h.relay == nil {
		close(h.ready)
	} else {
		h.out = make(chan sundial.Event, queueLen)
	}
	if dr, ok := h.relay.(sundial.EventDemandRelay); ok {
		if o.DemandTTL <= 0 {
			o.DemandTTL = DefaultDemandTTL
		}
		h.demand = &demand{relay: dr, ttl: o.DemandTTL, sending: true, capacity: o.Capacity, retention: o.Retention}
		h.nudge = make(chan struct{}, 1)
		h.graceUntil = h.complete.Add(min(startGrace, o.DemandTTL))
	}
	h.m = hubMetrics{
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "sundial_events_published_total",
			Help: "Live events this node made (changes of runs and tasks it made)."}),
		received: prometheus.NewCounter(prometheus.CounterOpts{Name: "sundial_events_received_total",
			Help: "Live events this node holds for its streams, every node's."}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: "sundial_events_lost_total",
			Help: "Live events this node made and could not send to the cluster (its queue full, the database unreachable, or kept too long while no stream was open)."}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sundial_event_streams",
			Help: "Clients reading GET /api/v1/events on this node."}),
		sending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sundial_events_sending",
			Help: "1 while this node sends its live events to the cluster, 0 while it keeps them (on PostgreSQL, no stream open on any node lately)."}),
	}
	if h.relay != nil {
		h.m.sending.Set(1)
	}
	if o.Registry != nil {
		o.Registry.MustRegister(h.m.published, h.m.received, h.m.lost, h.m.streams, h.m.sending)
	}
	return h
}

// mark is a short mark of this hub for the IDs of its events: six hex
// digits from the node's ID and a random draw, so that two hubs (two
// nodes, or one restarted) mark theirs apart.
func mark(node string) string {
	var x uint32 = 2166136261 // FNV-1a
	for _, c := range []byte(node) {
		x = (x ^ uint32(c)) * 16777619
	}
	return fmt.Sprintf("%06x", (x^rand.Uint32())&0xffffff)
}

// Publish hands the hub events this node made: each gets its ID and this
// node's ID (if it has none) and goes to every node's streams, this one's
// included (with a demand relay, while a stream is open on some node:
// until then Run keeps it, see demand.go). It never
// blocks: should the events come faster than they can be sent, those in
// excess are dropped, counted, and the streams told (a reset).
func (h *Hub) Publish(evs ...sundial.Event) {
	for i := range evs {
		if evs[i].ID == "" {
			evs[i].ID = sundial.NewEventID(evs[i].At, h.mark+"."+strconv.FormatUint(h.seq.Add(1), 10))
		}
		if evs[i].NodeID == "" {
			evs[i].NodeID = h.node
		}
		h.m.published.Inc()
	}
	if h.relay == nil {
		h.add(evs)
		return
	}
	for _, e := range evs {
		select {
		case h.out <- e:
			h.dropping.Store(false)
		default:
			h.m.lost.Inc()
			if !h.dropping.Swap(true) {
				h.log.Error("live events dropped: they come faster than they can be sent", "queue", queueLen)
				h.addReset(ResetLost, "events were dropped: this node made them faster than it could send them")
			}
		}
	}
}

// Ready is closed once the hub takes in every node's events: at once
// without a relay, when the relay listens with one.
func (h *Hub) Ready() <-chan struct{} { return h.ready }

// Run sends this node's events out through the relay and takes in every
// node's, until ctx is done; then it sends those published before, for a
// few seconds at most, and returns. With a demand relay it also keeps the
// events while no stream wants them and announces this node's streams
// (demand.go). Without a relay it only waits for ctx.
func (h *Hub) Run(ctx context.Context) error {
	if h.relay == nil {
		<-ctx.Done()
		return nil
	}
	listenCtx, stopListen := context.WithCancel(context.WithoutCancel(ctx))
	defer stopListen()
	listened := make(chan error, 1)
	sink := sundial.EventSink{
		Deliver: h.add,
		Lost: func(reason string) {
			h.log.Warn("live events may have been lost", "reason", reason)
			h.addReset(ResetLost, "events may have been lost: "+reason)
			h.blind()
		},
		Ready: func() { h.readyOnce.Do(func() { close(h.ready) }) },
	}
	if h.demand != nil {
		sink.Interest = h.heard
		sink.Ready = func() {
			h.readyOnce.Do(func() { close(h.ready) })
			h.poke() // ask the cluster whether a stream is open (demand.go)
		}
	}
	go func() { listened <- h.relay.Listen(listenCtx, sink) }()
	// due wakes Run when the demand is due to be tended (demand.go).
	due := time.NewTimer(time.Hour)
	defer due.Stop()
	tend := func() {
		if h.demand != nil {
			due.Reset(h.tend(ctx))
		}
	}
	tend()
	batch := make([]sundial.Event, 0, publishBatch)
	for {
		select {
		case e := <-h.out:
			batch = append(batch[:0], e)
			for len(batch) < publishBatch && len(h.out) > 0 {
				batch = append(batch, <-h.out)
			}
			tend() // first the events an interest heard asks for, then these
			h.dispatch(ctx, batch)
		case <-h.nudge:
			tend()
		case <-due.C:
			tend()
		case err := <-listened:
			if err != nil && ctx.Err() == nil {
				h.log.Error("live events: cannot listen for the cluster's events", "err", err)
			}
			listened = nil // nothing more comes in; this node's events still go out
		case <-ctx.Done():
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			defer cancel()
			for len(h.out) > 0 && flush.Err() == nil {
				batch = batch[:0]
				for len(batch) < publishBatch && len(h.out) > 0 {
					batch = append(batch, <-h.out)
				}
				h.dispatch(flush, batch)
			}
			stopListen()
			if listened != nil {
				if err := <-listened; err != nil {
					h.log.Error("live events: cannot listen for the cluster's events", "err", err)
				}
			}
			return nil
		}
	}
}

// dispatch sends a batch of this node's events to the cluster, or keeps
// it while no stream wants them (demand.go).
func (h *Hub) dispatch(ctx context.Context, batch []sundial.Event) {
	if h.demand != nil && !h.demand.sending {
		h.demand.keep(batch, h.now())
		return
	}
	h.send(ctx, batch)
}

// send publishes a batch through the relay, trying a few times while the
// database does not take it; then the batch is lost, counted and said.
func (h *Hub) send(ctx context.Context, batch []sundial.Event) {
	var err error
	for try, wait := 1, 50*time.Millisecond; try <= 3; try, wait = try+1, 2*wait {
		if err = h.relay.Publish(ctx, batch); err == nil {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil {
			break
		}
	}
	h.m.lost.Add(float64(len(batch)))
	h.log.Error("live events not sent to the cluster", "events", len(batch), "err", err)
	h.addReset(ResetLost, "events this node made could not be sent to the cluster")
}

// add takes in events, in order: each is held (a copy); one the hub holds
// already (the same ID) is left out.
func (h *Hub) add(evs []sundial.Event) {
	entries := make([]Entry, len(evs))
	for i := range evs {
		e := &evs[i]
		entries[i] = Entry{ID: e.ID, Kind: e.Kind, At: e.At, TaskID: e.Task.ID, TaskName: e.Task.Name, event: *e}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	added := 0
	for i := range entries {
		en := &entries[i]
		if _, dup := h.byID[en.ID]; dup {
			continue
		}
		h.push(en)
		h.byID[en.ID] = en.Pos
		added++
	}
	h.m.received.Add(float64(added))
	if added > 0 {
		h.signal()
	}
}

// addReset holds a reset at the current position: the streams that read
// past it are told.
func (h *Hub) addReset(reason, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.push(&Entry{At: h.now(), Reset: &Reset{Reason: reason, Message: message}})
	h.signal()
}

// push appends en at the next position, making room: the oldest entry
// goes when the hub is full, and those older than the retention. Called
// with h.mu held.
func (h *Hub) push(en *Entry) {
	en.Pos = h.next
	h.next++
	en.added = h.now()
	cutoff := en.added.Add(-h.retention)
	for h.n > 0 && (h.n == len(h.ring) || h.ring[h.head].added.Before(cutoff)) {
		h.evict()
	}
	h.ring[(h.head+h.n)%len(h.ring)] = en
	h.n++
}

// evict drops the oldest entry. Called with h.mu held.
func (h *Hub) evict() {
	old := h.ring[h.head]
	h.ring[h.head] = nil
	h.head = (h.head + 1) % len(h.ring)
	h.n--
	if old.Reset == nil {
		delete(h.byID, old.ID)
		if old.At.After(h.complete) {
			h.complete = old.At
		}
	}
}

// signal wakes the streams waiting for an entry. Called with h.mu held.
func (h *Hub) signal() {
	close(h.wake)
	h.wake = make(chan struct{})
}

// first is the position of the oldest entry held (Head when none is).
// Called with h.mu held.
func (h *Hub) first() uint64 { return h.next - uint64(h.n) }

// at is the entry at position pos, which the hub holds. Called with h.mu
// held.
func (h *Hub) at(pos uint64) *Entry {
	return h.ring[(h.head+int(pos-h.first()))%len(h.ring)]
}

// Head is the position of the next entry: a stream that starts there
// reads the events that come from now on.
func (h *Hub) Head() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.next
}

// After is the position to read from for a client that had the event id:
// right after it when the hub holds it, and every event after it (with a
// demand relay: it holds the cluster's events, and has since before the
// event came). Otherwise, when the hub holds
// every event since the ID's time, the first event held made from Slack
// before it on: the hub may hold that event under another ID, or not at
// all, and a client may then get again an event it had. Otherwise the
// oldest entry held, with a reset saying that events were missed. An id
// that is not an event ID is an error.
func (h *Hub) After(id string) (uint64, *Reset, error) {
	t, err := sundial.EventIDTime(id)
	if err != nil {
		return 0, nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if pos, ok := h.byID[id]; ok && pos >= h.holdFrom && h.holding(h.now()) {
		return pos + 1, nil, nil
	}
	return h.since(t, Slack)
}

// Since is the position to read from for a client that asks for the
// events made at t or later, and a reset when the hub no longer holds all
// of them (it goes on from the oldest held).
func (h *Hub) Since(t time.Time) (uint64, *Reset) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pos, reset, _ := h.since(t, 0)
	return pos, reset
}

// since is Since(t - slack), saying what a reset names. Called with h.mu
// held.
func (h *Hub) since(t time.Time, slack time.Duration) (uint64, *Reset, error) {
	if now := h.now(); !h.holding(now) && t.Before(now) {
		return h.first(), &Reset{Reason: ResetExpired, Message: fmt.Sprintf(
			"the events from %s on are not all held: no client of the cluster read them lately, and the nodes kept theirs; "+
				"read what you need again (GET /api/v1/tasks, /api/v1/runs); the oldest held follow",
			t.UTC().Format(time.RFC3339Nano))}, nil
	}
	if t.Before(h.complete) {
		return h.first(), &Reset{Reason: ResetExpired, Message: fmt.Sprintf(
			"the events from %s on are no longer all held (this node holds events from %s on); "+
				"read what you need again (GET /api/v1/tasks, /api/v1/runs); the oldest held follow",
			t.UTC().Format(time.RFC3339Nano), h.complete.UTC().Format(time.RFC3339Nano))}, nil
	}
	from := t.Add(-slack)
	for pos := h.first(); pos < h.next; pos++ {
		if en := h.at(pos); en.Reset == nil && !en.At.Before(from) {
			return pos, nil, nil
		}
	}
	return h.next, nil, nil
}

// Read returns up to max entries from position pos on, and the position
// after them. A stream that fell so far behind that pos is no longer held
// gets a reset first, and goes on from the oldest held.
func (h *Hub) Read(pos uint64, max int) ([]*Entry, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Entry
	if first := h.first(); pos < first {
		out = append(out, &Entry{Pos: pos, Reset: &Reset{Reason: ResetBehind,
			Message: fmt.Sprintf("this stream read too slowly: %d events it had not read were dropped; "+
				"read what you need again (GET /api/v1/tasks, /api/v1/runs)", first-pos)}})
		pos = first
	}
	for ; pos < h.next && len(out) < max; pos++ {
		out = append(out, h.at(pos))
	}
	return out, pos
}

// Wait returns a channel closed once the hub has an entry at position pos.
func (h *Hub) Wait(pos uint64) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pos < h.next {
		c := make(chan struct{})
		close(c)
		return c
	}
	return h.wake
}

// Stream counts a stream open until the function it returns is called.
// With a demand relay, the first stream open makes the node announce its
// interest to the cluster (demand.go), from now, or from the time from
// when it is earlier (a stream that resumes from it: the nodes send the
// events they kept from then on), and so does the last one to close,
// once more, so that every node goes on sending for DemandTTL after it:
// a client that reconnects within it resumes in full.
func (h *Hub) Stream(from time.Time) (done func()) {
	h.m.streams.Inc()
	h.mu.Lock()
	h.streams++
	now := h.now()
	if h.streams == 1 {
		h.openAt = now
	}
	if !from.IsZero() && from.Before(h.openAt) {
		h.openAt = from
	}
	h.mu.Unlock()
	if h.demand != nil {
		h.poke()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			h.m.streams.Dec()
			h.mu.Lock()
			h.streams--
			if h.streams == 0 {
				h.closed = true
			}
			h.mu.Unlock()
			if h.demand != nil {
				h.poke()
			}
		})
	}
}
