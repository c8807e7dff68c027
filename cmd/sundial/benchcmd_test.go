package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestBenchPrecisionCommand runs "sundial bench precision" (the built
// binary, which starts a node of its own) on a small load and checks its
// report: every expected fire received once, and the node's resources.
func TestBenchPrecisionCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	out, err := exec.Command(sundialBinary(t), "bench", "precision", "--tasks", "20", "--duration", "2s",
		"--warmup", "1s").Output()
	if err != nil {
		t.Fatalf("sundial bench: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r struct {
		Expected  int `json:"fires_expected"`
		Received  int `json:"fires_received"`
		Lost      int `json:"lost"`
		Dups      int `json:"duplicates"`
		NodeStats []struct {
			CPU float64 `json:"cpu_seconds"`
			RSS int64   `json:"peak_rss_bytes"`
		} `json:"node_stats"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("last line is not the JSON report: %v\n%s", err, out)
	}
	if r.Expected != 40 || r.Received != 40 || r.Lost != 0 || r.Dups != 0 {
		t.Errorf("report %+v, want 40 fires expected and received once each", r)
	}
	if len(r.NodeStats) != 1 || r.NodeStats[0].RSS <= 0 || r.NodeStats[0].CPU <= 0 {
		t.Errorf("node stats %+v, want one node with CPU and RSS", r.NodeStats)
	}
	if !strings.Contains(string(out), "lag (ms)") {
		t.Errorf("no table in the output:\n%s", out)
	}
}
