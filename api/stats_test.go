package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestStats: GET /api/v1/stats sums the nodes' per-minute rows of the
// window into steps, in total and per node (with each one's share of the
// fires), and takes the lag percentiles from the merged histograms as
// the upper bound of their bucket, capped by the largest lag. A malformed
// since or step is a 400 naming it.
func TestStats(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := context.Background()

	// Nothing counted yet: every step, all zero, no lag.
	var empty statsResponse
	want(t, b.do(t, http.MethodGet, "/api/v1/stats", nil), http.StatusOK, &empty)
	if len(empty.Steps) != 60 || empty.StepSeconds != 60 || empty.Totals.Fires != 0 || empty.Totals.LagP50MS != nil ||
		len(empty.Nodes) != 0 || empty.To.Sub(empty.From) != time.Hour || len(empty.LagBoundsMS) != sundial.StatsLagBuckets-1 {
		t.Fatalf("stats of nothing = %+v", empty)
	}

	now := time.Now().UTC().Truncate(time.Minute)
	row := func(node string, ago time.Duration, fires, failed int64, lags ...time.Duration) *sundial.StatsMinute {
		m := &sundial.StatsMinute{NodeID: node, Minute: now.Add(-ago), Fires: fires, ScheduledFires: fires,
			Succeeded: fires - failed, Failed: failed, UpdatedAt: now}
		for _, l := range lags {
			m.AddLag(l)
		}
		return m
	}
	lags := func(n int, d time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	rows := []*sundial.StatsMinute{
		row("node-a", 10*time.Minute, 10, 2, lags(10, 3*time.Millisecond)...),
		row("node-b", 5*time.Minute, 30, 0, append(lags(29, 3*time.Millisecond), 900*time.Millisecond)...),
		row("node-a", 23*time.Hour, 7, 7),
		row("node-a", 25*time.Hour, 1000, 0), // past the longest window
	}
	rows[1].Skipped, rows[1].Canceled = 4, 1
	if err := b.store.StatsSave(ctx, rows); err != nil {
		t.Fatal(err)
	}

	get := func(query string) statsResponse {
		t.Helper()
		var resp statsResponse
		want(t, b.do(t, http.MethodGet, "/api/v1/stats"+query, nil), http.StatusOK, &resp)
		return resp
	}
	ms := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	hour := get("")
	tot := hour.Totals
	if tot.Fires != 40 || tot.ScheduledFires != 40 || tot.Succeeded != 38 || tot.Failed != 2 || tot.Skipped != 4 || tot.Canceled != 1 {
		t.Errorf("totals = %+v", tot)
	}
	// 40 lags: 39 within 5 ms, one of 900 ms (the 1 s bucket, capped).
	if ms(tot.LagP50MS) != 5 || ms(tot.LagP95MS) != 5 || ms(tot.LagP99MS) != 900 || ms(tot.LagMaxMS) != 900 {
		t.Errorf("total lags p50 %v p95 %v p99 %v max %v", ms(tot.LagP50MS), ms(tot.LagP95MS), ms(tot.LagP99MS), ms(tot.LagMaxMS))
	}
	if len(hour.Nodes) != 2 || hour.Nodes[0].NodeID != "node-b" || hour.Nodes[0].Share != 0.75 || hour.Nodes[0].Fires != 30 ||
		hour.Nodes[1].NodeID != "node-a" || hour.Nodes[1].Share != 0.25 || hour.Nodes[1].Failed != 2 {
		t.Errorf("nodes = %+v", hour.Nodes)
	}
	var fires int64
	for i, s := range hour.Steps {
		if !s.Start.Equal(hour.From.Add(time.Duration(i) * time.Minute)) {
			t.Fatalf("step %d starts at %s", i, s.Start)
		}
		fires += s.Fires
		switch {
		case s.Start.Equal(rows[0].Minute):
			if s.Fires != 10 || s.Failed != 2 || ms(s.LagP99MS) != 3 {
				t.Errorf("node-a's minute = %+v", s)
			}
		case s.Start.Equal(rows[1].Minute):
			if s.Fires != 30 || ms(s.LagP99MS) != 900 || ms(s.LagP50MS) != 5 {
				t.Errorf("node-b's minute = %+v", s)
			}
		case s.Fires != 0 || s.LagP50MS != nil:
			t.Errorf("step %s = %+v, want nothing", s.Start, s)
		}
	}
	if fires != 40 {
		t.Errorf("the steps sum to %d fires, want 40", fires)
	}

	// Five-minute steps, aligned to five minutes: the same totals.
	five := get("?since=1h&step=5m")
	if len(five.Steps) != 12 || five.StepSeconds != 300 || five.From.Minute()%5 != 0 || five.Totals.Fires != 40 {
		t.Errorf("five-minute steps: %d steps of %d s from %s, %d fires", len(five.Steps), five.StepSeconds, five.From, five.Totals.Fires)
	}
	// A day: the row of 23 hours ago too, not the one of 25.
	if day := get("?since=24h&step=60m"); len(day.Steps) != 24 || day.Totals.Fires != 47 || day.Totals.Failed != 9 {
		t.Errorf("a day: %d steps, totals %+v", len(day.Steps), day.Totals)
	}

	for _, tc := range []struct{ query, field string }{
		{"?since=abc", "since"},
		{"?since=0s", "since"},
		{"?since=-1h", "since"},
		{"?since=90s", "since"},
		{"?since=25h", "since"},
		{"?step=abc", "step"},
		{"?step=30s", "step"},
		{"?since=1h&step=2h", "step"},
		{"?window=1h", "window"},
	} {
		rec := b.do(t, http.MethodGet, "/api/v1/stats"+tc.query, nil)
		var e errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != http.StatusBadRequest || err != nil ||
			e.Error.Code != "invalid" || e.Error.Field != tc.field {
			t.Errorf("%s = %d %s, want 400 naming %s", tc.query, rec.Code, rec.Body, tc.field)
		}
	}
}
