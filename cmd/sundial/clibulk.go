package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// bulkActions are the actions of "task bulk", and what each prints of a
// task it was applied to.
var bulkActions = map[string]string{"enable": "enabled", "disable": "disabled", "trigger": "triggered", "delete": "deleted"}

// bulkResult is the answer of POST /api/v1/tasks:bulk.
type bulkResult struct {
	Action string `json:"action"`
	Items  []struct {
		ID        int64  `json:"id"`
		Name      string `json:"name"`
		OK        bool   `json:"ok"`
		RunID     int64  `json:"run_id"`
		RunStatus string `json:"run_status"`
	} `json:"items"`
}

func (c *cli) taskBulkCommand() *cobra.Command {
	var selector, out string
	cmd := &cobra.Command{
		Use:   "bulk enable|disable|trigger|delete (--selector SEL | NAME|ID...)",
		Short: "Enable, disable, trigger or delete many tasks at once, all or none",
		Long: `Apply one action to up to 1,000 tasks (POST /api/v1/tasks:bulk): those named, or those
whose labels match --selector (-l). Every task is checked first (it exists; enable and
disable refuse a one-off task that has ended); if one fails, none is changed, and the
error names it. delete needs a token of the role editor, the other actions operator.`,
		Example: `  sundial task bulk disable -l team=payments,env=staging
  sundial task bulk trigger nightly-report weekly-report
  sundial task bulk delete -l 'app in (legacy)'`,
		Args: minArgs("an action: enable, disable, trigger or delete"),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []cobra.Completion{"enable", "disable", "trigger", "delete"}, cobra.ShellCompDirectiveNoFileComp
			}
			return c.completeTasks(cmd, args, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			action, refs := strings.ToLower(args[0]), dedupe(args[1:])
			past, ok := bulkActions[action]
			switch {
			case !ok:
				return usageErrorf("task bulk: %q is not an action: want enable, disable, trigger or delete", args[0])
			case selector != "" && len(refs) > 0:
				return usageErrorf("task bulk: give the tasks by name or id, or by --selector, not both")
			case selector == "" && len(refs) == 0:
				return usageErrorf("task bulk: give the tasks by name or id, or by --selector")
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			body := map[string]any{"action": action}
			if selector != "" {
				body["selector"] = selector
			} else {
				var ids []int64 // a task named twice (by name and by id) once
				for _, ref := range refs {
					it, err := resolveTask(cmd.Context(), a, ref)
					if err != nil {
						return err
					}
					if !slices.Contains(ids, it.t.ID) {
						ids = append(ids, it.t.ID)
					}
				}
				body["ids"] = ids
			}
			var raw json.RawMessage
			if err := a.do(cmd.Context(), http.MethodPost, "/api/v1/tasks:bulk", nil, body, &raw); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, raw)
			case "yaml":
				return writeYAML(w, raw)
			}
			var res bulkResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("the answer is not what the Sundial API answers: %v", err)
			}
			if len(res.Items) == 0 {
				fmt.Fprintf(w, "no task matches %s\n", selector)
			}
			for _, it := range res.Items {
				if it.RunID != 0 {
					fmt.Fprintf(w, "task/%s %s: run/%d %s\n", it.Name, past, it.RunID, it.RunStatus)
					continue
				}
				fmt.Fprintf(w, "task/%s %s\n", it.Name, past)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "the tasks whose labels match this label selector: team=payments,env!=prod")
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}
