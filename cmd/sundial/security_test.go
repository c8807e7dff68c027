package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial/bench"
)

// apiError is the JSON error shape.
type apiError struct {
	Error struct {
		Code, Message, Field, Token string
	} `json:"error"`
}

// refused posts a task and expects a 400 naming field.
func (n *node) refused(t *testing.T, body, field string) apiError {
	t.Helper()
	var e apiError
	n.do(t, "POST", "/api/v1/tasks", body, http.StatusBadRequest, &e)
	if e.Error.Code != "invalid" || e.Error.Field != field {
		t.Fatalf("POST %s: error %+v, want invalid %s", body[:min(len(body), 200)], e.Error, field)
	}
	return e
}

// finished triggers task id and returns its run once it has finished.
func (n *node) finished(t *testing.T, id int64, body string) triggerRun {
	t.Helper()
	var run triggerRun
	n.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", id), body, http.StatusAccepted, &run)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		n.do(t, "GET", fmt.Sprintf("/api/v1/runs/%d", run.ID), "", http.StatusOK, &run)
		switch run.Status {
		case "SUCCESS", "FAILED", "TIMEOUT", "CANCELED":
			return run
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("run %d is still %s after 20s", run.ID, run.Status)
		}
	}
}

// TestServeOutboundGuard: through the binary, a task cannot reach a
// metadata address or the node's own API, by a literal address (400 at
// create, naming target_url) or by a name (the run fails, saying the
// outbound guard refused the address); executor.deny_networks refuses
// what it lists, the same way.
func TestServeOutboundGuard(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	hook := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	apiPort := n.url[strings.LastIndex(n.url, ":")+1:]
	task := func(url string) string {
		return fmt.Sprintf(`{"name":"t-%d","cron_expr":"0 0 0 1 1 *","status":"DISABLED","target_url":%q}`, time.Now().UnixNano(), url)
	}
	for _, url := range []string{
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"http://2852039166/", "http://0xa9fea9fe/", "http://[::ffff:169.254.169.254]/",
		"http://[fe80::1]/", "http://0.0.0.0:" + apiPort + "/", "http://224.0.0.1/",
		n.url + "/api/v1/tasks", // the node's own API
	} {
		e := n.refused(t, task(url), "target_url")
		if !strings.Contains(e.Error.Message, "which the outbound guard refuses") {
			t.Errorf("%s: %q, want it to say the outbound guard refuses it", url, e.Error.Message)
		}
	}
	// A PUT is checked the same way, and changes nothing.
	var ok taskJSON
	n.do(t, "POST", "/api/v1/tasks", task(hook.srv.URL), http.StatusCreated, &ok)
	n.do(t, "PUT", fmt.Sprintf("/api/v1/tasks/%d", ok.ID),
		fmt.Sprintf(`{"name":"x","cron_expr":"0 0 0 1 1 *","version":%d,"target_url":"http://169.254.169.254/"}`, ok.Version),
		http.StatusBadRequest, nil)

	// The node's own API by name: accepted at create, refused when dialled.
	var self taskJSON
	n.do(t, "POST", "/api/v1/tasks", task("http://localhost:"+apiPort+"/api/v1/tasks"), http.StatusCreated, &self)
	run := n.finished(t, self.ID, "")
	if run.Status != "FAILED" || !strings.Contains(run.Error, "refused by the outbound guard: it is this node's own listener") {
		t.Errorf("a call to the node's own API by name: %s %q, want FAILED, refused by the outbound guard", run.Status, run.Error)
	}

	// The target itself works.
	if run := n.finished(t, ok.ID, ""); run.Status != "SUCCESS" {
		t.Fatalf("the loopback target: %s %q, want SUCCESS", run.Status, run.Error)
	}
	hook.wait(t, 1, 10*time.Second)

	// With loopback denied, the same target by name fails at dial time.
	locked := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--executor.deny_networks", "127.0.0.0/8,::1/128")
	hookPort := hook.srv.URL[strings.LastIndex(hook.srv.URL, ":")+1:]
	locked.refused(t, task(hook.srv.URL), "target_url") // the literal 127.0.0.1
	var named taskJSON
	locked.do(t, "POST", "/api/v1/tasks", task("http://localhost:"+hookPort+"/"), http.StatusCreated, &named)
	run = locked.finished(t, named.ID, "")
	if run.Status != "FAILED" || !strings.Contains(run.Error, "refused by the outbound guard: ") ||
		!strings.Contains(run.Error, "is in executor.deny_networks") {
		t.Errorf("a name resolving to a denied address: %s %q, want FAILED, refused by the outbound guard", run.Status, run.Error)
	}
	select {
	case d := <-hook.arrived:
		t.Errorf("the target got a call it should not have: %+v", d)
	default:
	}
}

// TestServeBodyBounds: the template bomb (64 KiB params and 6,553
// {{params}}) is refused at create naming body_template and the bound;
// its run-time cousin (params given to a trigger, larger than the task's)
// fails the run saying why, and nothing reaches the target. Bad headers
// are refused naming them.
func TestServeBodyBounds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	hook := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	big, _ := json.Marshal(strings.Repeat("x", 64<<10-2))
	e := n.refused(t, fmt.Sprintf(`{"name":"bomb","cron_expr":"0 0 0 1 1 *","target_url":%q,"params":%s,"body_template":%q}`,
		hook.srv.URL, big, strings.Repeat("{{params}}", 6553)), "body_template")
	if !strings.Contains(e.Error.Message, "up to 429457408 bytes") || !strings.Contains(e.Error.Message, "1048576 bytes (executor.max_body_bytes)") {
		t.Errorf("the bomb's error %q does not give the bound and the limit", e.Error.Message)
	}

	// 20 copies of small params fit; 20 of a trigger's 64 KiB do not.
	var task taskJSON
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"grows","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":%q,"params":"small","body_template":%q}`, hook.srv.URL, strings.Repeat("{{params}}", 20)), http.StatusCreated, &task)
	run := n.finished(t, task.ID, fmt.Sprintf(`{"params":%s}`, big))
	want := `render body: the rendered body would be larger than 1048576 bytes (executor.max_body_bytes): it passes the limit at "{{params}}"`
	if run.Status != "FAILED" || !strings.HasPrefix(run.Error, want) {
		t.Errorf("the trigger with large params: %s %q, want FAILED %q", run.Status, run.Error, want)
	}
	select {
	case d := <-hook.arrived:
		t.Errorf("the target got a body of %d bytes", len(d.body))
	default:
	}
	if run := n.finished(t, task.ID, ""); run.Status != "SUCCESS" {
		t.Errorf("the task's own params: %s %q, want SUCCESS", run.Status, run.Error)
	}

	for headers, token := range map[string]string{
		`{"Host":"evil.example"}`:                        "Host",
		`{"X-Sundial-Callback-Token":"x"}`:               "X-Sundial-Callback-Token",
		`{"X-A":"a\r\nB: c"}`:                            "X-A",
		`{"X-A":"` + strings.Repeat("v", 8<<10+1) + `"}`: "X-A",
	} {
		e := n.refused(t, fmt.Sprintf(`{"name":"h","cron_expr":"0 0 0 1 1 *","target_url":%q,"headers":%s}`, hook.srv.URL, headers), "headers")
		if e.Error.Token != token {
			t.Errorf("headers %.60s: token %q, want %q", headers, e.Error.Token, token)
		}
	}
}

// TestServeClosesSlowConnections: the API closes a keep-alive connection
// left idle past api.idle_timeout, and one whose body trickles in past
// api.read_timeout. The node runs on real sockets and the server's own
// timers, which a synctest bubble cannot hold, so the test waits for real:
// timeouts of 200 ms and 300 ms, each wait bounded by 10 s.
func TestServeClosesSlowConnections(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"),
		"--api.idle_timeout", "200ms", "--api.read_timeout", "300ms", "--api.allowed_hosts", "x")
	addr := strings.TrimPrefix(n.url, "http://")

	// closed reads what the server sends until it closes the connection.
	closed := func(t *testing.T, conn net.Conn) string {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		data, err := io.ReadAll(conn)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the connection is still open after 10s (read %q)", data)
		}
		return string(data)
	}

	t.Run("idle keep-alive", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("GET /healthz: %d, close %t; want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
		}
		start := time.Now()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if rest, err := io.ReadAll(br); errors.Is(err, os.ErrDeadlineExceeded) || len(rest) != 0 {
			t.Fatalf("idle connection: read %q, %v; want it closed with nothing more", rest, err)
		}
		if waited := time.Since(start); waited < 150*time.Millisecond {
			t.Errorf("the idle connection was closed after %s, before api.idle_timeout (200ms)", waited)
		}
	})

	t.Run("trickled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "POST /api/v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
			"Content-Length: 1000\r\n\r\n{\"name\":"); err != nil {
			t.Fatal(err)
		}
		// The rest of the body never comes: the server gives up and closes.
		if got := closed(t, conn); !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, "api.read_timeout") {
			t.Errorf("the trickled request got %q, want a 400 naming api.read_timeout, then the close", got)
		}
	})
}

// TestServeBodyBoundMemory: the run-time cousin of the template bomb keeps
// the node's memory flat. A task renders 6,553 copies of its params, which
// its own small params keep under the bound; four triggers each give it
// 64 KiB of params, 429 MB a render if it were made. Each run fails
// before the body is built, and the node's peak resident memory (VmHWM,
// read from /proc: a process of its own, so no other test's allocations
// count) grows by less than 64 MiB over the four, where one render alone
// would take 429 MB.
func TestServeBodyBoundMemory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the node's peak memory from /proc, which only Linux has")
	}
	hook := newHook(t)
	p := startProc(t, sundialBinary(t), "sqlite:"+filepath.Join(t.TempDir(), "sundial.db"))
	n := &node{url: p.url, out: p.out}
	n.waitReady(t)
	var task taskJSON
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"bomb","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":%q,"params":"s","body_template":%q}`, hook.srv.URL, strings.Repeat("{{params}}", 6553)), http.StatusCreated, &task)
	if run := n.finished(t, task.ID, ""); run.Status != "SUCCESS" {
		t.Fatalf("the task's own params: %s %q, want SUCCESS", run.Status, run.Error)
	}
	<-hook.arrived

	peak := func() int64 {
		t.Helper()
		_, rss, err := bench.ReadProc(p.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return rss
	}
	before := peak()
	big, _ := json.Marshal(strings.Repeat("x", 64<<10-2))
	for range 4 {
		run := n.finished(t, task.ID, fmt.Sprintf(`{"params":%s}`, big))
		if run.Status != "FAILED" || !strings.Contains(run.Error, "executor.max_body_bytes") {
			t.Fatalf("the trigger with 64 KiB params: %s %q, want FAILED naming executor.max_body_bytes", run.Status, run.Error)
		}
	}
	after := peak()
	t.Logf("peak RSS %d MiB before the four bombs, %d MiB after", before>>20, after>>20)
	if grew := after - before; grew > 64<<20 {
		t.Errorf("the node's peak RSS grew by %d MiB over the four bombs, want under 64 MiB", grew>>20)
	}
	select {
	case d := <-hook.arrived:
		t.Errorf("the target got a body of %d bytes", len(d.body))
	default:
	}
}

// TestServeWarnsLooseFileModes: a SQLite database file or secrets key file
// that other users may read (made before files were created 0600, or
// copied) is used, with a warning that names it and says to chmod it.
func TestServeWarnsLooseFileModes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	db := filepath.Join(t.TempDir(), "sundial.db")
	n := startNode(t, db)
	n.stop(t)
	if strings.Contains(n.out.String(), "chmod 600") {
		t.Fatalf("files made by the node are warned about:\n%s", n.out)
	}
	for _, f := range []string{db, db + ".key"} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n = startNode(t, db)
	n.stop(t)
	for _, want := range []string{"the database file may be read by other users", "the secrets key file may be read by other users"} {
		if !strings.Contains(n.out.String(), want) {
			t.Errorf("the log does not warn %q:\n%s", want, n.out)
		}
	}
}
