package main

import (
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
)

// taskCommand is "sundial task".
func (c *cli) taskCommand() *cobra.Command {
	cmd := groupCommand("task", "List, read, change and run tasks",
		`Tasks are named by name or by id: a name is looked up first (GET /api/v1/tasks?name=),
then a number as an id.`)
	cmd.AddCommand(c.taskLsCommand(), c.taskGetCommand(), c.taskCreateCommand(), c.taskDeleteCommand(),
		c.taskPatchCommand(), c.taskEditCommand(),
		c.taskStatusCommand("enable", "ENABLED"), c.taskStatusCommand("disable", "DISABLED"),
		c.taskTriggerCommand(), c.taskBackfillCommand(), c.taskUpcomingCommand(), c.taskHistoryCommand(), c.taskBulkCommand(),
		c.taskDepsCommand())
	return cmd
}

func (c *cli) taskLsCommand() *cobra.Command {
	var out, status, selector, search string
	var limit int
	var watch bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List tasks: schedule, next fire, last outcome, status",
		Long: `List the live tasks, by id. The columns:

  NAME      the task's name
  SCHEDULE  its cron expression, or "once" for a one-off task (-o wide explains it in English)
  TZ        the time zone its schedule is read in
  NEXT      its next fire, in its time zone, and how soon
  LAST      the outcome of its newest run that ended, and how long ago it ended
  LAG P95   the 95th percentile of how late its last 100 fires started
  FAILS     its failures since its last success
  STATUS    ENABLED, DISABLED; COMPLETED or FAILED for a one-off task that has ended

-o wide adds ID, LABELS (key=value, by key), TARGET, EXPLAINED and, for a disabled task,
why it was disabled, by whom and how long ago (REASON). --selector (-l) keeps
the tasks whose labels match a label selector in Kubernetes' syntax: requirements
separated by commas, all of which hold (team=payments, env!=prod, tier in (a,b),
tier notin (a,b), canary, !canary).

-o json and -o yaml print the tasks as the API answers them, with their "state" block:
next_fire_time, last_run, last_success_at, last_failure_at, consecutive_failures,
lag_p50_ms, lag_p95_ms, lag_samples.

--watch prints the table again whenever a task or a run changes anywhere in the cluster
(following GET /api/v1/events; at most once a second), until Ctrl-C: on a terminal in
place of the one before, otherwise after it.`,
		Example: `  sundial task ls
  sundial task ls --status DISABLED -o wide
  sundial task ls -l 'team=payments,env!=prod'
  sundial task ls --search report
  sundial task ls --watch
  sundial task ls -o yaml > tasks.yaml     # what apply reads`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out, "table", "wide", "json", "yaml", "name"); err != nil {
				return err
			}
			if limit < 0 {
				return usageErrorf("task ls: --limit %d: want 0 (all) or more", limit)
			}
			if watch && out != "table" && out != "wide" {
				return usageErrorf("task ls: --watch prints a table: -o table or wide, not %s", out)
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			if status != "" {
				q.Set("status", status)
			}
			if selector != "" {
				q.Set("selector", selector)
			}
			if search != "" {
				q.Set("name_contains", search)
			}
			list := func() error {
				raws, err := a.list(cmd.Context(), "/api/v1/tasks", q, limit)
				if err != nil {
					return err
				}
				items, err := decodeTasks(raws)
				if err != nil {
					return err
				}
				if out != "name" {
					if err := withState(cmd.Context(), a, items); err != nil {
						return err
					}
				}
				return printTasks(c, cmd, out, items)
			}
			if err := list(); err != nil || !watch {
				return err
			}
			return c.watchTasks(cmd, a, list)
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only tasks in these statuses: ENABLED, DISABLED, COMPLETED, FAILED (comma-separated)")
	f.StringVarP(&selector, "selector", "l", "", "only tasks whose labels match this label selector: team=payments,env!=prod")
	f.StringVar(&search, "search", "", "only tasks whose names hold this, letters A-Z in either case")
	f.IntVar(&limit, "limit", 0, "at most this many tasks (0: all)")
	f.BoolVarP(&watch, "watch", "w", false, "print the table again whenever a task or a run changes, until Ctrl-C")
	addOutputFlag(cmd, &out, "table", "table", "wide", "json", "yaml", "name")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(
		[]string{"ENABLED", "DISABLED", "COMPLETED", "FAILED"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (c *cli) taskGetCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "get NAME|ID...",
		Short: "Show tasks with their state; -o yaml prints them as apply reads them",
		Long: `Show each task: its schedule, target, next fire and its whole state (its last run, last
success and failure, failures in a row, and the lag of its last fires). -o wide prints the
columns of task ls; -o json and -o yaml the tasks as the API answers them.`,
		Example:           "  sundial task get nightly-report\n  sundial task get nightly-report -o yaml > nightly-report.yaml",
		Args:              minArgs("the name or id of a task"),
		ValidArgsFunction: c.completeTasks,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "wide", "json", "yaml", "name"); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			items, err := taskRefs(cmd.Context(), a, dedupe(args))
			if err != nil {
				return err
			}
			if out != "name" {
				if err := withState(cmd.Context(), a, items); err != nil {
					return err
				}
			}
			switch {
			case out == "json" && len(items) == 1:
				return writeJSON(cmd.OutOrStdout(), items[0].raw)
			case out == "table":
				return c.describeTasks(cmd, items)
			}
			return printTasks(c, cmd, out, items)
		},
	}
	addOutputFlag(cmd, &out, "table", "table", "wide", "json", "yaml", "name")
	return cmd
}

func (c *cli) taskCreateCommand() *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "create -f FILE|DIR...",
		Short: "Create the tasks a YAML (or JSON) file declares; a name taken is an error (see apply)",
		Long: `Create each task the files declare (the format apply reads: see "sundial apply -h"), in order,
with POST /api/v1/tasks. It stops at the first refused; those created before it stay. Unlike
apply, it takes a one-off task without a name (the server makes one up) and delay_seconds.`,
		Example: "  sundial task create -f hello.yaml",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usageErrorf("task create: give the tasks' file with -f FILE (- for standard input)")
			}
			ms, err := readManifests(files, c.stdin, false)
			if err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, m := range ms {
				var created createdTask
				if err := a.do(cmd.Context(), http.MethodPost, "/api/v1/tasks", nil, m.fields, &created); err != nil {
					return fmt.Errorf("%s: task %q: %w", m.where, m.name, err)
				}
				fmt.Fprintf(w, "task/%s created (id %d)\n", created.Name, created.ID)
				created.printSecret(w)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "a YAML or JSON file of tasks, a directory of them, or - (repeatable)")
	return cmd
}

// createdTask is what create and apply read of a task they wrote: the
// signing secret the server generated is in this answer only.
type createdTask struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	Version       int64  `json:"version"`
	SigningSecret string `json:"signing_secret"`
}

// printSecret prints a signing secret the server generated, which no
// other answer shows.
func (t createdTask) printSecret(w io.Writer) {
	if t.SigningSecret != "" && t.SigningSecret != "***" {
		fmt.Fprintf(w, "  signing_secret: %s (generated by the server; shown this once)\n", t.SigningSecret)
	}
}

func (c *cli) taskDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "delete NAME|ID...",
		Aliases:           []string{"rm"},
		Short:             "Delete tasks (their runs stay listed)",
		Args:              minArgs("the name or id of a task"),
		ValidArgsFunction: c.completeTasks,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := c.client()
			if err != nil {
				return err
			}
			for _, ref := range dedupe(args) {
				it, err := resolveTask(cmd.Context(), a, ref)
				if err != nil {
					return err
				}
				if err := a.do(cmd.Context(), http.MethodDelete, fmt.Sprintf("/api/v1/tasks/%d", it.t.ID), nil, nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "task/%s deleted\n", it.t.Name)
			}
			return nil
		},
	}
}

// taskStatusCommand is "task enable" or "task disable" (with --reason).
func (c *cli) taskStatusCommand(verb, status string) *cobra.Command {
	past := verb + "d"
	var reason string
	cmd := &cobra.Command{
		Use:               verb + " NAME|ID...",
		Short:             strings.ToUpper(verb[:1]) + verb[1:] + " tasks",
		Args:              minArgs("the name or id of a task"),
		ValidArgsFunction: c.completeTasks,
		RunE: func(cmd *cobra.Command, args []string) error {
			var body any
			if cmd.Flags().Changed("reason") {
				body = map[string]string{"reason": reason}
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			for _, ref := range dedupe(args) {
				it, err := resolveTask(cmd.Context(), a, ref)
				if err != nil {
					return err
				}
				var after cliTask
				if err := a.do(cmd.Context(), http.MethodPost, fmt.Sprintf("/api/v1/tasks/%d/%s", it.t.ID, verb), nil, body, &after); err != nil {
					return err
				}
				what := past
				switch {
				case it.t.Status != status:
				case after.Version != it.t.Version:
					what = "was " + past + " already; its reason is now " + strconv.Quote(after.DisabledReason)
				default:
					what = "was " + past + " already"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "task/%s %s\n", after.Name, what)
			}
			return nil
		},
	}
	if status == "DISABLED" {
		cmd.Long = `Disable tasks: they plan no more fires, and their planned fires are taken back. --reason says
why (at most 1,024 characters): the task keeps it, with when and who disabled it, until it is
enabled again ("task get", "task ls -o wide" show them). Disabling a disabled task with a new
reason changes its reason.`
		cmd.Example = `  sundial task disable nightly-report --reason "waiting for the vendor's fix"`
		cmd.Flags().StringVar(&reason, "reason", "", "why the tasks are disabled, kept until they are enabled again")
	}
	return cmd
}

func (c *cli) taskTriggerCommand() *cobra.Command {
	var params, out string
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "trigger NAME|ID [--params JSON|@FILE] [--wait [--timeout D]]",
		Short: "Run a task now; --wait waits for the run's outcome and fails unless it is SUCCESS",
		Long: `Run a task now, enabled or disabled, under its concurrency policy (POST /tasks/{id}/trigger).
It prints the run as admission left it: RUNNING, QUEUED, or SKIPPED with its reason.

With --wait it follows the run until it has an outcome (retries and an ASYNC callback
included), prints it, and exits 0 if it is SUCCESS, 1 otherwise (FAILED, TIMEOUT,
FAILED_TIMEOUT, CANCELED, SKIPPED), or when --timeout passes first (the run goes on).`,
		Example: `  sundial task trigger nightly-report
  sundial task trigger nightly-report --params '{"day": "2026-05-04"}' --wait --timeout 10m`,
		Args:              exactArgs(1, "the name or id of a task"),
		ValidArgsFunction: c.completeTasks,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			if timeout < 0 {
				return usageErrorf("task trigger: --timeout %s: must not be negative", timeout)
			}
			var body any
			if params != "" {
				raw, err := readParams(params)
				if err != nil {
					return err
				}
				body = map[string]json.RawMessage{"params": raw}
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			it, err := resolveTask(cmd.Context(), a, args[0])
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := a.do(cmd.Context(), http.MethodPost, fmt.Sprintf("/api/v1/tasks/%d/trigger", it.t.ID), nil, body, &raw); err != nil {
				return err
			}
			run, err := c.showRun(cmd, a, raw, out, wait, timeout)
			if err != nil || !wait || run.Status == "SUCCESS" {
				return err
			}
			return fmt.Errorf("run %d of task %q ended %s%s", run.ID, it.t.Name, run.Status, failureText(run))
		},
	}
	f := cmd.Flags()
	f.StringVar(&params, "params", "", "params of this run only, as JSON, or @FILE to read them from a file")
	f.BoolVar(&wait, "wait", false, "wait for the run's outcome; exit 1 unless it is SUCCESS")
	f.DurationVar(&timeout, "timeout", 0, "with --wait: give up waiting after this long, and exit 1 (0: wait as long as it takes)")
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}

// showRun prints the run raw, as a trigger or a rerun answered it; with
// wait, once it has an outcome (see awaitRun). It returns the run printed.
func (c *cli) showRun(cmd *cobra.Command, a *apiClient, raw json.RawMessage, out string, wait bool, timeout time.Duration) (cliRun, error) {
	var run cliRun
	if err := json.Unmarshal(raw, &run); err != nil {
		return run, err
	}
	if wait && !finalRun(run.Status) {
		if out == "table" {
			fmt.Fprintf(c.stderr, "run/%d %s; waiting for its outcome\n", run.ID, statusText(run.Status, run.SkipReason))
		}
		var err error
		if raw, err = c.awaitRun(cmd, a, run.ID, timeout); err != nil {
			return run, err
		}
		run = cliRun{}
		if err := json.Unmarshal(raw, &run); err != nil {
			return run, err
		}
	}
	w := cmd.OutOrStdout()
	var err error
	switch out {
	case "json":
		err = writeJSON(w, raw)
	case "yaml":
		err = writeYAML(w, raw)
	default:
		_, err = fmt.Fprintln(w, runLine(run))
	}
	return run, err
}

// failureText says why a run did not succeed: ": " and its error or skip
// reason, or nothing.
func failureText(run cliRun) string {
	why := run.Error
	if why == "" && run.SkipReason != "" {
		why = "skip_reason " + run.SkipReason
	}
	if why != "" {
		why = ": " + why
	}
	return why
}

// readParams reads --params: JSON, or @FILE holding it.
func readParams(v string) (json.RawMessage, error) {
	data := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if data, err = os.ReadFile(name); err != nil {
			return nil, usageErrorf("--params: %v", err)
		}
	}
	if !json.Valid(data) {
		return nil, usageErrorf("--params: not valid JSON; give a JSON value such as '{\"day\": \"2026-05-04\"}', or @FILE")
	}
	return json.RawMessage(data), nil
}

// awaitRun reads the run until it has an outcome, and returns it as the
// API answered it. It reads often at first, then once a second: a few
// reads of one run, which any node and any proxy answer, where the event
// stream would save little.
func (c *cli) awaitRun(cmd *cobra.Command, a *apiClient, id int64, timeout time.Duration) (json.RawMessage, error) {
	ctx := cmd.Context()
	var deadline time.Time
	if timeout > 0 {
		deadline = c.now().Add(timeout)
	}
	delay := 50 * time.Millisecond
	for {
		var raw json.RawMessage
		if err := a.do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/runs/%d", id), nil, nil, &raw); err != nil {
			return nil, err
		}
		var r cliRun
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, err
		}
		if finalRun(r.Status) {
			return raw, nil
		}
		if !deadline.IsZero() && !c.now().Before(deadline) {
			return nil, fmt.Errorf("run %d is still %s after %s; it goes on (sundial run get %d)", id, r.Status, timeout, id)
		}
		wait := delay
		if !deadline.IsZero() {
			wait = max(min(wait, deadline.Sub(c.now())), 0)
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("stopped waiting for run %d, which goes on (sundial run get %d): %w", id, id, err)
		}
		delay = min(2*delay, time.Second)
	}
}

// runLine is one line about a run's state: run/12 SUCCESS in 35ms (HTTP 200).
func runLine(r cliRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run/%d %s", r.ID, statusText(r.Status, r.SkipReason))
	if r.StartedAt != nil && r.FinishedAt != nil {
		fmt.Fprintf(&b, " in %s", runDuration(r.FinishedAt.Sub(*r.StartedAt)))
	}
	if r.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", r.HTTPStatus)
	}
	if r.Deliveries > 1 {
		fmt.Fprintf(&b, " after %d deliveries", r.Deliveries)
	}
	if r.Error != "" {
		b.WriteString(": " + r.Error)
	}
	return b.String()
}

func (c *cli) taskUpcomingCommand() *cobra.Command {
	var out string
	var limit int
	cmd := &cobra.Command{
		Use:               "upcoming NAME|ID [--limit N]",
		Short:             "List a task's next fires: those planned already, then the times after them",
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
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			var raw json.RawMessage
			if err := a.do(cmd.Context(), http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d/upcoming", it.t.ID), q, nil, &raw); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, raw)
			case "yaml":
				return writeYAML(w, raw)
			}
			var up struct {
				Runs []cliRun    `json:"runs"`
				Next []time.Time `json:"next"`
			}
			if err := json.Unmarshal(raw, &up); err != nil {
				return err
			}
			now := c.now()
			rows := [][]string{}
			for _, r := range up.Runs {
				rows = append(rows, []string{inZone(r.ScheduledTime, it.t.Timezone), ago(r.ScheduledTime, now),
					fmt.Sprintf("run/%d", r.ID), r.Status})
			}
			for _, t := range up.Next {
				rows = append(rows, []string{inZone(t, it.t.Timezone), ago(t, now), "-", "not planned yet"})
			}
			return writeTable(w, []string{"TIME (" + it.t.Timezone + ")", "IN", "RUN", "STATUS"}, rows)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 10, "how many fires, 1 to 1000")
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}

func (c *cli) taskHistoryCommand() *cobra.Command {
	var f runFilter
	cmd := &cobra.Command{
		Use:               "history NAME|ID",
		Short:             "List a task's runs, newest first",
		Example:           "  sundial task history nightly-report --status FAILED,TIMEOUT --since 24h",
		Args:              exactArgs(1, "the name or id of a task"),
		ValidArgsFunction: c.completeTasks,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
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
			q, err := f.query(c.now())
			if err != nil {
				return err
			}
			raws, err := a.list(cmd.Context(), fmt.Sprintf("/api/v1/tasks/%d/runs", it.t.ID), q, f.limit)
			if err != nil {
				return err
			}
			return c.printRuns(cmd, a, f.out, raws, false)
		},
	}
	f.flags(cmd, false)
	return cmd
}
