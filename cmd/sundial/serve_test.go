package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/sqlite"
)

// hook is a loopback HTTP target that records every request and signals
// each arrival.
type hook struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []delivery
	arrived chan delivery
	status  int
}

type delivery struct {
	at        time.Time
	scheduled time.Time
	runID     string
	key       string
	trace     string
	body      string
	method    string
}

func newHook(t *testing.T) *hook {
	h := &hook{arrived: make(chan delivery, 10000), status: 200}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sched, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Sundial-Scheduled-Time"))
		d := delivery{at: time.Now(), scheduled: sched, runID: r.Header.Get("X-Sundial-Run-Id"),
			key: r.Header.Get("Idempotency-Key"), trace: r.Header.Get("traceparent"), body: string(body), method: r.Method}
		h.mu.Lock()
		h.got = append(h.got, d)
		status := h.status
		h.mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprint(w, `{"ok":true}`)
		h.arrived <- d
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// wait returns the next n deliveries, failing after timeout.
func (h *hook) wait(t *testing.T, n int, timeout time.Duration) []delivery {
	t.Helper()
	deadline := time.After(timeout)
	var out []delivery
	for len(out) < n {
		select {
		case d := <-h.arrived:
			out = append(out, d)
		case <-deadline:
			t.Fatalf("got %d deliveries in %s, want %d", len(out), timeout, n)
		}
	}
	return out
}

// node is a running "sundial serve".
type node struct {
	url    string
	cancel context.CancelFunc
	done   chan error
	out    *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startNode runs serve on a free port with the SQLite database file db.
func startNode(t *testing.T, db string, extra ...string) *node {
	t.Helper()
	return startNodeDB(t, "sqlite:"+db, extra...)
}

// startNodeDB runs serve on a free port with the database dsn.
func startNodeDB(t *testing.T, dsn string, extra ...string) *node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{cancel: cancel, done: make(chan error, 1), out: &lockedBuffer{}}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--db", dsn, "--log.level", "warn"}, extra...)
	go func() {
		n.done <- run(ctx, args, func(string) string { return "" }, strings.NewReader(""), n.out, n.out)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for n.url == "" {
		if m := listenLine.FindStringSubmatch(n.out.String()); m != nil {
			n.url = m[1]
			break
		}
		select {
		case err := <-n.done:
			t.Fatalf("serve exited: %v\n%s", err, n.out)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", n.out)
		}
	}
	t.Cleanup(func() { n.stop(t) })
	n.waitReady(t)
	return n
}

// waitReady waits, up to 10 s, until the node answers /readyz with 200.
// The API listens before the scheduler has joined the cluster; the node
// takes triggers once it is ready.
func (n *node) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(n.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not become ready:\n%s", n.out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop sends the equivalent of SIGTERM and waits for a clean exit.
func (n *node) stop(t *testing.T) {
	t.Helper()
	if n.cancel == nil {
		return
	}
	n.cancel()
	n.cancel = nil
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("serve returned %v, want a clean stop", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func (n *node) do(t *testing.T, method, path, body string, wantStatus int, into any) {
	t.Helper()
	req, err := http.NewRequest(method, n.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// A bodyless POST or DELETE says application/json too: without a
	// token, it is how a client shows it is not a web page's form.
	if body != "" || method != "GET" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, data, wantStatus)
	}
	if into != nil {
		if err := json.Unmarshal(data, into); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}

type taskJSON struct {
	ID           int64      `json:"id"`
	CronExpr     string     `json:"cron_expr"`
	Version      int64      `json:"version"`
	NextFireTime *time.Time `json:"next_fire_time"`
}

type runJSON struct {
	ID            int64     `json:"id"`
	Status        string    `json:"status"`
	Trigger       string    `json:"trigger"`
	SkipReason    string    `json:"skip_reason"`
	MissedCount   int       `json:"missed_count"`
	ScheduledTime time.Time `json:"scheduled_time"`
	HTTPStatus    int       `json:"http_status"`
	ResponseBody  string    `json:"response_body"`
	TraceID       string    `json:"trace_id"`
}

type runList struct {
	Items []runJSON `json:"items"`
}

// seedExample is seed 001's example request (section 10), byte for byte but
// for its target, which must be a real one here.
const seedExample = `{
  "name":"sync_stats",
  "description":"统计同步",
  "cron_expr":"*/15 * * * * *",
  "exec_type":"SYNC",
  "http_method":"POST",
  "target_url":"TARGET",
  "headers_json":"{\"Content-Type\":\"application/json\"}",
  "body_template":"{\"run_id\":\"{{run_id}}\"}",
  "timeout_seconds":10,
  "max_concurrency":1,
  "concurrency_policy":"QUEUE",
  "overlap_action":"SKIP",
  "failure_action":"RUN_NEW"
}`

func TestServeFiresOnTheSecond(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	h := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))

	var task taskJSON
	body := strings.Replace(seedExample, `"*/15 * * * * *"`, `"* * * * * *"`, 1)
	body = strings.Replace(body, "TARGET", h.srv.URL+"/api/sync", 1)
	n.do(t, "POST", "/api/v1/tasks", body, 201, &task)
	if task.CronExpr != "* * * * * *" || task.NextFireTime == nil {
		t.Fatalf("created task %+v", task)
	}

	got := h.wait(t, 3, 10*time.Second)
	seen := map[string]bool{}
	for _, d := range got {
		if d.scheduled.Nanosecond() != 0 || d.at.Before(d.scheduled) {
			t.Errorf("delivery scheduled %s arrived %s: want a whole second, not early", d.scheduled, d.at)
		}
		if d.method != "POST" || d.body != fmt.Sprintf(`{"run_id":"%s"}`, d.runID) {
			t.Errorf("delivery %s %q, want POST with the rendered seed body", d.method, d.body)
		}
		if seen[d.key] || !strings.HasPrefix(d.trace, "00-") {
			t.Errorf("idempotency key %q (repeated: %v), traceparent %q", d.key, seen[d.key], d.trace)
		}
		seen[d.key] = true
	}

	// Runs are recorded with the target's answer.
	var runs runList
	n.do(t, "GET", fmt.Sprintf("/api/v1/runs?task_id=%d&status=SUCCESS", task.ID), "", 200, &runs)
	if len(runs.Items) == 0 || runs.Items[0].HTTPStatus != 200 || runs.Items[0].ResponseBody != `{"ok":true}` || runs.Items[0].TraceID == "" {
		t.Fatalf("runs %+v, want SUCCESS runs with status, body and trace id", runs.Items)
	}

	// A manual trigger is delivered at once.
	var manual runJSON
	n.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", task.ID), "", 202, &manual)
	if manual.Trigger != "MANUAL" {
		t.Errorf("trigger answered %+v", manual)
	}
	// Disabling stops the fires; nothing planned ahead fires afterwards.
	n.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/disable", task.ID), "", 200, nil)
	disabledAt := time.Now()
	n.stop(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.got {
		if d.scheduled.After(disabledAt.Add(time.Second)) {
			t.Errorf("fire of %s delivered after the task was disabled at %s", d.scheduled, disabledAt)
		}
	}
	if !strings.Contains(n.out.String(), "Sundial stopped") {
		t.Errorf("no clean stop in the output:\n%s", n.out)
	}
}

// TestServeRestartCatchUp stops a node, leaves it down for longer than the
// lookahead plus the misfire threshold (so that fires it had planned and
// fires it never planned are both missed), and checks each catch-up mode
// on the next start: every second of the task is accounted for exactly
// once, and the missed ones together (one MISFIRE record, one COMPACT
// run, or one FULL run each). DEADLINE is NONE with the task's own
// starting_deadline_seconds instead of the server's threshold.
func TestServeRestartCatchUp(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	for _, mode := range []string{"NONE", "COMPACT", "FULL", "DEADLINE"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			h := newHook(t)
			db := filepath.Join(t.TempDir(), "sundial.db")
			flags := []string{"--scheduler.lookahead", "2s", "--scheduler.misfire_threshold", "1s"}
			extra := fmt.Sprintf(`"catch_up_mode":%q`, mode)
			if mode == "DEADLINE" {
				flags = []string{"--scheduler.lookahead", "2s"} // the server's threshold stays 1m
				extra = `"catch_up_mode":"NONE","starting_deadline_seconds":1`
			}
			n := startNode(t, db, flags...)
			var task taskJSON
			n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"catch-up","cron_expr":"* * * * * *",
				"target_url":%q,"overlap_action":"PARALLEL",%s}`, h.srv.URL, extra), 201, &task)
			h.wait(t, 1, 10*time.Second)
			n.stop(t)

			// Down for five seconds: past the 2 s lookahead plus the 1 s
			// threshold at the restart.
			time.Sleep(5 * time.Second)
			n2 := startNode(t, db, flags...)
			h.wait(t, 1, 10*time.Second)
			var runs runList
			deadline := time.Now().Add(10 * time.Second)
			for {
				runs = runList{} // decoding into old items would keep their omitted fields
				n2.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/runs?limit=100", task.ID), "", 200, &runs)
				if ok, why := catchUpDone(mode, runs.Items); ok {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("%s: %s; runs: %+v", mode, why, runs.Items)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// catchUpDone reports whether the runs of a task firing every second show
// the catch-up mode at work after an outage: every second from the first
// fire to the last run is accounted for exactly once, by a scheduled run,
// a catch-up run (FULL), or a MISFIRE record or COMPACT run's count of
// the missed seconds, which form one range.
func catchUpDone(mode string, runs []runJSON) (bool, string) {
	covered := map[int64]int{}
	var first, last int64
	var misfires, compact, full int
	for i, r := range runs {
		sec := r.ScheduledTime.Unix()
		if i == 0 || sec < first {
			first = sec
		}
		if i == 0 || sec > last {
			last = sec
		}
		switch {
		case r.SkipReason == "MISFIRE":
			misfires++
			for k := range int64(r.MissedCount) {
				covered[sec+k]++
			}
		case r.Trigger == "CATCH_UP" && r.MissedCount > 0:
			compact++
			// A COMPACT run is due at the restart; its fire key names the
			// first missed second, and its count the range.
			if r.Status != "SUCCESS" {
				return false, fmt.Sprintf("COMPACT run %d is %s", r.ID, r.Status)
			}
		case r.Trigger == "CATCH_UP":
			full++
			covered[sec]++
		default:
			covered[sec]++
		}
	}
	if compact > 0 {
		// The seconds no other run accounts for are the COMPACT run's.
		for _, r := range runs {
			if r.Trigger == "CATCH_UP" && r.MissedCount > 0 {
				gap := int64(0)
				for sec := first; sec <= last; sec++ {
					if covered[sec] == 0 {
						gap++
						covered[sec]++
					}
				}
				if gap != int64(r.MissedCount) {
					return false, fmt.Sprintf("COMPACT run counts %d fires, %d seconds went unrun", r.MissedCount, gap)
				}
			}
		}
	}
	for sec := first; sec <= last; sec++ {
		if covered[sec] != 1 {
			return false, fmt.Sprintf("second %s accounted for %d times", time.Unix(sec, 0).UTC().Format(time.TimeOnly), covered[sec])
		}
	}
	// An outage is counted in one MISFIRE record (NONE) or COMPACT run; a
	// fire found missed after a later one had started is recorded on its
	// own (see sundial.UnplanMissed), which a loaded machine can cause.
	switch mode {
	case "NONE", "DEADLINE":
		return misfires >= 1 && compact+full == 0, fmt.Sprintf("%d MISFIRE records, %d catch-up runs", misfires, compact+full)
	case "COMPACT":
		return compact == 1 && full == 0, fmt.Sprintf("%d COMPACT runs, %d FULL runs", compact, full)
	default:
		return full >= 2 && misfires+compact == 0, fmt.Sprintf("%d FULL catch-up runs, %d MISFIRE records", full, misfires+compact)
	}
}

// TestServePprof: debug.pprof_listen serves Go's profiles on a listener of
// its own, on loopback only to a loopback Host (no DNS rebinding) or one
// of api.allowed_hosts, and never the command line.
func TestServePprof(t *testing.T) {
	t.Parallel()
	addr, stop, err := servePprof("127.0.0.1:0", []string{"prof.example"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	get := func(path, host string) int {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+addr.String()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct {
		path, host string
		want       int
	}{
		{"/debug/pprof/goroutine?debug=1", addr.String(), http.StatusOK},
		{"/debug/pprof/goroutine?debug=1", "prof.example", http.StatusOK},
		{"/debug/pprof/goroutine?debug=1", "evil.example", http.StatusForbidden},
		{"/debug/pprof/goroutine?debug=1", "evil.example:" + strconv.Itoa(addr.(*net.TCPAddr).Port), http.StatusForbidden},
		{"/debug/pprof/cmdline", addr.String(), http.StatusNotFound},
	} {
		if got := get(tt.path, tt.host); got != tt.want {
			t.Errorf("GET %s with Host %s: %d, want %d", tt.path, tt.host, got, tt.want)
		}
	}
	if _, _, err := servePprof("127.0.0.1:bad", nil, slog.New(slog.DiscardHandler)); err == nil ||
		!strings.Contains(err.Error(), "debug.pprof_listen") {
		t.Errorf("a bad address: %v, want an error naming debug.pprof_listen", err)
	}
}

// TestServeBusyPort: serve on a port already taken fails naming the
// address, before it creates or migrates the database.
func TestServeBusyPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	db := filepath.Join(t.TempDir(), "sundial.db")
	res := runArgs(t, "serve", "--listen", addr, "--db", "sqlite:"+db)
	if res.err == nil || !strings.Contains(res.err.Error(), addr) {
		t.Fatalf("serve on a busy port: %v, want an error naming %s", res.err, addr)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the database %s exists after the failed start (stat: %v): it was created before binding", db, err)
	}
}

// TestServeJSONLogDurations: in the JSON log format durations are Go
// duration strings, as in the text format, not integer nanoseconds.
func TestServeJSONLogDurations(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--log.format", "json", "--log.level", "info",
		"--scheduler.drain_timeout", "1.5s")
	// The scheduler starts beside the API: wait for it before stopping.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(n.out.String(), `"msg":"scheduler started"`); {
		if time.Now().After(deadline) {
			t.Fatalf("the scheduler did not start:\n%s", n.out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	n.stop(t)
	want := map[string]map[string]any{
		"scheduler started": {"poll_interval": "1s", "lookahead": "10s"},
		"stopping: no new fires; draining calls in flight": {"drain_timeout": "1.5s"},
	}
	seen := map[string]bool{}
	for line := range strings.Lines(n.out.String()) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		msg, _ := rec["msg"].(string)
		if c, _ := rec["component"].(string); c == "" {
			t.Errorf("log line %q has no component", line)
		}
		attrs, ok := want[msg]
		if !ok {
			continue
		}
		seen[msg] = true
		for k, v := range attrs {
			if rec[k] != v {
				t.Errorf("%q: %s = %#v, want %#v", msg, k, rec[k], v)
			}
		}
	}
	for msg := range want {
		if !seen[msg] {
			t.Errorf("no %q line in the log:\n%s", msg, n.out)
		}
	}
}

// watchBuffer collects output and tells when it first meets a condition.
type watchBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	waits []watch
}

type watch struct {
	ok func(string) bool
	ch chan struct{}
}

func (w *watchBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	w.check()
	return n, err
}

func (w *watchBuffer) check() {
	left := w.waits[:0]
	for _, wt := range w.waits {
		if wt.ok(w.b.String()) {
			close(wt.ch)
		} else {
			left = append(left, wt)
		}
	}
	w.waits = left
}

// whenFunc returns a channel closed once ok holds for the whole output.
func (w *watchBuffer) whenFunc(ok func(string) bool) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	w.waits = append(w.waits, watch{ok, ch})
	w.check()
	return ch
}

// when returns a channel closed once the output contains s.
func (w *watchBuffer) when(s string) <-chan struct{} {
	return w.whenFunc(func(out string) bool { return strings.Contains(out, s) })
}

// whenCount returns a channel closed once the output contains s n times.
func (w *watchBuffer) whenCount(s string, n int) <-chan struct{} {
	return w.whenFunc(func(out string) bool { return strings.Count(out, s) >= n })
}

// count counts s in the output.
func (w *watchBuffer) count(s string) int {
	return strings.Count(w.String(), s)
}

func (w *watchBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// await waits for ch, failing with what the output says after timeout.
func await(t *testing.T, ch <-chan struct{}, timeout time.Duration, what string, out fmt.Stringer) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("%s: not within %s; output:\n%s", what, timeout, out)
	}
}

// TestServeSecondStop: a stop begins the drain and waits for the call in
// flight (the drain timeout is an hour); a second stop ends the drain at
// once: the call is cut off, its run recorded INTERRUPTED with its attempt,
// the node leaves, and serve returns without an error.
func TestServeSecondStop(t *testing.T) {
	t.Parallel()
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select { // answer only when Sundial gives up the call
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hook.Close()
	defer close(release)

	db := filepath.Join(t.TempDir(), "sundial.db")
	out := &watchBuffer{}
	listening, stopping := out.when("Sundial listening on"), out.when("stopping: no new fires")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	again := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run(withSecondStop(ctx, again), []string{"serve", "--listen", "127.0.0.1:0", "--db", "sqlite:" + db,
			"--scheduler.drain_timeout", "1h"}, func(string) string { return "" }, strings.NewReader(""), out, out)
	}()
	await(t, listening, 20*time.Second, "serve listening", out)
	n := &node{url: listenLine.FindStringSubmatch(out.String())[1]}
	var task taskJSON
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"slow","delay_seconds":0,"target_url":%q,"timeout_seconds":3600}`,
		hook.URL), 201, &task)
	await(t, arrived, 20*time.Second, "the call reaching the target", out)

	cancel() // the first SIGINT or SIGTERM
	await(t, stopping, 10*time.Second, "the drain beginning", out)
	close(again) // the second
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after the second stop, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve still draining 30 s after the second stop; output:\n%s", out)
	}
	if !strings.Contains(out.String(), "Sundial stopped") {
		t.Errorf("no clean stop in the output:\n%s", out)
	}

	st, err := sqlite.Open(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.RunList(t.Context(), sundial.RunListParams{TaskID: task.ID, Limit: 10})
	if err != nil || len(runs) != 1 || runs[0].Status != sundial.RunInterrupted {
		t.Fatalf("runs after the second stop = %+v, %v; want one INTERRUPTED", runs, err)
	}
	attempts, err := st.RunAttempts(t.Context(), runs[0].ID)
	if err != nil || len(attempts) != 1 || attempts[0].Status != sundial.RunInterrupted {
		t.Fatalf("attempts = %+v, %v; want the cut-off delivery recorded INTERRUPTED", attempts, err)
	}
	nodes, err := st.NodeList(t.Context())
	if err != nil || len(nodes) != 1 || nodes[0].State != sundial.NodeLeft {
		t.Errorf("nodes = %+v, %v; want the node LEFT", nodes, err)
	}
}

// TestStopOnSignals: the first signal cancels the context, the second
// closes its second stop.
func TestStopOnSignals(t *testing.T) {
	t.Parallel()
	sigs := make(chan os.Signal, 2)
	called := make(chan struct{})
	ctx, stop := stopOnSignals(context.Background(), sigs, func() { close(called) })
	defer stop()
	second := secondStop(ctx)
	if ctx.Err() != nil || second == nil {
		t.Fatalf("before any signal: ctx.Err() = %v, second stop %v", ctx.Err(), second)
	}
	sigs <- syscall.SIGTERM
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first signal did not cancel the context")
	}
	select {
	case <-second:
		t.Fatal("the first signal closed the second stop")
	default:
	}
	sigs <- os.Interrupt
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not close the second stop")
	}
	<-called
	if secondStop(context.Background()) != nil {
		t.Error("a context without a second stop has one")
	}
}

// TestServeConsoleSetting: the console is served by default (/ redirects
// to /ui/); with api.console false, / and /ui/ are 404 and the API
// answers as before.
func TestServeConsoleSetting(t *testing.T) {
	t.Parallel()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(n *node, path string) int {
		resp, err := noRedirect.Get(n.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	on := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	off := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--api.console=false")
	for _, tc := range []struct {
		n    *node
		path string
		want int
	}{
		{on, "/", http.StatusFound},
		{on, "/ui/", http.StatusOK},
		{off, "/", http.StatusNotFound},
		{off, "/ui/", http.StatusNotFound},
		{off, "/api/v1/tasks", http.StatusOK},
	} {
		if got := get(tc.n, tc.path); got != tc.want {
			t.Errorf("GET %s (console %v): %d, want %d", tc.path, tc.n == on, got, tc.want)
		}
	}
}
