package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// runReplayCommand is "sundial run replay".
func (c *cli) runReplayCommand() *cobra.Command {
	var task, selector, since, until, out string
	cmd := &cobra.Command{
		Use:   "replay (ID... | --task NAME|ID | --selector SEL) [--since T] [--until T]",
		Short: "Run dead letters (runs that failed for good) again, up to 100, all checked first",
		Long: `Replay dead letters, the runs that failed for good (FAILED, TIMEOUT, FAILED_TIMEOUT;
list them with "sundial run ls --dead-letter"), with POST /runs:replay: each becomes a new
MANUAL run with its params whose rerun_of is the dead letter, admitted as a rerun is.

Name the runs by id, or select the dead letters of a task (--task) or of the tasks whose
labels match a selector (-l), scheduled in [--since, --until). At most 100 runs; the
request is checked whole first, and nothing is replayed if any run is not a dead letter.
It prints one line per run: its new run, or why it was not made.`,
		Example: `  sundial run replay 812 813
  sundial run replay --task nightly-report --since 24h`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			filtered := task != "" || selector != "" || since != "" || until != ""
			switch {
			case len(args) > 0 && filtered:
				return usageErrorf("run replay: give run ids or --task, --selector, --since, --until, not both")
			case len(args) == 0 && task == "" && selector == "":
				return usageErrorf("run replay: give the run ids, or --task or --selector")
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			var body any
			if len(args) > 0 {
				ids := make([]int64, len(args))
				for i, v := range args {
					if ids[i], err = strconv.ParseInt(v, 10, 64); err != nil || ids[i] < 1 {
						return usageErrorf("run replay: %q is not a run id", v)
					}
				}
				body = map[string]any{"ids": ids}
			} else {
				filter := map[string]any{}
				if task != "" {
					it, err := resolveTask(cmd.Context(), a, task)
					if err != nil {
						return err
					}
					filter["task_id"] = it.t.ID
				}
				if selector != "" {
					filter["selector"] = selector
				}
				now := c.now()
				for _, tf := range []struct{ flag, key, v string }{{"since", "from", since}, {"until", "to", until}} {
					if tf.v == "" {
						continue
					}
					t, err := parseWhen(tf.flag, tf.v, now)
					if err != nil {
						return err
					}
					filter[tf.key] = t.UTC().Format(time.RFC3339)
				}
				body = map[string]any{"filter": filter}
			}
			var raw json.RawMessage
			if err := a.do(cmd.Context(), http.MethodPost, "/api/v1/runs:replay", nil, body, &raw); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, raw)
			case "yaml":
				return writeYAML(w, raw)
			}
			var resp struct {
				Items []struct {
					RerunOf int64   `json:"rerun_of"`
					Run     *cliRun `json:"run"`
					Error   *struct {
						Message string `json:"message"`
					} `json:"error"`
				} `json:"items"`
			}
			if err := json.Unmarshal(raw, &resp); err != nil {
				return err
			}
			failed := 0
			for _, it := range resp.Items {
				if it.Run == nil {
					failed++
					msg := "not replayed"
					if it.Error != nil {
						msg += ": " + it.Error.Message
					}
					fmt.Fprintf(w, "run/%d %s\n", it.RerunOf, msg)
					continue
				}
				fmt.Fprintf(w, "run/%d replayed: %s\n", it.RerunOf, runLine(*it.Run))
			}
			if len(resp.Items) == 0 {
				fmt.Fprintln(w, "no dead letter matches")
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d dead letters were not replayed", failed, len(resp.Items))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&task, "task", "", "replay the dead letters of this task")
	f.StringVarP(&selector, "selector", "l", "", "replay the dead letters of the tasks whose labels match this label selector")
	f.StringVar(&since, "since", "", "only dead letters scheduled from this time on: RFC 3339, or how long ago (24h)")
	f.StringVar(&until, "until", "", "only dead letters scheduled before this time: RFC 3339, or how long ago")
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}
