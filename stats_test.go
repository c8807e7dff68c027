package sundial

import (
	"testing"
	"time"
)

// TestLagQuantile: a quantile of the lag histogram is the upper bound of
// the bucket it falls in, or the largest lag when that is smaller; the
// bucket over 60 s gives the largest lag.
func TestLagQuantile(t *testing.T) {
	t.Parallel()
	var m StatsMinute
	if _, ok := m.LagQuantile(0.5); ok {
		t.Fatal("an empty histogram has a quantile")
	}
	for range 98 {
		m.AddLag(3 * time.Millisecond) // bucket 5 ms
	}
	m.AddLag(700 * time.Millisecond) // 1 s
	m.AddLag(90 * time.Second)       // over 60 s
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 5 * time.Millisecond},
		{0.98, 5 * time.Millisecond},
		{0.99, time.Second},
		{1, 90 * time.Second},
	} {
		if got, ok := m.LagQuantile(tc.q); !ok || got != tc.want {
			t.Errorf("LagQuantile(%v) = %v, %v; want %v", tc.q, got, ok, tc.want)
		}
	}
	// The largest lag caps the bound: 12 ms in the 20 ms bucket.
	var small StatsMinute
	small.AddLag(12 * time.Millisecond)
	small.AddLag(-time.Millisecond) // sent ahead: the first bucket
	if got, _ := small.LagQuantile(0.99); got != 12*time.Millisecond {
		t.Errorf("LagQuantile(0.99) = %v, want 12ms", got)
	}
	if got, _ := small.LagQuantile(0.5); got != time.Millisecond {
		t.Errorf("LagQuantile(0.5) = %v, want 1ms", got)
	}
	small.Merge(&m)
	if small.LagCount() != 102 || small.LagMax != 90*time.Second || small.Lag[LagBucket(3*time.Millisecond)] != 98 {
		t.Errorf("Merge: %+v", small)
	}
	if len(StatsLagBounds) != StatsLagBuckets-1 || LagBucket(time.Hour) != StatsLagBuckets-1 || LagBucket(time.Minute) != StatsLagBuckets-2 {
		t.Error("the bounds and the buckets disagree")
	}
}
