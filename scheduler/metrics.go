package scheduler

import (
	"math/rand/v2"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the scheduler's Prometheus series.
type metrics struct {
	fires            *prometheus.CounterVec
	missed           prometheus.Counter
	retries          prometheus.Counter
	purged           prometheus.Counter
	lag              prometheus.Histogram
	deliveryDuration prometheus.Histogram
	inFlight         prometheus.Gauge
	queueDepth       prometheus.Gauge
	heapSize         prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		fires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sundial_fires_total",
			Help: "Runs that reached a final status on this node, by status.",
		}, []string{"status"}),
		missed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sundial_fires_missed_total",
			Help: "Fires missed while no node could plan them, counted by the catch-up mode.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sundial_retries_total",
			Help: "Deliveries that failed and were scheduled again under their task's retry policy.",
		}),
		purged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sundial_runs_purged_total",
			Help: "Runs deleted by the retention period.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sundial_fire_lag_seconds",
			Help:    "Delivery start minus scheduled time.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 5, 30},
		}),
		deliveryDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sundial_delivery_duration_seconds",
			Help:    "Duration of HTTP deliveries.",
			Buckets: prometheus.ExponentialBuckets(.001, 2.5, 12),
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sundial_runs_in_flight",
			Help: "HTTP deliveries in progress on this node.",
		}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sundial_delivery_queue_depth",
			Help: "Admitted runs waiting for a delivery worker.",
		}),
		heapSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sundial_planned_runs",
			Help: "Runs planned on this node and waiting for their instant.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.fires, m.missed, m.retries, m.purged, m.lag, m.deliveryDuration, m.inFlight, m.queueDepth, m.heapSize)
	}
	return m
}

func randN(n int64) int64 { return rand.Int64N(n) }
