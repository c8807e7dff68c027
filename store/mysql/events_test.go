package mysql

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/storetest"
)

func TestRunOrder(t *testing.T) {
	t.Parallel()
	// A run's life, each state later than the one before.
	life := []struct {
		status     sundial.RunStatus
		deliveries int
	}{
		{sundial.RunScheduled, 0}, {sundial.RunQueued, 0}, {sundial.RunRunning, 1}, {sundial.RunWaitingCallback, 1},
		{sundial.RunScheduled, 1}, {sundial.RunRunning, 2}, {sundial.RunInterrupted, 2}, {sundial.RunScheduled, 2},
		{sundial.RunRunning, 3}, {sundial.RunFailed, 3},
	}
	for i := 1; i < len(life); i++ {
		pd, ps := runOrder(life[i-1].status, life[i-1].deliveries)
		d, s := runOrder(life[i].status, life[i].deliveries)
		if d < pd || d == pd && s <= ps {
			t.Errorf("%v is not after %v", life[i], life[i-1])
		}
	}
	r := &relay{runs: map[int64]delivered{}}
	now := time.Now()
	for _, tc := range []struct {
		run  sundial.EventRun
		want bool
	}{
		{sundial.EventRun{ID: 1, Status: sundial.RunRunning, Delivery: 1}, true},
		{sundial.EventRun{ID: 1, Status: sundial.RunScheduled}, false},
		{sundial.EventRun{ID: 1, Status: sundial.RunRunning, Delivery: 1}, false},
		{sundial.EventRun{ID: 1, Status: sundial.RunCanceled}, false}, // an earlier state: the cancel of a retry counts no delivery
		{sundial.EventRun{ID: 1, Status: sundial.RunSuccess, Delivery: 1}, true},
		{sundial.EventRun{ID: 1, Status: sundial.RunFailed, Delivery: 2}, false}, // ended
		{sundial.EventRun{ID: 2, Status: sundial.RunSkipped}, true},
	} {
		if got := r.newer(&tc.run, now); got != tc.want {
			t.Errorf("newer(%+v) = %v, want %v", tc.run, got, tc.want)
		}
	}
}

// listener collects what a relay delivers.
type listener struct {
	mu   sync.Mutex
	got  []sundial.Event
	wake chan struct{}
}

func listen(t *testing.T, r sundial.EventRelay) *listener {
	t.Helper()
	l := &listener{wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done, ready := make(chan error, 1), make(chan struct{})
	go func() {
		done <- r.Listen(ctx, sundial.EventSink{
			Deliver: func(evs []sundial.Event) {
				l.mu.Lock()
				l.got = append(l.got, evs...)
				l.mu.Unlock()
				select {
				case l.wake <- struct{}{}:
				default:
				}
			},
			Lost:  func(string) {},
			Ready: func() { close(ready) },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Listen: %v", err)
		}
	})
	<-ready
	return l
}

// until waits for an event that ok accepts, failing after 10s, and returns
// it.
func (l *listener) until(t *testing.T, what string, ok func(sundial.Event) bool) sundial.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		for _, e := range l.got {
			if ok(e) {
				l.mu.Unlock()
				return e
			}
		}
		l.mu.Unlock()
		select {
		case <-l.wake:
		case <-deadline:
			t.Fatalf("no %s within 10s", what)
		}
	}
}

// ofRun is what l delivered of run id: "kind status".
func (l *listener) ofRun(id int64) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.got {
		if e.Run != nil && e.Run.ID == id {
			out = append(out, fmt.Sprintf("%s %s", e.Kind, e.Run.Status))
		}
	}
	return out
}

func isRun(id int64, kind sundial.EventKind) func(sundial.Event) bool {
	return func(e sundial.Event) bool { return e.Run != nil && e.Run.ID == id && e.Kind == kind }
}

// TestEventRelay: a node finds the changes another node makes to runs, and
// the changes of tasks it audits, within a poll or two, each once, in the
// order of the run's life; its own events it delivers at once, and not
// again when its polls find them.
func TestEventRelay(t *testing.T) {
	t.Parallel()
	dsn := createDB(t)
	a, b := openDSN(t, dsn), openDSN(t, dsn)
	ra := a.EventRelay()
	la := listen(t, ra)
	ctx := t.Context()

	// Node b creates a task, as its API does: the task and its audit entry.
	now := time.Now()
	tk := &sundial.Task{Name: "nightly", CronExpr: "0 0 3 * * *", HTTPMethod: "POST", TargetURL: "https://example.com/hook"}
	if err := tk.Normalize(now); err != nil {
		t.Fatal(err)
	}
	if err := storetest.CreateTask(ctx, b, tk, now); err != nil {
		t.Fatal(err)
	}
	if err := b.AuditInsert(ctx, []*sundial.AuditEntry{{At: now, Actor: "ci", Action: "task.create", Target: "task/1",
		TaskID: tk.ID, After: fmt.Appendf(nil, `{"id":%d,"name":"nightly","status":"ENABLED","version":1}`, tk.ID)}}); err != nil {
		t.Fatal(err)
	}
	created := la.until(t, "task.created", func(e sundial.Event) bool { return e.Kind == sundial.EventTaskCreated })
	if created.Task.ID != tk.ID || created.Task.Name != "nightly" || created.Task.Version != 1 || created.NodeID != "" {
		t.Errorf("task.created: %+v", created)
	}

	// A run of b's, step by step: each state is found.
	r := &sundial.Run{TaskID: tk.ID, FireKey: "m:1", Trigger: sundial.TriggerManual, ScheduledTime: now, NodeID: "node-b"}
	if err := b.RunInsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	la.until(t, "run.scheduled", isRun(r.ID, sundial.EventRunScheduled))
	started := time.Now()
	if _, err := b.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: started}}); err != nil {
		t.Fatal(err)
	}
	la.until(t, "run.started", isRun(r.ID, sundial.EventRunStarted))
	if _, err := b.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
		StartedAt: started, FinishedAt: time.Now(), HTTPStatus: 503, Error: "HTTP 503 Service Unavailable"}}); err != nil {
		t.Fatal(err)
	}
	end := la.until(t, "run.finished", isRun(r.ID, sundial.EventRunFinished))
	if end.Task.Name != "nightly" || end.Run.HTTPStatus != 503 || end.Run.StartedAt == nil || end.Run.Delivery != 1 ||
		end.Run.Error != "HTTP 503 Service Unavailable" {
		t.Errorf("run.finished: %+v %+v", end, *end.Run)
	}

	// A fire b plans has no event before it starts; one that is cancelled
	// before, and so between two polls, is found ended.
	quick := &sundial.Run{TaskID: tk.ID, FireKey: "s:2", Trigger: sundial.TriggerSchedule, ScheduledTime: now, NodeID: "node-b"}
	if err := b.RunInsert(ctx, quick); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RunCancel(ctx, quick.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	la.until(t, "the quick run's end", isRun(quick.ID, sundial.EventRunFinished))

	// a's own run: its event at once, and once.
	own := &sundial.Run{TaskID: tk.ID, FireKey: "m:3", Trigger: sundial.TriggerManual, ScheduledTime: now, NodeID: "node-a"}
	if err := a.RunInsert(ctx, own); err != nil {
		t.Fatal(err)
	}
	ev := sundial.RunEvent(own, tk, time.Now())
	ev.ID, ev.NodeID = sundial.NewEventID(ev.At, "own.1"), "node-a"
	if err := ra.Publish(ctx, []sundial.Event{ev}); err != nil {
		t.Fatal(err)
	}
	la.until(t, "a's own event", func(e sundial.Event) bool { return e.ID == ev.ID })
	// Still once after a poll that read a's run again: the poll that finds
	// a change of b's made after it.
	marker := &sundial.Run{TaskID: tk.ID, FireKey: "m:4", Trigger: sundial.TriggerManual, ScheduledTime: now, NodeID: "node-b"}
	if err := b.RunInsert(ctx, marker); err != nil {
		t.Fatal(err)
	}
	la.until(t, "the marker", isRun(marker.ID, sundial.EventRunScheduled))
	for _, tc := range []struct {
		id   int64
		want []string
	}{
		{r.ID, []string{"run.scheduled SCHEDULED", "run.started RUNNING", "run.finished FAILED"}},
		{own.ID, []string{"run.scheduled SCHEDULED"}},
	} {
		if got := la.ofRun(tc.id); !slices.Equal(got, tc.want) {
			t.Errorf("events of run %d: %v, want %v", tc.id, got, tc.want)
		}
	}
	if got := la.ofRun(quick.ID); !slices.Equal(got, []string{"run.finished CANCELED"}) {
		t.Errorf("events of the planned fire cancelled: %v, want its end alone", got)
	}
}
