package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/event"
)

// counting is a demand relay that records the IDs of the events it
// publishes.
type counting struct {
	sundial.EventDemandRelay
	mu   sync.Mutex
	sent []string
}

func (c *counting) Publish(ctx context.Context, evs []sundial.Event) error {
	c.mu.Lock()
	for _, e := range evs {
		c.sent = append(c.sent, e.ID)
	}
	c.mu.Unlock()
	return c.EventDemandRelay.Publish(ctx, evs)
}

// runHub runs a hub on relay until the test ends, once it listens.
func runHub(t *testing.T, node string, relay sundial.EventRelay, reg prometheus.Registerer) *event.Hub {
	t.Helper()
	h := event.NewHub(event.Options{Node: node, Relay: relay, DemandTTL: time.Second, Registry: reg})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-h.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the hub does not listen")
	}
	return h
}

// gauge is the value of the gauge name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestEventDemand: two nodes on one schema, no stream open: node A sends
// no event (no NOTIFY). A stream opens on node B: every event A makes
// from then on reaches it, once, in A's order, and none of those A made
// long before.
func TestEventDemand(t *testing.T) {
	t.Parallel()
	dsn := newSchema(t)
	a, b := open(t, dsn), open(t, dsn)
	ra := &counting{EventDemandRelay: a.EventRelay().(sundial.EventDemandRelay)}
	reg := prometheus.NewRegistry()
	ha, hb := runHub(t, "node-a", ra, reg), runHub(t, "node-b", b.EventRelay(), nil)

	// Past the second a hub sends after it starts, A keeps its events.
	deadline := time.Now().Add(10 * time.Second)
	for gauge(t, reg, "sundial_events_sending") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("node A still sends its events with no stream open")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mk := func(prefix string, n int, at time.Time) []sundial.Event {
		evs := make([]sundial.Event, n)
		for i := range evs {
			evs[i] = sundial.Event{Kind: sundial.EventRunFinished, At: at, Task: sundial.EventTask{ID: 1, Name: prefix},
				Run: &sundial.EventRun{ID: int64(i + 1), Status: sundial.RunSuccess}}
		}
		return evs
	}
	quiet := mk("quiet", 50, time.Now().Add(-5*time.Second))
	ha.Publish(quiet...)

	pos := hb.Head()
	end := hb.Stream(time.Time{})
	defer end()
	var loud []string
	for i := range 20 {
		evs := mk(fmt.Sprint("loud", i), 10, time.Now())
		ha.Publish(evs...)
		loud = append(loud, ids(evs)...)
		time.Sleep(time.Millisecond) // some before A hears of the stream, some after
	}

	var got []string
	deadline = time.Now().Add(10 * time.Second)
	for len(got) < len(loud) {
		entries, next := hb.Read(pos, 1<<20)
		for _, e := range entries {
			if e.Reset != nil {
				t.Fatalf("the stream on B got a reset: %+v", e.Reset)
			}
			got = append(got, e.ID)
		}
		pos = next
		if len(got) >= len(loud) {
			break
		}
		select {
		case <-hb.Wait(pos):
		case <-time.After(time.Until(deadline)):
			t.Fatalf("the stream on B got %d of A's %d events", len(got), len(loud))
		}
	}
	if !slices.Equal(got, loud) {
		t.Errorf("the stream on B got A's events:\n %v\nwant, once each, in order:\n %v", got, loud)
	}
	ra.mu.Lock()
	sent := slices.Clone(ra.sent)
	ra.mu.Unlock()
	if !slices.Equal(sent, loud) {
		t.Errorf("A sent %d events, want the %d made after the stream opened, once each", len(sent), len(loud))
	}
}

func ids(evs []sundial.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}
