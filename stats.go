package sundial

import (
	"time"
)

// StatsLagBounds are the upper bounds of the buckets of the fire lag
// histogram a node keeps per minute (StatsMinute.Lag): log-spaced from
// 1 ms to 60 s. A lag falls in the first bucket whose bound it does not
// exceed; a lag over 60 s falls in the last bucket, which has no bound
// (+Inf). The bounds are part of the stored rows: changing them needs a
// migration that empties node_stats.
var StatsLagBounds = [StatsLagBuckets - 1]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second,
	10 * time.Second, 30 * time.Second, time.Minute,
}

// StatsLagBuckets is the number of buckets of the lag histogram: one per
// bound of StatsLagBounds, and the last one, over 60 s.
const StatsLagBuckets = 16

// StatsRetention is how long the per-minute counters of the nodes are
// kept: housekeeping deletes older rows every minute. GET /api/v1/stats
// reads at most StatsMaxWindow back, an hour less.
const StatsRetention = 25 * time.Hour

// StatsMaxWindow is the longest window GET /api/v1/stats answers for.
const StatsMaxWindow = 24 * time.Hour

// StatsMinute is what one node did in one minute (the node_stats table):
// the fires it started, the outcomes it recorded, by class, and the lags
// of the scheduled fires it started. A node keeps the counters of the
// current minute in memory and writes them whole, one row per node and
// minute, every few seconds and when it stops (StatsSave), never a write
// per fire.
type StatsMinute struct {
	NodeID string
	// Minute is the minute's start (UTC, whole minute).
	Minute time.Time
	// Fires counts the fires whose first delivery started on the node in
	// the minute, whatever their trigger; ScheduledFires those of them
	// made by the planner (trigger SCHEDULE).
	Fires, ScheduledFires int64
	// Succeeded, Failed (FAILED, TIMEOUT, FAILED_TIMEOUT), Skipped and
	// Canceled count the runs the node recorded ending in the minute,
	// by their final status. A retry is not an end, nor is an
	// INTERRUPTED delivery (delivered again).
	Succeeded, Failed, Skipped, Canceled int64
	// Lag is the histogram of the lags of the scheduled fires started
	// (their first delivery's start after the time they were due): Lag[i]
	// counts the lags within StatsLagBounds[i] (and over the bound
	// before), the last bucket those over 60 s.
	Lag [StatsLagBuckets]int64
	// LagMax is the largest of those lags; zero for none.
	LagMax time.Duration
	// UpdatedAt is when the node last wrote the row.
	UpdatedAt time.Time
}

// LagBucket is the index of the bucket of the lag histogram that lag
// falls in; a negative lag (a fire sent a little ahead) is the first.
func LagBucket(lag time.Duration) int {
	for i, b := range StatsLagBounds {
		if lag <= b {
			return i
		}
	}
	return StatsLagBuckets - 1
}

// AddLag counts one scheduled fire's lag.
func (m *StatsMinute) AddLag(lag time.Duration) {
	m.Lag[LagBucket(lag)]++
	m.LagMax = max(m.LagMax, lag)
}

// Merge adds o's counters to m's (the lag histograms bucket by bucket,
// the larger LagMax).
func (m *StatsMinute) Merge(o *StatsMinute) {
	m.Fires += o.Fires
	m.ScheduledFires += o.ScheduledFires
	m.Succeeded += o.Succeeded
	m.Failed += o.Failed
	m.Skipped += o.Skipped
	m.Canceled += o.Canceled
	for i, n := range o.Lag {
		m.Lag[i] += n
	}
	m.LagMax = max(m.LagMax, o.LagMax)
}

// LagCount is the number of lags in m's histogram.
func (m *StatsMinute) LagCount() int64 {
	var n int64
	for _, c := range m.Lag {
		n += c
	}
	return n
}

// LagQuantile is an upper estimate of the q quantile (0 < q <= 1) of the
// lags in m's histogram: the upper bound of the bucket the quantile falls
// in, or LagMax when that is smaller (always, in the last bucket, which
// has no bound). ok is false when the histogram is empty.
func (m *StatsMinute) LagQuantile(q float64) (lag time.Duration, ok bool) {
	total := m.LagCount()
	if total == 0 {
		return 0, false
	}
	// The rank of the quantile: the smallest lag with at least q of them
	// at or below it.
	rank := int64(q * float64(total))
	if float64(rank) < q*float64(total) {
		rank++
	}
	rank = max(rank, 1)
	var seen int64
	for i, c := range m.Lag {
		seen += c
		if seen >= rank {
			if i < len(StatsLagBounds) && StatsLagBounds[i] < m.LagMax {
				return StatsLagBounds[i], true
			}
			return max(m.LagMax, 0), true
		}
	}
	return max(m.LagMax, 0), true
}
