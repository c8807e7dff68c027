package event

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
)

// ev is an event of task 1 made at at.
func ev(at time.Time, kind sundial.EventKind) sundial.Event {
	return sundial.Event{Kind: kind, At: at, Task: sundial.EventTask{ID: 1, Name: "t"}}
}

// read is every entry from pos on, as "id" or "reset:reason".
func read(h *Hub, pos uint64) []string {
	entries, _ := h.Read(pos, 1<<20)
	var out []string
	for _, e := range entries {
		if e.Reset != nil {
			out = append(out, "reset:"+e.Reset.Reason)
			continue
		}
		out = append(out, e.ID)
	}
	return out
}

func ids(evs []sundial.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// TestHubResume: a stream resumes right after an event the hub holds; one
// whose event the hub does not hold resumes a second before its time, when
// the hub holds everything since; one older than what is held gets a reset
// and the oldest held. Since reads by time. IDs are unique and carry the
// event's time.
func TestHubResume(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 4, 3, 0, 0, 0, time.UTC)
	h := NewHub(Options{Node: "node-a", Capacity: 4, Now: func() time.Time { return now }})
	evs := []sundial.Event{ev(now.Add(time.Second), sundial.EventRunScheduled), ev(now.Add(2*time.Second), sundial.EventRunStarted),
		ev(now.Add(3*time.Second), sundial.EventRunFinished)}
	head := h.Head()
	h.Publish(evs...)
	got := read(h, head)
	equal(t, "read from the head", got, ids(evs))
	for i, e := range evs {
		if at, err := sundial.EventIDTime(e.ID); err != nil || !at.Equal(e.At) {
			t.Errorf("event %d: ID %s carries %v, %v", i, e.ID, at, err)
		}
	}
	entries, next := h.Read(head, 1)
	var decoded sundial.Event
	if len(entries) != 1 || next != head+1 || json.Unmarshal(entries[0].Data(), &decoded) != nil || decoded.ID != evs[0].ID ||
		entries[0].TaskID != 1 || entries[0].TaskName != "t" || entries[0].Kind != sundial.EventRunScheduled {
		t.Errorf("Read(head, 1) = %+v, %d", entries, next)
	}

	pos, reset, err := h.After(evs[0].ID)
	if err != nil || reset != nil {
		t.Fatalf("After a held event: %v %v", reset, err)
	}
	equal(t, "after the first", read(h, pos), ids(evs[1:]))

	// Another ID of the time of the second event: from a second before.
	pos, reset, err = h.After(sundial.NewEventID(evs[1].At, "other.1"))
	if err != nil || reset != nil {
		t.Fatalf("After an unknown event: %v %v", reset, err)
	}
	equal(t, "after an unknown ID", read(h, pos), ids(evs))
	pos, _ = h.Since(evs[2].At)
	equal(t, "since the third", read(h, pos), ids(evs[2:]))

	// Older than the hub: a reset, then all it holds.
	pos, reset, _ = h.After(sundial.NewEventID(now.Add(-time.Hour), "x.1"))
	if reset == nil || reset.Reason != ResetExpired || reset.Message == "" {
		t.Errorf("After an ID older than the hub: reset %+v", reset)
	}
	equal(t, "after an expired ID", read(h, pos), ids(evs))

	if _, _, err := h.After("not-an-id"); err == nil {
		t.Error("After a malformed ID: no error")
	}

	// The hub holds 4: the first two go. Resuming after the first is a
	// reset (the second is gone); after the second, the hub holds all
	// that came after it. A stream still at the head is behind.
	more := []sundial.Event{ev(now.Add(4*time.Second), sundial.EventTaskUpdated), ev(now.Add(5*time.Second), sundial.EventTaskDeleted),
		ev(now.Add(6*time.Second), sundial.EventTaskEnabled)}
	h.Publish(more...)
	_, reset, _ = h.After(evs[0].ID)
	if reset == nil || reset.Reason != ResetExpired {
		t.Errorf("After an evicted ID: reset %+v", reset)
	}
	equal(t, "a stream behind", read(h, head), append([]string{"reset:" + ResetBehind}, ids(append(evs[2:], more...))...))
	pos, reset, _ = h.After(evs[1].ID)
	if reset != nil {
		t.Errorf("After the last evicted: reset %+v", reset)
	}
	equal(t, "after the last evicted", read(h, pos), ids(append(evs[2:], more...)))

	// The same event twice is held once.
	h.Publish(more[2:]...)
	equal(t, "an event again", read(h, h.Head()-1), ids(more[2:]))
}

// TestHubRetention: events are held for Retention at most.
func TestHubRetention(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 4, 3, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := NewHub(Options{Node: "n", Retention: time.Minute, Now: clock})
	first := []sundial.Event{ev(now, sundial.EventTaskCreated)}
	h.Publish(first...)
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	second := []sundial.Event{ev(now, sundial.EventTaskUpdated)}
	h.Publish(second...)
	equal(t, "held", read(h, 1), []string{"reset:" + ResetBehind, second[0].ID})
	if _, reset, _ := h.After(first[0].ID); reset != nil {
		t.Errorf("After the event evicted: reset %+v; what came after it is held", reset)
	}
	if _, reset, _ := h.After(sundial.NewEventID(first[0].At.Add(-time.Millisecond), "x.1")); reset == nil {
		t.Error("After an event before the one evicted: no reset")
	}
}

// loopback is a relay that delivers what is published, like PostgreSQL's
// NOTIFY, failing Publish while fail is set.
type loopback struct {
	mu   sync.Mutex
	sink sundial.EventSink
	fail bool
	in   chan []sundial.Event
}

func (l *loopback) Publish(_ context.Context, evs []sundial.Event) error {
	l.mu.Lock()
	fail := l.fail
	l.mu.Unlock()
	if fail {
		return errors.New("database unreachable")
	}
	l.in <- append([]sundial.Event(nil), evs...)
	return nil
}

func (l *loopback) Listen(ctx context.Context, sink sundial.EventSink) error {
	l.mu.Lock()
	l.sink = sink
	l.mu.Unlock()
	sink.Ready()
	for {
		select {
		case <-ctx.Done():
			return nil
		case evs := <-l.in:
			sink.Deliver(evs)
		}
	}
}

// TestHubRelay: with a relay, the events this node publishes come back
// through it, with another node's; a stream waiting wakes; a loss the
// relay reports and events the relay refuses are resets; Run sends what
// was published before it stops.
func TestHubRelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		relay := &loopback{in: make(chan []sundial.Event, 16)}
		h := NewHub(Options{Node: "node-a", Relay: relay})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.Run(ctx) }()
		<-h.Ready()
		start := h.Head()
		wake := h.Wait(start)

		own := []sundial.Event{ev(time.Now(), sundial.EventRunStarted)}
		h.Publish(own...)
		synctest.Wait()
		other := ev(time.Now(), sundial.EventRunFinished)
		other.ID = sundial.NewEventID(other.At, "b0b0b0.1")
		relay.in <- []sundial.Event{other}
		synctest.Wait()
		select {
		case <-wake:
		default:
			t.Fatal("a stream waiting was not woken")
		}
		equal(t, "own and other", read(h, start), []string{own[0].ID, other.ID})

		relay.mu.Lock()
		sink := relay.sink
		relay.mu.Unlock()
		sink.Lost("connection lost")
		relay.mu.Lock()
		relay.fail = true
		relay.mu.Unlock()
		h.Publish(ev(time.Now(), sundial.EventRunStarted))
		synctest.Wait()
		time.Sleep(time.Second) // the tries of a refused batch
		synctest.Wait()
		equal(t, "after a loss and a refusal", read(h, start), []string{own[0].ID, other.ID, "reset:" + ResetLost, "reset:" + ResetLost})

		relay.mu.Lock()
		relay.fail = false
		relay.mu.Unlock()
		last := []sundial.Event{ev(time.Now(), sundial.EventTaskDeleted)}
		h.Publish(last...)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// Sent: delivered before the relay stopped listening, or not.
		got := read(h, start)
		select {
		case evs := <-relay.in:
			got = append(got, ids(evs)...)
		default:
		}
		if got[len(got)-1] != last[0].ID {
			t.Errorf("the event published before the stop was not sent: %v", got)
		}
	})
}

// BenchmarkEntryData: an event encoded for the streams.
func BenchmarkEntryData(b *testing.B) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 123456789, time.UTC)
	started, finished := at.Add(time.Millisecond), at.Add(4*time.Millisecond)
	e := sundial.Event{ID: sundial.NewEventID(finished, "a1b2c3.42"), Kind: sundial.EventRunFinished, At: finished,
		NodeID: "node-7f3a", Task: sundial.EventTask{ID: 100042, Name: "burst-000042"},
		Run: &sundial.EventRun{ID: 200042, Status: sundial.RunSuccess, Trigger: sundial.TriggerSchedule, ScheduledTime: at,
			Attempt: 1, Delivery: 1, StartedAt: &started, FinishedAt: &finished, HTTPStatus: 200}}
	b.ReportAllocs()
	for b.Loop() {
		en := Entry{event: e}
		if len(en.Data()) == 0 {
			b.Fatal("no data")
		}
	}
}
