// Package bench owns Sundial's measuring instrument: a loopback HTTP target
// that records every delivery it receives, the accounting that turns those
// records into the numbers a scheduler is judged by (fires expected and
// received, lost, duplicates, lag percentiles, fires per second), per-node
// CPU and memory read from /proc, the floors the machine sets (a bare client;
// a bare durable program), the target's collector kept out of aligned
// bursts, and the report printed as a table and as one JSON object. The
// scenarios that drive it live in cmd/sundial (sundial bench).
package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Fire names one expected fire: a task and its scheduled instant.
type Fire struct {
	Task      string
	Scheduled time.Time
}

// Report is what one scenario measured.
type Report struct {
	Scenario      string  `json:"scenario"`
	Backend       string  `json:"backend"`
	Nodes         int     `json:"nodes"`
	Tasks         int     `json:"tasks"`
	WindowSeconds float64 `json:"window_seconds,omitempty"` // the measured window; none for a burst

	Expected   int `json:"fires_expected"`
	Received   int `json:"fires_received"` // distinct expected fires delivered at least once
	Lost       int `json:"lost"`           // expected fires never delivered
	Duplicates int `json:"duplicates"`     // deliveries beyond the first of a fire
	Unexpected int `json:"unexpected"`     // deliveries scheduled in the window that no expected fire explains

	LagMS          Percentiles `json:"lag_ms"`
	FiresPerSecond float64     `json:"fires_per_second,omitempty"` // received / window; none for a burst
	// BySecond is the spread of the p99 lags of the window's seconds, each
	// over the fires scheduled in it and received; none for a burst.
	BySecond *SecondsP99 `json:"p99_by_second_ms,omitempty"`

	// A burst (AnalyzeBurst): every expected fire due at the one instant
	// DueAt, measured until the last of them was delivered.
	DueAt               *time.Time `json:"due_at,omitempty"`
	CreateSeconds       float64    `json:"create_seconds,omitempty"`        // creating the tasks, through the API
	LastDeliverySeconds float64    `json:"last_delivery_seconds,omitempty"` // the last fire's first delivery minus DueAt
	DeliveriesPerSecond float64    `json:"deliveries_per_second,omitempty"` // received / last_delivery_seconds: the rate sustained

	// RowsPerFire is the rows the database inserted, updated and deleted
	// per delivery during the window (Rows.PerFire); 0 where not measured
	// (a --server node).
	RowsPerFire float64 `json:"db_rows_per_fire,omitempty"`
	// Rows is how RowsPerFire was counted, and its share of each table.
	Rows *Rows `json:"db_rows,omitempty"`

	// Floor is the bare client's lag for the same burst, by number of
	// workers (Floor), measured before the nodes start; P99OverFloor is
	// LagMS.P99 over the best of them.
	Floor        []FloorResult `json:"floor,omitempty"`
	P99OverFloor float64       `json:"p99_over_floor,omitempty"`

	// DurableFloor is a bare pgx program's burst of the same jobs on the
	// same PostgreSQL server (DurableFloor), measured before the nodes
	// start; FloorPerSecond is its rate, and RateOverFloor is
	// DeliveriesPerSecond over it.
	DurableFloor   *DurableFloorResult `json:"durable_floor,omitempty"`
	FloorPerSecond float64             `json:"durable_floor_per_second,omitempty"`
	RateOverFloor  float64             `json:"rate_over_durable_floor,omitempty"`

	Share     map[string]float64 `json:"share_percent,omitempty"` // node -> share of the deliveries
	NodeStats []NodeStats        `json:"node_stats,omitempty"`
}

// Percentiles of a lag distribution, in milliseconds.
type Percentiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99.9"`
	Max  float64 `json:"max"`
}

// SecondsP99 sums up the p99 lags of the seconds of a window, in
// milliseconds. An aligned burst's calls all fall in one second: the p99 of
// the whole window is set by its few slowest bursts, and three runs of ten
// seconds scatter with them; the median second says what most bursts do.
type SecondsP99 struct {
	Seconds int     `json:"seconds"` // seconds with at least one fire received
	Median  float64 `json:"median"`  // by nearest rank: the lower middle of an even count
	Max     float64 `json:"max"`
}

// secondsP99 is SecondsP99 of the lags of fires by scheduled second; nil
// for fewer than two seconds with a fire received (a burst: its lag is the
// whole).
func secondsP99(bySecond map[time.Time][]time.Duration) *SecondsP99 {
	if len(bySecond) < 2 {
		return nil
	}
	p99s := make([]time.Duration, 0, len(bySecond))
	for _, lags := range bySecond {
		slices.Sort(lags)
		p99s = append(p99s, Percentile(lags, 0.99))
	}
	slices.Sort(p99s)
	return &SecondsP99{Seconds: len(p99s), Median: millis(Percentile(p99s, 0.5)), Max: millis(p99s[len(p99s)-1])}
}

// percentilesOf is the percentiles of the sorted lags.
func percentilesOf(sorted []time.Duration) Percentiles {
	return Percentiles{
		P50: millis(Percentile(sorted, 0.50)), P90: millis(Percentile(sorted, 0.90)), P99: millis(Percentile(sorted, 0.99)),
		P999: millis(Percentile(sorted, 0.999)), Max: millis(Percentile(sorted, 1)),
	}
}

// millis is d in milliseconds, the unit of the report's lags.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Percentile returns the q-quantile (0 < q <= 1) of sorted by the nearest
// rank method: the smallest value with at least q of the values at or
// below it. It returns 0 for no values.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted)) + 0.999999999) // ceil without float surprises at exact ranks
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Analyze accounts the deliveries of fires scheduled in [from, to) against
// the expected fires; deliveries scheduled outside the window (warm-up,
// tail) are ignored. Lag is taken from the first delivery of each fire
// (received minus scheduled); later deliveries of the same fire count as
// duplicates.
func Analyze(expected []Fire, got []Arrival, from, to time.Time) Report {
	window := to.Sub(from)
	want := make(map[Fire]bool, len(expected))
	for _, f := range expected {
		want[f] = true
	}
	first := make(map[Fire]time.Time, len(expected))
	var r Report
	byNode := map[string]int{}
	for _, a := range got {
		if a.Scheduled.Before(from) || !a.Scheduled.Before(to) {
			continue
		}
		f := Fire{a.Task, a.Scheduled.UTC()}
		if !want[f] {
			r.Unexpected++
			continue
		}
		byNode[a.Node]++
		if at, seen := first[f]; seen {
			r.Duplicates++
			if a.At.Before(at) {
				first[f] = a.At
			}
			continue
		}
		first[f] = a.At
	}
	lags := make([]time.Duration, 0, len(first))
	bySecond := map[time.Time][]time.Duration{}
	for f, at := range first {
		lag := at.Sub(f.Scheduled)
		lags = append(lags, lag)
		s := f.Scheduled.Truncate(time.Second)
		bySecond[s] = append(bySecond[s], lag)
	}
	slices.Sort(lags)
	r.BySecond = secondsP99(bySecond)
	r.Expected = len(want)
	r.Received = len(first)
	r.Lost = r.Expected - r.Received
	r.LagMS = percentilesOf(lags)
	r.WindowSeconds = window.Seconds()
	if window > 0 {
		r.FiresPerSecond = float64(r.Received) / window.Seconds()
	}
	total := 0
	for _, n := range byNode {
		total += n
	}
	if len(byNode) > 1 || (len(byNode) == 1 && !hasKey(byNode, "")) {
		r.Share = map[string]float64{}
		for node, n := range byNode {
			r.Share[node] = 100 * float64(n) / float64(total)
		}
	}
	return r
}

// AnalyzeBurst accounts a burst: every expected fire is due at the instant
// due, and the measure is how long the scheduler takes to deliver them all.
// It is Analyze over the second that starts at due, with the rate taken
// over the time until the last fire was first delivered instead of over
// a window: received / (last first delivery - due). (When nothing is lost
// received is the expected count; a lost fire is not counted as delivered.)
func AnalyzeBurst(expected []Fire, got []Arrival, due time.Time) Report {
	due = due.UTC()
	r := Analyze(expected, got, due, due.Add(time.Second))
	r.WindowSeconds, r.FiresPerSecond = 0, 0
	r.DueAt = &due
	// Every fire is scheduled at due, so the largest first-delivery lag is
	// the last first delivery.
	r.LastDeliverySeconds = r.LagMS.Max / 1000
	if r.Received > 0 && r.LastDeliverySeconds > 0 {
		r.DeliveriesPerSecond = float64(r.Received) / r.LastDeliverySeconds
	}
	return r
}

func hasKey(m map[string]int, k string) bool { _, ok := m[k]; return ok }

// WriteTable prints the report for a person.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	if r.DueAt != nil {
		row("scenario", fmt.Sprintf("%s (%s, %d node(s), %d tasks all due at %s)", r.Scenario, r.Backend, r.Nodes, r.Tasks,
			r.DueAt.Format(time.RFC3339Nano)))
	} else {
		row("scenario", fmt.Sprintf("%s (%s, %d node(s), %d tasks, %.0f s window)", r.Scenario, r.Backend, r.Nodes, r.Tasks, r.WindowSeconds))
	}
	if r.CreateSeconds > 0 {
		row("created", fmt.Sprintf("%d tasks in %.2f s (%.0f per second)", r.Tasks, r.CreateSeconds, float64(r.Tasks)/r.CreateSeconds))
	}
	row("fires", fmt.Sprintf("%d expected, %d received, %d lost, %d duplicates, %d unexpected",
		r.Expected, r.Received, r.Lost, r.Duplicates, r.Unexpected))
	row("lag (ms)", fmt.Sprintf("p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f",
		r.LagMS.P50, r.LagMS.P90, r.LagMS.P99, r.LagMS.P999, r.LagMS.Max))
	if s := r.BySecond; s != nil {
		row("p99 by second (ms)", fmt.Sprintf("median %.2f  max %.2f  over %d seconds", s.Median, s.Max, s.Seconds))
	}
	if best, ok := BestFloor(r.Floor); ok {
		row("floor (ms)", fmt.Sprintf("p99 %.2f: a bare net/http client, %d workers (the best of %d), no scheduler, no database",
			best.LagMS.P99, best.Workers, len(r.Floor)))
		row("p99 / floor", fmt.Sprintf("%.2fx", r.P99OverFloor))
	}
	if r.DueAt != nil {
		row("last delivery", fmt.Sprintf("%.3f s after the due instant", r.LastDeliverySeconds))
		row("rate", fmt.Sprintf("%.1f deliveries per second sustained", r.DeliveriesPerSecond))
		if f := r.DurableFloor; f != nil {
			indexes := ""
			if f.RunsIndexes {
				indexes = ", the indexes of Sundial's runs"
			}
			row("floor rate", fmt.Sprintf("%.1f deliveries per second (last %.3f s after its instant): a bare pgx program, %d claimers of %d jobs, %d senders, an outcome writer%s, no scheduler",
				f.DeliveriesPerSecond, f.LastDeliverySeconds, f.Claimers, f.Batch, f.Senders, indexes))
			row("rate / floor", fmt.Sprintf("%.2f", r.RateOverFloor))
		}
	} else {
		row("rate", fmt.Sprintf("%.1f fires per second", r.FiresPerSecond))
	}
	if len(r.Share) > 0 {
		nodes := make([]string, 0, len(r.Share))
		for n := range r.Share {
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
		var parts []string
		for _, n := range nodes {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", n, r.Share[n]))
		}
		row("share", strings.Join(parts, ", "))
	}
	if r.Rows != nil {
		row("db rows", fmt.Sprintf("%.2f written per fire: %s (%s; %.0f deliveries over %.1f s, %d readings at each end)",
			r.Rows.PerFire, r.Rows.Summary(), r.Rows.Source, r.Rows.Deliveries, r.Rows.Seconds, r.Rows.Samples))
	}
	for _, s := range r.NodeStats {
		cpu := fmt.Sprintf("cpu %.2f s", s.CPUSeconds)
		if s.CreateCPUSeconds > 0 {
			cpu += fmt.Sprintf(" (%.2f s of it creating tasks, %.2f s after)", s.CreateCPUSeconds, s.CPUSeconds-s.CreateCPUSeconds)
		}
		row("node "+s.Node, fmt.Sprintf("%s, peak rss %.1f MB", cpu, float64(s.PeakRSSBytes)/1e6))
	}
	return tw.Flush()
}

// SetFloor records the floor measured for the report's burst and the
// ratio of its p99 to the best floor.
func (r *Report) SetFloor(rs []FloorResult) {
	r.Floor = rs
	if best, ok := BestFloor(rs); ok && best.LagMS.P99 > 0 {
		r.P99OverFloor = r.LagMS.P99 / best.LagMS.P99
	}
}

// SetDurableFloor records the durable floor measured for the report's
// burst and the ratio of the burst's rate to the floor's.
func (r *Report) SetDurableFloor(f *DurableFloorResult) {
	r.DurableFloor = f
	if f == nil {
		return
	}
	r.FloorPerSecond = f.DeliveriesPerSecond
	if f.DeliveriesPerSecond > 0 {
		r.RateOverFloor = r.DeliveriesPerSecond / f.DeliveriesPerSecond
	}
}

// WriteJSON prints the report as one JSON object on one line.
func (r Report) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
