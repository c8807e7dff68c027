package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestCLIRunTail: run tail prints a fire's outcome, as it comes: a line
// with its time, task, run, status, lag and duration, within a second of
// the delivery; -o json the events themselves. A task that is not there is
// an error.
func TestCLIRunTail(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	working, failing := newHook(t), newHook(t)
	failing.mu.Lock()
	failing.status = 503
	failing.mu.Unlock()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"tick","cron_expr":"* * * * * *","target_url":%q}`, working.srv.URL+"/x"), 201, nil)
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"broken","cron_expr":"0 0 0 1 1 * 2099","target_url":%q}`, failing.srv.URL+"/x"), 201, nil)
	failCLI(t, env, 1, []string{`task "nope" not found`}, "run", "tail", "--task", "nope")

	tail := func(args ...string) (*watchBuffer, context.CancelFunc, chan error) {
		out := &watchBuffer{}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, append([]string{"run", "tail"}, args...), func(k string) string { return env[k] },
				strings.NewReader(""), out, out)
		}()
		return out, cancel, done
	}
	text, stopText, textDone := tail("--task", "tick")
	jsonOut, stopJSON, jsonDone := tail("-o", "json", "--task", "broken")

	// Once tail prints tick's runs, the next delivery of tick, and its
	// line within a second.
	await(t, text.when("  tick  run/"), 10*time.Second, "a line of tick's", text)
	for len(working.arrived) > 0 {
		<-working.arrived
	}
	d := working.wait(t, 1, 10*time.Second)[0]
	line := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  tick  run/` + d.runID + `  SUCCESS  lag \S+  took \S+$`)
	await(t, text.whenFunc(line.MatchString), 5*time.Second, "the line of tick's run "+d.runID, text)
	if late := time.Since(d.at); late >= time.Second {
		t.Errorf("the line came %s after the delivery", late)
	}
	if strings.Contains(text.String(), "\x1b[") {
		t.Errorf("color on a pipe: %q", text)
	}

	// A failing trigger: FAILED with its HTTP status and error. (The
	// stream of the second tail opens when it does: trigger until it
	// prints one.)
	failed := jsonOut.when(`"status":"FAILED"`)
	for i := 0; ; i++ {
		n.do(t, "POST", "/api/v1/tasks/2/trigger", "", 202, nil)
		select {
		case <-failed:
		case <-time.After(2 * time.Second):
			if i < 5 {
				continue
			}
			t.Fatalf("no FAILED run printed by tail -o json:\n%s", jsonOut)
		}
		break
	}
	var e sundial.Event
	first, _, _ := strings.Cut(jsonOut.String(), "\n")
	if err := json.Unmarshal([]byte(first), &e); err != nil || e.Kind != sundial.EventRunFinished || e.Task.Name != "broken" ||
		e.Run.HTTPStatus != 503 || e.Run.Trigger != sundial.TriggerManual {
		t.Errorf("-o json line %q: %+v, %v", first, e, err)
	}
	if strings.Contains(text.String(), "broken") {
		t.Errorf("tail --task tick printed broken's run:\n%s", text)
	}
	stopText()
	stopJSON()
	for _, done := range []chan error{textDone, jsonDone} {
		if err := <-done; err != nil {
			t.Errorf("tail ended with %v, want nil on Ctrl-C", err)
		}
	}
}

// TestTailLine: the line of an outcome names what a reader looks for, in
// color on a terminal.
func TestTailLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 4, 3, 0, 0, 0, time.Local)
	start, end := at.Add(12*time.Millisecond), at.Add(103*time.Millisecond)
	due := at.Add(time.Minute)
	for _, tc := range []struct {
		e     sundial.Event
		color bool
		want  string
	}{
		{sundial.Event{Kind: sundial.EventRunFinished, At: end, Task: sundial.EventTask{ID: 7, Name: "nightly"},
			Run: &sundial.EventRun{ID: 1811, Status: sundial.RunFailed, Trigger: sundial.TriggerSchedule, ScheduledTime: at,
				Delivery: 1, StartedAt: &start, FinishedAt: &end, HTTPStatus: 503, Error: "HTTP 503 Service Unavailable"}}, false,
			"2026-05-04 03:00:00.103  nightly  run/1811  FAILED  lag 12ms  took 91ms  HTTP 503: HTTP 503 Service Unavailable"},
		{sundial.Event{Kind: sundial.EventRunFinished, At: end, Task: sundial.EventTask{ID: 7, Name: "nightly"},
			Run: &sundial.EventRun{ID: 1812, Status: sundial.RunSuccess, Trigger: sundial.TriggerSchedule, ScheduledTime: at,
				Delivery: 1, StartedAt: &start, FinishedAt: &end, HTTPStatus: 200}}, true,
			"2026-05-04 03:00:00.103  nightly  run/1812  \x1b[32mSUCCESS\x1b[0m  lag 12ms  took 91ms"},
		{sundial.Event{Kind: sundial.EventRunRetrying, At: end, Task: sundial.EventTask{ID: 7},
			Run: &sundial.EventRun{ID: 1813, Status: sundial.RunScheduled, Trigger: sundial.TriggerManual, ScheduledTime: at,
				Delivery: 2, StartedAt: &start, FinishedAt: &end, DueAt: &due, Error: "timed out"}}, false,
			"2026-05-04 03:00:00.103  task/7  run/1813  RETRYING  took 91ms  delivery 2  timed out; next delivery 03:01:00.000"},
		{sundial.Event{Kind: sundial.EventRunFinished, At: end, Task: sundial.EventTask{ID: 7, Name: "nightly"},
			Run: &sundial.EventRun{ID: 1814, Status: sundial.RunSkipped, SkipReason: sundial.SkipMisfire, Trigger: sundial.TriggerCatchUp,
				ScheduledTime: at, FinishedAt: &end, MissedCount: 3}}, false,
			"2026-05-04 03:00:00.103  nightly  run/1814  SKIPPED (MISFIRE)  3 missed"},
	} {
		if got := tailLine(tc.e, tc.color); got != tc.want {
			t.Errorf("tailLine:\n got  %q\n want %q", got, tc.want)
		}
	}
}

// TestCLITaskWatch: task ls --watch prints the table again when the tasks
// change.
func TestCLITaskWatch(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	failCLI(t, env, 2, []string{"--watch prints a table"}, "task", "ls", "--watch", "-o", "json")
	n.do(t, "POST", "/api/v1/tasks", `{"name":"first","cron_expr":"0 0 0 1 1 * 2099","target_url":"https://example.com/x"}`, 201, nil)
	out := &watchBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"task", "ls", "--watch"}, func(k string) string { return env[k] }, strings.NewReader(""), out, out)
	}()
	await(t, out.when("first"), 10*time.Second, "the first table", out)
	// The stream opens after the first table: a change made then may come
	// before it. Make changes until one is seen.
	seen := out.when("second")
	for i := 0; ; i++ {
		n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"second-%d","cron_expr":"0 0 0 1 1 * 2099","target_url":"https://example.com/x"}`, i), 201, nil)
		select {
		case <-seen:
		case <-time.After(2 * time.Second):
			if i < 5 {
				continue
			}
			t.Fatalf("the table was not printed again after a task was created:\n%s", out)
		}
		break
	}
	if tables := strings.Count(out.String(), "NAME "); tables < 2 {
		t.Errorf("%d tables printed, want the first and another:\n%s", tables, out)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("task ls --watch ended with %v, want nil on Ctrl-C", err)
	}
}
