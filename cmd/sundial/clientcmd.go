package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// clientCommands are the commands that talk to a running Sundial through
// its REST API, and config, which says which one.
func (c *cli) clientCommands() []*cobra.Command {
	cmds := []*cobra.Command{c.taskCommand(), c.runCommand(), c.applyCommand(), c.diffCommand(),
		c.nodeCommand(), c.statsCommand(), c.calendarCommand(), c.tokenCommand(), c.auditCommand(), c.alertCommand(), c.incidentCommand()}
	for _, cmd := range cmds {
		c.clientFlags(cmd)
	}
	return append(cmds, c.configCommand())
}

// groupCommand is a command that only holds subcommands: without one, or
// with one it does not know, it is a usage error naming them.
func groupCommand(name, short, long string) *cobra.Command {
	cmd := &cobra.Command{Use: name, Short: short, Long: long}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var subs []string
		for _, s := range cmd.Commands() {
			if s.IsAvailableCommand() {
				subs = append(subs, s.Name())
			}
		}
		if len(args) == 0 {
			return usageErrorf("%s: missing subcommand (%s); run 'sundial %s -h' for help", name, strings.Join(subs, ", "), name)
		}
		return usageErrorf("%s: unknown subcommand %q (%s); run 'sundial %s -h' for help", name, args[0], strings.Join(subs, ", "), name)
	}
	return cmd
}

// commandName is the command's path without "sundial ", for messages.
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), "sundial ")
}

// exactArgs wants n arguments, what says which.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s: want %s, got %d arguments; run '%s -h' for help", commandName(cmd), what, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// minArgs wants at least one argument, what says which.
func minArgs(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usageErrorf("%s: want %s; run '%s -h' for help", commandName(cmd), what, cmd.CommandPath())
		}
		return nil
	}
}

// noArgs wants none.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s: unexpected argument %q; run '%s -h' for help", commandName(cmd), args[0], cmd.CommandPath())
	}
	return nil
}

// parseWhen reads a time flag: an RFC 3339 time, or a duration that far
// before now (1h: an hour ago).
func parseWhen(flag, v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageErrorf("--%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or how long ago (90m, 24h)", flag, v)
}

// parallel runs f on each index from 0 to n-1, a few at a time, and
// returns the first error.
func parallel(n int, f func(i int) error) error {
	const workers = 8
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for range min(workers, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

// The client's view of the API's objects: the fields its tables show.
// What it prints as JSON or YAML is the API's answer as it is.

// cliTask is a task.
type cliTask struct {
	ID           int64             `json:"id"`
	Name         string            `json:"name"`
	Labels       map[string]string `json:"labels"`
	CronExpr     string            `json:"cron_expr"`
	RunAt        *time.Time        `json:"run_at"`
	Timezone     string            `json:"timezone"`
	HTTPMethod   string            `json:"http_method"`
	TargetURL    string            `json:"target_url"`
	Status       string            `json:"status"`
	Version      int64             `json:"version"`
	NextFireTime *time.Time        `json:"next_fire_time"`
	State        *taskHealth       `json:"state"`

	DisabledReason string     `json:"disabled_reason"`
	DisabledAt     *time.Time `json:"disabled_at"`
	DisabledBy     string     `json:"disabled_by"`

	StartAt       *time.Time `json:"start_at"`
	EndAt         *time.Time `json:"end_at"`
	MaxRuns       int        `json:"max_runs"`
	FireCount     int        `json:"fire_count"`
	JitterSeconds int        `json:"jitter_seconds"`

	DependsOn    []cliDependency `json:"depends_on"`
	Join         string          `json:"join"`
	JoinDeadline int             `json:"join_deadline_seconds"`
	DST          string          `json:"dst"`
	Calendars    []string        `json:"calendars"`
}

// cliDependency is one parent of a task.
type cliDependency struct {
	Task string `json:"task"`
	On   string `json:"on"`
}

// parentsText is a task's parents and join, as task get prints them:
// "all of extract (success), load (failure)"; "" for none.
func parentsText(t cliTask) string {
	if len(t.DependsOn) == 0 {
		return ""
	}
	parts := make([]string, len(t.DependsOn))
	for i, d := range t.DependsOn {
		parts[i] = d.Task + " (" + d.On + ")"
	}
	deadline := "1h0m0s"
	if t.JoinDeadline > 0 {
		deadline = (time.Duration(t.JoinDeadline) * time.Second).String()
	}
	return t.Join + " of " + strings.Join(parts, ", ") + ", waiting up to " + deadline
}

// taskHealth is the state block of a task answer (docs/api.md, "Task
// state"). A server older than the block answers without it: the client
// then fills last_run from the task's runs (withState).
type taskHealth struct {
	LastRun             *lastRun   `json:"last_run"`
	LastSuccessAt       *time.Time `json:"last_success_at"`
	LastFailureAt       *time.Time `json:"last_failure_at"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	LagP50MS            *int64     `json:"lag_p50_ms"`
	LagP95MS            *int64     `json:"lag_p95_ms"`
	LagSamples          int        `json:"lag_samples"`
}

// lastRun is the task's newest run that has ended.
type lastRun struct {
	ID            int64      `json:"id"`
	Status        string     `json:"status"`
	SkipReason    string     `json:"skip_reason,omitempty"`
	ScheduledTime time.Time  `json:"scheduled_time"`
	FinishedAt    *time.Time `json:"finished_at"`
}

// taskItem is a task as the API answered it, and as the client reads it.
type taskItem struct {
	raw json.RawMessage
	t   cliTask
}

// cliRun is a run.
type cliRun struct {
	ID            int64        `json:"id"`
	TaskID        int64        `json:"task_id"`
	Trigger       string       `json:"trigger"`
	Status        string       `json:"status"`
	SkipReason    string       `json:"skip_reason"`
	MissedCount   int          `json:"missed_count"`
	ScheduledTime time.Time    `json:"scheduled_time"`
	StartedAt     *time.Time   `json:"started_at"`
	FinishedAt    *time.Time   `json:"finished_at"`
	HTTPStatus    int          `json:"http_status"`
	Error         string       `json:"error"`
	Message       string       `json:"message"`
	Attempt       int          `json:"attempt"`
	Deliveries    int          `json:"deliveries"`
	NodeID        string       `json:"node_id"`
	TraceID       string       `json:"trace_id"`
	Idempotency   string       `json:"idempotency_key"`
	Cancel        bool         `json:"cancel_requested"`
	Attempts      []cliAttempt `json:"attempts"`
}

// cliAttempt is one delivery of a run that ended.
type cliAttempt struct {
	Delivery   int        `json:"delivery"`
	NodeID     string     `json:"node_id"`
	Status     string     `json:"status"`
	HTTPStatus int        `json:"http_status"`
	Error      string     `json:"error"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// finalRun reports whether a run's status is an outcome.
func finalRun(status string) bool {
	switch status {
	case "SUCCESS", "FAILED", "TIMEOUT", "FAILED_TIMEOUT", "CANCELED", "SKIPPED":
		return true
	}
	return false
}

// outcomeStatuses are the run statuses that are outcomes, as a filter.
const outcomeStatuses = "SUCCESS,FAILED,TIMEOUT,FAILED_TIMEOUT,CANCELED,SKIPPED"

// statusText is a run's status with its skip reason: SKIPPED (OVERLAP).
func statusText(status, skip string) string {
	if skip != "" {
		return status + " (" + skip + ")"
	}
	return status
}

func decodeTask(raw json.RawMessage) (taskItem, error) {
	it := taskItem{raw: raw}
	if err := json.Unmarshal(raw, &it.t); err != nil {
		return it, fmt.Errorf("a task in the answer is not what the Sundial API answers: %v", err)
	}
	return it, nil
}

func decodeTasks(raws []json.RawMessage) ([]taskItem, error) {
	items := make([]taskItem, len(raws))
	for i, raw := range raws {
		var err error
		if items[i], err = decodeTask(raw); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// withState gives each task that the API answered without a state block
// (a server older than it) one with its last run, read from its runs (one
// request per task, a few at a time), and adds it to the task's JSON as
// "state". A task the API answered with its state is left as it is.
func withState(ctx context.Context, a *apiClient, items []taskItem) error {
	return parallel(len(items), func(i int) error {
		it := &items[i]
		if it.t.State != nil {
			return nil
		}
		q := url.Values{"status": {outcomeStatuses}}
		runs, err := a.list(ctx, fmt.Sprintf("/api/v1/tasks/%d/runs", it.t.ID), q, 1)
		if err != nil {
			return err
		}
		st := &taskHealth{}
		if len(runs) > 0 {
			var r cliRun
			if err := json.Unmarshal(runs[0], &r); err != nil {
				return fmt.Errorf("a run in the answer is not what the Sundial API answers: %v", err)
			}
			st.LastRun = &lastRun{ID: r.ID, Status: r.Status, SkipReason: r.SkipReason,
				ScheduledTime: r.ScheduledTime, FinishedAt: r.FinishedAt}
		}
		it.t.State = st
		block, err := json.Marshal(st)
		if err != nil {
			return err
		}
		it.raw = withField(it.raw, "state", block)
		return nil
	})
}

// withField adds the key and its value at the end of a JSON object.
func withField(obj json.RawMessage, key string, value json.RawMessage) json.RawMessage {
	s := strings.TrimRight(string(obj), " \t\r\n")
	if !strings.HasSuffix(s, "}") {
		return obj
	}
	s = strings.TrimSuffix(s, "}")
	sep := ","
	if strings.TrimSpace(s) == "{" {
		sep = ""
	}
	k, _ := json.Marshal(key)
	return json.RawMessage(s + sep + string(k) + ":" + string(value) + "}")
}

// resolveTask finds the live task ref names: by name first (GET
// /tasks?name=), else, for a number, by id.
func resolveTask(ctx context.Context, a *apiClient, ref string) (taskItem, error) {
	if ref == "" {
		return taskItem{}, usageErrorf("a task's name or id is empty")
	}
	raws, err := a.list(ctx, "/api/v1/tasks", url.Values{"name": {ref}}, 1)
	if err != nil {
		return taskItem{}, err
	}
	if len(raws) == 1 {
		return decodeTask(raws[0])
	}
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil && id > 0 {
		var raw json.RawMessage
		err := a.do(ctx, "GET", "/api/v1/tasks/"+ref, nil, nil, &raw)
		if err == nil {
			return decodeTask(raw)
		}
		if !notFound(err) {
			return taskItem{}, err
		}
	}
	return taskItem{}, fmt.Errorf("task %q not found: no live task has that name or id", ref)
}

// completeTasks completes the names of live tasks, asking the server.
func (c *cli) completeTasks(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	a, err := c.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
	defer cancel()
	q := url.Values{}
	if toComplete != "" {
		q.Set("name_prefix", toComplete)
	}
	raws, err := a.list(ctx, "/api/v1/tasks", q, 200)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, raw := range raws {
		if it, err := decodeTask(raw); err == nil {
			out = append(out, cobra.CompletionWithDesc(it.t.Name, scheduleText(it.t)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// printTasks writes tasks in the output format: table and wide are the
// columns of task ls; json an array of the tasks as the API answered them
// (with the state the client added); yaml a stream of them, one document
// each, which apply reads back; name task/NAME lines.
func printTasks(c *cli, cmd *cobra.Command, out string, items []taskItem) error {
	w := cmd.OutOrStdout()
	switch out {
	case "json":
		raws := make([]json.RawMessage, len(items))
		for i, it := range items {
			raws[i] = it.raw
		}
		return writeJSON(w, raws)
	case "yaml":
		raws := make([]json.RawMessage, len(items))
		for i, it := range items {
			raws[i] = it.raw
		}
		return writeYAML(w, raws...)
	case "name":
		for _, it := range items {
			fmt.Fprintln(w, "task/"+it.t.Name)
		}
		return nil
	}
	now := c.now()
	header := []string{"NAME", "SCHEDULE", "TZ", "NEXT", "LAST", "LAG P95", "FAILS", "STATUS"}
	if out == "wide" {
		header = []string{"NAME", "ID", "SCHEDULE", "TZ", "NEXT", "LAST", "LAG P95", "FAILS", "STATUS", "LABELS", "TARGET", "EXPLAINED", "REASON"}
	}
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		t := it.t
		last, lag, fails := "-", "-", "-"
		if st := t.State; st != nil {
			if st.LastRun != nil {
				last = lastRunText(st.LastRun, now)
			}
			lag = lagText(st.LagP95MS)
			if st.LastRun != nil || st.LastFailureAt != nil {
				fails = strconv.Itoa(st.ConsecutiveFailures)
			}
		}
		row := []string{t.Name, scheduleText(t), t.Timezone, nextText(t, now), last, lag, fails, t.Status}
		if out == "wide" {
			row = []string{t.Name, strconv.FormatInt(t.ID, 10), scheduleText(t), t.Timezone, nextText(t, now), last, lag,
				fails, t.Status, labelsText(t.Labels), t.HTTPMethod + " " + t.TargetURL, explainSchedule(t), disabledText(t, now)}
		}
		rows = append(rows, row)
	}
	return writeTable(w, header, rows)
}

// disabledText says why, by whom and how long ago a disabled task was
// disabled: "vendor down (by ops-ci, 2h ago)"; "-" for a task that is not.
func disabledText(t cliTask, now time.Time) string {
	if t.Status != "DISABLED" {
		return "-"
	}
	var who []string
	if t.DisabledBy != "" {
		who = append(who, "by "+t.DisabledBy)
	}
	if t.DisabledAt != nil {
		who = append(who, ago(*t.DisabledAt, now))
	}
	text := t.DisabledReason
	if len(who) > 0 {
		text = strings.TrimSpace(text + " (" + strings.Join(who, ", ") + ")")
	}
	return dash(text)
}

// labelsText is a task's labels as a selector of them would say:
// key=value, by key, separated by commas; "-" for none.
func labelsText(labels map[string]string) string {
	if len(labels) == 0 {
		return "-"
	}
	keys := slices.Sorted(maps.Keys(labels))
	for i, k := range keys {
		keys[i] = k + "=" + labels[k]
	}
	return strings.Join(keys, ",")
}

// nextText is a task's next fire in its zone, and how soon: 2026-11-25
// 20:01:30 (in 3s).
func nextText(t cliTask, now time.Time) string {
	if t.NextFireTime == nil {
		return "-"
	}
	return inZone(*t.NextFireTime, t.Timezone) + " (" + ago(*t.NextFireTime, now) + ")"
}

// lagText is a lag in milliseconds, as a duration: 3ms, 1.25s; - for none.
func lagText(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return runDuration(time.Duration(*ms) * time.Millisecond)
}

// describeTasks writes each task as fields, its whole state among them
// (task get), a blank line between tasks.
func (c *cli) describeTasks(cmd *cobra.Command, items []taskItem) error {
	now := c.now()
	w := cmd.OutOrStdout()
	for i, it := range items {
		t := it.t
		at := func(ts *time.Time) string {
			if ts == nil {
				return "-"
			}
			return inZone(*ts, t.Timezone) + " (" + ago(*ts, now) + ")"
		}
		schedule := scheduleText(t)
		if e := explainSchedule(t); e != "-" {
			schedule += ": " + e
		}
		fields := [][2]string{
			{"Task", fmt.Sprintf("%s (id %d)", t.Name, t.ID)},
			{"Schedule", schedule},
			{"Time zone", t.Timezone},
			{"Status", t.Status},
			{"Labels", labelsText(t.Labels)},
			{"Target", t.HTTPMethod + " " + t.TargetURL},
			{"Next fire", at(t.NextFireTime)},
		}
		if b := boundsText(t); b != "" {
			fields = append(fields, [2]string{"Bounds", b})
		}
		if p := parentsText(t); p != "" {
			fields = append(fields, [2]string{"Depends on", p})
		}
		if t.DST != "" && t.DST != "vixie" {
			fields = append(fields, [2]string{"DST", dstText(t.DST)})
		}
		if len(t.Calendars) > 0 {
			fields = append(fields, [2]string{"Calendars", strings.Join(t.Calendars, ", ") + " (no fire on their days)"})
		}
		if t.Status == "DISABLED" {
			fields = append(fields, [2]string{"Disabled", disabledText(t, now)})
		}
		st := t.State
		if st == nil {
			st = &taskHealth{}
		}
		last := "-"
		if r := st.LastRun; r != nil {
			last = fmt.Sprintf("%d %s, scheduled %s", r.ID, statusText(r.Status, r.SkipReason), at(&r.ScheduledTime))
			if r.FinishedAt != nil {
				last += ", ended " + ago(*r.FinishedAt, now)
			}
		}
		lags := "-"
		if st.LagSamples > 0 {
			fires := "fires"
			if st.LagSamples == 1 {
				fires = "fire"
			}
			lags = fmt.Sprintf("%s, %s (%d %s)", lagText(st.LagP50MS), lagText(st.LagP95MS), st.LagSamples, fires)
		}
		fields = append(fields,
			[2]string{"Last run", last},
			[2]string{"Last success", at(st.LastSuccessAt)},
			[2]string{"Last failure", at(st.LastFailureAt)},
			[2]string{"Failures in a row", strconv.Itoa(st.ConsecutiveFailures)},
			[2]string{"Lag p50, p95", lags})
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := writeFields(w, fields); err != nil {
			return err
		}
	}
	return nil
}

// boundsText says how a task's schedule is bounded and jittered: from
// 2030-03-01 00:00:00, until 2030-03-31 23:59:59, 2 of 20 fires, jitter 5m0s;
// "" for none.
// dstText says what a task's daylight-saving policy does.
func dstText(dst string) string {
	switch dst {
	case "skip_gap":
		return "skip_gap (a wall time skipped by a spring-forward change does not fire)"
	case "repeat":
		return "repeat (a wall time repeated by a fall-back change fires in both passes)"
	}
	return dst
}

func boundsText(t cliTask) string {
	var parts []string
	if t.StartAt != nil {
		parts = append(parts, "from "+inZone(*t.StartAt, t.Timezone))
	}
	if t.EndAt != nil {
		parts = append(parts, "until "+inZone(*t.EndAt, t.Timezone))
	}
	if t.MaxRuns > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d fires", t.FireCount, t.MaxRuns))
	}
	if t.JitterSeconds > 0 {
		parts = append(parts, "jitter "+(time.Duration(t.JitterSeconds)*time.Second).String())
	}
	return strings.Join(parts, ", ")
}

// scheduleText is a task's cron expression, or "once" for a one-off task.
func scheduleText(t cliTask) string {
	switch {
	case t.CronExpr != "" && len(t.DependsOn) > 0:
		return t.CronExpr + " + parents"
	case t.CronExpr != "":
		return t.CronExpr
	case len(t.DependsOn) > 0:
		return "parents"
	}
	return "once"
}

// explainSchedule says when a task fires, in plain English.
func explainSchedule(t cliTask) string {
	if t.CronExpr == "" {
		if len(t.DependsOn) > 0 {
			return "After its parents (" + t.Join + ")"
		}
		if t.RunAt == nil {
			return "-"
		}
		return "Once, at " + inZone(*t.RunAt, t.Timezone)
	}
	s, err := parseExpr(t.CronExpr)
	if err != nil {
		return "-"
	}
	return s.Explain()
}

// lastRunText is the status of a task's last run and how long ago it
// ended: SUCCESS 12s ago.
func lastRunText(r *lastRun, now time.Time) string {
	at := r.ScheduledTime
	if r.FinishedAt != nil {
		at = *r.FinishedAt
	}
	return statusText(r.Status, r.SkipReason) + " " + ago(at, now)
}

// taskRefs resolves each of refs, in order.
func taskRefs(ctx context.Context, a *apiClient, refs []string) ([]taskItem, error) {
	items := make([]taskItem, len(refs))
	for i, ref := range refs {
		it, err := resolveTask(ctx, a, ref)
		if err != nil {
			return nil, err
		}
		items[i] = it
	}
	return items, nil
}

// dedupe drops repeated strings, keeping the first of each.
func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
