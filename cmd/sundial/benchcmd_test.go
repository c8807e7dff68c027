package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchPrecisionCommand runs "sundial bench precision" (the built
// binary, which starts a node of its own) on a small load and checks its
// report: every expected fire received once, the node's resources, and
// the rows its database wrote per fire.
func TestBenchPrecisionCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	var r struct {
		Expected  int `json:"fires_expected"`
		Received  int `json:"fires_received"`
		Lost      int `json:"lost"`
		Dups      int `json:"duplicates"`
		NodeStats []struct {
			CPU float64 `json:"cpu_seconds"`
			RSS int64   `json:"peak_rss_bytes"`
		} `json:"node_stats"`
		Floor []struct {
			Workers int `json:"workers"`
			LagMS   struct {
				P99 float64 `json:"p99"`
			} `json:"lag_ms"`
		} `json:"floor"`
		OverFloor   float64 `json:"p99_over_floor"`
		RowsPerFire float64 `json:"db_rows_per_fire"`
		Rows        struct {
			Source     string             `json:"source"`
			Deliveries float64            `json:"deliveries"`
			PerFire    float64            `json:"per_fire"`
			ByTable    map[string]float64 `json:"per_fire_by_table"`
		} `json:"db_rows"`
	}
	out, _ := benchReport(t, &r, "bench", "precision", "--tasks", "20", "--duration", "2s", "--warmup", "1s")
	if r.Expected != 40 || r.Received != 40 || r.Lost != 0 || r.Dups != 0 {
		t.Errorf("report %+v, want 40 fires expected and received once each", r)
	}
	if len(r.NodeStats) != 1 || r.NodeStats[0].RSS <= 0 || r.NodeStats[0].CPU <= 0 {
		t.Errorf("node stats %+v, want one node with CPU and RSS", r.NodeStats)
	}
	if !strings.Contains(out, "lag (ms)") || !strings.Contains(out, "p99 / floor") {
		t.Errorf("no table, or no floor in it, in the output:\n%s", out)
	}
	// Aligned (the default), the floor comes first: 16, 64 and 256 workers.
	if len(r.Floor) != 3 || r.Floor[0].Workers != 16 || r.Floor[2].Workers != 256 || r.Floor[0].LagMS.P99 <= 0 || r.OverFloor <= 0 {
		t.Errorf("floor %+v, ratio %v; want three floors measured and the ratio", r.Floor, r.OverFloor)
	}
	// Every fire delivered had its run updated (claimed and started, then
	// finished), and, delivered once, no attempt row inserted.
	if rr := r.Rows; rr.Source != rowsWrittenMetric || rr.Deliveries <= 0 || rr.PerFire != r.RowsPerFire ||
		rr.ByTable["runs.updated"] <= 0 || rr.ByTable["run_attempts.inserted"] != 0 {
		t.Errorf("rows written %+v (per fire %v), want SQLite's count, runs updated and no attempt inserted", rr, r.RowsPerFire)
	}
	if !strings.Contains(out, "written per fire: ") {
		t.Errorf("no rows written in the table:\n%s", out)
	}
}

// TestBenchPrecisionServer measures a node the bench did not start
// (--server): every fire arrives once, the report names no node of its
// own, and the tasks it created are gone from the node afterwards.
func TestBenchPrecisionServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	defer n.stop(t)
	var r struct {
		Backend   string `json:"backend"`
		Expected  int    `json:"fires_expected"`
		Received  int    `json:"fires_received"`
		Lost      int    `json:"lost"`
		Dups      int    `json:"duplicates"`
		NodeStats []any  `json:"node_stats"`
	}
	benchReport(t, &r, "bench", "precision", "--server", n.url, "--tasks", "10", "--duration", "2s", "--warmup", "1s", "--floor=false")
	if r.Backend != "server" || r.Expected != 20 || r.Received != 20 || r.Lost != 0 || r.Dups != 0 || len(r.NodeStats) != 0 {
		t.Errorf("report %+v, want 20 fires from the server, received once each, no node stats", r)
	}
	var list struct {
		Items []any `json:"items"`
	}
	n.do(t, "GET", "/api/v1/tasks", "", http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Errorf("%d tasks left on the server after the bench, want 0", len(list.Items))
	}
}

// TestBenchThroughputCommand runs "sundial bench throughput" (the built
// binary, which starts a node of its own) on a small burst of one-off tasks
// on SQLite and checks its report: every fire delivered exactly once, a
// rate, and the node's resources.
func TestBenchThroughputCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	var r struct {
		Scenario     string             `json:"scenario"`
		Expected     int                `json:"fires_expected"`
		Received     int                `json:"fires_received"`
		Lost         int                `json:"lost"`
		Dups         int                `json:"duplicates"`
		Lag          map[string]float64 `json:"lag_ms"`
		DueAt        time.Time          `json:"due_at"`
		LastDelivery float64            `json:"last_delivery_seconds"`
		Rate         float64            `json:"deliveries_per_second"`
		NodeStats    []struct {
			CPU       float64 `json:"cpu_seconds"`
			RSS       int64   `json:"peak_rss_bytes"`
			CreateCPU float64 `json:"create_cpu_seconds"`
		} `json:"node_stats"`
	}
	out, stderr := benchReport(t, &r, "bench", "throughput", "--tasks", "300", "--lead", "3s", "--timeout", "20s")
	if r.Scenario != "throughput" || r.Expected != 300 || r.Received != 300 || r.Lost != 0 || r.Dups != 0 {
		t.Errorf("report %+v, want 300 fires expected and received once each", r)
	}
	if r.DueAt.IsZero() || r.LastDelivery <= 0 || r.Rate <= 0 || r.Lag["max"] <= 0 || r.Lag["p50"] > r.Lag["max"] {
		t.Errorf("report %+v, want a due instant, a last delivery after it, a rate and lags", r)
	}
	if len(r.NodeStats) != 1 || r.NodeStats[0].RSS <= 0 || r.NodeStats[0].CPU <= 0 {
		t.Errorf("node stats %+v, want one node with CPU and RSS", r.NodeStats)
	}
	for _, want := range []string{"last delivery", "deliveries per second sustained", "300 expected, 300 received, 0 lost, 0 duplicates"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "300/300 delivered so far") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
}

// TestBenchThroughputFloorUsage: --floor is a bare pgx program's burst,
// so it wants a PostgreSQL --db and the bench's own nodes; anything else
// is a usage error that says so, before any work.
func TestBenchThroughputFloorUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--floor"}, // sqlite, the default
		{"--floor", "--db", "sqlite"},
		{"--floor", "--db", "mysql://root:secret@127.0.0.1:3306/test"},
		{"--floor", "--db", "postgres://postgres@127.0.0.1:5432/test", "--server", "http://127.0.0.1:8080"},
	} {
		var stdout, stderr strings.Builder
		err := runBench(t.Context(), append([]string{"throughput", "--tasks", "10"}, args...), &stdout, &stderr)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "--floor: only for a postgres:// --db") {
			t.Errorf("bench throughput %s: %v (exit %d), want a usage error that --floor is only for a postgres:// --db",
				strings.Join(args, " "), err, exitCode(err))
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("bench throughput %s: %v quotes the password", strings.Join(args, " "), err)
		}
	}
	var stdout, stderr strings.Builder
	err := runBench(t.Context(), []string{"throughput", "--tasks", "10", "--floor-indexes", "--db", "postgres://postgres@127.0.0.1:5432/test"}, &stdout, &stderr)
	if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "--floor-indexes: only with --floor") {
		t.Errorf("bench throughput --floor-indexes without --floor: %v (exit %d), want a usage error", err, exitCode(err))
	}
}

// TestBenchThroughputFloor runs "sundial bench throughput --floor" on
// PostgreSQL (SUNDIAL_TEST_POSTGRES): the durable floor first, then the
// node's burst, and the report gives both rates and their ratio.
func TestBenchThroughputFloor(t *testing.T) {
	t.Parallel()
	server := requireEnv(t, "SUNDIAL_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	var r struct {
		Received      int     `json:"fires_received"`
		Lost          int     `json:"lost"`
		Dups          int     `json:"duplicates"`
		Rate          float64 `json:"deliveries_per_second"`
		FloorRate     float64 `json:"durable_floor_per_second"`
		RateOverFloor float64 `json:"rate_over_durable_floor"`
		Floor         struct {
			Tasks   int     `json:"tasks"`
			Senders int     `json:"senders"`
			Rate    float64 `json:"deliveries_per_second"`
		} `json:"durable_floor"`
	}
	out, stderr := benchReport(t, &r, "bench", "throughput", "--db", server, "--tasks", "300", "--workers", "16",
		"--lead", "3s", "--timeout", "20s", "--floor")
	if r.Received != 300 || r.Lost != 0 || r.Dups != 0 {
		t.Errorf("report %+v, want 300 fires received once each", r)
	}
	if r.Floor.Tasks != 300 || r.Floor.Senders != 16 || r.FloorRate <= 0 || r.FloorRate != r.Floor.Rate ||
		r.RateOverFloor <= 0 || math.Abs(r.RateOverFloor-r.Rate/r.FloorRate) > 1e-9 {
		t.Errorf("report %+v, want the floor's 300 jobs with 16 senders, its rate and the ratio", r)
	}
	if !strings.Contains(out, "rate / floor") || !strings.Contains(stderr, "bench: durable floor: 300 delivered in") {
		t.Errorf("no floor in the table or in the progress:\n%s\n%s", out, stderr)
	}
}

// TestBenchScaleCommand runs "sundial bench scale" on a few tasks, of
// cron tasks and of one-off tasks, and checks its report: the measured
// fires received once each, start-up, memory, idle CPU and lags.
func TestBenchScaleCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, tc := range []struct {
		kind  string
		flags []string
		fires int
	}{
		// 60 tasks, one per second of the minute: 5 fires in 5 s.
		{"cron", nil, 5},
		// 60 one-off tasks due in the 5 s window, once each.
		{"oneoff", []string{"--oneoff"}, 60},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"bench", "scale", "--tasks", "3000", "--baseline", "200",
				"--minutely", "60", "--idle", "5s", "--settle", "1s"}, tc.flags...)
			var r struct {
				Scenario string `json:"scenario"`
				Kind     string `json:"kind"`
				Runs     []struct {
					Kind     string             `json:"kind"`
					Tasks    int                `json:"tasks"`
					Startup  float64            `json:"startup_seconds"`
					RSS      int64              `json:"rss_bytes"`
					IdleCPU  float64            `json:"idle_cpu_per_second"`
					Fires    int                `json:"fires_expected"`
					Received int                `json:"fires_received"`
					Lost     int                `json:"lost"`
					Dups     int                `json:"duplicates"`
					Lag      map[string]float64 `json:"lag_ms"`
				} `json:"runs"`
			}
			out, _ := benchReport(t, &r, args...)
			if r.Scenario != "scale" || r.Kind != tc.kind || len(r.Runs) != 2 || r.Runs[0].Tasks != 200 || r.Runs[1].Tasks != 3000 {
				t.Fatalf("report %+v, want %s runs of 200 and 3000 tasks", r, tc.kind)
			}
			for _, run := range r.Runs {
				if run.Kind != tc.kind || run.Fires != tc.fires || run.Received != tc.fires || run.Lost != 0 || run.Dups != 0 {
					t.Errorf("%d tasks: kind %q, %d fires expected, %d received, %d lost, %d dup; want %s, %d, %d, 0, 0",
						run.Tasks, run.Kind, run.Fires, run.Received, run.Lost, run.Dups, tc.kind, tc.fires, tc.fires)
				}
				if run.Startup <= 0 || run.RSS <= 0 || run.IdleCPU <= 0 || run.Lag["max"] <= 0 {
					t.Errorf("%d tasks: %+v, want start-up, RSS, idle CPU and lags", run.Tasks, run)
				}
			}
			if !strings.Contains(out, "idle CPU s/s") || !strings.Contains(out, tc.kind+" ") {
				t.Errorf("no table of %s tasks:\n%s", tc.kind, out)
			}
		})
	}
}

func TestBenchFailoverCommand(t *testing.T) {
	t.Parallel()
	server := requireEnv(t, "SUNDIAL_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	var r struct {
		Scenario string  `json:"scenario"`
		Expected int     `json:"fires_expected"`
		Received int     `json:"fires_received"`
		Lost     int     `json:"lost"`
		Resume   float64 `json:"resume_seconds"`
		Kills    []struct {
			Node string `json:"node"`
		} `json:"kills"`
	}
	_, stderr := benchReport(t, &r, "bench", "failover", "--db", server, "--nodes", "2", "--tasks", "20",
		"--every", "4s", "--duration", "8s", "--dead-after", "2s")
	// 20 tasks every second for 8 s, two kills.
	if r.Scenario != "failover" || r.Expected != 160 || r.Received != 160 || r.Lost != 0 || len(r.Kills) != 2 {
		t.Errorf("report %+v, want 160 fires received, none lost, 2 kills", r)
	}
	if r.Resume <= 0 || r.Resume > 10 {
		t.Errorf("resume %.2f s, want a wait after the kills, bounded by dead_after and a claim", r.Resume)
	}
	if !strings.Contains(stderr, "killed node") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
}

// benchReport runs the built binary with args, fails the test if it fails,
// decodes the last line of its output (the JSON report) into report, and
// returns its output and what it wrote on stderr.
func benchReport(t *testing.T, report any, args ...string) (out, stderr string) {
	t.Helper()
	cmd := exec.Command(sundialBinary(t), args...)
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("sundial %s: %v\n%s\n%s", strings.Join(args, " "), err, b, errBuf.String())
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), report); err != nil {
		t.Fatalf("last line is not the JSON report: %v\n%s", err, b)
	}
	return string(b), errBuf.String()
}

// TestParseRowsWritten reads the rows written from a node's /metrics.
func TestParseRowsWritten(t *testing.T) {
	t.Parallel()
	m, err := parseRowsWritten(strings.NewReader(`# HELP sundial_db_rows_written_total Rows.
# TYPE sundial_db_rows_written_total counter
sundial_db_rows_written_total{op="insert",table="runs"} 1200
sundial_db_rows_written_total{op="update",table="runs"} 2.4e+06
sundial_db_rows_written_total{op="delete",table="run_attempts"} 0
sundial_db_rows_written_totals{op="insert",table="runs"} 7
sundial_fires_total{status="SUCCESS"} 1200
`))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"runs.insert": 1200, "runs.update": 2400000, "run_attempts.delete": 0}; fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("parseRowsWritten = %v, want %v", m, want)
	}
	if _, err := parseRowsWritten(strings.NewReader("sundial_fires_total{status=\"SUCCESS\"} 1\n")); err == nil {
		t.Error("parseRowsWritten of metrics without the rows written: no error")
	}
}
