package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/event"
)

// The live events of GET /api/v1/events, as server-sent events
// (text/event-stream): one per change of a run's status and per change of
// a task, every node's, read from the node's event.Hub. Each has an id:
// a client that reconnects with it (Last-Event-ID, or since=) gets what it
// missed, or a reset saying it cannot. See docs/api.md, "Live events".

// Bounds of an event stream.
const (
	// heartbeat is how often an idle stream sends a comment, so that
	// proxies keep it open and a client knows it is alive.
	heartbeat = 15 * time.Second
	// streamWriteTimeout bounds each write of a stream: a client that
	// reads nothing for this long is dropped.
	streamWriteTimeout = time.Minute
	// readBatch is how many entries a stream takes from the hub at once.
	readBatch = 256
	// maxTaskRefs bounds the tasks of the task filter.
	maxTaskRefs = 100
)

// eventFilter says whether a stream sends an event. The filters of a
// stream's query each make one (taskFilter, kindFilter, selectorFilter); a
// stream sends what all of its filters pass.
type eventFilter func(*event.Entry) bool

// allOf passes what every filter passes.
func allOf(fs []eventFilter) eventFilter {
	return func(e *event.Entry) bool {
		for _, f := range fs {
			if !f(e) {
				return false
			}
		}
		return true
	}
}

// listValues are the items of a list parameter: every value given (the
// parameter may repeat), split at commas, trimmed, without empty ones.
func listValues(vs []string) []string {
	var out []string
	for _, v := range vs {
		for item := range strings.SplitSeq(v, ",") {
			if item = strings.TrimSpace(item); item != "" && !slices.Contains(out, item) {
				out = append(out, item)
			}
		}
	}
	return out
}

// taskFilter passes the events of the tasks named by the values of task:
// each a task's name or id, several given by repeating the parameter or
// separated by commas. A value is also matched whole, commas and all, as a
// name (a name may hold a comma). Nil when task is not given.
func taskFilter(vs []string) (eventFilter, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	names, ids := map[string]bool{}, map[int64]bool{}
	refs := listValues(vs)
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(refs, v) {
			names[v] = true // a name with a comma
		}
	}
	if len(refs) == 0 {
		return nil, sundial.Errorf(sundial.EInvalid, "task", "task is empty: give the name or id of a task, several separated by commas")
	}
	if len(refs) > maxTaskRefs {
		return nil, sundial.Errorf(sundial.EInvalid, "task", "task names %d tasks; a stream follows %d at most", len(refs), maxTaskRefs)
	}
	for _, ref := range refs {
		names[ref] = true
		if id, err := strconv.ParseInt(ref, 10, 64); err == nil && id > 0 {
			ids[id] = true
		}
	}
	return func(e *event.Entry) bool { return ids[e.TaskID] || (e.TaskName != "" && names[e.TaskName]) }, nil
}

// kindFilter passes the events of the kinds the values of kinds name: a
// kind (run.finished), or a group (run, task) for all of its kinds. Nil
// when kinds is not given.
func kindFilter(vs []string) (eventFilter, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	items := listValues(vs)
	if len(items) == 0 {
		return nil, sundial.Errorf(sundial.EInvalid, "kinds", "kinds is empty: give kinds of events, such as run.finished,task")
	}
	want := map[sundial.EventKind]bool{}
	for _, item := range items {
		item = strings.ToLower(item)
		found := false
		for _, k := range sundial.EventKinds() {
			if string(k) == item || k.Group() == item {
				want[k], found = true, true
			}
		}
		if !found {
			return nil, &sundial.Error{Code: sundial.EInvalid, Field: "kinds", Token: item,
				Message: "unknown kind of event; the kinds are run, task (all of theirs), " + kindNames() +
					", several separated by commas"}
		}
	}
	return func(e *event.Entry) bool { return want[e.Kind] }, nil
}

// maxLabelCache bounds the tasks whose labels a stream's selector holds;
// past it, the stream reads them again as their events come.
const maxLabelCache = 10_000

// selectorFilter passes the events of the tasks whose labels match the
// label selector text (GET /tasks?selector=). A task's labels are read
// (labelsOf) at its first event and again after each of its task events,
// which may have changed them; a task labelsOf cannot read (deleted) is
// matched by the labels last read, or none. Nil when selector is not
// given.
func selectorFilter(vs []string, labelsOf func(id int64) (map[string]string, bool)) (eventFilter, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	sel, err := sundial.ParseSelector("selector", vs[0])
	if err != nil {
		return nil, err
	}
	if len(sel) == 0 {
		return nil, sundial.Errorf(sundial.EInvalid, "selector", "selector is empty: give a label selector, such as team=payments")
	}
	var mu sync.Mutex
	cache := map[int64]map[string]string{}
	return func(e *event.Entry) bool {
		mu.Lock()
		defer mu.Unlock()
		labels, ok := cache[e.TaskID]
		if !ok || e.Kind.Group() == "task" {
			if fresh, found := labelsOf(e.TaskID); found {
				labels = fresh
			}
			if len(cache) >= maxLabelCache {
				clear(cache)
			}
			cache[e.TaskID] = labels
		}
		return sel.Matches(labels)
	}, nil
}

// kindNames lists every kind of event.
func kindNames() string {
	var names []string
	for _, k := range sundial.EventKinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// streamStart is where a stream starts reading the hub, and the reset it
// sends first, if any: after the event the client names in
// Last-Event-ID, or else in since (an event's id, or an RFC 3339 time);
// from now on when it names none.
func (s *Server) streamStart(r *http.Request) (uint64, *event.Reset, error) {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		pos, reset, err := s.events.After(id)
		if err != nil {
			return 0, nil, &sundial.Error{Code: sundial.EInvalid, Field: "Last-Event-ID", Token: id,
				Message: "Last-Event-ID must be the id of an event of this stream, such as 1767225600000000-a1b2c3.42"}
		}
		return pos, reset, nil
	}
	since := r.URL.Query().Get("since")
	if since == "" {
		return s.events.Head(), nil, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
		pos, reset := s.events.Since(t)
		return pos, reset, nil
	}
	pos, reset, err := s.events.After(since)
	if err != nil {
		return 0, nil, &sundial.Error{Code: sundial.EInvalid, Field: "since", Token: since,
			Message: "since must be the id of an event (to resume after it) or an RFC 3339 time (2026-05-04T03:00:00Z)"}
	}
	return pos, reset, nil
}

// resumeTime is the time a stream resumes from (Last-Event-ID, or since:
// a time, or an event's ID and its time), zero for a stream that starts
// with the next change or a malformed one (streamStart refuses it).
func resumeTime(r *http.Request) time.Time {
	since := r.Header.Get("Last-Event-ID")
	if since == "" {
		since = r.URL.Query().Get("since")
	}
	if since == "" {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
		return t
	}
	t, _ := sundial.EventIDTime(since)
	return t
}

// handleEvents serves GET /api/v1/events?task=&kinds=&selector=&since=: the live
// events as server-sent events, until the client goes away or the server
// stops (EndStreams).
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var filters []eventFilter
	for _, parse := range []func() (eventFilter, error){
		func() (eventFilter, error) { return taskFilter(q["task"]) },
		func() (eventFilter, error) { return kindFilter(q["kinds"]) },
		func() (eventFilter, error) {
			return selectorFilter(q["selector"], func(id int64) (map[string]string, bool) {
				t, err := s.store.TaskGet(r.Context(), id)
				if err != nil {
					return nil, false
				}
				return t.Labels, true
			})
		},
	} {
		f, err := parse()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if f != nil {
			filters = append(filters, f)
		}
	}
	pass := allOf(filters)
	if r.Method != http.MethodHead {
		// Counted open before it finds where to start: the node asks the
		// cluster for its events (from where it resumes) before it decides
		// what it holds.
		done := s.events.Stream(resumeTime(r))
		defer done()
	}
	pos, reset, err := s.streamStart(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	// The stream outlives the server's read and write timeouts: no read
	// deadline (one would end it), and each write has one of its own.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	var buf bytes.Buffer
	buf.WriteString(": Sundial live events\n\n")
	if reset != nil {
		writeReset(&buf, reset)
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		entries, next := s.events.Read(pos, readBatch)
		for _, e := range entries {
			switch {
			case e.Reset != nil:
				writeReset(&buf, e.Reset)
			case pass(e):
				buf.WriteString("id: " + e.ID + "\nevent: " + string(e.Kind) + "\ndata: ")
				buf.Write(e.Data())
				buf.WriteString("\n\n")
			}
		}
		pos = next
		if buf.Len() > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			buf.Reset()
			tick.Reset(heartbeat)
		}
		if len(entries) == readBatch {
			continue
		}
		select {
		case <-s.events.Wait(pos):
		case <-tick.C:
			buf.WriteString(": keep-alive\n\n")
		case <-r.Context().Done():
			return
		case <-s.streamsDone:
			return
		}
	}
}

// writeReset writes a reset event: it has no id, so that a client that
// reconnects resumes from the last event it had.
func writeReset(buf *bytes.Buffer, r *event.Reset) {
	data, _ := json.Marshal(r)
	buf.WriteString("event: reset\ndata: ")
	buf.Write(data)
	buf.WriteString("\n\n")
}

// EndStreams ends the event streams, those open and those to come, as the
// server stops: http.Server.Shutdown waits for every request to end, and
// a stream would not. Register it with http.Server.RegisterOnShutdown.
func (s *Server) EndStreams() {
	s.endStreams.Do(func() { close(s.streamsDone) })
}

// publishTaskEvents publishes the live events of the changes of tasks the
// audit entries es record: every change of a task made through the API is
// audited, in auditAll, and becomes an event there.
func (s *Server) publishTaskEvents(es []*sundial.AuditEntry) {
	var evs []sundial.Event
	for _, e := range es {
		if ev, ok := sundial.TaskEvent(e); ok {
			evs = append(evs, ev)
		}
	}
	if len(evs) > 0 {
		s.events.Publish(evs...)
	}
}
