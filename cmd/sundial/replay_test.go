package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLIDeadLetters, end to end against a loopback target: runs that
// failed for good are listed as dead letters; once the target answers
// 200, one replayed by id succeeds, recording the run it replays, and the
// others replayed in bulk by task succeed too; a replay naming a run that
// is no dead letter replays nothing.
func TestCLIDeadLetters(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	target.status = 500
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: flaky\ncron_expr: \"0 0 0 1 1 * 2099\"\ntarget_url: "+target.srv.URL+"/f\n")
	mustCLI(t, env, "task", "create", "-f", file)
	var failed []string
	for range 3 {
		res := runCLI(t, env, "", "task", "trigger", "flaky", "--wait")
		if res.err == nil || !strings.Contains(res.stdout, "FAILED") {
			t.Fatalf("trigger of a failing task: %v\n%s", res.err, res.stdout)
		}
		failed = append(failed, strings.TrimPrefix(strings.Fields(res.stdout)[0], "run/"))
	}
	target.wait(t, 3, 10*time.Second)
	// A success is no dead letter.
	target.mu.Lock()
	target.status = 200
	target.mu.Unlock()
	ok := strings.TrimPrefix(strings.Fields(mustCLI(t, env, "task", "trigger", "flaky", "--wait"))[0], "run/")
	target.wait(t, 1, 10*time.Second)

	dead := mustCLI(t, env, "run", "ls", "--task", "flaky", "--dead-letter", "-o", "name")
	if dead != fmt.Sprintf("run/%s\nrun/%s\nrun/%s\n", failed[2], failed[1], failed[0]) {
		t.Fatalf("run ls --dead-letter:\n%s", dead)
	}
	failCLI(t, env, 1, []string{"(field ids[1]", "not a dead letter"}, "run", "replay", failed[0], ok)

	one := mustCLI(t, env, "run", "replay", failed[0])
	m := regexp.MustCompile(`^run/` + failed[0] + ` replayed: run/(\d+) (RUNNING|SUCCESS)`).FindStringSubmatch(one)
	if m == nil {
		t.Fatalf("run replay: %q", one)
	}
	target.wait(t, 1, 10*time.Second)
	waitFor(t, func() bool {
		var r struct {
			Status  string `json:"status"`
			RerunOf int64  `json:"rerun_of"`
		}
		if err := json.Unmarshal([]byte(mustCLI(t, env, "run", "get", m[1], "-o", "json")), &r); err != nil {
			t.Fatal(err)
		}
		return r.Status == "SUCCESS" && fmt.Sprint(r.RerunOf) == failed[0]
	})

	bulk := mustCLI(t, env, "run", "replay", "--task", "flaky", "--since", "1h")
	// The three dead letters, oldest first (the first one replayed is one
	// still: a replay leaves it as it was).
	if !regexp.MustCompile(`^run/` + failed[0] + ` replayed: run/\d+ \S+.*\nrun/` + failed[1] + ` replayed: run/\d+ \S+.*\nrun/` +
		failed[2] + ` replayed: run/\d+ \S+.*\n$`).MatchString(bulk) {
		t.Fatalf("run replay --task:\n%s", bulk)
	}
	target.wait(t, 3, 10*time.Second)
	waitFor(t, func() bool {
		out := mustCLI(t, env, "run", "ls", "--task", "flaky", "--trigger", "MANUAL", "--status", "SUCCESS", "-o", "name")
		return strings.Count(out, "run/") == 5 // the success, one replay, then three
	})
	failCLI(t, env, 2, []string{"--task or --selector"}, "run", "replay")
}
