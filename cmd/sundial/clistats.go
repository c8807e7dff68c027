package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// cliStats is the answer of GET /api/v1/stats, as the table shows it.
type cliStats struct {
	From        time.Time        `json:"from"`
	To          time.Time        `json:"to"`
	StepSeconds int64            `json:"step_seconds"`
	Totals      cliStatsCounts   `json:"totals"`
	Steps       []cliStatsCounts `json:"steps"`
	Nodes       []cliStatsCounts `json:"nodes"`
}

// cliStatsCounts are the counts of a step, a node or the window.
type cliStatsCounts struct {
	Start     time.Time `json:"start"`
	NodeID    string    `json:"node_id"`
	Share     float64   `json:"share"`
	Fires     int64     `json:"fires"`
	Succeeded int64     `json:"succeeded"`
	Failed    int64     `json:"failed"`
	Skipped   int64     `json:"skipped"`
	Canceled  int64     `json:"canceled"`
	LagP50MS  *float64  `json:"lag_p50_ms"`
	LagP95MS  *float64  `json:"lag_p95_ms"`
	LagP99MS  *float64  `json:"lag_p99_ms"`
}

// cells are the counts as the columns FIRES ... LAG P99 show them.
func (s cliStatsCounts) cells() []string {
	lag := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return "≤" + formatMillis(*p)
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{n(s.Fires), n(s.Succeeded), n(s.Failed), n(s.Skipped), n(s.Canceled),
		lag(s.LagP50MS), lag(s.LagP95MS), lag(s.LagP99MS)}
}

// formatMillis is a lag in milliseconds as the table shows it: 5ms,
// 1.5s, 60s.
func formatMillis(ms float64) string {
	if ms < 1000 {
		return strconv.FormatFloat(ms, 'f', -1, 64) + "ms"
	}
	return strconv.FormatFloat(ms/1000, 'f', -1, 64) + "s"
}

// statsCommand is "sundial stats": what the cluster did over the last
// hour (--since), per step, in total and per node.
func (c *cli) statsCommand() *cobra.Command {
	var out, since, step string
	cmd := &cobra.Command{
		Use:   "stats [--since D] [--step D]",
		Short: "Show what the cluster did: fires, outcomes and fire lag per step, and each node's share",
		Long: `Show what the nodes did over the last --since (1h), in steps of --step
(5m): fires started, runs succeeded, failed, skipped and canceled, and the
fire lag p50/p95/p99 of the scheduled fires, then the totals and each
node's share of the fires. The lags are upper estimates (≤): the upper
bound of the histogram bucket the percentile falls in. The counts are
those GET /api/v1/stats sums; each node writes them every
scheduler.stats_flush (10s).`,
		Example: "  sundial stats\n  sundial stats --since 24h --step 1h\n  sundial stats -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			_, raw, done, err := c.readAnswer(cmd, http.MethodGet, "/api/v1/stats", url.Values{"since": {since}, "step": {step}}, out)
			if done || err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			var st cliStats
			if err := json.Unmarshal(raw, &st); err != nil {
				return err
			}
			cols := []string{"FIRES", "SUCCEEDED", "FAILED", "SKIPPED", "CANCELED", "LAG P50", "LAG P95", "LAG P99"}
			rows := make([][]string, 0, len(st.Steps)+1)
			for _, s := range st.Steps {
				rows = append(rows, append([]string{s.Start.UTC().Format("2006-01-02 15:04")}, s.cells()...))
			}
			rows = append(rows, append([]string{"total"}, st.Totals.cells()...))
			if err := writeTable(w, append([]string{"STEP (UTC)"}, cols...), rows); err != nil {
				return err
			}
			fmt.Fprintln(w)
			rows = rows[:0]
			for _, n := range st.Nodes {
				rows = append(rows, append([]string{n.NodeID, fmt.Sprintf("%.0f%%", 100*n.Share)}, n.cells()...))
			}
			return writeTable(w, append([]string{"NODE", "SHARE"}, cols...), rows)
		},
	}
	cmd.Flags().StringVar(&since, "since", "1h", "how far back, whole minutes from 1m to 24h")
	cmd.Flags().StringVar(&step, "step", "5m", "the length of a step, whole minutes from 1m to --since")
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}
