package bench

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// RowSample is one reading of a database's counts of the rows it has
// written, by "table.kind" (kind: inserted, updated, deleted, or changed
// where the database does not tell them apart), paired with the
// deliveries the target had received at the same instant.
type RowSample struct {
	At   time.Time
	Rows map[string]int64
	// Deliveries is the target's count at the instant of the reading: the
	// mean of its counts just before and just after it.
	Deliveries float64
}

// Rows is what a database wrote per delivery between two groups of
// readings (AnalyzeRows).
type Rows struct {
	Source     string  `json:"source"`       // where the counts come from
	Samples    int     `json:"samples"`      // readings in each group
	Seconds    float64 `json:"span_seconds"` // between the mean instants of the two groups
	Deliveries float64 `json:"deliveries"`   // received over the span
	PerFire    float64 `json:"per_fire"`     // rows written over the span per delivery
	// ByTable is the rows per delivery of each "table.kind" that changed.
	ByTable map[string]float64 `json:"per_fire_by_table"`
}

// AnalyzeRows accounts the rows written per delivery from readings in
// time order, evenly spaced: the difference of the mean counts of the
// readings in the last group and of those in the first, divided by the
// difference of the mean deliveries of the same readings. Each group is
// as many readings as the readings' mean interval makes in group. Rows and
// deliveries are thus counted over the same span, and a count that moves
// in steps, the same each period (PostgreSQL's statistics, which each
// connection adds to the view about once a second; a planner's pass each
// second, or its refill of a slot of tasks every lookahead), comes out
// exact when group is a whole number of periods: each group's mean weighs
// every phase of the period alike, where two readings would catch a step,
// or miss it, at either end. A key missing from a reading is 0 there
// (nothing written yet).
func AnalyzeRows(source string, samples []RowSample, group time.Duration) (Rows, error) {
	if len(samples) < 2 {
		return Rows{}, fmt.Errorf("rows written: %d readings, want at least 2", len(samples))
	}
	span := samples[len(samples)-1].At.Sub(samples[0].At)
	step := span / time.Duration(len(samples)-1)
	k := max(int((group+step/2)/max(step, 1)), 1) // readings in each group
	if 2*k > len(samples) {
		return Rows{}, fmt.Errorf("rows written: %d readings over %s, want two groups of %s", len(samples), span, group)
	}
	head, tail := samples[:k], samples[len(samples)-k:]
	keys := map[string]bool{}
	for _, s := range samples {
		for k := range s.Rows {
			keys[k] = true
		}
	}
	h, t := mean(head), mean(tail)
	r := Rows{Source: source, Samples: min(len(head), len(tail)), Seconds: t.at.Sub(h.at).Seconds(),
		Deliveries: t.deliveries - h.deliveries, ByTable: map[string]float64{}}
	if r.Deliveries <= 0 {
		return Rows{}, errors.New("rows written: no delivery between the groups of readings")
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		changed := false
		for _, s := range samples {
			changed = changed || s.Rows[k] != samples[0].Rows[k]
		}
		if !changed {
			continue
		}
		per := (t.rows[k] - h.rows[k]) / r.Deliveries
		r.ByTable[k] = per
		r.PerFire += per
	}
	return r, nil
}

type meanSample struct {
	at         time.Time
	rows       map[string]float64
	deliveries float64
}

func mean(samples []RowSample) meanSample {
	m := meanSample{rows: map[string]float64{}}
	n := float64(len(samples))
	var offset time.Duration
	for _, s := range samples {
		offset += s.At.Sub(samples[0].At)
		m.deliveries += s.Deliveries / n
		for k, v := range s.Rows {
			m.rows[k] += float64(v) / n
		}
	}
	m.at = samples[0].At.Add(offset / time.Duration(len(samples)))
	return m
}

// Summary is the rows per fire by table, for a person: "runs 1.00 ins +
// 2.00 upd, tasks 1.00 upd", leaving out what rounds to 0.00.
func (r Rows) Summary() string {
	abbrev := map[string]string{"inserted": "ins", "updated": "upd", "deleted": "del", "changed": "chg"}
	var tables []string
	kinds := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(r.ByTable)) {
		v := r.ByTable[k]
		if fmt.Sprintf("%.2f", v) == "0.00" {
			continue
		}
		table, kind, _ := strings.Cut(k, ".")
		if a, ok := abbrev[kind]; ok {
			kind = a
		}
		if kinds[table] == nil {
			tables = append(tables, table)
		}
		kinds[table] = append(kinds[table], fmt.Sprintf("%.2f %s", v, kind))
	}
	parts := make([]string, 0, len(tables))
	for _, t := range tables {
		parts = append(parts, t+" "+strings.Join(kinds[t], " + "))
	}
	return strings.Join(parts, ", ")
}
