package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// startTargetCmd runs "sundial target" on a free loopback port and returns its
// URL, its output and a function that stops it and returns run's error.
func startTargetCmd(t *testing.T) (string, *watchBuffer, func() error) {
	t.Helper()
	out := &watchBuffer{}
	listening := out.when("listening on")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"target", "--listen", "127.0.0.1:0"}, func(string) string { return "" },
			strings.NewReader(""), out, out)
	}()
	await(t, listening, 10*time.Second, "target listening", out)
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("target did not stop; output:\n%s", out)
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return listenLine.FindStringSubmatch(out.String())[1], out, stop
}

// TestTarget: the target answers 200, or the status and delay the query
// asks for, refuses a bad query with 400 saying what is wrong, prints each
// request readably, and stops cleanly.
func TestTarget(t *testing.T) {
	t.Parallel()
	base, out, stop := startTargetCmd(t)
	post := func(path, body string, headers map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}

	status, body := post("/remind?order=42", `{"order": 42}`, map[string]string{
		"X-Sundial-Run-Id": "7", "X-Sundial-Task-Id": "2", "X-Sundial-Scheduled-Time": "2026-05-04T10:00:00Z",
		"X-Sundial-Attempt": "1", "X-Sundial-Delivery": "1", "X-Sundial-Trigger": "SCHEDULE",
		"X-Sundial-Future-Header": "kept", "Idempotency-Key": "sundial-2-s:1777888800",
		"Traceparent":  "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"Content-Type": "application/json", "X-Other": "not printed",
	})
	if status != 200 || body != `{"status":200}` {
		t.Errorf("plain request: %d %q, want 200 {\"status\":200}", status, body)
	}
	printed := out.String()
	for _, want := range []string{
		"Z  POST /remind?order=42  -> 200 OK\n",
		"    X-Sundial-Run-Id: 7\n    X-Sundial-Task-Id: 2\n    X-Sundial-Scheduled-Time: 2026-05-04T10:00:00Z\n" +
			"    X-Sundial-Trigger: SCHEDULE\n    X-Sundial-Attempt: 1\n    X-Sundial-Delivery: 1\n",
		"    Idempotency-Key: sundial-2-s:1777888800\n",
		"    traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\n",
		"    X-Sundial-Future-Header: kept\n",
		"    body:\n      {\"order\": 42}\n",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("output lacks %q:\n%s", want, printed)
		}
	}
	if strings.Contains(printed, "X-Other") {
		t.Errorf("output shows a header that is not Sundial's:\n%s", printed)
	}

	if status, body := post("/flaky?status=503&delay=10ms", "", nil); status != 503 || body != `{"status":503}` {
		t.Errorf("?status=503&delay=10ms: %d %q, want 503", status, body)
	}
	if !strings.Contains(out.String(), "POST /flaky?status=503&delay=10ms  -> 503 Service Unavailable after 10ms\n") {
		t.Errorf("output lacks the 503 answer:\n%s", out)
	}
	for _, bad := range []struct{ query, want string }{
		{"status=abc", `status "abc": want a number from 200 to 599`},
		{"status=99", `status "99": want a number from 200 to 599`},
		{"status=600", `status "600": want a number from 200 to 599`},
		{"delay=2", `delay "2": want a duration from 0s to 10m`},
		{"delay=1h", `delay "1h": want a duration from 0s to 10m`},
		{"delay=-1s", `delay "-1s": want a duration from 0s to 10m`},
	} {
		status, body := post("/x?"+bad.query, "", nil)
		if status != 400 || !strings.Contains(body, bad.want) {
			t.Errorf("?%s: %d %q, want 400 saying %q", bad.query, status, body, bad.want)
		}
		if !strings.Contains(out.String(), "/x?"+url.PathEscape(bad.query)) && !strings.Contains(out.String(), "/x?"+bad.query) {
			t.Errorf("?%s not printed:\n%s", bad.query, out)
		}
	}

	if err := stop(); err != nil {
		t.Fatalf("target stopped with %v", err)
	}
	if !strings.HasSuffix(out.String(), "Sundial target stopped\n") {
		t.Errorf("no clean stop at the end of the output:\n%s", out)
	}
}

// TestTargetDelayEndsOnStop: a request waiting out its delay does not hold
// the target's stop.
func TestTargetDelayEndsOnStop(t *testing.T) {
	t.Parallel()
	base, out, stop := startTargetCmd(t)
	arrived := out.when("/slow?delay=10m")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Get(base + "/slow?delay=10m")
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	await(t, arrived, 10*time.Second, "the slow request arriving", out)
	if err := stop(); err != nil {
		t.Fatalf("target stopped with %v", err)
	}
	select {
	case <-errc: // the connection was closed without an answer, or answered
	case <-time.After(10 * time.Second):
		t.Fatal("the delayed request still waits after the target stopped")
	}
}

func TestTargetArgs(t *testing.T) {
	t.Parallel()
	res := runArgs(t, "target", "-h")
	if res.err != nil || !strings.HasPrefix(res.stderr, "Usage: sundial target [--listen ADDR]\n\nRun an HTTP target") ||
		!strings.Contains(res.stderr, "(default 127.0.0.1:9000)") {
		t.Errorf("target -h: %v, stderr %q", res.err, res.stderr)
	}
	for _, args := range [][]string{{"target", "--port", "1"}, {"target", "extra"}} {
		if res := runArgs(t, args...); exitCode(res.err) != 2 {
			t.Errorf("%q: %v, want a usage error", args, res.err)
		}
	}
}
