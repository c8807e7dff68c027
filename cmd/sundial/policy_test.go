package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// gate is a loopback target whose calls wait until the test opens the gate
// (or the caller gives up), and that answers with status.
type gate struct {
	srv     *httptest.Server
	open    chan struct{}
	once    sync.Once
	status  int
	arrived chan string // X-Sundial-Scheduled-Time of each call
}

func newGate(t *testing.T, status int, blocked bool) *gate {
	g := &gate{open: make(chan struct{}), status: status, arrived: make(chan string, 1000)}
	if !blocked {
		g.release()
	}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.arrived <- r.Header.Get("X-Sundial-Scheduled-Time")
		select {
		case <-g.open:
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(g.status)
	}))
	t.Cleanup(func() { g.release(); g.srv.Close() })
	return g
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// next waits for the next call to arrive.
func (g *gate) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-g.arrived:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no call arrived within 10s")
		return ""
	}
}

// waitRuns polls the task's runs until ok accepts them, for at most 15s.
func waitRuns(t *testing.T, n *node, taskID int64, what string, ok func([]runJSON) bool) []runJSON {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var runs runList
		n.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/runs?limit=1000", taskID), "", 200, &runs)
		if ok(runs.Items) {
			return runs.Items
		}
		if time.Now().After(deadline) {
			// Show what every goroutine of the node was doing: a stall
			// explains itself.
			buf := make([]byte, 1<<22)
			t.Fatalf("waiting for %s; runs: %+v\ngoroutines:\n%s", what, runs.Items, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func count(runs []runJSON, pred func(runJSON) bool) int {
	n := 0
	for _, r := range runs {
		if pred(r) {
			n++
		}
	}
	return n
}

func createTask(t *testing.T, n *node, target, extra string) taskJSON {
	t.Helper()
	var task taskJSON
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":%q,"cron_expr":"* * * * * *","target_url":%q%s}`,
		t.Name(), target, extra), 201, &task)
	return task
}

func TestServePolicies(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))

	t.Run("overlap SKIP", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 200, true)
		task := createTask(t, n, g.srv.URL, `,"overlap_action":"SKIP"`)
		g.next(t)
		waitRuns(t, n, task.ID, "two OVERLAP skips while the first call is held", func(rs []runJSON) bool {
			return count(rs, func(r runJSON) bool { return r.SkipReason == "OVERLAP" }) >= 2
		})
		select {
		case s := <-g.arrived:
			t.Fatalf("a second call (fire %s) arrived while the first was in flight", s)
		default:
		}
		g.release()
		waitRuns(t, n, task.ID, "the held run to succeed", func(rs []runJSON) bool {
			return count(rs, func(r runJSON) bool { return r.Status == "SUCCESS" }) >= 1
		})
	})

	t.Run("concurrency QUEUE", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 200, true)
		task := createTask(t, n, g.srv.URL, `,"max_concurrency":1,"concurrency_policy":"QUEUE","max_queue":2`)
		first := g.next(t)
		rs := waitRuns(t, n, task.ID, "two QUEUED runs and a QUEUE_FULL skip", func(rs []runJSON) bool {
			return count(rs, func(r runJSON) bool { return r.Status == "QUEUED" }) == 2 &&
				count(rs, func(r runJSON) bool { return r.SkipReason == "QUEUE_FULL" }) >= 1
		})
		var queued []time.Time
		for i := len(rs) - 1; i >= 0; i-- { // oldest first
			if rs[i].Status == "QUEUED" {
				queued = append(queued, rs[i].ScheduledTime)
			}
		}
		g.release()
		// The queued runs are delivered first in first out, after the first.
		second, third := g.next(t), g.next(t)
		if second != queued[0].Format(time.RFC3339Nano) || third != queued[1].Format(time.RFC3339Nano) {
			t.Errorf("calls after %s: %s, %s; want the queued fires %s, %s in order", first, second, third, queued[0], queued[1])
		}
	})

	t.Run("failure RETRY", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 500, false)
		task := createTask(t, n, g.srv.URL, `,"failure_action":"RETRY"`)
		rs := waitRuns(t, n, task.ID, "three failed runs", func(rs []runJSON) bool {
			return count(rs, func(r runJSON) bool { return r.Status == "FAILED" }) >= 3
		})
		n.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/disable", task.ID), "", 200, nil)
		// Attempts rise by one with each failed fire, oldest first.
		var attempts []int
		for i := len(rs) - 1; i >= 0; i-- {
			if rs[i].Status == "FAILED" {
				var full struct {
					Attempt    int `json:"attempt"`
					HTTPStatus int `json:"http_status"`
				}
				n.do(t, "GET", fmt.Sprintf("/api/v1/runs/%d", rs[i].ID), "", 200, &full)
				if full.HTTPStatus != 500 {
					t.Errorf("run %d http_status %d, want 500", rs[i].ID, full.HTTPStatus)
				}
				attempts = append(attempts, full.Attempt)
			}
		}
		for i := 1; i < len(attempts); i++ {
			if attempts[i] != attempts[i-1]+1 {
				t.Errorf("attempts %v, want each previous + 1", attempts)
				break
			}
		}
	})

	t.Run("overlap CANCEL_PREV", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 200, true)
		task := createTask(t, n, g.srv.URL, `,"overlap_action":"CANCEL_PREV"`)
		waitRuns(t, n, task.ID, "two runs cancelled by the fires after them", func(rs []runJSON) bool {
			return count(rs, func(r runJSON) bool { return r.Status == "CANCELED" }) >= 2
		})
		n.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/disable", task.ID), "", 200, nil)
	})

	t.Run("cancel a running run", func(t *testing.T) {
		t.Parallel()
		g := newGate(t, 200, true)
		task := createTask(t, n, g.srv.URL, `,"overlap_action":"SKIP"`)
		g.next(t)
		rs := waitRuns(t, n, task.ID, "a RUNNING run", func(rs []runJSON) bool {
			return count(rs, func(r runJSON) bool { return r.Status == "RUNNING" }) == 1
		})
		var id int64
		for _, r := range rs {
			if r.Status == "RUNNING" {
				id = r.ID
			}
		}
		n.do(t, "POST", fmt.Sprintf("/api/v1/runs/%d/cancel", id), "", 200, nil)
		waitRuns(t, n, task.ID, "the run CANCELED", func(rs []runJSON) bool {
			return count(rs, func(r runJSON) bool { return r.ID == id && r.Status == "CANCELED" }) == 1
		})
		n.do(t, "POST", fmt.Sprintf("/api/v1/runs/%d/cancel", id), "", 409, nil)
	})
}
