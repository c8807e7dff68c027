package api

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/sundialhq/sundial"
)

// statsResponse is the body of GET /api/v1/stats: what the nodes did in
// the window [from, to), in steps and in total, and each node's part.
type statsResponse struct {
	From        time.Time `json:"from"`
	To          time.Time `json:"to"`
	StepSeconds int64     `json:"step_seconds"`
	// LagBoundsMS are the upper bounds of the lag histogram's buckets
	// (the last bucket, over the last bound, has none): a percentile is
	// one of them, or lag_max_ms when that is smaller.
	LagBoundsMS []float64     `json:"lag_bounds_ms"`
	Totals      statsCounts   `json:"totals"`
	Steps       []statsStep   `json:"steps"`
	Nodes       []statsByNode `json:"nodes"`
}

// statsCounts are the counts of a step, a node or the window.
type statsCounts struct {
	Fires          int64 `json:"fires"`
	ScheduledFires int64 `json:"scheduled_fires"`
	Succeeded      int64 `json:"succeeded"`
	Failed         int64 `json:"failed"`
	Skipped        int64 `json:"skipped"`
	Canceled       int64 `json:"canceled"`
	// The lag percentiles of the scheduled fires started, upper
	// estimates (see LagBoundsMS), and the largest lag, in
	// milliseconds; null when no scheduled fire started.
	LagP50MS *float64 `json:"lag_p50_ms"`
	LagP95MS *float64 `json:"lag_p95_ms"`
	LagP99MS *float64 `json:"lag_p99_ms"`
	LagMaxMS *float64 `json:"lag_max_ms"`
}

// statsStep is one step of the window, from Start.
type statsStep struct {
	Start time.Time `json:"start"`
	statsCounts
}

// statsByNode is what one node did in the window, and its share of the
// window's fires (0 to 1).
type statsByNode struct {
	NodeID string  `json:"node_id"`
	Share  float64 `json:"share"`
	statsCounts
}

// statsWindow reads since and step: whole minutes, since from 1m to
// sundial.StatsMaxWindow (1h when not given), step from 1m to since (1m
// when not given).
func statsWindow(r *http.Request) (since, step time.Duration, err error) {
	q := r.URL.Query()
	read := func(field string, def, most time.Duration, what string) (time.Duration, error) {
		v := q.Get(field)
		if v == "" {
			return def, nil
		}
		d, perr := time.ParseDuration(v)
		if perr != nil || d < time.Minute || d > most || d%time.Minute != 0 {
			e := sundial.Errorf(sundial.EInvalid, field, `%s must be a whole number of minutes from 1m to %s, such as "1h" or "5m"`,
				field, what)
			e.Token = v
			return 0, e
		}
		return d, nil
	}
	if since, err = read("since", time.Hour, sundial.StatsMaxWindow, "24h"); err != nil {
		return 0, 0, err
	}
	if step, err = read("step", time.Minute, since, "since ("+since.String()+")"); err != nil {
		return 0, 0, err
	}
	return since, step, nil
}

// handleStats serves GET /api/v1/stats?since=&step=: what the nodes did
// over the last since (1h), in steps of step (1m), summed from the rows
// each node writes per minute (node_stats). The window ends with the
// step in progress: to is the end of the current step.
func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	since, step, err := statsWindow(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	now := time.Now().UTC()
	to := now.Truncate(step).Add(step)
	n := int((since + step - 1) / step)
	from := to.Add(-time.Duration(n) * step)
	rows, err := s.store.StatsList(r.Context(), from, to)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	steps := make([]sundial.StatsMinute, n)
	var total sundial.StatsMinute
	byNode := map[string]*sundial.StatsMinute{}
	for _, m := range rows {
		i := int(m.Minute.Sub(from) / step)
		if i < 0 || i >= n {
			continue
		}
		steps[i].Merge(m)
		total.Merge(m)
		if byNode[m.NodeID] == nil {
			byNode[m.NodeID] = &sundial.StatsMinute{NodeID: m.NodeID}
		}
		byNode[m.NodeID].Merge(m)
	}
	resp := statsResponse{From: from, To: to, StepSeconds: int64(step / time.Second),
		Totals: countsOf(&total), Steps: make([]statsStep, n), Nodes: []statsByNode{}}
	for _, b := range sundial.StatsLagBounds {
		resp.LagBoundsMS = append(resp.LagBoundsMS, millis(b))
	}
	for i := range steps {
		resp.Steps[i] = statsStep{Start: from.Add(time.Duration(i) * step), statsCounts: countsOf(&steps[i])}
	}
	for id, m := range byNode {
		share := 0.0
		if total.Fires > 0 {
			share = float64(m.Fires) / float64(total.Fires)
		}
		resp.Nodes = append(resp.Nodes, statsByNode{NodeID: id, Share: share, statsCounts: countsOf(m)})
	}
	slices.SortFunc(resp.Nodes, func(a, b statsByNode) int {
		return cmp.Or(cmp.Compare(b.Fires, a.Fires), cmp.Compare(a.NodeID, b.NodeID))
	})
	writeJSON(w, http.StatusOK, resp)
}

// countsOf is m as the API answers it.
func countsOf(m *sundial.StatsMinute) statsCounts {
	c := statsCounts{Fires: m.Fires, ScheduledFires: m.ScheduledFires, Succeeded: m.Succeeded,
		Failed: m.Failed, Skipped: m.Skipped, Canceled: m.Canceled}
	q := func(p float64) *float64 {
		d, ok := m.LagQuantile(p)
		if !ok {
			return nil
		}
		v := millis(d)
		return &v
	}
	c.LagP50MS, c.LagP95MS, c.LagP99MS = q(0.50), q(0.95), q(0.99)
	if m.LagCount() > 0 {
		v := millis(max(m.LagMax, 0))
		c.LagMaxMS = &v
	}
	return c
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
