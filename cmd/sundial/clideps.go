package main

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
)

// taskDeps is GET /api/v1/tasks/{id}/deps.
type taskDeps struct {
	Task         string          `json:"task"`
	Join         string          `json:"join,omitempty"`
	JoinDeadline int             `json:"join_deadline_seconds,omitempty"`
	Parents      []cliDependency `json:"parents"`
	Children     []string        `json:"children"`
}

// taskDepsCommand is "sundial task deps".
func (c *cli) taskDepsCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "deps NAME|ID",
		Short: "Show a task's parents (depends_on) and the tasks that depend on it",
		Long: `Show the task's parents, each with the outcome it waits for, its join and join deadline,
and its children: the live tasks whose depends_on names it (GET /tasks/{id}/deps). See
docs/dependencies.md.`,
		Example:           "  sundial task deps report",
		Args:              exactArgs(1, "the name or id of a task"),
		ValidArgsFunction: c.completeTasks,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			it, err := resolveTask(cmd.Context(), a, args[0])
			if err != nil {
				return err
			}
			var d taskDeps
			if err := a.do(cmd.Context(), http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d/deps", it.t.ID), nil, nil, &d); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, d)
			case "yaml":
				return writeYAMLValue(w, d)
			}
			parents := "-"
			if len(d.Parents) > 0 {
				ps := make([]string, len(d.Parents))
				for i, p := range d.Parents {
					ps[i] = p.Task + " (" + p.On + ")"
				}
				parents = strings.Join(ps, ", ")
			}
			children := "-"
			if len(d.Children) > 0 {
				children = strings.Join(d.Children, ", ")
			}
			fields := [][2]string{{"Task", d.Task}, {"Parents", parents}}
			if d.Join != "" {
				fields = append(fields, [2]string{"Join", fmt.Sprintf("%s, deadline %ds", d.Join, d.JoinDeadline)})
			}
			fields = append(fields, [2]string{"Children", children})
			return writeFields(w, fields)
		},
	}
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}
