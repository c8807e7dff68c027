package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// runCommand is "sundial run".
func (c *cli) runCommand() *cobra.Command {
	cmd := groupCommand("run", "List, read, cancel, rerun, replay and follow runs", "")
	cmd.AddCommand(c.runLsCommand(), c.runGetCommand(), c.runRequestCommand(), c.runCancelCommand(), c.runRerunCommand(), c.runReplayCommand(), c.runTailCommand())
	return cmd
}

// runFilter holds the flags of the run lists.
type runFilter struct {
	status, trigger, selector, out string
	since, until                   string // scheduled time (--from and --to are their other names)
	from, to                       string
	finishedAfter, finishedBefore  string
	planned, deadLetter            bool
	limit                          int
}

// flags adds the run list's flags to cmd; withSelector the one that
// selects by the labels of the runs' tasks (a list of one task's runs has
// no use for it).
func (f *runFilter) flags(cmd *cobra.Command, withSelector bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.status, "status", "", "only runs in these statuses, comma-separated: FAILED,TIMEOUT")
	fl.StringVar(&f.trigger, "trigger", "", "only runs made so, comma-separated: SCHEDULE, MANUAL, CATCH_UP, BACKFILL, DEPENDENCY")
	if withSelector {
		fl.StringVarP(&f.selector, "selector", "l", "", "only the runs of the tasks whose labels match this label selector: team=payments")
	}
	fl.StringVar(&f.since, "since", "", "only runs scheduled from this time on: RFC 3339, or how long ago (24h)")
	fl.StringVar(&f.until, "until", "", "only runs scheduled before this time: RFC 3339, or how long ago")
	fl.StringVar(&f.from, "from", "", "the same as --since")
	fl.StringVar(&f.to, "to", "", "the same as --until")
	fl.StringVar(&f.finishedAfter, "finished-after", "", "only runs that finished from this time on: RFC 3339, or how long ago")
	fl.StringVar(&f.finishedBefore, "finished-before", "", "only runs that finished before this time: RFC 3339, or how long ago")
	fl.BoolVar(&f.planned, "planned", false, "list the planned runs too (fires not due yet), first")
	fl.BoolVar(&f.deadLetter, "dead-letter", false, "only the runs that failed for good (FAILED, TIMEOUT, FAILED_TIMEOUT); not with --status")
	fl.IntVar(&f.limit, "limit", 20, "at most this many runs (0: all)")
	addOutputFlag(cmd, &f.out, "table", "table", "wide", "json", "yaml", "name")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"SCHEDULED", "QUEUED", "RUNNING",
		"WAITING_CALLBACK", "SUCCESS", "FAILED", "TIMEOUT", "FAILED_TIMEOUT", "CANCELED", "SKIPPED", "INTERRUPTED"},
		cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("trigger", cobra.FixedCompletions([]string{"SCHEDULE", "MANUAL", "CATCH_UP", "BACKFILL"},
		cobra.ShellCompDirectiveNoFileComp))
}

func (f *runFilter) check() error {
	if err := checkOutput(f.out, "table", "wide", "json", "yaml", "name"); err != nil {
		return err
	}
	if f.limit < 0 {
		return usageErrorf("--limit %d: want 0 (all) or more", f.limit)
	}
	if f.since != "" && f.from != "" {
		return usageErrorf("--since and --from are the same; give one")
	}
	if f.until != "" && f.to != "" {
		return usageErrorf("--until and --to are the same; give one")
	}
	return nil
}

// query is the filter as the API's query parameters.
func (f *runFilter) query(now time.Time) (url.Values, error) {
	q := url.Values{}
	if f.status != "" {
		q.Set("status", f.status)
	}
	if f.trigger != "" {
		q.Set("trigger", f.trigger)
	}
	if f.selector != "" {
		q.Set("selector", f.selector)
	}
	for _, tf := range []struct{ flag, param, v string }{
		{"since", "from", f.since}, {"until", "to", f.until}, {"from", "from", f.from}, {"to", "to", f.to},
		{"finished-after", "finished_after", f.finishedAfter}, {"finished-before", "finished_before", f.finishedBefore},
	} {
		if tf.v == "" {
			continue
		}
		t, err := parseWhen(tf.flag, tf.v, now)
		if err != nil {
			return nil, err
		}
		q.Set(tf.param, t.UTC().Format(time.RFC3339Nano))
	}
	if f.planned {
		q.Set("planned", "true")
	}
	if f.deadLetter {
		q.Set("dead_letter", "true")
	}
	return q, nil
}

func (c *cli) runLsCommand() *cobra.Command {
	var f runFilter
	var task string
	cmd := &cobra.Command{
		Use:     "ls [--task NAME|ID] [--selector SEL] [--status S,...] [--trigger T,...] [--since T] [--until T]",
		Aliases: []string{"list"},
		Short:   "List runs, newest first by scheduled time",
		Long: `List runs, newest first by scheduled time. Every filter given must hold: --task, the
runs of one task; --selector (-l), the runs of the tasks whose labels match a label
selector (team=payments,env!=prod), deleted tasks' included; --status and --trigger,
one value or several separated by commas; --since and --until, the scheduled time;
--finished-after and --finished-before, the finished time. A time is RFC 3339, or how
long ago (90m, 24h).`,
		Example: `  sundial run ls --status FAILED,TIMEOUT,FAILED_TIMEOUT --since 1h
  sundial run ls -l team=payments --status FAILED --trigger SCHEDULE --since 24h
  sundial run ls --trigger MANUAL --finished-after 2h --finished-before 1h
  sundial run ls --task nightly-report -o wide`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			q, err := f.query(c.now())
			if err != nil {
				return err
			}
			if task != "" {
				id, err := taskID(cmd.Context(), a, task)
				if err != nil {
					return err
				}
				q.Set("task_id", strconv.FormatInt(id, 10))
			}
			raws, err := a.list(cmd.Context(), "/api/v1/runs", q, f.limit)
			if err != nil {
				return err
			}
			return c.printRuns(cmd, a, f.out, raws, true)
		},
	}
	cmd.Flags().StringVar(&task, "task", "", "only the runs of this task (a name, or the id of a task, deleted ones too)")
	_ = cmd.RegisterFlagCompletionFunc("task", c.completeTasks)
	f.flags(cmd, true)
	return cmd
}

// taskID is the id of the task ref names: a live task's name or id, or
// the id of a task that has been deleted (its runs stay listed).
func taskID(ctx context.Context, a *apiClient, ref string) (int64, error) {
	it, err := resolveTask(ctx, a, ref)
	if err == nil {
		return it.t.ID, nil
	}
	if id, perr := strconv.ParseInt(ref, 10, 64); perr == nil && id > 0 {
		return id, nil
	}
	return 0, err
}

// printRuns writes runs: with a TASK column (its name) when withTask.
func (c *cli) printRuns(cmd *cobra.Command, a *apiClient, out string, raws []json.RawMessage, withTask bool) error {
	w := cmd.OutOrStdout()
	switch out {
	case "json":
		return writeJSON(w, raws)
	case "yaml":
		return writeYAML(w, raws...)
	}
	runs := make([]cliRun, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &runs[i]); err != nil {
			return fmt.Errorf("a run in the answer is not what the Sundial API answers: %v", err)
		}
	}
	if out == "name" {
		for _, r := range runs {
			fmt.Fprintf(w, "run/%d\n", r.ID)
		}
		return nil
	}
	var names map[int64]string
	if withTask {
		names = taskNames(cmd.Context(), a, runs)
	}
	now := c.now()
	header := []string{"ID"}
	if withTask {
		header = append(header, "TASK")
	}
	header = append(header, "TRIGGER", "SCHEDULED", "STATUS", "HTTP", "DURATION")
	if out == "wide" {
		header = append(header, "LAG", "DELIVERIES", "NODE", "ERROR")
	}
	rows := make([][]string, 0, len(runs))
	for _, r := range runs {
		row := []string{strconv.FormatInt(r.ID, 10)}
		if withTask {
			row = append(row, names[r.TaskID])
		}
		sched := ago(r.ScheduledTime, now)
		if out == "wide" {
			sched = r.ScheduledTime.UTC().Format(time.RFC3339Nano)
		}
		httpStatus, dur := "-", "-"
		if r.HTTPStatus != 0 {
			httpStatus = strconv.Itoa(r.HTTPStatus)
		}
		if r.StartedAt != nil && r.FinishedAt != nil {
			dur = runDuration(r.FinishedAt.Sub(*r.StartedAt))
		}
		row = append(row, r.Trigger, sched, statusText(r.Status, r.SkipReason), httpStatus, dur)
		if out == "wide" {
			lag := "-"
			if r.StartedAt != nil && r.Trigger != "MANUAL" {
				lag = runDuration(r.StartedAt.Sub(r.ScheduledTime))
			}
			row = append(row, lag, strconv.Itoa(r.Deliveries), dash(r.NodeID), dash(r.Error))
		}
		rows = append(rows, row)
	}
	return writeTable(w, header, rows)
}

// taskNames maps the tasks of runs to their names: a deleted task's is
// its id and "(deleted)".
func taskNames(ctx context.Context, a *apiClient, runs []cliRun) map[int64]string {
	var ids []int64
	names := map[int64]string{}
	for _, r := range runs {
		if _, ok := names[r.TaskID]; !ok {
			names[r.TaskID] = strconv.FormatInt(r.TaskID, 10)
			ids = append(ids, r.TaskID)
		}
	}
	var mu sync.Mutex
	_ = parallel(len(ids), func(i int) error {
		var t cliTask
		name := strconv.FormatInt(ids[i], 10)
		if err := a.do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", ids[i]), nil, nil, &t); err == nil {
			name = t.Name
		} else if notFound(err) {
			name += " (deleted)"
		}
		mu.Lock()
		names[ids[i]] = name
		mu.Unlock()
		return nil
	})
	return names
}

// runArg reads a run's id.
func runArg(cmd *cobra.Command, v string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(v, "run/"), 10, 64)
	if err != nil || id < 1 {
		return 0, usageErrorf("%s: %q: want a run's id, a positive number", commandName(cmd), v)
	}
	return id, nil
}

func (c *cli) runGetCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show a run and its deliveries",
		Args:  exactArgs(1, "a run's id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			a, raw, done, err := c.readRun(cmd, args[0], "", out)
			if done || err != nil {
				return err
			}
			var r cliRun
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			return c.describeRun(cmd, a, r)
		},
	}
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}

// readRun reads GET /api/v1/runs/{arg}{rest} as readAnswer does.
func (c *cli) readRun(cmd *cobra.Command, arg, rest, out string) (a *apiClient, raw json.RawMessage, done bool, err error) {
	id, err := runArg(cmd, arg)
	if err != nil {
		return nil, nil, false, err
	}
	return c.readAnswer(cmd, http.MethodGet, fmt.Sprintf("/api/v1/runs/%d%s", id, rest), nil, out)
}

// readAnswer sends method path with the query q and, with -o json or
// yaml, prints the answer as it came (done); otherwise it returns it for
// the caller to print.
func (c *cli) readAnswer(cmd *cobra.Command, method, path string, q url.Values, out string) (a *apiClient, raw json.RawMessage, done bool, err error) {
	if a, err = c.client(); err != nil {
		return nil, nil, false, err
	}
	if err := a.do(cmd.Context(), method, path, q, nil, &raw); err != nil {
		return nil, nil, false, err
	}
	switch out {
	case "json":
		return a, raw, true, writeJSON(cmd.OutOrStdout(), raw)
	case "yaml":
		return a, raw, true, writeYAML(cmd.OutOrStdout(), raw)
	}
	return a, raw, false, nil
}

func (c *cli) runRequestCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "request ID [-o http|curl|json|yaml]",
		Short: "Show the HTTP request a run sends, secrets masked (its last delivery's)",
		Long: `Shows the HTTP request of a run's last delivery (before any, of its first), made from its
task as the task is now: the request line, every header (Sundial's included) and the rendered
body. Secrets are *** (sensitive headers, credentials in the URL, an ASYNC run's callback token,
the signature, the OIDC token). -o curl prints it as a curl command to reproduce the call.`,
		Args: exactArgs(1, "a run's id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "http", "curl", "json", "yaml"); err != nil {
				return err
			}
			_, raw, done, err := c.readRun(cmd, args[0], "/request", out)
			if done || err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			var req struct {
				Method, URL, Body, Curl string
				Headers                 []struct{ Name, Value string }
			}
			if err := json.Unmarshal(raw, &req); err != nil {
				return err
			}
			if out == "curl" {
				_, err := fmt.Fprintln(w, req.Curl)
				return err
			}
			var b strings.Builder
			b.WriteString(req.Method + " " + req.URL + "\n")
			for _, h := range req.Headers {
				b.WriteString(h.Name + ": " + h.Value + "\n")
			}
			if req.Body != "" {
				b.WriteString("\n" + req.Body + "\n")
			}
			_, err = io.WriteString(w, b.String())
			return err
		},
	}
	addOutputFlag(cmd, &out, "http", "http", "curl", "json", "yaml")
	return cmd
}

// describeRun writes a run as fields, then its deliveries as a table.
func (c *cli) describeRun(cmd *cobra.Command, a *apiClient, r cliRun) error {
	now := c.now()
	w := cmd.OutOrStdout()
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano) + " (" + ago(*t, now) + ")"
	}
	task := taskNames(cmd.Context(), a, []cliRun{r})[r.TaskID]
	fields := [][2]string{
		{"Run", strconv.FormatInt(r.ID, 10)},
		{"Task", fmt.Sprintf("%s (id %d)", task, r.TaskID)},
		{"Trigger", r.Trigger},
		{"Status", statusText(r.Status, r.SkipReason)},
		{"Scheduled", at(&r.ScheduledTime)},
		{"Started", at(r.StartedAt)},
		{"Finished", at(r.FinishedAt)},
	}
	if r.HTTPStatus != 0 {
		fields = append(fields, [2]string{"HTTP status", strconv.Itoa(r.HTTPStatus)})
	}
	if r.Error != "" {
		fields = append(fields, [2]string{"Error", r.Error})
	}
	if r.Message != "" {
		fields = append(fields, [2]string{"Message", r.Message})
	}
	if r.MissedCount > 0 {
		fields = append(fields, [2]string{"Missed fires", strconv.Itoa(r.MissedCount)})
	}
	fields = append(fields, [2]string{"Attempt", strconv.Itoa(r.Attempt)},
		[2]string{"Deliveries", strconv.Itoa(r.Deliveries)}, [2]string{"Node", dash(r.NodeID)},
		[2]string{"Idempotency-Key", r.Idempotency}, [2]string{"Trace", dash(r.TraceID)})
	if r.Cancel {
		fields = append(fields, [2]string{"Cancel", "requested"})
	}
	if err := writeFields(w, fields); err != nil {
		return err
	}
	if len(r.Attempts) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nDeliveries:")
	rows := make([][]string, 0, len(r.Attempts))
	for _, at := range r.Attempts {
		httpStatus, dur, started := "-", "-", "-"
		if at.HTTPStatus != 0 {
			httpStatus = strconv.Itoa(at.HTTPStatus)
		}
		if at.StartedAt != nil {
			started = at.StartedAt.UTC().Format(time.RFC3339Nano)
			if at.FinishedAt != nil {
				dur = runDuration(at.FinishedAt.Sub(*at.StartedAt))
			}
		}
		rows = append(rows, []string{strconv.Itoa(at.Delivery), at.Status, httpStatus, started, dur, dash(at.NodeID), dash(at.Error)})
	}
	return writeTable(w, []string{"DELIVERY", "STATUS", "HTTP", "STARTED", "DURATION", "NODE", "ERROR"}, rows)
}

func (c *cli) runRerunCommand() *cobra.Command {
	var out string
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "rerun ID [--wait [--timeout D]]",
		Short: "Run a run's task again now, with the run's params; --wait waits for the outcome",
		Long: `Run a run's task again now, with the run's params (POST /runs/{id}/rerun): a new MANUAL
run, admitted under the task's concurrency policy as a trigger is, whose rerun_of is the
run given. It prints the new run as admission left it.

With --wait it follows the new run until it has an outcome, prints it, and exits 0 if it
is SUCCESS, 1 otherwise, or when --timeout passes first (the run goes on).`,
		Example: `  sundial run ls --status FAILED --since 1h -o name
  sundial run rerun 812 --wait`,
		Args: exactArgs(1, "a run's id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			if timeout < 0 {
				return usageErrorf("run rerun: --timeout %s: must not be negative", timeout)
			}
			id, err := runArg(cmd, args[0])
			if err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := a.do(cmd.Context(), http.MethodPost, fmt.Sprintf("/api/v1/runs/%d/rerun", id), nil, nil, &raw); err != nil {
				return err
			}
			run, err := c.showRun(cmd, a, raw, out, wait, timeout)
			if err != nil || !wait || run.Status == "SUCCESS" {
				return err
			}
			return fmt.Errorf("run %d (a rerun of run %d) ended %s%s", run.ID, id, run.Status, failureText(run))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&wait, "wait", false, "wait for the new run's outcome; exit 1 unless it is SUCCESS")
	f.DurationVar(&timeout, "timeout", 0, "with --wait: give up waiting after this long, and exit 1 (0: wait as long as it takes)")
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}

func (c *cli) runCancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID...",
		Short: "Cancel runs: one not started yet, or waiting, ends at once; a running one has its call cancelled",
		Args:  minArgs("a run's id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids := make([]int64, len(args))
			for i, v := range args {
				id, err := runArg(cmd, v)
				if err != nil {
					return err
				}
				ids[i] = id
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			for _, id := range ids {
				var r cliRun
				if err := a.do(cmd.Context(), http.MethodPost, fmt.Sprintf("/api/v1/runs/%d/cancel", id), nil, nil, &r); err != nil {
					return err
				}
				what := r.Status
				if r.Cancel && r.Status != "CANCELED" {
					what = "cancel requested (" + r.Status + ")"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "run/%d %s\n", r.ID, what)
			}
			return nil
		},
	}
}

// nodeCommand is "sundial node".
func (c *cli) nodeCommand() *cobra.Command {
	cmd := groupCommand("node", "List the nodes of the cluster", "")
	var out string
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the nodes that share the database, newest first",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out, "table", "wide", "json", "yaml", "name"); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			var p listPage
			if err := a.do(cmd.Context(), http.MethodGet, "/api/v1/nodes", nil, nil, &p); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, p.Items)
			case "yaml":
				return writeYAML(w, p.Items...)
			}
			now := c.now()
			rows := [][]string{}
			for _, raw := range p.Items {
				var n struct {
					ID          string    `json:"id"`
					Host        string    `json:"host"`
					PID         int       `json:"pid"`
					Address     string    `json:"address"`
					State       string    `json:"state"`
					StartedAt   time.Time `json:"started_at"`
					HeartbeatAt time.Time `json:"heartbeat_at"`
				}
				if err := json.Unmarshal(raw, &n); err != nil {
					return err
				}
				if out == "name" {
					fmt.Fprintln(w, "node/"+n.ID)
					continue
				}
				row := []string{n.ID, n.State, n.Address, ago(n.HeartbeatAt, now), ago(n.StartedAt, now)}
				if out == "wide" {
					row = append(row, n.Host, strconv.Itoa(n.PID))
				}
				rows = append(rows, row)
			}
			if out == "name" {
				return nil
			}
			header := []string{"ID", "STATE", "ADDRESS", "HEARTBEAT", "STARTED"}
			if out == "wide" {
				header = append(header, "HOST", "PID")
			}
			return writeTable(w, header, rows)
		},
	}
	addOutputFlag(ls, &out, "table", "table", "wide", "json", "yaml", "name")
	cmd.AddCommand(ls)
	return cmd
}

// cliToken is an API token as the API shows it.
type cliToken struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	Expired   bool       `json:"expired"`
	CreatedBy string     `json:"created_by"`
	Secret    string     `json:"secret"`
}

// listTokens reads every token: GET /tokens answers them all at once (it
// takes no limit).
func listTokens(ctx context.Context, a *apiClient) ([]json.RawMessage, error) {
	var p listPage
	if err := a.do(ctx, http.MethodGet, "/api/v1/tokens", nil, nil, &p); err != nil {
		return nil, err
	}
	return p.Items, nil
}

// tokenCommand is "sundial token".
func (c *cli) tokenCommand() *cobra.Command {
	cmd := groupCommand("token", "Manage API tokens (an admin's)", "")
	var out string
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tokens, by name, without their secrets",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out, "table", "json", "yaml", "name"); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			raws, err := listTokens(cmd.Context(), a)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, raws)
			case "yaml":
				return writeYAML(w, raws...)
			}
			now := c.now()
			rows := [][]string{}
			for _, raw := range raws {
				var t cliToken
				if err := json.Unmarshal(raw, &t); err != nil {
					return err
				}
				if out == "name" {
					fmt.Fprintln(w, "token/"+t.Name)
					continue
				}
				expires := "never"
				if t.ExpiresAt != nil {
					expires = t.ExpiresAt.UTC().Format(time.RFC3339)
				}
				if t.Expired {
					expires += " (expired)"
				}
				rows = append(rows, []string{t.Name, t.Role, ago(t.CreatedAt, now), expires, t.CreatedBy, t.ID})
			}
			if out == "name" {
				return nil
			}
			return writeTable(w, []string{"NAME", "ROLE", "CREATED", "EXPIRES", "CREATED BY", "ID"}, rows)
		},
	}
	addOutputFlag(ls, &out, "table", "table", "json", "yaml", "name")
	cmd.AddCommand(ls, c.tokenCreateCommand(), c.tokenRevokeCommand(), c.tokenWhoamiCommand())
	return cmd
}

// tokenWhoamiCommand is "sundial token whoami": who the token sent is
// (GET /api/v1/whoami), for any role.
func (c *cli) tokenWhoamiCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the actor and role of the token sent (any role may ask)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			_, raw, done, err := c.readAnswer(cmd, http.MethodGet, "/api/v1/whoami", nil, out)
			if done || err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			var who struct {
				Actor        string `json:"actor"`
				Role         string `json:"role"`
				AuthRequired bool   `json:"auth_required"`
			}
			if err := json.Unmarshal(raw, &who); err != nil {
				return err
			}
			auth := "on"
			if !who.AuthRequired {
				auth = "off"
			}
			return writeTable(w, []string{"ACTOR", "ROLE", "AUTHENTICATION"}, [][]string{{who.Actor, who.Role, auth}})
		},
	}
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}

func (c *cli) tokenCreateCommand() *cobra.Command {
	var role, expires, out string
	cmd := &cobra.Command{
		Use:   "create NAME --role viewer|operator|editor|admin [--expires 90d|RFC3339]",
		Short: "Create a token; its secret is printed this once, alone on standard output",
		Example: `  sundial token create ci --role editor --expires 2160h
  TOKEN=$(sundial token create deployer --role editor)`,
		Args: exactArgs(1, "the token's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			if role == "" {
				return usageErrorf("token create: --role is required: viewer, operator, editor or admin")
			}
			body := map[string]any{"name": args[0], "role": role}
			if expires != "" {
				at, err := parseExpiry(expires, c.now())
				if err != nil {
					return err
				}
				body["expires_at"] = at.UTC().Format(time.RFC3339)
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := a.do(cmd.Context(), http.MethodPost, "/api/v1/tokens", nil, body, &raw); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, raw)
			case "yaml":
				return writeYAML(w, raw)
			}
			var t cliToken
			if err := json.Unmarshal(raw, &t); err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "token/%s created (role %s, id %s); its secret, shown this once, follows on standard output\n",
				t.Name, t.Role, t.ID)
			_, err = fmt.Fprintln(w, t.Secret)
			return err
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "viewer, operator, editor or admin")
	cmd.Flags().StringVar(&expires, "expires", "", "when it expires: an RFC 3339 time, or how long from now (2160h, 90d); default never")
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions(
		[]string{"viewer", "operator", "editor", "admin"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// parseExpiry reads --expires: an RFC 3339 time, or a duration from now
// (Go's, or whole days: 90d).
func parseExpiry(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.AddDate(0, 0, n), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(d), nil
	}
	return time.Time{}, usageErrorf("--expires %q: want an RFC 3339 time or how long from now, such as 2160h or 90d", v)
}

func (c *cli) tokenRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME|ID...",
		Short: "Revoke tokens, on every node at once",
		Args:  minArgs("a token's name or id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := c.client()
			if err != nil {
				return err
			}
			raws, err := listTokens(cmd.Context(), a)
			if err != nil {
				return err
			}
			tokens := make([]cliToken, len(raws))
			for i, raw := range raws {
				if err := json.Unmarshal(raw, &tokens[i]); err != nil {
					return err
				}
			}
			for _, ref := range dedupe(args) {
				var found *cliToken
				for i := range tokens {
					if tokens[i].Name == ref || tokens[i].ID == ref {
						found = &tokens[i]
						break
					}
				}
				if found == nil {
					return fmt.Errorf("token %q not found: no token not revoked has that name or id", ref)
				}
				if err := a.do(cmd.Context(), http.MethodDelete, "/api/v1/tokens/"+url.PathEscape(found.ID), nil, nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "token/%s revoked\n", found.Name)
			}
			return nil
		},
	}
}

// auditCommand is "sundial audit".
func (c *cli) auditCommand() *cobra.Command {
	cmd := groupCommand("audit", "Read the audit log (an admin's)", "")
	var actor, action, task, from, to, out string
	var limit int
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List audit entries, newest first",
		Example: "  sundial audit ls --task nightly-report --from 24h\n  sundial audit ls --actor deployer --action task.update -o yaml",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out, "table", "wide", "json", "yaml"); err != nil {
				return err
			}
			if limit < 0 {
				return usageErrorf("audit ls: --limit %d: want 0 (all) or more", limit)
			}
			now := c.now()
			q := url.Values{}
			if actor != "" {
				q.Set("actor", actor)
			}
			if action != "" {
				q.Set("action", action)
			}
			for _, tf := range []struct{ name, v string }{{"from", from}, {"to", to}} {
				if tf.v != "" {
					t, err := parseWhen(tf.name, tf.v, now)
					if err != nil {
						return err
					}
					q.Set(tf.name, t.UTC().Format(time.RFC3339Nano))
				}
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			if task != "" {
				id, err := taskID(cmd.Context(), a, task)
				if err != nil {
					return err
				}
				q.Set("task_id", strconv.FormatInt(id, 10))
			}
			raws, err := a.list(cmd.Context(), "/api/v1/audit", q, limit)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, raws)
			case "yaml":
				return writeYAML(w, raws...)
			}
			rows := [][]string{}
			for _, raw := range raws {
				var e struct {
					ID     int64     `json:"id"`
					At     time.Time `json:"at"`
					Actor  string    `json:"actor"`
					Action string    `json:"action"`
					Target string    `json:"target"`
					After  struct {
						Changed []string `json:"changed"`
					} `json:"after"`
				}
				if err := json.Unmarshal(raw, &e); err != nil {
					return err
				}
				when := ago(e.At, now)
				if out == "wide" {
					when = e.At.UTC().Format(time.RFC3339Nano)
				}
				rows = append(rows, []string{strconv.FormatInt(e.ID, 10), when, e.Actor, e.Action, e.Target,
					dash(strings.Join(e.After.Changed, ","))})
			}
			return writeTable(w, []string{"ID", "AT", "ACTOR", "ACTION", "TARGET", "CHANGED"}, rows)
		},
	}
	f := ls.Flags()
	f.StringVar(&actor, "actor", "", "only the entries of this actor (a token's name, bootstrap or anonymous)")
	f.StringVar(&action, "action", "", "only this action: task.create, task.update, task.delete, task.trigger, ...")
	f.StringVar(&task, "task", "", "only the entries of this task (a name, or an id)")
	f.StringVar(&from, "from", "", "only entries from this time on: RFC 3339, or how long ago (24h)")
	f.StringVar(&to, "to", "", "only entries before this time: RFC 3339, or how long ago")
	f.IntVar(&limit, "limit", 50, "at most this many entries (0: all)")
	addOutputFlag(ls, &out, "table", "table", "wide", "json", "yaml")
	_ = ls.RegisterFlagCompletionFunc("task", c.completeTasks)
	cmd.AddCommand(ls)
	return cmd
}
