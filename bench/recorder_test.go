package bench

import (
	"net"
	"net/http"
	"testing"
	"time"
)

// TestRecorderServe: the fasthttp target answers 204 and records what the
// node's headers say, and stops when told.
func TestRecorderServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &Recorder{}
	stop := rc.Serve(ln)
	req, err := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/hook", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Sundial-Scheduled-Time", "2026-11-21T10:00:05Z")
	req.Header.Set("X-Sundial-Task-Id", "42")
	req.Header.Set("Idempotency-Key", "sundial-42-1")
	req.Header.Set("X-Sundial-Node", "node-a")
	before := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d, want 204", resp.StatusCode)
	}
	stop()
	got := rc.Arrivals()
	if len(got) != 1 || rc.Count() != 1 {
		t.Fatalf("%d arrivals (count %d), want 1", len(got), rc.Count())
	}
	a := got[0]
	want := time.Date(2026, 11, 21, 10, 0, 5, 0, time.UTC)
	if !a.Scheduled.Equal(want) || a.Task != "42" || a.Key != "sundial-42-1" || a.Node != "node-a" || a.At.Before(before) {
		t.Fatalf("recorded %+v", a)
	}
	if _, err := http.DefaultClient.Get("http://" + ln.Addr().String() + "/hook"); err == nil {
		t.Fatal("the target still answers after stop")
	}
}
