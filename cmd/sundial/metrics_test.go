package main

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// metricValue reads one sample of the node's /metrics, -1 if absent.
func metricValue(t *testing.T, n *node, name string) float64 {
	t.Helper()
	resp, err := http.Get(n.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// waitMetric polls /metrics until ok accepts the sample, for at most 15 s.
func waitMetric(t *testing.T, n *node, name, what string, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := metricValue(t, n, name)
		if ok(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %s", name, v, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestServeMetrics reads the scheduler's metrics through /metrics: the lag
// of every first delivery is observed, and a retry counts in
// sundial_retries_total whichever path decided it (a failed callback, an
// expired callback deadline); the rows SQLite wrote count by table and
// op.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))

	h := newHook(t)
	createTask(t, n, h.srv.URL, "")
	h.wait(t, 3, 10*time.Second)
	waitMetric(t, n, "sundial_fire_lag_seconds_count", "at least the 3 first deliveries seen",
		func(v float64) bool { return v >= 3 })
	// Each first delivery's run was inserted by the planner, and updated
	// when it was claimed and started, then when its outcome was recorded
	// (its one attempt stays on the run: no attempt row).
	waitMetric(t, n, `sundial_db_rows_written_total{op="insert",table="runs"}`, "at least 3",
		func(v float64) bool { return v >= 3 })
	waitMetric(t, n, `sundial_db_rows_written_total{op="update",table="runs"}`, "at least 6",
		func(v float64) bool { return v >= 6 })

	if v := metricValue(t, n, "sundial_retries_total"); v != 0 {
		t.Fatalf("sundial_retries_total = %v before any retry, want 0", v)
	}
	tgt := newAsyncTarget(t, nil)
	// A callback that reports FAILED: retried under the policy.
	task := asyncCreate(t, n, tgt.srv.URL, `,"retry_policy":{"max_attempts":2,"initial_backoff":"1h","max_backoff":"1h"}`)
	c := tgt.next(t, 10*time.Second)
	if c.taskID != strconv.FormatInt(task.ID, 10) {
		t.Fatalf("delivery of task %s, want %d", c.taskID, task.ID)
	}
	asyncExpect(t, "failed callback", 200, "", "", "POST", c.cbURL, "header", c.token, `{"status":"FAILED"}`)
	waitMetric(t, n, "sundial_retries_total", "1 after a callback's FAILED was retried",
		func(v float64) bool { return v == 1 })

	// No callback before the deadline: retried under the policy.
	asyncCreate(t, n, tgt.srv.URL, `,"callback_timeout_sec":1,"retry_policy":{"max_attempts":2,"initial_backoff":"1h","max_backoff":"1h"}`)
	tgt.next(t, 10*time.Second)
	waitMetric(t, n, "sundial_retries_total", "2 after an expired callback deadline was retried",
		func(v float64) bool { return v == 2 })
}
