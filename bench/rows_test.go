package bench

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// rowSamples reads, every 250 ms for 20 s, a steady run of 1,000
// deliveries a second, 100 s after its start, whose database writes the
// counts counts returns at each instant (seconds since the start).
func rowSamples(counts func(sec float64) map[string]int64) []RowSample {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []RowSample
	for i := 0; i <= 80; i++ {
		sec := 100 + float64(i)/4
		out = append(out, RowSample{At: t0.Add(time.Duration(sec * float64(time.Second))), Rows: counts(sec),
			Deliveries: 1000 * sec})
	}
	return out
}

func near(got, want float64) bool { return math.Abs(got-want) < 1e-9 }

// steps is a count that rises by step every period, at phase past each
// period's start: a planner's refills, or statistics flushed in bursts.
func steps(sec, period, phase, step float64) int64 {
	return int64(step * math.Floor((sec-phase)/period))
}

// TestAnalyzeRowsSteps: counts that move in steps (PostgreSQL's statistics
// flushed once a second, whatever the phase; a planner refilling a slot of
// tasks every 10 s) come out exact over groups of 10 s; over groups of a
// second the refills are caught or missed at the ends.
func TestAnalyzeRowsSteps(t *testing.T) {
	for _, phase := range []float64{0.3, 3.7, 9.9} {
		all := rowSamples(func(sec float64) map[string]int64 {
			return map[string]int64{
				// Four rows a delivery, visible once a second.
				"runs.updated": steps(sec, 1, math.Mod(phase, 1), 4000),
				// A refill of 10,000 runs every 10 s: one a delivery.
				"runs.inserted": steps(sec, 10, phase, 10000),
			}
		})
		// The first reading came a little late and the last a little
		// early: still 40 in each group.
		samples := slices.Clone(all)
		samples[0].At = samples[0].At.Add(5 * time.Millisecond)
		samples[80].At = samples[80].At.Add(-3 * time.Millisecond)
		r, err := AnalyzeRows("test", samples, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !near(r.ByTable["runs.updated"], 4) || !near(r.ByTable["runs.inserted"], 1) || !near(r.PerFire, 5) {
			t.Errorf("phase %v: per fire %v, by table %v; want 5: 4 updated, 1 inserted", phase, r.PerFire, r.ByTable)
		}
		if r.Samples != 40 || math.Abs(r.Seconds-10.25) > 1e-3 || !near(r.Deliveries, 10250) || r.Source != "test" {
			t.Errorf("phase %v: %d readings a group, %v s apart, %v deliveries, source %q; want 40, 10.25 s, 10250, test",
				phase, r.Samples, r.Seconds, r.Deliveries, r.Source)
		}
		if short, err := AnalyzeRows("test", samples, time.Second); err != nil || near(short.ByTable["runs.inserted"], 1) {
			t.Errorf("phase %v, groups of a second: %v, %v; want the refills caught or missed", phase, short.ByTable["runs.inserted"], err)
		}
	}
}

// TestAnalyzeRowsByTable: each table's share, and a table not written yet
// in the first reading.
func TestAnalyzeRowsByTable(t *testing.T) {
	samples := rowSamples(func(sec float64) map[string]int64 {
		m := map[string]int64{
			"runs.inserted": int64(1000 * sec),
			"runs.updated":  int64(2000 * sec),
			"tasks.updated": steps(sec, 1, 0.5, 1000),
			"nodes.updated": int64(sec),
			"audit.deleted": 7,
		}
		if sec > 100 {
			m["run_attempts.inserted"] = int64(1000 * (sec - 100))
		}
		return m
	})
	r, err := AnalyzeRows("test", samples, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"runs.inserted": 1, "runs.updated": 2, "tasks.updated": 1, "nodes.updated": 0.001,
		"run_attempts.inserted": 1}
	for k, v := range want {
		if math.Abs(r.ByTable[k]-v) > 1e-3*v {
			t.Errorf("%s: %v per fire, want %v", k, r.ByTable[k], v)
		}
	}
	if len(r.ByTable) != len(want) || math.Abs(r.PerFire-5.001) > 5e-3 {
		t.Errorf("by table %v, per fire %v; want %v (nothing for what did not change), 5.001", r.ByTable, r.PerFire, want)
	}
	if got, want := r.Summary(), "run_attempts 1.00 ins, runs 1.00 ins + 2.00 upd, tasks 1.00 upd"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestAnalyzeRowsRefused(t *testing.T) {
	samples := rowSamples(func(sec float64) map[string]int64 { return map[string]int64{"runs.inserted": int64(sec)} })
	for _, c := range []struct {
		name    string
		samples []RowSample
		want    string
	}{
		{"one reading", samples[:1], "at least 2"},
		{"groups overlap", samples[:60], "two groups"},
		{"two readings too close", []RowSample{samples[0], samples[20]}, "two groups"},
		{"no delivery", func() []RowSample {
			s := append([]RowSample(nil), samples...)
			for i := range s {
				s[i].Deliveries = 7
			}
			return s
		}(), "no delivery"},
	} {
		if _, err := AnalyzeRows("test", c.samples, 10*time.Second); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one saying %q", c.name, err, c.want)
		}
	}
}
