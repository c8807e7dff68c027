package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// listener is a relay listening, and what it delivered.
type listener struct {
	mu    sync.Mutex
	got   []string // the IDs delivered, in order
	lost  int
	ready chan struct{}
	wake  chan struct{}
	done  chan error
}

func listen(t *testing.T, r sundial.EventRelay) *listener {
	t.Helper()
	l := &listener{ready: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		l.done <- r.Listen(ctx, sundial.EventSink{
			Deliver: func(evs []sundial.Event) {
				l.mu.Lock()
				for _, e := range evs {
					l.got = append(l.got, e.ID)
				}
				l.mu.Unlock()
				select {
				case l.wake <- struct{}{}:
				default:
				}
			},
			Lost: func(string) {
				l.mu.Lock()
				l.lost++
				l.mu.Unlock()
			},
			Ready: func() { close(l.ready) },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-l.done; err != nil {
			t.Errorf("Listen: %v", err)
		}
	})
	select {
	case <-l.ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay does not listen")
	}
	return l
}

// wait returns the IDs delivered once there are n, failing after 10s.
func (l *listener) wait(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		got := slices.Clone(l.got)
		l.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-l.wake:
		case <-deadline:
			t.Fatalf("%d events delivered within 10s, want %d", len(got), n)
		}
	}
}

func events(prefix string, n int, errLen int) []sundial.Event {
	evs := make([]sundial.Event, n)
	for i := range evs {
		at := time.Now()
		evs[i] = sundial.Event{ID: sundial.NewEventID(at, fmt.Sprintf("%s.%d", prefix, i)), Kind: sundial.EventRunFinished, At: at,
			Task: sundial.EventTask{ID: 1, Name: "t"},
			Run: &sundial.EventRun{ID: int64(i + 1), Status: sundial.RunFailed, Trigger: sundial.TriggerSchedule, ScheduledTime: at,
				Error: strings.Repeat("x", errLen)}}
	}
	return evs
}

// TestEventRelay: the events two nodes on one schema publish reach both,
// in one order, however many (a NOTIFY carries a few kilobytes); a cluster
// in another schema of the same database hears none of them; a listener
// whose connection is cut says so and listens again.
func TestEventRelay(t *testing.T) {
	t.Parallel()
	dsn := newSchema(t)
	a, b, other := open(t, dsn), open(t, dsn), open(t, newSchema(t))
	ra, rb, ro := a.EventRelay(), b.EventRelay(), other.EventRelay()
	la, lb, lo := listen(t, ra), listen(t, rb), listen(t, ro)
	ctx := t.Context()

	var want []string
	for _, pub := range []struct {
		r   sundial.EventRelay
		evs []sundial.Event
	}{{ra, events("a", 3, 10)}, {rb, events("b", 60, sundial.MaxEventError)}, {ra, events("c", 1, 0)}} {
		if err := pub.r.Publish(ctx, pub.evs); err != nil {
			t.Fatal(err)
		}
		for _, e := range pub.evs {
			want = append(want, e.ID)
		}
	}
	gotA, gotB := la.wait(t, len(want)), lb.wait(t, len(want))
	if !slices.Equal(gotA, gotB) || len(gotA) != len(want) {
		t.Errorf("the nodes got the events in different orders, or not all:\n a %v\n b %v", gotA, gotB)
	}
	for name, r := range map[string]sundial.EventRelay{"a": ra, "b": rb} {
		r := r.(*relay)
		r.sentMu.Lock()
		if n := len(r.sent); n != 0 {
			t.Errorf("%s waits for %d of its notifications, heard back already", name, n)
		}
		r.sentMu.Unlock()
	}
	for _, prefix := range []string{"a", "b"} {
		var sent, got []string
		for _, id := range want {
			if strings.Contains(id, "-"+prefix+".") {
				sent = append(sent, id)
			}
		}
		for _, id := range gotA {
			if strings.Contains(id, "-"+prefix+".") {
				got = append(got, id)
			}
		}
		if !slices.Equal(got, sent) {
			t.Errorf("the events of %s came out of order: %v", prefix, got)
		}
	}

	// The other schema's listener hears its own cluster only.
	mine := events("o", 1, 0)
	if err := ro.Publish(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if got := lo.wait(t, 1); !slices.Equal(got, []string{mine[0].ID}) {
		t.Errorf("another schema's node got %v, want its own event alone", got)
	}

	// Cut a's listening connection: it says so and listens again.
	channel, err := ra.(*relay).channelName(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cut int
	if err := a.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = 'LISTEN `+channel+`' AND pid <> pg_backend_pid()`).Scan(&cut); err != nil || cut != 2 {
		t.Fatalf("terminated %d listeners (%v), want a's and b's", cut, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		la.mu.Lock()
		lost := la.lost
		la.mu.Unlock()
		if lost > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a's listener did not say that its connection was lost")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Once it listens again, it gets what is published: what was published
	// before that is lost.
	for i := 0; ; i++ {
		later := events(fmt.Sprintf("d%d", i), 1, 0)
		if err := rb.Publish(ctx, later); err != nil {
			t.Fatal(err)
		}
		select {
		case <-la.wake:
		case <-time.After(100 * time.Millisecond):
		}
		la.mu.Lock()
		got := slices.Contains(la.got, later[0].ID)
		la.mu.Unlock()
		if got {
			break
		}
		if i == 100 {
			t.Fatal("a's listener does not listen again")
		}
	}
}

func TestPayloads(t *testing.T) {
	t.Parallel()
	evs := events("p", 40, sundial.MaxEventError)
	ps := payloads(evs)
	if len(ps) < 3 {
		t.Fatalf("%d payloads for 40 events of over 600 bytes, want several", len(ps))
	}
	var held []sundial.Event
	for _, p := range ps {
		text := p.text
		if len(text) > maxPayload || !strings.HasPrefix(text, "[{") || !strings.HasSuffix(text, "}]") {
			t.Errorf("payload of %d bytes: %.20s...%s", len(text), text, text[len(text)-10:])
		}
		var decoded []sundial.Event
		if err := json.Unmarshal([]byte(text), &decoded); err != nil {
			t.Fatal(err)
		}
		if !sameEvents(decoded, p.evs) {
			t.Errorf("a payload decodes to %d events, and holds %d others", len(decoded), len(p.evs))
		}
		held = append(held, p.evs...)
	}
	if !sameEvents(held, evs) {
		t.Errorf("the payloads hold %d events, want the %d given, in order", len(held), len(evs))
	}
	if payloads(nil) != nil {
		t.Error("payloads of no event")
	}
}

// TestRelaySent: a notification this node sent is heard back once, as the
// events it was made of; another's is not known; one not heard back
// within sentKeep is forgotten.
func TestRelaySent(t *testing.T) {
	t.Parallel()
	r := &relay{}
	now := time.Now()
	old := payloads(events("old", 1, 0))
	r.remember(old, now)
	ps := payloads(events("p", 2, 0))
	r.remember(ps, now.Add(sentKeep/2))
	if evs, ok := r.heard(ps[0].text); !ok || !sameEvents(evs, ps[0].evs) {
		t.Errorf("heard(own) = %d events, %t; want the %d sent", len(evs), ok, len(ps[0].evs))
	}
	if _, ok := r.heard(ps[0].text); ok {
		t.Error("a notification heard twice")
	}
	if _, ok := r.heard(payloads(events("other", 1, 0))[0].text); ok {
		t.Error("another node's notification taken for this one's")
	}
	r.remember(nil, now.Add(sentKeep))
	if _, ok := r.heard(old[0].text); ok {
		t.Errorf("a notification not heard back for %s is still held", sentKeep)
	}

	many := make([]payload, maxSent+10)
	for i := range many {
		many[i].text = fmt.Sprint(i)
	}
	r.remember(many, now.Add(sentKeep))
	if n := len(r.sent); n != maxSent {
		t.Errorf("%d notifications held, want at most %d", n, maxSent)
	}
}

// sameEvents reports whether a and b encode alike, one by one.
func sameEvents(a, b []sundial.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ja, _ := json.Marshal(&a[i])
		jb, _ := json.Marshal(&b[i])
		if string(ja) != string(jb) {
			return false
		}
	}
	return true
}

// burstEvents are n events as a burst of one-off fires makes them: each
// fire's run.started, then its run.finished.
func burstEvents(n int) []sundial.Event {
	evs := make([]sundial.Event, 0, n)
	at := time.Date(2026, 1, 1, 12, 0, 0, 123456789, time.UTC)
	for i := 0; len(evs) < n; i++ {
		task := sundial.EventTask{ID: int64(100000 + i), Name: fmt.Sprintf("burst-%06d", i)}
		run := sundial.Run{ID: int64(200000 + i), TaskID: task.ID, Status: sundial.RunRunning,
			Trigger: sundial.TriggerSchedule, ScheduledTime: at, Attempt: 1, Deliveries: 1}
		started := at.Add(time.Duration(i) * time.Microsecond)
		finished := started.Add(3 * time.Millisecond)
		evs = append(evs, sundial.Event{ID: sundial.NewEventID(started, fmt.Sprintf("a1b2c3.%d", 2*i+1)),
			Kind: sundial.EventRunStarted, At: started, NodeID: "node-7f3a", Task: task,
			Run: &sundial.EventRun{ID: run.ID, Status: sundial.RunRunning, Trigger: run.Trigger,
				ScheduledTime: at, Attempt: 1, Delivery: 1, StartedAt: &started}})
		evs = append(evs, sundial.Event{ID: sundial.NewEventID(finished, fmt.Sprintf("a1b2c3.%d", 2*i+2)),
			Kind: sundial.EventRunFinished, At: finished, NodeID: "node-7f3a", Task: task,
			Run: &sundial.EventRun{ID: run.ID, Status: sundial.RunSuccess, Trigger: run.Trigger,
				ScheduledTime: at, Attempt: 1, Delivery: 1, StartedAt: &started, FinishedAt: &finished,
				HTTPStatus: 200}})
	}
	return evs
}

// BenchmarkPayloads: encoding a batch of the hub's (500 events) for NOTIFY.
func BenchmarkPayloads(b *testing.B) {
	evs := burstEvents(500)
	b.ReportAllocs()
	for b.Loop() {
		if len(payloads(evs)) == 0 {
			b.Fatal("no payload")
		}
	}
}
