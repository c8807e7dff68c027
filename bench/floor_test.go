package bench

import (
	"testing"
	"time"
)

// TestFloor: each number of workers sends every request of each round at
// its whole second, and the lags are measured from it; the best is the
// lowest p99. The bursts are real, on loopback, a second apart.
func TestFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("sends real bursts, a second apart")
	}
	rs, err := Floor(t.Context(), 50, []int{4, 16}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Workers != 4 || rs[1].Workers != 16 {
		t.Fatalf("results %+v, want one for 4 and one for 16 workers", rs)
	}
	for _, r := range rs {
		// Lags are from the whole second on: never before it, and a burst
		// of 50 on loopback takes well under the second to the next.
		if r.LagMS.P50 < 0 || r.LagMS.Max <= 0 || r.LagMS.Max >= 1000 || r.LagMS.P99 > r.LagMS.Max {
			t.Errorf("%d workers: lags %+v", r.Workers, r.LagMS)
		}
	}
	best, ok := BestFloor(rs)
	if !ok || best.LagMS.P99 > min(rs[0].LagMS.P99, rs[1].LagMS.P99) {
		t.Errorf("BestFloor = %+v, want the lowest p99 of %+v", best, rs)
	}
}

// TestFloorLags: only the arrivals of the bursts' instants count, each
// from its own instant.
func TestFloorLags(t *testing.T) {
	t.Parallel()
	s1 := time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC)
	s2 := s1.Add(time.Second)
	got := floorLags([]Arrival{
		{At: s1.Add(2 * time.Millisecond), Scheduled: s1},
		{At: s2.Add(4 * time.Millisecond), Scheduled: s2},
		{At: s2.Add(9 * time.Millisecond), Scheduled: s2.Add(time.Second)}, // another burst's
	}, []time.Time{s1, s2})
	if got.P50 != 2 || got.Max != 4 {
		t.Errorf("floorLags = %+v, want p50 2 ms and max 4 ms", got)
	}
	if _, ok := BestFloor(nil); ok {
		t.Error("BestFloor of nothing is something")
	}
}
