package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// sseClient reads GET /api/v1/events of a node as a client does.
type sseClient struct {
	frames chan sseFrame
	ended  chan error // the stream's end: nil when the server ended it
	cancel context.CancelFunc
}

type sseFrame struct {
	id, event string
	data      []byte
	at        time.Time // when it came
}

// openEvents opens the event stream of the node at url, with query, and
// reads it until the test ends. It returns once the stream is open.
func openEvents(t *testing.T, url, query string, header ...string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/api/v1/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /api/v1/events%s: %s %s", query, resp.Status, resp.Header.Get("Content-Type"))
	}
	c := &sseClient{frames: make(chan sseFrame, 10000), ended: make(chan error, 1), cancel: cancel}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				if f.data != nil {
					f.at = time.Now()
					c.frames <- f
				}
				f = sseFrame{}
				continue
			}
			name, value, _ := strings.Cut(line, ": ")
			switch name {
			case "id":
				f.id = value
			case "event":
				f.event = value
			case "data":
				f.data = []byte(value)
			}
		}
		c.ended <- sc.Err()
	}()
	t.Cleanup(cancel)
	return c
}

// next returns the next event that ok accepts (nil: any), and when it
// came, failing if none comes within wait.
func (c *sseClient) next(t *testing.T, wait time.Duration, ok func(sundial.Event) bool) (sundial.Event, time.Time) {
	t.Helper()
	e, f := c.nextFrame(t, wait, ok)
	return e, f.at
}

// nextFrame is next, with the frame of the event.
func (c *sseClient) nextFrame(t *testing.T, wait time.Duration, ok func(sundial.Event) bool) (sundial.Event, sseFrame) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case f := <-c.frames:
			var e sundial.Event
			if err := json.Unmarshal(f.data, &e); err != nil {
				t.Fatalf("event %s: %v: %s", f.event, err, f.data)
			}
			if e.ID != f.id || string(e.Kind) != f.event {
				t.Fatalf("frame id %s event %s holds the event %s %s", f.id, f.event, e.ID, e.Kind)
			}
			if ok == nil || ok(e) {
				return e, f
			}
		case err := <-c.ended:
			t.Fatalf("the stream ended: %v", err)
		case <-deadline:
			t.Fatalf("no such event within %s", wait)
		}
	}
}

func runEvent(id int64, kind sundial.EventKind) func(sundial.Event) bool {
	return func(e sundial.Event) bool { return e.Run != nil && e.Run.ID == id && e.Kind == kind }
}

// TestServeEvents: a node's event stream outlives its read and write
// timeouts, and ends as the node stops, which does not wait for it.
func TestServeEvents(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--api.read_timeout", "1s", "--api.write_timeout", "1s")
	s := openEvents(t, n.url, "?kinds=run.finished")
	opened := time.Now()
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"every-second","cron_expr":"* * * * * *","target_url":%q}`,
		target.srv.URL+"/hook"), 201, nil)
	e, _ := s.next(t, 10*time.Second, func(e sundial.Event) bool { return e.At.After(opened.Add(2500 * time.Millisecond)) })
	if e.Task.Name != "every-second" || e.Run.Status != sundial.RunSuccess {
		t.Errorf("event %+v", e)
	}

	stopped := make(chan struct{})
	begin := time.Now()
	go func() {
		n.stop(t)
		close(stopped)
	}()
	select {
	case err := <-s.ended:
		if err != nil {
			t.Errorf("the stream ended with %v, want the server's end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream goes on 10s after the node began to stop")
	}
	<-stopped
	if took := time.Since(begin); took >= 4*time.Second {
		t.Errorf("the node took %s to stop with a stream open; it waits for none", took)
	}
}

// TestClusterPostgresEvents: see clusterEvents.
func TestClusterPostgresEvents(t *testing.T) {
	t.Parallel()
	clusterEvents(t, freshPostgres(t), true)
}

// TestClusterMySQLEvents: see clusterEvents.
func TestClusterMySQLEvents(t *testing.T) {
	t.Parallel()
	clusterEvents(t, freshMySQL(t), false)
}

// clusterEvents runs two nodes on db: a client of node B sees, within a
// second, a task created through node A and a run node A delivers; it
// resumes on node A after the last event it had from B. exact says that
// the nodes know every event by one id (PostgreSQL), so that the resume
// sends nothing it had.
func clusterEvents(t *testing.T, db string, exact bool) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	bin := sundialBinary(t)
	target := newHook(t)
	a, b := startProc(t, bin, db), startProc(t, bin, db)
	na, nb := &node{url: a.url}, &node{url: b.url}
	for _, n := range []*node{na, nb} {
		n.waitReady(t)
	}
	if exact {
		// A resumes exactly after an event it held since it heard that a
		// stream is open (B's, announced through the database): the
		// events must come after that. A sends its own for 5 s after it
		// starts whatever it heard, then only while it heard an interest:
		// once it stopped, with no stream open, sending again says it
		// heard B's.
		waitMetric(t, na, "sundial_events_sending", "0: A's start grace over, no stream open", func(v float64) bool { return v == 0 })
	}
	s := openEvents(t, b.url, "")
	if exact {
		waitMetric(t, na, "sundial_events_sending", "1: A heard B's stream", func(v float64) bool { return v == 1 })
	}

	var tk taskJSON
	na.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"on-a","cron_expr":"0 0 0 1 1 * 2099","target_url":%q}`,
		target.srv.URL+"/x"), 201, &tk)
	answered := time.Now()
	created, taskAt := s.next(t, 10*time.Second, func(e sundial.Event) bool { return e.Kind == sundial.EventTaskCreated })
	if created.Task.ID != tk.ID || created.Task.Name != "on-a" {
		t.Errorf("task.created on B: %+v", created)
	}
	if late := taskAt.Sub(answered); late >= time.Second {
		t.Errorf("B told of the task %s after A created it", late)
	}

	// A manual trigger through A is delivered by A.
	var r runJSON
	na.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", tk.ID), "", 202, &r)
	d := target.wait(t, 1, 10*time.Second)[0]
	end, at := s.next(t, 10*time.Second, runEvent(r.ID, sundial.EventRunFinished))
	if end.Run.Status != sundial.RunSuccess || end.Task.Name != "on-a" || end.Run.HTTPStatus != 200 {
		t.Errorf("run.finished on B: %+v %+v", end, *end.Run)
	}
	if exact && end.NodeID != a.nodeID() {
		t.Errorf("run.finished on B says node %q, want A's %q", end.NodeID, a.nodeID())
	}
	if late := at.Sub(d.at); late >= time.Second {
		t.Errorf("B told of A's run %s after its delivery", late)
	}
	t.Logf("B told of the task within %s, of the run's end within %s of its delivery", taskAt.Sub(answered).Round(time.Millisecond),
		at.Sub(d.at).Round(time.Millisecond))

	// Resume on A after the task's event, as B sent it.
	resumed := openEvents(t, a.url, "", "Last-Event-ID", created.ID)
	got, _ := resumed.next(t, 10*time.Second, nil)
	switch {
	case exact && (got.Run == nil || got.Run.ID != r.ID):
		t.Errorf("the first event resumed on A is %s %+v, want the run's (the task's came before)", got.Kind, got)
	case !exact && got.Task.ID != tk.ID:
		t.Errorf("the first event resumed on A is %+v, want one of the task", got)
	}
	resumed.next(t, 10*time.Second, runEvent(r.ID, sundial.EventRunFinished))
}
