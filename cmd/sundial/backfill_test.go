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

// TestCLIBackfill, end to end against a loopback target: a dry run lists
// the task's past fire times oldest first and runs nothing; the backfill
// delivers each time once, oldest first, as a BACKFILL run scheduled at
// it; repeated, it makes no run; bad ranges are refused naming the flag.
func TestCLIBackfill(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	// New Year's midnight in UTC: 2024, 2025 and 2026 lie in the range.
	writeText(t, file, "name: yearly\ncron_expr: \"0 0 0 1 1 *\"\ntarget_url: "+target.srv.URL+"/y\n")
	mustCLI(t, env, "task", "create", "-f", file)
	years := []time.Time{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	args := []string{"task", "backfill", "yearly", "--from", "2023-06-01T00:00:00Z", "--to", "2026-06-01T00:00:00Z"}

	dry := mustCLI(t, env, append(args, "--dry-run")...)
	if !regexp.MustCompile(`^TIME \(UTC\) +RUN +STATUS\n2024-01-01 00:00:00 +- +would run\n2025-01-01 00:00:00 +- +would run\n` +
		`2026-01-01 00:00:00 +- +would run\ndry run: 3 fire times, 0 backfilled before, 3 would run\n$`).MatchString(dry) {
		t.Fatalf("backfill --dry-run:\n%s", dry)
	}

	var resp struct {
		Created int `json:"created"`
		Items   []struct {
			RunID int64 `json:"run_id"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, env, append(args, "-o", "json")...)), &resp); err != nil || resp.Created != 3 {
		t.Fatalf("backfill: %+v, %v", resp, err)
	}
	got := target.wait(t, 3, 10*time.Second)
	seen := map[int64]bool{}
	for _, d := range got {
		seen[d.scheduled.Unix()] = true
		if want := fmt.Sprintf("sundial-1-b:%d", d.scheduled.Unix()); d.key != want {
			t.Errorf("Idempotency-Key %q, want %q", d.key, want)
		}
	}
	for _, y := range years {
		if !seen[y.Unix()] {
			t.Errorf("no delivery scheduled at %s: %+v", y, got)
		}
	}
	runs := func() string {
		return mustCLI(t, env, "run", "ls", "--task", "yearly", "--trigger", "BACKFILL", "-o", "name")
	}
	waitFor(t, func() bool {
		out := mustCLI(t, env, "run", "ls", "--task", "yearly", "--trigger", "BACKFILL", "--status", "SUCCESS", "-o", "name")
		return strings.Count(out, "run/") == 3
	})

	again := mustCLI(t, env, args...)
	if !strings.HasSuffix(again, "3 fire times: 0 runs made, 3 backfilled before\n") ||
		strings.Count(again, "SUCCESS (backfilled before)") != 3 {
		t.Errorf("backfill again:\n%s", again)
	}
	if out := runs(); strings.Count(out, "run/") != 3 {
		t.Errorf("backfilled runs after a repeat:\n%s", out)
	}
	target.mu.Lock()
	if len(target.got) != 3 {
		t.Errorf("%d deliveries, want 3", len(target.got))
	}
	target.mu.Unlock()

	failCLI(t, env, 1, []string{"(field to", "future"}, "task", "backfill", "yearly", "--from", "24h", "--to", "2099-01-01T00:00:00Z")
	failCLI(t, env, 1, []string{"(field from", "before to"}, "task", "backfill", "yearly", "--from", "1h", "--to", "2h")
	failCLI(t, env, 2, []string{"--from is required"}, "task", "backfill", "yearly")
	failCLI(t, env, 2, []string{"--cancel takes no"}, "task", "backfill", "yearly", "--cancel", "--dry-run")
	if out := mustCLI(t, env, "task", "backfill", "yearly", "--cancel"); out != "task/yearly: 0 backfilled runs canceled\n" {
		t.Errorf("backfill --cancel: %q", out)
	}
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
