package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkPrecision runs one node on SQLite with SUNDIAL_BENCH_TASKS tasks
// (default 1,000) firing every second for SUNDIAL_BENCH_SECONDS seconds
// (default 10) after a warm-up, and reports the lag (target received minus
// scheduled time) percentiles, in two shapes:
//
//	aligned  every task is "* * * * * *": 1,000 calls due on the same
//	         whole second, the worst case, bound by how fast this machine
//	         can make 1,000 HTTP calls at once
//	spread   every task is "@every 1s", created across one second: 1,000
//	         fires per second spread over the second
//
// SUNDIAL_BENCH_DB picks the database (sqlite, the default; postgres or
// mysql, on the servers of SUNDIAL_TEST_POSTGRES / SUNDIAL_TEST_MYSQL) and
// SUNDIAL_BENCH_NODES how many nodes share it (default 1); the share of the
// fires each node made is reported as share_min_% and share_max_%. Run it
// with
//
//	go test -run XXX -bench Precision -benchtime 1x ./cmd/sundial/
func BenchmarkPrecision(b *testing.B) {
	tasks := envInt("SUNDIAL_BENCH_TASKS", 1000)
	seconds := envInt("SUNDIAL_BENCH_SECONDS", 10)
	workers := envInt("SUNDIAL_BENCH_WORKERS", 64)
	for _, shape := range []string{"aligned", "spread"} {
		b.Run(shape, func(b *testing.B) {
			for b.Loop() {
				lags, lost, shares := precisionRun(b, shape, tasks, seconds, workers)
				slices.Sort(lags)
				ms := func(q float64) float64 {
					return float64(lags[min(len(lags)-1, int(q*float64(len(lags))))]) / float64(time.Millisecond)
				}
				b.ReportMetric(float64(len(lags)), "fires")
				b.ReportMetric(float64(lost), "lost")
				b.ReportMetric(ms(0.50), "p50_ms")
				b.ReportMetric(ms(0.90), "p90_ms")
				b.ReportMetric(ms(0.99), "p99_ms")
				b.ReportMetric(ms(0.999), "p99.9_ms")
				b.ReportMetric(float64(lags[len(lags)-1])/float64(time.Millisecond), "max_ms")
				if len(shares) > 1 {
					b.ReportMetric(slices.Min(shares), "share_min_%")
					b.ReportMetric(slices.Max(shares), "share_max_%")
				}
			}
		})
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// precisionRun measures the fires scheduled in the window and returns their
// lags and how many of them never arrived.
func precisionRun(b *testing.B, shape string, tasks, seconds, workers int) ([]time.Duration, int, []float64) {
	var mu sync.Mutex
	got := map[string]time.Duration{} // Idempotency-Key -> lag
	byNode := map[string]int{}
	var window struct{ from, to time.Time }
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		sched, err := time.Parse(time.RFC3339Nano, r.Header.Get("X-Sundial-Scheduled-Time"))
		if err == nil {
			mu.Lock()
			if !sched.Before(window.from) && sched.Before(window.to) {
				got[r.Header.Get("Idempotency-Key")] = at.Sub(sched)
				byNode[r.Header.Get("X-Sundial-Node")]++
			}
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer target.Close()

	var dsn string
	switch db := os.Getenv("SUNDIAL_BENCH_DB"); db {
	case "", "sqlite":
		dsn = "sqlite:" + filepath.Join(b.TempDir(), "sundial.db")
	case "postgres":
		dsn = freshPostgres(b)
	case "mysql":
		dsn = freshMySQL(b)
	default:
		b.Fatalf("SUNDIAL_BENCH_DB=%q: want sqlite, postgres or mysql", db)
	}
	var nodes []*node
	for range envInt("SUNDIAL_BENCH_NODES", 1) {
		nd := startNodeDB(&testing.T{}, dsn, "--log.level", "error", "--executor.worker_pool_size", strconv.Itoa(workers))
		defer nd.stop(&testing.T{})
		nodes = append(nodes, nd)
	}
	n := nodes[0]
	client := &http.Client{}
	expr, created := "* * * * * *", time.Now()
	if shape == "spread" {
		expr = "@every 1s"
	}
	for i := range tasks {
		if shape == "spread" {
			// Pace the creations over one second: each task's phase is the
			// moment it was created.
			time.Sleep(time.Until(created.Add(time.Duration(i) * time.Second / time.Duration(tasks))))
		}
		body := fmt.Sprintf(`{"name":"bench-%d","cron_expr":%q,"http_method":"POST","target_url":%q,"overlap_action":"PARALLEL"}`,
			i, expr, target.URL)
		resp, err := client.Post(n.url+"/api/v1/tasks", "application/json", bytes.NewReader([]byte(body)))
		if err != nil || resp.StatusCode != 201 {
			b.Fatalf("create task %d: %v %v", i, err, resp)
		}
		resp.Body.Close()
	}
	// Warm up for three seconds, then measure whole seconds.
	start := time.Now().Truncate(time.Second).Add(4 * time.Second)
	mu.Lock()
	window.from, window.to = start, start.Add(time.Duration(seconds)*time.Second)
	mu.Unlock()
	time.Sleep(time.Until(window.to.Add(2 * time.Second)))

	mu.Lock()
	defer mu.Unlock()
	lags := make([]time.Duration, 0, len(got))
	for _, l := range got {
		lags = append(lags, l)
	}
	lost := tasks*seconds - len(lags)
	if !strings.HasPrefix(n.url, "http://127.0.0.1") {
		b.Fatalf("node not on loopback: %s", n.url)
	}
	var shares []float64
	for _, c := range byNode {
		shares = append(shares, 100*float64(c)/float64(len(lags)))
	}
	for len(shares) < len(nodes) {
		shares = append(shares, 0) // a node that fired nothing
	}
	return lags, lost, shares
}

// BenchmarkBurst is the throughput scenario of "sundial bench" with the
// nodes inside the test process, so that -cpuprofile sees the scheduler:
// SUNDIAL_BENCH_BURST_TASKS one-off tasks (default 10,000) all due at the
// same whole second, SUNDIAL_BENCH_BURST_LEAD seconds after the start
// (default 10 + one per 2,000 tasks), delivered to a loopback target. It
// reports the deliveries per second sustained until the last one arrived,
// the seconds until then, and the fires lost and delivered twice.
// SUNDIAL_BENCH_DB, SUNDIAL_BENCH_NODES and SUNDIAL_BENCH_WORKERS are those
// of BenchmarkPrecision; SUNDIAL_BENCH_BURST_LOOKAHEAD (seconds) sets the
// nodes' scheduler.lookahead. Run it with
//
//	SUNDIAL_BENCH_BURST_TASKS=100000 go test -run XXX -bench Burst -benchtime 1x \
//	    -cpuprofile cpu.out ./cmd/sundial/
func BenchmarkBurst(b *testing.B) {
	tasks := envInt("SUNDIAL_BENCH_BURST_TASKS", 10000)
	lead := time.Duration(envInt("SUNDIAL_BENCH_BURST_LEAD", 10+tasks/2000)) * time.Second
	workers := envInt("SUNDIAL_BENCH_WORKERS", 64)
	extra := []string{"--log.level", "error", "--executor.worker_pool_size", strconv.Itoa(workers)}
	if s := envInt("SUNDIAL_BENCH_BURST_LOOKAHEAD", 0); s > 0 {
		extra = append(extra, "--scheduler.lookahead", fmt.Sprintf("%ds", s))
	}
	for b.Loop() {
		b.StopTimer()
		rec, targetURL, stopTarget, err := startTarget()
		if err != nil {
			b.Fatal(err)
		}
		var dsn string
		switch db := os.Getenv("SUNDIAL_BENCH_DB"); db {
		case "", "sqlite":
			dsn = "sqlite:" + filepath.Join(b.TempDir(), "sundial.db")
		case "postgres":
			dsn = freshPostgres(b)
		case "mysql":
			dsn = freshMySQL(b)
		default:
			b.Fatalf("SUNDIAL_BENCH_DB=%q: want sqlite, postgres or mysql", db)
		}
		var nodes []*node
		var apis []string
		for range envInt("SUNDIAL_BENCH_NODES", 1) {
			nd := startNodeDB(&testing.T{}, dsn, extra...)
			nodes = append(nodes, nd)
			apis = append(apis, nd.url)
		}
		b.StartTimer()
		r, err := runBurst(b.Context(), burstConfig{apis: apis, target: targetURL, tasks: tasks,
			lead: lead, timeout: 5 * time.Minute, progress: io.Discard, banner: "burst"}, rec)
		b.StopTimer()
		for _, nd := range nodes {
			nd.stop(&testing.T{})
		}
		stopTarget()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.DeliveriesPerSecond, "deliveries/s")
		b.ReportMetric(r.LastDeliverySeconds, "last_s")
		b.ReportMetric(r.LagMS.P50, "p50_ms")
		b.ReportMetric(r.LagMS.P99, "p99_ms")
		b.ReportMetric(float64(r.Lost), "lost")
		b.ReportMetric(float64(r.Duplicates), "dup")
		b.ReportMetric(r.CreateSeconds, "create_s")
		b.StartTimer() // b.Loop wants it running
	}
}
