package event

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
)

// demandLoop is a demand relay that delivers what is published and
// announced, like PostgreSQL's NOTIFY, and records it.
type demandLoop struct {
	mu        sync.Mutex
	published []string // the IDs of the events published, in order
	announced []sundial.EventInterest
	dropped   []string // the nodes that said they dropped kept events
	in        chan func(sundial.EventSink)
}

func newDemandLoop() *demandLoop { return &demandLoop{in: make(chan func(sundial.EventSink), 64)} }

func (l *demandLoop) Publish(_ context.Context, evs []sundial.Event) error {
	evs = slices.Clone(evs)
	l.mu.Lock()
	l.published = append(l.published, ids(evs)...)
	l.mu.Unlock()
	l.in <- func(s sundial.EventSink) { s.Deliver(evs) }
	return nil
}

func (l *demandLoop) Announce(_ context.Context, in sundial.EventInterest) error {
	l.mu.Lock()
	l.announced = append(l.announced, in)
	l.mu.Unlock()
	l.in <- func(s sundial.EventSink) { s.Interest(in) }
	return nil
}

func (l *demandLoop) Dropped(_ context.Context, node string, from time.Time) error {
	l.mu.Lock()
	l.dropped = append(l.dropped, node)
	l.mu.Unlock()
	l.in <- func(s sundial.EventSink) { s.Lost("node " + node + " dropped events") }
	return nil
}

func (l *demandLoop) Listen(ctx context.Context, sink sundial.EventSink) error {
	sink.Ready()
	for {
		select {
		case <-ctx.Done():
			return nil
		case f := <-l.in:
			f(sink)
		}
	}
}

// take returns what was published and announced since the last take.
func (l *demandLoop) take() ([]string, []sundial.EventInterest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, a := l.published, l.announced
	l.published, l.announced = nil, nil
	return p, a
}

// TestHubDemand: with a demand relay, a hub sends its events for
// DemandTTL after it starts, then keeps them while no node has a stream
// open; an interest another node announces makes it send those it kept
// from Slack before the interest's time on, in order, then every event,
// until DemandTTL passes without another; a resume from before what the
// hub holds of the cluster, or while it holds nothing of it, gets the
// reset expired.
func TestHubDemand(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		relay := newDemandLoop()
		h := NewHub(Options{Node: "node-a", Relay: relay})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- h.Run(ctx) }()
		<-h.Ready()
		start := h.Head()

		// Just started: it sends, for it cannot know of the streams open.
		first := []sundial.Event{ev(time.Now(), sundial.EventRunStarted)}
		h.Publish(first...)
		synctest.Wait()
		if p, _ := relay.take(); !slices.Equal(p, ids(first)) {
			t.Errorf("a hub just started published %v, want %v", p, ids(first))
		}
		if _, reset := h.Since(time.Now().Add(-time.Second)); reset == nil || reset.Reason != ResetExpired {
			t.Errorf("Since on a hub that heard no interest: reset %+v, want expired", reset)
		}

		// No interest for DemandTTL: it keeps its events.
		time.Sleep(DefaultDemandTTL)
		old := ev(time.Now().Add(-10*time.Second), sundial.EventRunStarted)
		edge := ev(time.Now().Add(-Slack), sundial.EventRunFinished)
		recent := ev(time.Now().Add(-Slack/2), sundial.EventRunStarted)
		kept := []sundial.Event{old, recent, edge}
		h.Publish(kept...)
		synctest.Wait()
		if p, _ := relay.take(); len(p) != 0 {
			t.Errorf("with no stream open, published %v", p)
		}
		equal(t, "held with no stream open", read(h, start), ids(first))

		// Another node's stream: the kept events from Slack before it on
		// go out first, in order, then every event.
		since := time.Now()
		relay.in <- func(s sundial.EventSink) { s.Interest(sundial.EventInterest{Node: "node-b", Since: since}) }
		synctest.Wait()
		after := []sundial.Event{ev(time.Now(), sundial.EventRunFinished)}
		h.Publish(after...)
		synctest.Wait()
		want := ids([]sundial.Event{kept[1], kept[2], after[0]})
		if p, _ := relay.take(); !slices.Equal(p, want) {
			t.Errorf("after an interest, published %v, want %v", p, want)
		}
		equal(t, "held after the interest", read(h, start), append(ids(first), want...))

		// What it holds of the cluster starts at the interest's time.
		if _, reset, _ := h.After(first[0].ID); reset == nil || reset.Reason != ResetExpired {
			t.Errorf("After an event held from before the interest: reset %+v, want expired", reset)
		}
		if _, reset := h.Since(since.Add(-time.Millisecond)); reset == nil || reset.Reason != ResetExpired {
			t.Errorf("Since before the interest: reset %+v, want expired", reset)
		}
		pos, reset, _ := h.After(want[0])
		if reset != nil {
			t.Errorf("After an event held since the interest: reset %+v", reset)
		}
		equal(t, "after the first sent", read(h, pos), want[1:])
		if pos, reset := h.Since(since); reset != nil || pos != start+3 {
			t.Errorf("Since the interest: %d, reset %+v; want %d (the event made then)", pos, reset, start+3)
		}

		// No renewal: it stops sending DemandTTL after.
		time.Sleep(DefaultDemandTTL)
		h.Publish(ev(time.Now(), sundial.EventTaskUpdated))
		synctest.Wait()
		if p, _ := relay.take(); len(p) != 0 {
			t.Errorf("%s after the last interest, published %v", DefaultDemandTTL, p)
		}
		if _, reset, _ := h.After(want[2]); reset == nil || reset.Reason != ResetExpired {
			t.Errorf("After an event, no interest heard lately: reset %+v, want expired", reset)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestHubDemandStreams: a hub with a stream open announces it at once,
// and every DemandTTL/3 while the stream is open, with the time it
// opened, and once more when it closes, and at once when a node that
// starts asks; it asks itself when it starts. Its own announce makes it
// send what it kept from then on. A lost listening connection makes it
// send for DemandTTL.
func TestHubDemandStreams(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		relay := newDemandLoop()
		var sink sundial.EventSink
		var mu sync.Mutex
		spy := &sinkSpy{demandLoop: relay, got: func(s sundial.EventSink) { mu.Lock(); sink = s; mu.Unlock() }}
		h := NewHub(Options{Node: "node-a", Relay: spy})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- h.Run(ctx) }()
		<-h.Ready()
		time.Sleep(DefaultDemandTTL)
		synctest.Wait()
		if _, a := relay.take(); len(a) != 1 || a[0].Node != "node-a" || !a[0].Since.IsZero() {
			t.Fatalf("once listening, announced %+v; want one question of node-a", a)
		}
		h.Publish(ev(time.Now(), sundial.EventRunStarted)) // not asked for: made before the stream opened
		time.Sleep(2 * Slack)
		near := []sundial.Event{ev(time.Now(), sundial.EventRunFinished)}
		h.Publish(near...)
		synctest.Wait()

		pos := h.Head()
		opened := time.Now()
		end := h.Stream(time.Time{})
		synctest.Wait()
		p, a := relay.take()
		if !slices.Equal(p, ids(near)) || len(a) != 1 || a[0].Node != "node-a" || !a[0].Since.Equal(opened) {
			t.Fatalf("a stream opened: published %v, announced %+v; want %v, and an announce of node-a since %v", p, a, ids(near), opened)
		}
		equal(t, "the stream reads the event made as it opened", read(h, pos), ids(near))
		pos++
		for range 3 {
			time.Sleep(DefaultDemandTTL / 3)
			synctest.Wait()
			if _, a := relay.take(); len(a) != 1 || !a[0].Since.Equal(opened) {
				t.Fatalf("with a stream open, announced %+v every %s, want one since it opened", a, DefaultDemandTTL/3)
			}
		}
		// A node that starts asks; this one answers at once.
		relay.in <- func(s sundial.EventSink) { s.Interest(sundial.EventInterest{Node: "node-b"}) }
		synctest.Wait()
		if _, a := relay.take(); len(a) != 1 || !a[0].Since.Equal(opened) {
			t.Fatalf("asked by a node that started: announced %+v, want one since %v at once", a, opened)
		}
		live := []sundial.Event{ev(time.Now(), sundial.EventRunFinished)}
		h.Publish(live...)
		synctest.Wait()
		equal(t, "the stream reads", read(h, pos), ids(live))

		end()
		synctest.Wait()
		if _, a := relay.take(); len(a) != 1 || !a[0].Since.Equal(opened) {
			t.Fatalf("the last stream closed: announced %+v, want one more since %v", a, opened)
		}
		time.Sleep(DefaultDemandTTL)
		synctest.Wait()
		if _, a := relay.take(); len(a) != 0 {
			t.Errorf("with no stream open, announced %+v", a)
		}
		h.Publish(ev(time.Now(), sundial.EventRunStarted))
		synctest.Wait()
		if p, _ := relay.take(); len(p) != 0 {
			t.Errorf("%s after the stream ended, published %v", DefaultDemandTTL, p)
		}

		// Deaf: it sends, for it cannot know.
		mu.Lock()
		s := sink
		mu.Unlock()
		s.Lost("connection lost")
		synctest.Wait()
		deaf := []sundial.Event{ev(time.Now(), sundial.EventRunStarted)}
		h.Publish(deaf...)
		synctest.Wait()
		if p, _ := relay.take(); !slices.Equal(p, ids(deaf)) {
			t.Errorf("after a lost connection, published %v, want %v", p, ids(deaf))
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// sinkSpy is a demandLoop that hands over the sink it listens with.
type sinkSpy struct {
	*demandLoop
	got func(sundial.EventSink)
}

func (s *sinkSpy) Listen(ctx context.Context, sink sundial.EventSink) error {
	s.got(sink)
	return s.demandLoop.Listen(ctx, sink)
}

// TestHubDemandResumeAndDropped: a stream that resumes from an earlier
// time announces that time, so the nodes send what they kept from then
// on; a node that dropped kept events (past its retention) that an
// interest asks for says so to the cluster, whose streams get the reset
// lost.
func TestHubDemandResumeAndDropped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		relay := newDemandLoop()
		const retention = 30 * time.Second
		h := NewHub(Options{Node: "node-a", Relay: relay, Retention: retention})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- h.Run(ctx) }()
		<-h.Ready()
		time.Sleep(DefaultDemandTTL)
		synctest.Wait()
		relay.take()

		from := time.Now()
		time.Sleep(5 * Slack)
		h.Publish(ev(time.Now(), sundial.EventRunStarted), ev(time.Now(), sundial.EventRunFinished))
		synctest.Wait()
		time.Sleep(retention + time.Second) // those two are dropped when the next are kept
		kept := []sundial.Event{ev(time.Now(), sundial.EventRunStarted), ev(time.Now(), sundial.EventRunFinished)}
		h.Publish(kept...)
		synctest.Wait()
		if p, _ := relay.take(); len(p) != 0 {
			t.Fatalf("no stream open: published %v", p)
		}
		pos := h.Head()
		end := h.Stream(from) // resumes from before all four
		synctest.Wait()
		p, a := relay.take()
		if len(a) != 1 || !a[0].Since.Equal(from) {
			t.Fatalf("a stream resuming from %v: announced %+v", from, a)
		}
		equal(t, "published", p, ids(kept))
		relay.mu.Lock()
		dropped := slices.Clone(relay.dropped)
		relay.mu.Unlock()
		equal(t, "said it dropped events", dropped, []string{"node-a"})
		equal(t, "the stream reads", read(h, pos), append([]string{"reset:" + ResetLost}, ids(kept)...))
		end()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
