package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// The alert commands (docs/alerts.md): channels and rules, added from a
// YAML or JSON file of the API's body, listed and removed by name; and
// the incidents with their notifications.

// alertObject is a channel or a rule, as the tables show it.
type alertObject struct {
	ID        int64    `json:"id"`
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	URL       string   `json:"url"`
	Task      string   `json:"task"`
	Selector  string   `json:"selector"`
	Channels  []string `json:"channels"`
	Condition struct {
		Kind string `json:"kind"`
	} `json:"condition"`
	SMTP *struct {
		Host string   `json:"host"`
		Port int      `json:"port"`
		To   []string `json:"to"`
	} `json:"smtp"`
}

// cliIncident is an incident, as the tables show it.
type cliIncident struct {
	ID            int64      `json:"id"`
	Rule          string     `json:"rule"`
	Task          string     `json:"task"`
	Status        string     `json:"status"`
	Reason        string     `json:"reason"`
	OpenedAt      time.Time  `json:"opened_at"`
	ResolvedAt    *time.Time `json:"resolved_at"`
	AckedAt       *time.Time `json:"acked_at"`
	AckedBy       string     `json:"acked_by"`
	AckNote       string     `json:"ack_note"`
	Notifications []struct {
		ID       int64      `json:"id"`
		Channel  string     `json:"channel"`
		Event    string     `json:"event"`
		Status   string     `json:"status"`
		Held     bool       `json:"held"`
		DueAt    time.Time  `json:"due_at"`
		SentAt   *time.Time `json:"sent_at"`
		Tries    int        `json:"tries"`
		Attempts []struct {
			Error string `json:"error"`
		} `json:"attempts"`
	} `json:"notifications"`
}

func (c *cli) alertCommand() *cobra.Command {
	cmd := groupCommand("alert", "Manage alert channels and rules", "")
	channel := groupCommand("channel", "Manage alert channels (webhook, slack, email)", "")
	channel.AddCommand(c.alertLsCommand("channel", "/api/v1/alert-channels"),
		c.alertAddCommand("channel", "/api/v1/alert-channels", `  sundial alert channel add -f ops-mail.yaml

ops-mail.yaml:
  name: ops-mail
  kind: email
  smtp: {host: smtp.example.com, port: 587, username: sundial, password: s3cret,
         from: sundial@example.com, to: [ops@example.com]}`),
		c.alertRmCommand("channel", "/api/v1/alert-channels"), c.alertTestCommand())
	rule := groupCommand("rule", "Manage alert rules", "")
	rule.AddCommand(c.alertLsCommand("rule", "/api/v1/alert-rules"),
		c.alertAddCommand("rule", "/api/v1/alert-rules", `  sundial alert rule add -f nightly.yaml

nightly.yaml:
  name: nightly-3
  task: nightly-report
  condition: {kind: consecutive_failures, count: 3}
  repeat_every: 1h
  channels: [ops-mail]`),
		c.alertRmCommand("rule", "/api/v1/alert-rules"))
	cmd.AddCommand(channel, rule)
	return cmd
}

func (c *cli) alertLsCommand(what, path string) *cobra.Command {
	var out, task string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the " + what + "s, by name",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			var q url.Values
			if task != "" {
				tk, err := resolveTask(cmd.Context(), a, task)
				if err != nil {
					return err
				}
				q = url.Values{"task_id": {strconv.FormatInt(tk.t.ID, 10)}}
			}
			var page struct {
				Items []json.RawMessage `json:"items"`
			}
			if err := a.do(cmd.Context(), http.MethodGet, path, q, nil, &page); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, page.Items)
			case "yaml":
				return writeYAML(w, page.Items...)
			}
			rows := [][]string{}
			for _, raw := range page.Items {
				var o alertObject
				if err := json.Unmarshal(raw, &o); err != nil {
					return err
				}
				id := strconv.FormatInt(o.ID, 10)
				if what == "channel" {
					where := o.URL
					if o.SMTP != nil {
						where = fmt.Sprintf("smtp://%s:%d to %s", o.SMTP.Host, o.SMTP.Port, strings.Join(o.SMTP.To, ","))
					}
					rows = append(rows, []string{o.Name, o.Kind, where, id})
					continue
				}
				watches := o.Task
				if o.Selector != "" {
					watches = "selector " + o.Selector
				}
				rows = append(rows, []string{o.Name, watches, o.Condition.Kind, strings.Join(o.Channels, ","), id})
			}
			if what == "channel" {
				return writeTable(w, []string{"NAME", "KIND", "WHERE", "ID"}, rows)
			}
			return writeTable(w, []string{"NAME", "WATCHES", "CONDITION", "CHANNELS", "ID"}, rows)
		},
	}
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	if what == "rule" {
		cmd.Use = "ls [--task NAME|ID]"
		cmd.Flags().StringVar(&task, "task", "", "only the rules that watch this task: by its id, or by a selector its labels match")
		_ = cmd.RegisterFlagCompletionFunc("task", c.completeTasks)
	}
	return cmd
}

func (c *cli) alertAddCommand(what, path, example string) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:     "add -f FILE",
		Short:   "Add a " + what + " from a YAML or JSON file of its fields (docs/alerts.md)",
		Example: example,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageErrorf("alert %s add: -f FILE is required (- for standard input)", what)
			}
			body, err := readObjectFile(file, c.stdin)
			if err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			var o alertObject
			if err := a.do(cmd.Context(), http.MethodPost, path, nil, body, &o); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s created (id %d)\n", what, o.Name, o.ID)
			return err
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "a YAML or JSON file of the "+what+"'s fields, or -")
	return cmd
}

// readObjectFile reads a YAML or JSON object from name (- : in) as JSON.
func readObjectFile(name string, in io.Reader) (json.RawMessage, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(in)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usageErrorf("-f: %v", err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, usageErrorf("-f %s: not a YAML or JSON object: %v", name, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, usageErrorf("-f %s: %v", name, err)
	}
	return b, nil
}

// resolveAlert finds the channel or rule ref names (a name, else an id).
func resolveAlert(ctx context.Context, a *apiClient, what, path, ref string) (alertObject, error) {
	var page struct {
		Items []alertObject `json:"items"`
	}
	if err := a.do(ctx, http.MethodGet, path, nil, nil, &page); err != nil {
		return alertObject{}, err
	}
	for _, o := range page.Items {
		if o.Name == ref || strconv.FormatInt(o.ID, 10) == ref {
			return o, nil
		}
	}
	return alertObject{}, fmt.Errorf("%s %q not found: no %s has that name or id", what, ref, what)
}

func (c *cli) alertRmCommand(what, path string) *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME|ID",
		Aliases: []string{"delete"},
		Short:   "Remove a " + what,
		Args:    exactArgs(1, "the "+what+"'s name or id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := c.client()
			if err != nil {
				return err
			}
			o, err := resolveAlert(cmd.Context(), a, what, path, args[0])
			if err != nil {
				return err
			}
			if err := a.do(cmd.Context(), http.MethodDelete, fmt.Sprintf("%s/%d", path, o.ID), nil, nil, nil); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s removed\n", what, o.Name)
			return err
		},
	}
}

func (c *cli) alertTestCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "test NAME|ID",
		Short: "Send a test message to a channel; exit 1 if it failed",
		Args:  exactArgs(1, "the channel's name or id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := c.client()
			if err != nil {
				return err
			}
			o, err := resolveAlert(cmd.Context(), a, "channel", "/api/v1/alert-channels", args[0])
			if err != nil {
				return err
			}
			var res struct {
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			}
			if err := a.do(cmd.Context(), http.MethodPost, fmt.Sprintf("/api/v1/alert-channels/%d/test", o.ID), nil, struct{}{}, &res); err != nil {
				return err
			}
			if !res.OK {
				return &exitError{code: 1, err: fmt.Errorf("channel %s: the test message failed: %s", o.Name, res.Error)}
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "channel/%s: test message sent\n", o.Name)
			return err
		},
	}
}

func (c *cli) incidentCommand() *cobra.Command {
	cmd := groupCommand("incident", "List alert incidents and their notifications", "")
	var (
		out, task string
		open      bool
		limit     int
	)
	ls := &cobra.Command{
		Use:     "ls [--open] [--task NAME|ID]",
		Aliases: []string{"list"},
		Short:   "List incidents, newest first",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			if open {
				q.Set("status", "OPEN")
			}
			if task != "" {
				tk, err := resolveTask(cmd.Context(), a, task)
				if err != nil {
					return err
				}
				q.Set("task_id", strconv.FormatInt(tk.t.ID, 10))
			}
			var page struct {
				Items []json.RawMessage `json:"items"`
			}
			if err := a.do(cmd.Context(), http.MethodGet, "/api/v1/incidents", q, nil, &page); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, page.Items)
			case "yaml":
				return writeYAML(w, page.Items...)
			}
			now := c.now()
			rows := [][]string{}
			for _, raw := range page.Items {
				var inc cliIncident
				if err := json.Unmarshal(raw, &inc); err != nil {
					return err
				}
				sent := 0
				for _, n := range inc.Notifications {
					if n.Status == "SENT" {
						sent++
					}
				}
				rows = append(rows, []string{strconv.FormatInt(inc.ID, 10), inc.Status, inc.Rule, inc.Task, ago(inc.OpenedAt, now),
					fmt.Sprintf("%d/%d", sent, len(inc.Notifications)), inc.Reason})
			}
			return writeTable(w, []string{"ID", "STATUS", "RULE", "TASK", "OPENED", "SENT", "REASON"}, rows)
		},
	}
	ls.Flags().BoolVar(&open, "open", false, "only the open incidents")
	ls.Flags().StringVar(&task, "task", "", "only the incidents of this task (name or id)")
	ls.Flags().IntVar(&limit, "limit", 50, "how many, newest first (1 to 1000)")
	addOutputFlag(ls, &out, "table", "table", "json", "yaml")

	var showOut string
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show an incident and each of its notifications",
		Args:  exactArgs(1, "the incident's id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(showOut, "table", "json", "yaml"); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := a.do(cmd.Context(), http.MethodGet, "/api/v1/incidents/"+url.PathEscape(args[0]), nil, nil, &raw); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch showOut {
			case "json":
				return writeJSON(w, raw)
			case "yaml":
				return writeYAML(w, raw)
			}
			var inc cliIncident
			if err := json.Unmarshal(raw, &inc); err != nil {
				return err
			}
			resolved := "-"
			if inc.ResolvedAt != nil {
				resolved = inc.ResolvedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(w, "incident %d  %s  rule %s  task %s\nreason:   %s\nopened:   %s\nresolved: %s\n", inc.ID, inc.Status,
				inc.Rule, inc.Task, inc.Reason, inc.OpenedAt.UTC().Format(time.RFC3339), resolved)
			if inc.AckedAt != nil {
				fmt.Fprintf(w, "acked:    %s by %s", inc.AckedAt.UTC().Format(time.RFC3339), inc.AckedBy)
				if inc.AckNote != "" {
					fmt.Fprintf(w, ": %s", inc.AckNote)
				}
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w)
			rows := [][]string{}
			for _, n := range inc.Notifications {
				when := n.DueAt.UTC().Format(time.RFC3339)
				if n.SentAt != nil {
					when = n.SentAt.UTC().Format(time.RFC3339)
				}
				if n.Held {
					when += " (held)"
				}
				last := ""
				if k := len(n.Attempts); k > 0 {
					last = n.Attempts[k-1].Error
				}
				rows = append(rows, []string{strconv.FormatInt(n.ID, 10), n.Event, n.Channel, n.Status, when, strconv.Itoa(n.Tries), last})
			}
			return writeTable(w, []string{"ID", "EVENT", "CHANNEL", "STATUS", "SENT/DUE", "TRIES", "LAST ERROR"}, rows)
		},
	}
	addOutputFlag(show, &showOut, "table", "table", "json", "yaml")

	var note string
	ack := &cobra.Command{
		Use:   "ack ID [--note TEXT]",
		Short: "Acknowledge an open incident: no more repeat notifications until it resolves",
		Args:  exactArgs(1, "the incident's id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := c.client()
			if err != nil {
				return err
			}
			var inc cliIncident
			if err := a.do(cmd.Context(), http.MethodPost, "/api/v1/incidents/"+url.PathEscape(args[0])+"/ack", nil,
				map[string]string{"note": note}, &inc); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "incident %d acknowledged by %s\n", inc.ID, inc.AckedBy)
			return nil
		},
	}
	ack.Flags().StringVar(&note, "note", "", "why, or what is being done (at most 1000 characters)")
	cmd.AddCommand(ls, show, ack)
	return cmd
}
