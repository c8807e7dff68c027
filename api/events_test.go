package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/event"
	"github.com/sundialhq/sundial/scheduler"
	"github.com/sundialhq/sundial/store/sqlite"
	"github.com/sundialhq/sundial/store/sqlite/sqlitetest"
)

// streamRecorder is a ResponseWriter that hands on each write, for a test
// to read a stream while its handler runs.
type streamRecorder struct {
	header http.Header
	status int
	chunks chan []byte
}

func (s *streamRecorder) Header() http.Header { return s.header }

func (s *streamRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}

func (s *streamRecorder) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	s.chunks <- bytes.Clone(b)
	return len(b), nil
}

func (s *streamRecorder) Flush() {}

// frame is one frame of a stream: an event (id, event, data) or a comment.
type frame struct {
	id, event, data, comment string
}

// sseStream is a stream of GET /api/v1/events being served.
type sseStream struct {
	rec    *streamRecorder
	cancel context.CancelFunc
	done   chan struct{}
	buf    string
}

// openStream serves the events stream of target (with headers, as name,
// value pairs) on h, until the test ends. It returns once the stream is
// open: its first write is made.
func openStream(t *testing.T, h http.Handler, target string, header ...string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	s := &sseStream{rec: &streamRecorder{header: http.Header{}, chunks: make(chan []byte, 1024)}, cancel: cancel,
		done: make(chan struct{})}
	go func() {
		defer close(s.done)
		h.ServeHTTP(s.rec, req)
	}()
	t.Cleanup(func() { s.cancel(); <-s.done })
	select {
	case c := <-s.rec.chunks:
		s.buf = string(c)
	case <-s.done:
		t.Fatalf("GET %s: answered %d, not a stream", target, s.rec.status)
	}
	return s
}

// next returns the next frame, failing the test if none comes within
// wait.
func (s *sseStream) next(t *testing.T, wait time.Duration) frame {
	t.Helper()
	timeout := time.After(wait)
	for {
		if raw, rest, ok := strings.Cut(s.buf, "\n\n"); ok {
			s.buf = rest
			var f frame
			for line := range strings.SplitSeq(raw, "\n") {
				name, value, _ := strings.Cut(line, ": ")
				switch name {
				case "":
					f.comment = value
				case "id":
					f.id = value
				case "event":
					f.event = value
				case "data":
					f.data = value
				}
			}
			return f
		}
		select {
		case c := <-s.rec.chunks:
			s.buf += string(c)
		case <-s.done:
			t.Fatalf("the stream ended; left: %q", s.buf)
		case <-timeout:
			t.Fatalf("no frame within %s; left: %q", wait, s.buf)
		}
	}
}

// nextEvent returns the next frame that is not a comment.
func (s *sseStream) nextEvent(t *testing.T, wait time.Duration) frame {
	t.Helper()
	for {
		if f := s.next(t, wait); f.comment == "" {
			return f
		}
	}
}

// decode is the event of a frame.
func (f frame) decode(t *testing.T) sundial.Event {
	t.Helper()
	var e sundial.Event
	if err := json.Unmarshal([]byte(f.data), &e); err != nil {
		t.Fatalf("frame %+v: %v", f, err)
	}
	if e.ID != f.id || string(e.Kind) != f.event {
		t.Fatalf("frame %+v: the event says id %s, kind %s", f, e.ID, e.Kind)
	}
	return e
}

// TestEventsOfAFire: a stream open on a node with a real scheduler gets,
// within a second, the events of a task created through the API and of
// its fire: started at its instant, finished with its answer.
func TestEventsOfAFire(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), sqlitetest.NewDB(t), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		hub := event.NewHub(event.Options{Node: "node-a"})
		target := &heldTarget{hold: 250 * time.Millisecond}
		sched, err := scheduler.New(scheduler.Config{Node: sundial.Node{ID: "node-a"}, Events: hub.Publish}, st, target, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- sched.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			<-done
			st.Close()
		})
		srv := NewServer(Config{Store: st, Scheduler: sched, Events: hub})
		synctest.Wait()

		s := openStream(t, srv.Handler(), "/api/v1/events")
		if f := s.next(t, time.Second); f.comment == "" || s.rec.header.Get("Content-Type") != "text/event-stream" ||
			s.rec.status != http.StatusOK {
			t.Fatalf("first frame %+v, status %d, Content-Type %q", f, s.rec.status, s.rec.header.Get("Content-Type"))
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/api/v1/tasks", strings.NewReader(
			`{"name": "every-5s", "cron_expr": "*/5 * * * * *", "target_url": "http://127.0.0.1:9/hook"}`))
		req.Header.Set("Content-Type", "application/json")
		srv.Handler().ServeHTTP(rec, req)
		var tk sundial.Task
		want(t, rec, http.StatusCreated, &tk)

		created := s.nextEvent(t, time.Second).decode(t)
		if created.Kind != sundial.EventTaskCreated || created.Task.ID != tk.ID || created.Task.Name != "every-5s" ||
			created.Task.Version != 1 || created.Task.Status != sundial.TaskEnabled || created.NodeID != "node-a" {
			t.Errorf("task.created: %+v", created)
		}
		// The first fire (at 5s; planned, it has no event before) starts
		// at its instant and finishes.
		var fire sundial.Event
		for _, kind := range []sundial.EventKind{sundial.EventRunStarted, sundial.EventRunFinished} {
			e := s.nextEvent(t, 6*time.Second).decode(t)
			if e.Kind != kind || e.Run == nil || (fire.Run != nil && e.Run.ID != fire.Run.ID) || e.Task.Name != "every-5s" {
				t.Fatalf("got %s %+v, want %s of the task's first fire", e.Kind, e, kind)
			}
			fire = e
			if kind == sundial.EventRunStarted && !time.Now().Equal(e.Run.ScheduledTime) {
				t.Errorf("run.started received at %s, the fire's instant is %s", time.Now(), e.Run.ScheduledTime)
			}
		}
		if fire.Run.Status != sundial.RunSuccess || fire.Run.HTTPStatus != 200 || fire.Run.FinishedAt == nil ||
			time.Since(*fire.Run.FinishedAt) >= time.Second {
			t.Errorf("run.finished %+v at %s: want SUCCESS (HTTP 200), received within a second of its finish", *fire.Run, time.Now())
		}
	})
}

// eventsBundle is a server whose hub holds the events of three task
// changes.
type eventsBundle struct {
	*storeBundle
	tasks  []*sundial.Task
	events []sundial.Event // task.created a, b; task.deleted a
}

func setupEvents(t *testing.T) *eventsBundle {
	t.Helper()
	b := &eventsBundle{storeBundle: setupStore(t)}
	s := openStream(t, b.srv.Handler(), "/api/v1/events")
	b.tasks = append(b.tasks, b.create(t, task("alpha", nil)), b.create(t, task("beta", nil)))
	want(t, b.do(t, http.MethodDelete, taskPath(b.tasks[0].ID), nil), http.StatusNoContent, nil)
	for range 3 {
		b.events = append(b.events, s.nextEvent(t, 10*time.Second).decode(t))
	}
	return b
}

// eventsOf reads n events from a stream of target.
func (b *eventsBundle) eventsOf(t *testing.T, n int, target string, header ...string) []string {
	t.Helper()
	s := openStream(t, b.srv.Handler(), target, header...)
	var out []string
	for range n {
		f := s.nextEvent(t, 10*time.Second)
		if f.event == "reset" {
			out = append(out, "reset")
			continue
		}
		e := f.decode(t)
		out = append(out, fmt.Sprintf("%s %s", e.Kind, e.Task.Name))
	}
	return out
}

// TestEventsResume: a client that reconnects with the id of the last
// event it had (Last-Event-ID, or since=) gets the events after it; since
// takes a time too; an id older than what the node holds gets a reset
// first, then what it holds.
func TestEventsResume(t *testing.T) {
	t.Parallel()
	b := setupEvents(t)
	all := []string{"task.created alpha", "task.created beta", "task.deleted alpha"}
	if e := b.events[2]; e.Task.ID != b.tasks[0].ID || e.Task.Version != 1 || e.Kind != sundial.EventTaskDeleted {
		t.Errorf("task.deleted: %+v", e)
	}
	for _, tc := range []struct {
		name, target string
		header       []string
		want         []string
	}{
		{"Last-Event-ID", "/api/v1/events", []string{"Last-Event-ID", b.events[0].ID}, all[1:]},
		{"since an id", "/api/v1/events?since=" + b.events[1].ID, nil, all[2:]},
		{"Last-Event-ID before since", "/api/v1/events?since=" + b.events[1].ID, []string{"Last-Event-ID", b.events[0].ID}, all[1:]},
		{"since a time", "/api/v1/events?since=" + url.QueryEscape(b.events[0].At.Format(time.RFC3339Nano)), nil, all},
		{"an id too old", "/api/v1/events?since=1-x.1", nil, append([]string{"reset"}, all...)},
		{"filtered after an id", "/api/v1/events?task=beta&since=" + b.events[0].ID, nil, all[1:2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := b.eventsOf(t, len(tc.want), tc.target, tc.header...)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("events:\n got  %v\n want %v", got, tc.want)
			}
		})
	}
}

// TestEventsFilters: task (names and ids, repeated or comma-separated)
// and kinds (kinds and groups) select the events a stream sends.
func TestEventsFilters(t *testing.T) {
	t.Parallel()
	b := setupEvents(t)
	from := "&since=" + url.QueryEscape(b.events[0].At.Format(time.RFC3339Nano))
	alpha, beta := strconv.FormatInt(b.tasks[0].ID, 10), strconv.FormatInt(b.tasks[1].ID, 10)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"task=alpha", []string{"task.created alpha", "task.deleted alpha"}},
		{"task=" + beta, []string{"task.created beta"}},
		{"task=nope,alpha", []string{"task.created alpha", "task.deleted alpha"}},
		{"task=beta&task=" + alpha, []string{"task.created alpha", "task.created beta", "task.deleted alpha"}},
		{"kinds=task.deleted", []string{"task.deleted alpha"}},
		{"kinds=TASK", []string{"task.created alpha", "task.created beta", "task.deleted alpha"}},
		{"kinds=run.finished,task.created&task=beta", []string{"task.created beta"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			got := b.eventsOf(t, len(tc.want), "/api/v1/events?"+tc.query+from)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("events:\n got  %v\n want %v", got, tc.want)
			}
		})
	}
	// Live: the events that do not pass are not sent.
	s := openStream(t, b.srv.Handler(), "/api/v1/events?kinds=task.deleted")
	gamma := b.create(t, task("gamma", nil))
	want(t, b.do(t, http.MethodDelete, taskPath(gamma.ID), nil), http.StatusNoContent, nil)
	if e := s.nextEvent(t, 10*time.Second).decode(t); e.Kind != sundial.EventTaskDeleted || e.Task.Name != "gamma" {
		t.Errorf("a stream of task.deleted sent %+v", e)
	}
}

// TestEventsSelector: a stream with a selector sends the events of the
// tasks whose labels match it, as they are after each change of the task.
func TestEventsSelector(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	s := openStream(t, b.srv.Handler(), "/api/v1/events?kinds=task&selector=team%3Dops")
	other := b.create(t, task("other", nil))
	ops := b.create(t, task("ops-task", map[string]any{"labels": map[string]string{"team": "ops"}}))
	if e := s.nextEvent(t, 10*time.Second).decode(t); e.Kind != sundial.EventTaskCreated || e.Task.ID != ops.ID {
		t.Errorf("first event %+v, want the creation of ops-task", e)
	}
	// other gets the label: its change is sent; its deletion too, by the
	// labels it had.
	patch := httptest.NewRequest(http.MethodPatch, taskPath(other.ID), strings.NewReader(`{"labels":{"team":"ops"}}`))
	patch.Header.Set("Content-Type", "application/merge-patch+json")
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, patch)
	want(t, rec, http.StatusOK, nil)
	if e := s.nextEvent(t, 10*time.Second).decode(t); e.Kind != sundial.EventTaskUpdated || e.Task.ID != other.ID {
		t.Errorf("event %+v, want the update of other", e)
	}
	want(t, b.do(t, http.MethodDelete, taskPath(other.ID), nil), http.StatusNoContent, nil)
	if e := s.nextEvent(t, 10*time.Second).decode(t); e.Kind != sundial.EventTaskDeleted || e.Task.ID != other.ID {
		t.Errorf("event %+v, want the deletion of other", e)
	}
}

// TestEventsBadRequest: a malformed filter or resume point is a 400 naming
// it.
func TestEventsBadRequest(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	var refs []string
	for i := range maxTaskRefs + 1 {
		refs = append(refs, fmt.Sprintf("task-%d", i))
	}
	many := strings.Join(refs, ",")
	for _, tc := range []struct {
		target, lastID string
		err            errorDetail
	}{
		{"/api/v1/events?kinds=run.done", "", errorDetail{Code: sundial.EInvalid, Field: "kinds", Token: "run.done"}},
		{"/api/v1/events?kinds=,", "", errorDetail{Code: sundial.EInvalid, Field: "kinds"}},
		{"/api/v1/events?task=+", "", errorDetail{Code: sundial.EInvalid, Field: "task"}},
		{"/api/v1/events?task=" + many, "", errorDetail{Code: sundial.EInvalid, Field: "task"}},
		{"/api/v1/events?since=yesterday", "", errorDetail{Code: sundial.EInvalid, Field: "since", Token: "yesterday"}},
		{"/api/v1/events", "42", errorDetail{Code: sundial.EInvalid, Field: "Last-Event-ID", Token: "42"}},
		{"/api/v1/events?since=1-a&since=2-b", "", errorDetail{Code: sundial.EInvalid, Field: "since"}},
		{"/api/v1/events?selector=tier+in+(a", "", errorDetail{Code: sundial.EInvalid, Field: "selector"}},
		{"/api/v1/events?selector=", "", errorDetail{Code: sundial.EInvalid, Field: "selector"}},
		{"/api/v1/events?label=team", "", errorDetail{Code: sundial.EInvalid, Field: "label"}},
	} {
		t.Run(tc.target+" "+tc.lastID, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.target, nil)
			if tc.lastID != "" {
				req.Header.Set("Last-Event-ID", tc.lastID)
			}
			rec := httptest.NewRecorder()
			b.srv.Handler().ServeHTTP(rec, req)
			wantError(t, rec, http.StatusBadRequest, tc.err)
		})
	}
}

// TestEventsEnd: an idle stream sends a comment every 15 seconds; a
// server that stops (EndStreams) ends its streams, and those that start
// after.
func TestEventsEnd(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := NewServer(Config{Store: &nopStore{}, Scheduler: &fakeScheduler{}})
		s := openStream(t, srv.Handler(), "/api/v1/events")
		s.next(t, time.Second)
		start := time.Now()
		if f := s.next(t, 16*time.Second); f.comment != "keep-alive" || time.Since(start) != heartbeat {
			t.Errorf("after %s: %+v, want the keep-alive after %s", time.Since(start), f, heartbeat)
		}
		srv.EndStreams()
		synctest.Wait()
		select {
		case <-s.done:
		default:
			t.Fatal("the stream goes on after EndStreams")
		}
		late := openStream(t, srv.Handler(), "/api/v1/events")
		synctest.Wait()
		select {
		case <-late.done:
		default:
			t.Fatal("a stream started after EndStreams goes on")
		}
	})
}

// nopStore is a Store a server needs no answer of.
type nopStore struct{ Store }
