package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentile(t *testing.T) {
	t.Parallel()
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, ms(i))
	}
	tests := []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{[]time.Duration{ms(7)}, 0.5, ms(7)},
		{[]time.Duration{ms(7)}, 0.999, ms(7)},
		{hundred, 0.50, ms(50)}, // 50 of 100 at or below 50 ms
		{hundred, 0.90, ms(90)},
		{hundred, 0.99, ms(99)},
		{hundred, 0.999, ms(100)}, // 99.9 of 100 values: the 100th
		{hundred, 1, ms(100)},
		{[]time.Duration{ms(1), ms(2), ms(3)}, 0.5, ms(2)},
		{[]time.Duration{ms(1), ms(2), ms(3), ms(4)}, 0.5, ms(2)},
	}
	for _, tc := range tests {
		if got := Percentile(tc.in, tc.q); got != tc.want {
			t.Errorf("Percentile(%d values, %v) = %s, want %s", len(tc.in), tc.q, got, tc.want)
		}
	}
}

func TestAnalyze(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	var expected []Fire
	for _, task := range []string{"1", "2"} {
		for s := 1; s <= 5; s++ {
			expected = append(expected, Fire{task, sec(s)})
		}
	}
	var got []Arrival
	add := func(task string, s int, lag time.Duration, node string) {
		got = append(got, Arrival{At: sec(s).Add(lag), Scheduled: sec(s), Task: task, Key: task + "-" + sec(s).String(), Node: node})
	}
	for s := 1; s <= 5; s++ {
		add("1", s, ms(s), "a") // lags 1..5 ms
	}
	for s := 1; s <= 3; s++ {
		add("2", s, ms(10*s), "b") // lags 10, 20, 30 ms; seconds 4 and 5 lost
	}
	add("2", 2, ms(900), "a")                                                                                 // a duplicate, later: lag stays the first's
	add("2", 1, ms(5), "a")                                                                                   // a duplicate that came first: lag 5 ms
	add("1", 9, ms(1), "a")                                                                                   // outside the window: ignored
	add("1", 0, ms(1), "a")                                                                                   // warm-up: ignored
	add("3", 1, ms(1), "b")                                                                                   // an unknown task in the window: unexpected
	got = append(got, Arrival{At: sec(2).Add(ms(600)), Scheduled: sec(2).Add(ms(500)), Task: "1", Node: "a"}) // off schedule: unexpected

	r := Analyze(expected, got, sec(1), sec(6))
	if r.Expected != 10 || r.Received != 8 || r.Lost != 2 || r.Duplicates != 2 || r.Unexpected != 2 {
		t.Fatalf("accounting = expected %d received %d lost %d duplicates %d unexpected %d; want 10 8 2 2 2",
			r.Expected, r.Received, r.Lost, r.Duplicates, r.Unexpected)
	}
	// First-delivery lags: 1 2 3 4 5 | 5 20 30 (task 2 second 1 came first at 5 ms).
	want := Percentiles{P50: 4, P90: 30, P99: 30, P999: 30, Max: 30}
	if r.LagMS != want {
		t.Errorf("lag = %+v, want %+v", r.LagMS, want)
	}
	if r.FiresPerSecond != 8.0/5 {
		t.Errorf("rate = %v, want 1.6", r.FiresPerSecond)
	}
	// The p99 of each second: 5 (1, 5), 20 (2, 20), 30 (3, 30), 4, 5.
	if s := r.BySecond; s == nil || *s != (SecondsP99{Seconds: 5, Median: 5, Max: 30}) {
		t.Errorf("p99 by second = %+v, want 5 seconds, median 5, max 30", s)
	}
	// Deliveries of expected fires by node: a 5 + 2 duplicates, b 3.
	if math.Abs(r.Share["a"]-70) > 1e-9 || math.Abs(r.Share["b"]-30) > 1e-9 {
		t.Errorf("share = %v, want a 70%%, b 30%%", r.Share)
	}
}

func TestReportOutput(t *testing.T) {
	t.Parallel()
	r := Report{Scenario: "precision", Backend: "sqlite", Nodes: 1, Tasks: 10, WindowSeconds: 5,
		Expected: 50, Received: 50, LagMS: Percentiles{P50: 0.5, P99: 2}, FiresPerSecond: 10,
		NodeStats: []NodeStats{{Node: "n1", PID: 42, CPUSeconds: 1.5, PeakRSSBytes: 30e6}}}
	var table, js bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"precision (sqlite, 1 node(s), 10 tasks, 5 s window)", "50 expected, 50 received, 0 lost",
		"p99 2.00", "10.0 fires per second", "cpu 1.50 s, peak rss 30.0 MB"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || strings.Count(js.String(), "\n") != 1 {
		t.Fatalf("JSON output %q: %v", js.String(), err)
	}
	if back["lost"] != 0.0 || back["lag_ms"].(map[string]any)["p99"] != 2.0 {
		t.Errorf("JSON = %s", js.String())
	}
}

func TestProcParsing(t *testing.T) {
	t.Parallel()
	cpu, err := parseStatCPU("1234 (sundial (x)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 100 1 2")
	if err != nil || cpu != 3 {
		t.Errorf("parseStatCPU = %v, %v; want 3 s (250+50 ticks)", cpu, err)
	}
	rss, err := parseStatusHWM("Name:\tsundial\nVmPeak:\t 100 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1000 kB\n")
	if err != nil || rss != 2048*1024 {
		t.Errorf("parseStatusHWM = %v, %v; want 2 MiB", rss, err)
	}
	if _, err := parseStatusHWM("Name: x\n"); err == nil {
		t.Error("parseStatusHWM accepted a status without VmHWM")
	}
	// This very process, through /proc.
	cpu, rss, err = ReadProc(os.Getpid())
	if err != nil || cpu < 0 || rss <= 0 {
		t.Errorf("ReadProc(self) = %v, %v, %v", cpu, rss, err)
	}
}

func TestAnalyzeBurst(t *testing.T) {
	t.Parallel()
	due := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	var expected []Fire
	var got []Arrival
	for i := range 10 {
		task := string(rune('a' + i))
		expected = append(expected, Fire{task, due})
		if i < 9 { // j is lost
			got = append(got, Arrival{At: due.Add(ms(100 * (i + 1))), Scheduled: due, Task: task})
		}
	}
	got = append(got, Arrival{At: due.Add(ms(2000)), Scheduled: due, Task: "a"}) // a duplicate, after the last
	r := AnalyzeBurst(expected, got, due)
	if r.Expected != 10 || r.Received != 9 || r.Lost != 1 || r.Duplicates != 1 || r.Unexpected != 0 {
		t.Fatalf("accounting = %+v; want 10 expected, 9 received, 1 lost, 1 duplicate", r)
	}
	if r.LastDeliverySeconds != 0.9 || math.Abs(r.DeliveriesPerSecond-10) > 1e-9 {
		t.Errorf("last delivery %v s, rate %v/s; want 0.9 s and 10/s", r.LastDeliverySeconds, r.DeliveriesPerSecond)
	}
	if r.DueAt == nil || !r.DueAt.Equal(due) || r.WindowSeconds != 0 || r.FiresPerSecond != 0 || r.BySecond != nil {
		t.Errorf("due %v, window %v, fires per second %v, p99 by second %+v; want the due instant and no window",
			r.DueAt, r.WindowSeconds, r.FiresPerSecond, r.BySecond)
	}
	r.Scenario, r.Backend, r.Nodes, r.Tasks, r.CreateSeconds = "throughput", "sqlite", 1, 10, 0.5
	r.NodeStats = []NodeStats{{Node: "n1", CPUSeconds: 3, CreateCPUSeconds: 1, PeakRSSBytes: 1e6}}
	// A durable floor of 40 per second: the burst's 10 per second is a
	// quarter of it.
	r.SetDurableFloor(&DurableFloorResult{Tasks: 10, Claimers: 2, Batch: 250, Senders: 64, LastDeliverySeconds: 0.25, DeliveriesPerSecond: 40})
	if r.FloorPerSecond != 40 || math.Abs(r.RateOverFloor-0.25) > 1e-9 {
		t.Errorf("floor %v/s, rate over floor %v; want 40/s and 0.25", r.FloorPerSecond, r.RateOverFloor)
	}
	var table, js bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10 tasks all due at 2026-01-01T00:00:10Z", "10 tasks in 0.50 s", "0.900 s after the due instant",
		"10.0 deliveries per second sustained", "cpu 3.00 s (1.00 s of it creating tasks, 2.00 s after)",
		"40.0 deliveries per second (last 0.250 s after its instant): a bare pgx program, 2 claimers of 250 jobs, 64 senders",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if !regexp.MustCompile(`(?m)^rate / floor +0\.25$`).MatchString(table.String()) {
		t.Errorf("table lacks the rate over the floor:\n%s", table.String())
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back["last_delivery_seconds"] != 0.9 || back["due_at"] != "2026-01-01T00:00:10Z" || back["window_seconds"] != nil ||
		back["durable_floor_per_second"] != 40.0 || back["rate_over_durable_floor"] != 0.25 || back["durable_floor"].(map[string]any)["senders"] != 64.0 {
		t.Errorf("JSON = %s", js.String())
	}
}

// TestSecondsP99: each second's p99 is over the fires scheduled in it,
// wherever in the second and however late they arrive, not its max; the
// median of an even count is the lower middle.
func TestSecondsP99(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s, msIn int) time.Time { return t0.Add(time.Duration(s)*time.Second + ms(msIn)) }
	var expected []Fire
	var got []Arrival
	add := func(task string, sched time.Time, lag time.Duration) {
		expected = append(expected, Fire{task, sched})
		got = append(got, Arrival{At: sched.Add(lag), Scheduled: sched, Task: task})
	}
	// Second 0: 200 fires at 1..200 ms past .0, .4 and .6 of it, and an
	// outlier of 5 s: the p99 is the 199th of 201 (nearest rank), 199 ms.
	for i := 1; i <= 200; i++ {
		add(fmt.Sprint("a", i), at(0, []int{0, 400, 600}[i%3]), ms(i))
	}
	add("a-out", at(0, 999), 5*time.Second)
	// Seconds 1 to 3, one fire each, scheduled late in the second: 10, 30, 20 ms.
	add("b", at(1, 900), ms(10))
	add("c", at(2, 500), ms(30))
	add("d", at(3, 999), ms(20))
	r := Analyze(expected, got, t0, at(4, 0))
	// p99s: 199, 10, 30, 20 -> sorted 10 20 30 199: the lower middle is 20.
	want := SecondsP99{Seconds: 4, Median: 20, Max: 199}
	if r.BySecond == nil || *r.BySecond != want {
		t.Errorf("p99 by second = %+v, want %+v", r.BySecond, want)
	}
}
