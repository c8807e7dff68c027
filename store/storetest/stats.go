package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// testStats: StatsSave inserts one row per node and minute and replaces
// a row that exists whole (a node writes a minute's counters again as
// they grow, or after a failure, and nothing is counted twice);
// StatsList reads a range of minutes by minute then node, every field as
// written; StatsPurge deletes the minutes before its time.
func testStats(t *testing.T, open Opener) {
	f := setup(t, open)
	m0 := t0.Truncate(time.Minute)
	row := func(node string, minute int, fires int64) *sundial.StatsMinute {
		m := &sundial.StatsMinute{NodeID: node, Minute: m0.Add(time.Duration(minute) * time.Minute),
			Fires: fires, ScheduledFires: fires - 1, Succeeded: 3, Failed: 2, Skipped: 1, Canceled: 4,
			UpdatedAt: at(minute*60 + 10)}
		m.AddLag(3 * time.Millisecond)
		m.AddLag(750 * time.Millisecond)
		m.AddLag(2 * time.Minute) // over the last bound
		return m
	}
	a0, b0, a1, a2 := row("node-a", 0, 10), row("node-b", 0, 7), row("node-a", 1, 5), row("node-a", 2, 1)
	empty := &sundial.StatsMinute{NodeID: "node-c", Minute: m0.Add(time.Minute), UpdatedAt: at(70)}
	if err := f.s.StatsSave(f.ctx, []*sundial.StatsMinute{a0, b0, a1, empty}); err != nil {
		t.Fatalf("StatsSave: %v", err)
	}
	// node-a's minute 1 again, grown: the row is replaced, not added to.
	a1 = row("node-a", 1, 9)
	a1.Failed, a1.Lag = 5, [sundial.StatsLagBuckets]int64{}
	a1.AddLag(40 * time.Millisecond)
	a1.UpdatedAt = at(85)
	if err := f.s.StatsSave(f.ctx, []*sundial.StatsMinute{a1, a2}); err != nil {
		t.Fatalf("StatsSave (again): %v", err)
	}
	// Saving the same counters again changes nothing.
	if err := f.s.StatsSave(f.ctx, []*sundial.StatsMinute{a1}); err != nil {
		t.Fatalf("StatsSave (same): %v", err)
	}
	if err := f.s.StatsSave(f.ctx, nil); err != nil {
		t.Fatalf("StatsSave(nil): %v", err)
	}

	list := func(from, to time.Time, want ...*sundial.StatsMinute) {
		t.Helper()
		got, err := f.s.StatsList(f.ctx, from, to)
		if err != nil {
			t.Fatalf("StatsList: %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("StatsList(%s, %s) = %d rows, want %d: %s", from, to, len(got), len(want), statsRows(got))
		}
		for i, w := range want {
			g := *got[i]
			if !g.Minute.Equal(w.Minute) || !g.UpdatedAt.Equal(w.UpdatedAt) {
				t.Errorf("row %d: minute %s updated %s, want %s, %s", i, g.Minute, g.UpdatedAt, w.Minute, w.UpdatedAt)
			}
			g.Minute, g.UpdatedAt = w.Minute, w.UpdatedAt
			if !reflect.DeepEqual(g, *w) {
				t.Errorf("row %d = %+v\nwant %+v", i, g, *w)
			}
		}
	}
	list(m0, m0.Add(3*time.Minute), a0, b0, a1, empty, a2)
	// [from, to): minute 1 alone.
	list(m0.Add(time.Minute), m0.Add(2*time.Minute), a1, empty)
	list(m0.Add(-time.Hour), m0, nil...)

	n, err := f.s.StatsPurge(f.ctx, m0.Add(time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("StatsPurge = %d, %v; want the 2 rows of minute 0", n, err)
	}
	list(m0, m0.Add(3*time.Minute), a1, empty, a2)
	if n, err := f.s.StatsPurge(f.ctx, m0.Add(time.Minute)); err != nil || n != 0 {
		t.Fatalf("StatsPurge again = %d, %v; want 0", n, err)
	}

	// Many rows in one call: more than one statement's worth.
	var many []*sundial.StatsMinute
	for i := range 1200 {
		many = append(many, &sundial.StatsMinute{NodeID: fmt.Sprintf("n-%04d", i), Minute: m0.Add(-time.Hour),
			Fires: int64(i), UpdatedAt: at(0)})
	}
	if err := f.s.StatsSave(f.ctx, many); err != nil {
		t.Fatalf("StatsSave(1200 rows): %v", err)
	}
	got, err := f.s.StatsList(f.ctx, m0.Add(-time.Hour), m0)
	if err != nil || len(got) != len(many) || got[1199].Fires != 1199 || got[1199].NodeID != "n-1199" {
		t.Fatalf("StatsList after 1200 rows = %d rows, %v", len(got), err)
	}
}

func statsRows(ms []*sundial.StatsMinute) string {
	s := ""
	for _, m := range ms {
		s += fmt.Sprintf("\n  %s %s fires %d", m.NodeID, m.Minute.Format(time.RFC3339), m.Fires)
	}
	return s
}
