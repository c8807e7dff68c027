package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// taskBackfillCommand is "sundial task backfill".
func (c *cli) taskBackfillCommand() *cobra.Command {
	var from, to, out string
	var dry, cancel bool
	cmd := &cobra.Command{
		Use:   "backfill NAME|ID --from T [--to T] [--dry-run] | --cancel",
		Short: "Run every fire time of a task's schedule in a past range, oldest first; --cancel stops a backfill",
		Long: `Run every fire time of the task's schedule from --from to --to (both included; --to
defaults to now and must not be in the future), oldest first, as runs with trigger BACKFILL
(POST /tasks/{id}/backfill). The runs go through the task's overlap, failure and concurrency
policies as scheduled fires do. A time is backfilled once: repeating a backfill runs only
the times that have no backfilled run yet. A range holds at most 500 fire times.

--dry-run lists the times and runs nothing. --cancel cancels every backfilled run of the
task that has not ended (POST /tasks/{id}/backfill:cancel).`,
		Example: `  sundial task backfill nightly-report --from 2026-05-01T00:00:00Z --to 2026-05-07T23:59:59Z --dry-run
  sundial task backfill nightly-report --from 72h
  sundial task backfill nightly-report --cancel`,
		Args:              exactArgs(1, "the name or id of a task"),
		ValidArgsFunction: c.completeTasks,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			if cancel && (from != "" || to != "" || dry) {
				return usageErrorf("task backfill: --cancel takes no --from, --to or --dry-run")
			}
			if !cancel && from == "" {
				return usageErrorf("task backfill: --from is required: the start of the range")
			}
			now := c.now().Truncate(time.Second)
			var body map[string]any
			if !cancel {
				f, err := parseWhen("from", from, now)
				if err != nil {
					return err
				}
				t := now
				if to != "" {
					if t, err = parseWhen("to", to, now); err != nil {
						return err
					}
				}
				body = map[string]any{"from": f.UTC().Format(time.RFC3339), "to": t.UTC().Format(time.RFC3339), "dry_run": dry}
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			it, err := resolveTask(cmd.Context(), a, args[0])
			if err != nil {
				return err
			}
			path := fmt.Sprintf("/api/v1/tasks/%d/backfill", it.t.ID)
			if cancel {
				path += ":cancel"
			}
			var raw json.RawMessage
			if err := a.do(cmd.Context(), http.MethodPost, path, nil, body, &raw); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, raw)
			case "yaml":
				return writeYAML(w, raw)
			}
			if cancel {
				var resp struct {
					Canceled []cliRun `json:"canceled"`
				}
				if err := json.Unmarshal(raw, &resp); err != nil {
					return err
				}
				for _, r := range resp.Canceled {
					fmt.Fprintln(w, runLine(r))
				}
				_, err := fmt.Fprintf(w, "task/%s: %d backfilled runs canceled\n", it.t.Name, len(resp.Canceled))
				return err
			}
			var resp struct {
				Count, Created, Existing int
				Items                    []struct {
					ScheduledTime time.Time `json:"scheduled_time"`
					RunID         int64     `json:"run_id"`
					Status        string    `json:"status"`
					Created       bool      `json:"created"`
				}
			}
			if err := json.Unmarshal(raw, &resp); err != nil {
				return err
			}
			rows := [][]string{}
			for _, i := range resp.Items {
				run, status := "-", "to run"
				if i.RunID != 0 {
					run, status = fmt.Sprintf("run/%d", i.RunID), i.Status
					if !i.Created {
						status += " (backfilled before)"
					}
				}
				if dry && i.RunID == 0 {
					status = "would run"
				}
				rows = append(rows, []string{inZone(i.ScheduledTime, it.t.Timezone), run, status})
			}
			if err := writeTable(w, []string{"TIME (" + it.t.Timezone + ")", "RUN", "STATUS"}, rows); err != nil {
				return err
			}
			if dry {
				_, err = fmt.Fprintf(w, "dry run: %d fire times, %d backfilled before, %d would run\n",
					resp.Count, resp.Existing, resp.Count-resp.Existing)
				return err
			}
			_, err = fmt.Fprintf(w, "%d fire times: %d runs made, %d backfilled before\n", resp.Count, resp.Created, resp.Existing)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the start of the range: RFC 3339, or how long ago (72h)")
	f.StringVar(&to, "to", "", "the end of the range: RFC 3339, or how long ago (default now)")
	f.BoolVar(&dry, "dry-run", false, "list the fire times; run nothing")
	f.BoolVar(&cancel, "cancel", false, "cancel every backfilled run of the task that has not ended")
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}
