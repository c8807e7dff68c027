package scheduler_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/scheduler"
)

// eventLog collects the live events a scheduler publishes.
type eventLog struct {
	mu  sync.Mutex
	evs []sundial.Event
}

func (l *eventLog) publish(evs ...sundial.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, evs...)
}

// ofRun is the events of run id, in order, as "kind STATUS".
func (l *eventLog) ofRun(id int64) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.evs {
		if e.Run != nil && e.Run.ID == id {
			out = append(out, fmt.Sprintf("%s %s", e.Kind, e.Run.Status))
		}
	}
	return out
}

// find is the first event of run id of kind.
func (l *eventLog) find(t *testing.T, id int64, kind sundial.EventKind) sundial.Event {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.evs {
		if e.Run != nil && e.Run.ID == id && e.Kind == kind {
			return e
		}
	}
	t.Fatalf("no %s event of run %d", kind, id)
	return sundial.Event{}
}

// TestEvents: a node publishes one event per change of a run it makes: a
// fire started at its instant and finished (planned, it has no event
// before); a failed delivery
// retried after its backoff; a run queued, then started when the slot
// frees; a skip; a manual trigger. Every event names its task and node.
func TestEvents(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		b := setup(t, scheduler.Config{Events: log.publish})
		b.target.hold = 2500 * time.Millisecond
		b.start()
		start := time.Now()
		plain := b.addTask(t, "1 * * * * *", nil)
		queued := b.addTask(t, "1,2,3 * * * * *", func(tk *sundial.Task) {
			tk.MaxConcurrency, tk.ConcurrencyPolicy, tk.MaxQueue = 1, sundial.ConcurrencyQueue, 1
		})
		waitUntil(start.Add(10 * time.Second))
		b.target.mu.Lock()
		b.target.status, b.target.hold = "FAILED", 0
		b.target.mu.Unlock()
		retried := b.addTask(t, "15 * * * * *", func(tk *sundial.Task) {
			tk.RetryPolicy = []byte(`{"max_attempts": 2, "initial_backoff": "1s", "jitter": "none", "retry_on": ["5xx"]}`)
		})
		waitUntil(start.Add(20 * time.Second))
		b.target.mu.Lock()
		b.target.status = ""
		b.target.mu.Unlock()
		manual, err := b.sched.Trigger(t.Context(), plain.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(start.Add(25 * time.Second))
		b.stop(t)

		finished := []string{"run.started RUNNING", "run.finished SUCCESS"}
		fire := b.runs(t, plain.ID)[0]
		if got := log.ofRun(fire.ID); !slices.Equal(got, finished) {
			t.Errorf("events of a fire: %v, want %v", got, finished)
		}
		started := log.find(t, fire.ID, sundial.EventRunStarted)
		end := log.find(t, fire.ID, sundial.EventRunFinished)
		if !started.At.Equal(start.Add(time.Second)) || started.Task.Name != plain.Name || started.NodeID != "node-a" ||
			started.Run.Delivery != 1 || started.Run.Trigger != sundial.TriggerSchedule {
			t.Errorf("run.started: %+v %+v, want at the fire's instant, with its task, node and delivery", started, *started.Run)
		}
		if end.Run.HTTPStatus != 200 || end.Run.StartedAt == nil || !end.Run.StartedAt.Equal(start.Add(time.Second)) ||
			end.Run.FinishedAt == nil || end.Run.FinishedAt.Sub(*end.Run.StartedAt) != 2500*time.Millisecond {
			t.Errorf("run.finished: %+v, want HTTP 200 and the delivery's times", *end.Run)
		}

		// The queued task: the first runs, the second queues, the third
		// finds the queue full.
		qs := b.runs(t, queued.ID)
		for i, want := range [][]string{
			finished,
			{"run.queued QUEUED", "run.started RUNNING", "run.finished SUCCESS"},
			{"run.finished SKIPPED"},
		} {
			if got := log.ofRun(qs[i].ID); !slices.Equal(got, want) {
				t.Errorf("events of queued run %d: %v, want %v", i, got, want)
			}
		}
		if e := log.find(t, qs[2].ID, sundial.EventRunFinished); e.Run.SkipReason != sundial.SkipQueueFull || e.Run.FinishedAt == nil {
			t.Errorf("skip: %+v, want QUEUE_FULL with its finish", *e.Run)
		}

		r := b.runs(t, retried.ID)[0]
		want := []string{"run.started RUNNING", "run.retrying SCHEDULED", "run.started RUNNING", "run.finished FAILED"}
		if got := log.ofRun(r.ID); !slices.Equal(got, want) {
			t.Errorf("events of a retried run: %v, want %v", got, want)
		}
		retry := log.find(t, r.ID, sundial.EventRunRetrying)
		if retry.Run.DueAt == nil || !retry.Run.DueAt.Equal(start.Add(16*time.Second)) ||
			retry.Run.HTTPStatus != 500 || retry.Run.Error == "" || retry.Run.Delivery != 1 {
			t.Errorf("run.retrying: %+v, want the next delivery's time and the failed one's answer", *retry.Run)
		}

		want = []string{"run.scheduled SCHEDULED", "run.started RUNNING", "run.finished SUCCESS"}
		if got := log.ofRun(manual.ID); !slices.Equal(got, want) {
			t.Errorf("events of a manual run: %v, want %v", got, want)
		}
		if e := log.find(t, manual.ID, sundial.EventRunScheduled); e.Run.Trigger != sundial.TriggerManual {
			t.Errorf("manual run.scheduled: trigger %s", e.Run.Trigger)
		}
	})
}
