package event

import (
	"context"
	"time"

	"github.com/sundialhq/sundial"
)

// Demand: on a relay whose sending costs every node (a
// sundial.EventDemandRelay: PostgreSQL's NOTIFY), the nodes send their
// events to the cluster only while a stream of them is open somewhere.
//
//	a node's first stream opens at T ──▶ Announce{node, since T}, again
//	                                     every DemandTTL/3 while it has one
//	every node hears it (itself too) ──▶ holds the cluster's events from T
//	                                     (complete), sends its own for
//	                                     DemandTTL more, and first sends
//	                                     those it kept made from T-Slack on
//	no interest heard for DemandTTL  ──▶ keeps its own events (up to
//	                                     Capacity, for Retention), holds the
//	                                     cluster's no more: a resume gets
//	                                     the reset expired
//
// A node that starts listening asks whether a stream is open (ask), and
// the nodes with one answer at once; it sends for startGrace meanwhile.
// It sends, too, for DemandTTL after its listening connection is lost:
// it cannot know then whether a stream is open. Its own events it holds,
// for its own streams, only as they come back through the relay, as every
// node's: every node holds them in one order, that of the relay, and a
// client resumes after an event on any node exactly.

// DefaultDemandTTL is how long a node sends its events to the cluster
// after the last interest it heard (Options.DemandTTL): a node with a
// stream open announces its interest again every third of it, so that
// two announces may be lost before the others stop sending.
const DefaultDemandTTL = time.Minute

// announceTimeout bounds one announce; announceRetry is the wait before
// another when one failed. startGrace is how long a node sends its events
// after it starts whatever it heard: it asks at once whether a stream is
// open (a question: an interest with no Since), and the nodes with one
// answer with their announce at once; an answer that comes later only
// delays the events it kept meanwhile, which it then sends.
const (
	announceTimeout = 5 * time.Second
	announceRetry   = 2 * time.Second
	startGrace      = 5 * time.Second
)

// demand is the Run loop's state of the demand (see above), touched by
// Run alone.
type demand struct {
	relay   sundial.EventDemandRelay
	ttl     time.Duration
	sending bool

	// kept holds the events this node made while it sent none, oldest
	// first (circular, at most capacity, for retention at most), for an
	// interest that comes later to ask for them.
	kept                []keptEvent
	head, n             int
	capacity            int
	retention           time.Duration
	droppedN            int       // kept events dropped unsent since the last interest heard
	droppedAt           time.Time // the latest time of one of them
	announced           time.Time // the Since of the last interest this node announced
	askedOnce           bool      // it asked the cluster whether a stream is open (ask)
	nextAnnounce        time.Time // when to announce it again (while streams are open)
	announceFailing     bool
	announceFailedSince time.Time
}

type keptEvent struct {
	e     sundial.Event
	added time.Time
}

// keep holds evs, unsent, dropping the oldest beyond the capacity and
// those older than the retention.
func (d *demand) keep(evs []sundial.Event, now time.Time) {
	cutoff := now.Add(-d.retention)
	for i := range evs {
		for d.n > 0 && (d.n == d.capacity || d.kept[d.head].added.Before(cutoff)) {
			d.drop()
		}
		if d.n == len(d.kept) {
			d.grow()
		}
		d.kept[(d.head+d.n)%len(d.kept)] = keptEvent{e: evs[i], added: now}
		d.n++
	}
}

// grow makes room for more kept events, up to the capacity.
func (d *demand) grow() {
	bigger := make([]keptEvent, min(max(2*len(d.kept), 64), d.capacity))
	for i := range d.n {
		bigger[i] = d.kept[(d.head+i)%len(d.kept)]
	}
	d.kept, d.head = bigger, 0
}

// drop forgets the oldest kept event, unsent.
func (d *demand) drop() {
	old := d.kept[d.head]
	d.kept[d.head] = keptEvent{}
	d.head = (d.head + 1) % len(d.kept)
	d.n--
	d.droppedN++
	if old.e.At.After(d.droppedAt) {
		d.droppedAt = old.e.At
	}
}

// take removes the kept events made at from or later and returns them,
// in the order they were kept.
func (d *demand) take(from time.Time) []sundial.Event {
	var out []sundial.Event
	j := 0
	for i := range d.n {
		k := d.kept[(d.head+i)%len(d.kept)]
		if !k.e.At.Before(from) {
			out = append(out, k.e)
			continue
		}
		d.kept[(d.head+j)%len(d.kept)] = k
		j++
	}
	for i := j; i < d.n; i++ {
		d.kept[(d.head+i)%len(d.kept)] = keptEvent{}
	}
	d.n = j
	return out
}

// heard takes in an interest the relay delivered, this node's included:
// the hub holds the cluster's events from its Since on (when it did not
// already), and sends its own for DemandTTL more; Run sends those it
// kept that the interest asks for.
func (h *Hub) heard(in sundial.EventInterest) {
	h.mu.Lock()
	if in.Since.IsZero() {
		// A question of a node that started: answered with this node's
		// announce, if it has a stream open.
		h.asked = h.streams > 0
		h.mu.Unlock()
		h.poke()
		return
	}
	now := h.now()
	if !h.holding(now) {
		if in.Since.After(h.complete) {
			h.complete = in.Since
		}
		h.holdFrom = h.next
	}
	h.heardUntil = now.Add(h.demand.ttl)
	h.interests = append(h.interests, in)
	h.mu.Unlock()
	h.poke()
}

// blind makes the hub send its events for DemandTTL more: its listening
// connection was lost, and it cannot know meanwhile whether a stream is
// open.
func (h *Hub) blind() {
	if h.demand == nil {
		return
	}
	h.mu.Lock()
	h.graceUntil = h.now().Add(h.demand.ttl)
	h.mu.Unlock()
	h.poke()
}

// poke wakes Run.
func (h *Hub) poke() {
	select {
	case h.nudge <- struct{}{}:
	default:
	}
}

// holding reports whether the hub holds the cluster's events at now: with
// a demand relay, while it heard an interest lately. Called with h.mu
// held.
func (h *Hub) holding(now time.Time) bool {
	return h.demand == nil || now.Before(h.heardUntil)
}

// tend brings the demand up to date, in Run: it sends the kept events the
// interests heard since ask for, says whether to send, and announces this
// node's interest when due. It returns how long until it is due again.
// The interests and how long the hub sends are read together: a batch is
// never sent ahead of the kept events an interest heard asks for.
func (h *Hub) tend(ctx context.Context) time.Duration {
	if ctx.Err() != nil {
		return time.Hour // Run is stopping
	}
	d := h.demand
	h.mu.Lock()
	interests := h.interests
	h.interests = nil
	streams, openAt, closed, asked := h.streams, h.openAt, h.closed, h.asked
	h.closed, h.asked = false, false
	until := h.heardUntil
	if h.graceUntil.After(until) {
		until = h.graceUntil
	}
	h.mu.Unlock()
	for _, in := range interests {
		from := in.Since.Add(-Slack)
		if d.droppedN > 0 && !d.droppedAt.Before(from) {
			h.m.lost.Add(float64(d.droppedN))
			h.log.Error("live events kept too long to be sent when a stream asked for them",
				"events", d.droppedN, "node_id", in.Node, "since", in.Since)
			h.dropped(ctx, from)
		}
		d.droppedN, d.droppedAt = 0, time.Time{}
		evs := d.take(from)
		for len(evs) > 0 {
			n := min(len(evs), publishBatch)
			h.send(ctx, evs[:n])
			evs = evs[n:]
		}
	}

	now := h.now()
	next := time.Hour // a poke comes first
	if !d.askedOnce && isClosed(h.ready) {
		d.askedOnce = true
		h.ask(ctx)
	}
	switch {
	case streams > 0:
		if asked || !now.Before(d.nextAnnounce) || !openAt.Equal(d.announced) && !d.announceFailing {
			h.announce(ctx, openAt, now)
		}
		next = d.nextAnnounce.Sub(now)
	case closed && !d.announced.IsZero():
		// The last stream closed: once more, so that every node sends for
		// DemandTTL from now on, for a client that reconnects.
		h.announce(ctx, d.announced, now)
		d.announced = time.Time{}
	}
	d.sending = now.Before(until)
	if d.sending {
		h.m.sending.Set(1)
		next = min(next, until.Sub(now))
	} else {
		h.m.sending.Set(0)
	}
	return max(next, 0)
}

// ask asks every node whether it has a stream open (a question: an
// interest with no Since), when the hub first listens: those that have
// one answer with their announce.
func (h *Hub) ask(ctx context.Context) {
	actx, cancel := context.WithTimeout(ctx, announceTimeout)
	err := h.demand.relay.Announce(actx, sundial.EventInterest{Node: h.node})
	cancel()
	if err != nil {
		h.log.Warn("live events: cannot ask the cluster whether a stream is open", "err", err)
	}
}

// isClosed reports whether c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// dropped tells every node's streams, through the relay, that this node
// dropped events it kept that a stream asked for (from on): each stream
// gets the reset lost. Should the relay not take it, this node's streams
// get it at least.
func (h *Hub) dropped(ctx context.Context, from time.Time) {
	actx, cancel := context.WithTimeout(ctx, announceTimeout)
	err := h.demand.relay.Dropped(actx, h.node, from)
	cancel()
	if err != nil {
		h.log.Error("live events: cannot tell the cluster of the events this node dropped", "err", err)
		h.addReset(ResetLost, "events this node kept while no stream was open were dropped before a stream asked for them")
	}
}

// announce tells the cluster that this node has streams open since.
func (h *Hub) announce(ctx context.Context, since, now time.Time) {
	d := h.demand
	actx, cancel := context.WithTimeout(ctx, announceTimeout)
	err := d.relay.Announce(actx, sundial.EventInterest{Node: h.node, Since: since})
	cancel()
	if err != nil {
		if !d.announceFailing {
			d.announceFailing, d.announceFailedSince = true, now
			h.log.Warn("live events: cannot ask the cluster for its events; trying again", "err", err)
		}
		d.nextAnnounce = now.Add(announceRetry)
		return
	}
	if d.announceFailing {
		h.log.Info("live events: asked the cluster for its events again", "failed_for", now.Sub(d.announceFailedSince))
	}
	d.announceFailing = false
	d.announced = since
	d.nextAnnounce = now.Add(d.ttl / 3)
}
