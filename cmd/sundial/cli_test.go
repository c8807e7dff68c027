package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// The client commands, end to end: each test starts a real node (serve on
// SQLite) and runs the command line against it, through run as main calls
// it, or through the built binary where the exit status itself is checked.

// clientEnv is the environment of a client command in a test: the node's
// address and a contexts file of the test's own, never the user's.
func clientEnv(t *testing.T, server string) map[string]string {
	env := map[string]string{"SUNDIAL_CLIENT_CONFIG": filepath.Join(t.TempDir(), "sundial", "config.yaml")}
	if server != "" {
		env["SUNDIAL_SERVER"] = server
	}
	return env
}

// runCLI runs the command line with the environment env and standard
// input stdin.
func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) runResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), args, func(k string) string { return env[k] }, strings.NewReader(stdin), &stdout, &stderr)
	return runResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// mustCLI is runCLI, failing unless the command succeeded.
func mustCLI(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	res := runCLI(t, env, "", args...)
	if res.err != nil {
		t.Fatalf("sundial %s: %v (status %d)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.err, exitCode(res.err), res.stdout, res.stderr)
	}
	return res.stdout
}

// failCLI is runCLI, failing unless the command failed with the exit
// status code and a message holding each of want, on one line and never
// the API's raw JSON.
func failCLI(t *testing.T, env map[string]string, code int, want []string, args ...string) runResult {
	t.Helper()
	res := runCLI(t, env, "", args...)
	if res.err == nil || exitCode(res.err) != code {
		t.Fatalf("sundial %s: %v (status %d), want status %d\nstdout:\n%s", strings.Join(args, " "), res.err, exitCode(res.err), code, res.stdout)
	}
	msg := oneLine(res.err.Error())
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("sundial %s: message %q lacks %q", strings.Join(args, " "), msg, w)
		}
	}
	if strings.Contains(msg, `{"error"`) || strings.Contains(msg, `"code"`) {
		t.Errorf("sundial %s: message %q holds the API's raw JSON", strings.Join(args, " "), msg)
	}
	return res
}

func writeText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// binResult is what one run of the built binary did.
type binResult struct {
	stdout, stderr string
	status         int
}

// runBinary runs the built sundial with only env in its environment.
func runBinary(t *testing.T, env map[string]string, args ...string) binResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sundialBinary(t), args...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := binResult{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		res.status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("sundial %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// taskVersions reads the version of each live task, by name.
func taskVersions(t *testing.T, n *node) map[string]int64 {
	t.Helper()
	var list struct {
		Items []struct {
			Name    string `json:"name"`
			Version int64  `json:"version"`
		} `json:"items"`
	}
	n.do(t, "GET", "/api/v1/tasks?limit=1000", "", 200, &list)
	out := map[string]int64{}
	for _, it := range list.Items {
		out[it.Name] = it.Version
	}
	return out
}

// secretNote is what diff says of a secret header given in clear.
const secretNote = `    headers.Authorization: a secret, which the API shows as "***": not compared; apply sends it, ` +
	"and the server changes it only if it differs\n"

// TestCLIApplyDiff: through the binary, diff of a directory of three new
// tasks lists them and exits 3; apply creates them and exits 0; then diff
// finds nothing (a secret given in clear is noted, not counted) and apply
// changes nothing, not even the secret. One field changed in one file is
// exactly what diff reports (exit 3), and exactly what apply updates: the
// audit log has one update, of that task, of that field.
func TestCLIApplyDiff(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	env["PATH"] = os.Getenv("PATH")
	dir := t.TempDir()
	target := "http://127.0.0.1:9/"
	writeText(t, filepath.Join(dir, "a.yaml"), "name: a\ncron_expr: \"0 0 3 * * *\"\ntarget_url: "+target+"a\n")
	bFile := filepath.Join(dir, "b.yaml")
	b := "# the report\nname: b\ncron_expr: \"0 0 4 * * *\"\ntimezone: Europe/Paris\ntarget_url: " + target + "b\n" +
		"headers:\n  X-Team: ops\n  Authorization: Bearer s3cret-0\nretry_policy: {max_attempts: 3}\n"
	writeText(t, bFile, b)
	writeText(t, filepath.Join(dir, "c.json"), `{"name": "c", "run_at": "2030-01-01T00:00:00Z", "target_url": "`+target+`c", "params": {"n": 1}}`)
	writeText(t, filepath.Join(dir, "notes.txt"), "not a task file: skipped")

	res := runBinary(t, env, "diff", "-f", dir)
	if res.status != 3 || res.stderr != "" {
		t.Fatalf("diff of new tasks: status %d, stderr %q; want 3 and nothing on stderr\n%s", res.status, res.stderr, res.stdout)
	}
	for _, want := range []string{"+ task/a (to create)\n    name: \"a\"\n    cron_expr: \"0 0 3 * * *\"\n",
		"+ task/b (to create)\n", `    headers: {"Authorization":"***","X-Team":"ops"}` + "\n",
		"+ task/c (to create)\n", "    run_at: \"2030-01-01T00:00:00Z\"\n", "3 to create, 0 to change, 0 unchanged\n"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("diff lacks %q:\n%s", want, res.stdout)
		}
	}
	if strings.Contains(res.stdout, "s3cret") {
		t.Errorf("diff prints a secret:\n%s", res.stdout)
	}
	if len(taskVersions(t, n)) != 0 {
		t.Fatal("diff created tasks")
	}

	res = runBinary(t, env, "apply", "-f", dir)
	if want := "task/a created (id 1)\ntask/b created (id 2)\ntask/c created (id 3)\n"; res.status != 0 || res.stdout != want {
		t.Fatalf("apply: status %d\n%s%s\nwant:\n%s", res.status, res.stdout, res.stderr, want)
	}

	res = runBinary(t, env, "diff", "-f", dir)
	if want := "= task/b (id 2)\n" + secretNote + "0 to create, 0 to change, 3 unchanged\n"; res.status != 0 || res.stdout != want {
		t.Fatalf("diff after apply: status %d\n%s%s\nwant:\n%s", res.status, res.stdout, res.stderr, want)
	}
	res = runBinary(t, env, "apply", "-f", dir)
	if want := "task/a unchanged\ntask/b unchanged (its secrets headers.Authorization are the stored ones)\ntask/c unchanged\n"; res.status != 0 || res.stdout != want {
		t.Fatalf("apply again: status %d\n%s%s\nwant:\n%s", res.status, res.stdout, res.stderr, want)
	}
	if v := taskVersions(t, n); v["a"] != 1 || v["b"] != 1 || v["c"] != 1 {
		t.Fatalf("versions after applying the same files = %v, want all 1", v)
	}

	writeText(t, bFile, strings.Replace(b, `"0 0 4 * * *"`, `"0 30 4 * * *"`, 1))
	res = runBinary(t, env, "diff", "-f", dir)
	want := "~ task/b (id 2)\n    cron_expr: \"0 0 4 * * *\" -> \"0 30 4 * * *\"\n" + secretNote + "0 to create, 1 to change, 2 unchanged\n"
	if res.status != 3 || res.stdout != want || res.stderr != "" {
		t.Fatalf("diff after one change: status %d\n%s%s\nwant status 3 and:\n%s", res.status, res.stdout, res.stderr, want)
	}
	res = runBinary(t, env, "apply", "-f", dir)
	want = "task/a unchanged\ntask/b updated: cron_expr, and the secrets headers.Authorization sent\ntask/c unchanged\n"
	if res.status != 0 || res.stdout != want {
		t.Fatalf("apply of one change: status %d\n%s%s\nwant:\n%s", res.status, res.stdout, res.stderr, want)
	}
	if v := taskVersions(t, n); v["a"] != 1 || v["b"] != 2 || v["c"] != 1 {
		t.Fatalf("versions after one change = %v, want a 1, b 2, c 1", v)
	}
	var audit struct {
		Items []struct {
			Target string `json:"target"`
			After  struct {
				Changed []string `json:"changed"`
			} `json:"after"`
		} `json:"items"`
	}
	n.do(t, "GET", "/api/v1/audit?action=task.update", "", 200, &audit)
	if len(audit.Items) != 1 || audit.Items[0].Target != "task/2" || strings.Join(audit.Items[0].After.Changed, ",") != "cron_expr" {
		t.Fatalf("updates in the audit log: %+v; want one, of task/2, changing cron_expr only", audit.Items)
	}
	if res := runBinary(t, env, "diff", "-f", dir); res.status != 0 {
		t.Fatalf("diff after applying the change: status %d\n%s", res.status, res.stdout)
	}

	// "***" keeps the stored secret: nothing to compare, nothing to send.
	writeText(t, bFile, strings.NewReplacer(`"0 0 4 * * *"`, `"0 30 4 * * *"`, "Bearer s3cret-0", `"***"`).Replace(b))
	if out := mustCLI(t, env, "diff", "-f", dir); out != "0 to create, 0 to change, 3 unchanged\n" {
		t.Fatalf("diff with \"***\": %q", out)
	}
	// ... but not to another origin, as the server's rule says.
	writeText(t, bFile, strings.NewReplacer(`"0 0 4 * * *"`, `"0 30 4 * * *"`, "Bearer s3cret-0", `"***"`,
		"127.0.0.1:9/", "127.0.0.1:10/").Replace(b))
	failCLI(t, env, 2, []string{`b.yaml:2: task "b": the value of header Authorization is "***", which keeps the stored secret, ` +
		"but target_url now points to another origin", `(field headers, token "Authorization")`}, "diff", "-f", dir)
	// A new secret is sent and stored.
	writeText(t, bFile, strings.NewReplacer(`"0 0 4 * * *"`, `"0 30 4 * * *"`, "s3cret-0", "s3cret-1").Replace(b))
	if out := mustCLI(t, env, "apply", "-f", dir); !strings.Contains(out, "task/b updated: its secrets (headers.Authorization) differed from the stored ones\n") {
		t.Fatalf("apply of a new secret: %q", out)
	}
	if v := taskVersions(t, n); v["b"] != 3 {
		t.Fatalf("b's version after a new secret = %d, want 3", v["b"])
	}
}

// TestCLIApplyRefuses: a file that is not valid, or asks what apply cannot
// do, is refused with status 2 and a message saying where, before
// anything is written; a task the server refuses stops apply with status
// 1 and the API's message, field and token.
func TestCLIApplyRefuses(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	dir := t.TempDir()
	ok := "name: ok\ncron_expr: \"0 0 3 * * *\"\ntarget_url: http://127.0.0.1:9/\n"
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"bad cron", ok + "---\nname: bad\ncron_expr: \"0 0 32 * *\"\ntarget_url: http://127.0.0.1:9/\n",
			[]string{`.yaml:5: task "bad": day-of-month: "32": value out of range 1-31 (field cron_expr, token "32")`}},
		{"unknown field", ok + "timezon: UTC\n", []string{`task "ok": unknown field "timezon"`}},
		{"header not a string", ok + "headers: {X-Count: 5}\n", []string{`task "ok": headers.X-Count: a header's value is a string: quote it ("5")`}},
		{"wrong type", ok + "max_queue: lots\n", []string{`task "ok": max_queue: a string does not go there (want a whole number)`}},
		{"run_at not a time", "name: x\nrun_at: tomorrow\ntarget_url: http://127.0.0.1:9/\n", []string{`task "x": run_at: "tomorrow": want an RFC 3339 time`}},
		{"no name", "cron_expr: \"0 0 3 * * *\"\n", []string{"a task needs a name"}},
		{"twice", ok + "---\n" + ok, []string{`task "ok" is declared twice`}},
		{"delay", ok + "---\nname: later\ndelay_seconds: 60\ntarget_url: http://127.0.0.1:9/\n", []string{"delay_seconds", "give run_at"}},
		{"kept secret of a new task", ok + "headers: {Authorization: \"***\"}\n", []string{`the value of header Authorization is "***", which keeps a stored value, but the task has none: give the value (field headers, token "Authorization")`}},
		{"not YAML", "name: [", []string{".yaml"}},
		{"a scalar", "just text\n", []string{"want a task"}},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
		writeText(t, path, tc.file)
		failCLI(t, env, 2, tc.want, "apply", "-f", path)
	}
	failCLI(t, env, 2, []string{"give the tasks' files with -f"}, "apply")
	failCLI(t, env, 2, []string{"--prune needs --selector (-l)"}, "apply", "-f", dir, "--prune")
	failCLI(t, env, 2, []string{"--prune needs --selector (-l)"}, "diff", "-f", dir, "--prune", "-l", " ")
	failCLI(t, env, 2, []string{"--selector says which live tasks --prune may delete; give --prune too"}, "apply", "-f", dir, "-l", "team=a")
	failCLI(t, env, 2, []string{"no such file or directory"}, "diff", "-f", filepath.Join(dir, "missing"))
	if v := taskVersions(t, n); len(v) != 0 {
		t.Fatalf("refused files created tasks: %v", v)
	}

	// The outbound guard refuses the node's own address: the server's
	// refusal, as its message, field and token. The task before it stays.
	refused := filepath.Join(t.TempDir(), "refused.yaml")
	writeText(t, refused, ok+"---\nname: self\ncron_expr: \"0 0 3 * * *\"\ntarget_url: "+n.url+"/api/v1/tasks\n")
	res := failCLI(t, env, 1, []string{`refused.yaml:5: task "self": `, "(field target_url"}, "apply", "-f", refused)
	if res.stdout != "task/ok created (id 1)\n" {
		t.Errorf("apply before the refused task printed %q", res.stdout)
	}
}

// TestCLITaskList: task ls shows each task's schedule, next fire (in its
// zone, and how soon), last outcome, lag and failures in a row; -o json
// carries next_fire_time and the state block; --status filters; -o yaml is
// what apply reads back, unchanged; task get shows the whole state.
func TestCLITaskList(t *testing.T) {
	t.Parallel()
	target, down := newHook(t), newHook(t)
	down.mu.Lock()
	down.status = 503
	down.mu.Unlock()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "tasks.yaml")
	writeText(t, file, "name: every-second\ncron_expr: \"* * * * * *\"\ntarget_url: "+target.srv.URL+"/tick\n---\n"+
		"name: paris\ncron_expr: \"0 30 9 * * MON-FRI\"\ntimezone: Europe/Paris\ntarget_url: "+target.srv.URL+"/paris\nstatus: DISABLED\n---\n"+
		"name: later\nrun_at: \"2030-01-02T03:04:05Z\"\ntimezone: Asia/Kolkata\ntarget_url: "+target.srv.URL+"/later\n---\n"+
		"name: failing\ncron_expr: \"* * * * * *\"\ntarget_url: "+down.srv.URL+"/down\n")
	mustCLI(t, env, "apply", "-f", file)
	target.wait(t, 1, 20*time.Second)

	type listed struct {
		Name         string     `json:"name"`
		Status       string     `json:"status"`
		NextFireTime *time.Time `json:"next_fire_time"`
		State        *struct {
			NextFireTime *time.Time `json:"next_fire_time"`
			LastRun      *struct {
				ID            int64      `json:"id"`
				Status        string     `json:"status"`
				ScheduledTime time.Time  `json:"scheduled_time"`
				FinishedAt    *time.Time `json:"finished_at"`
			} `json:"last_run"`
			LastSuccessAt       *time.Time `json:"last_success_at"`
			LastFailureAt       *time.Time `json:"last_failure_at"`
			ConsecutiveFailures int        `json:"consecutive_failures"`
			LagP95MS            *int64     `json:"lag_p95_ms"`
			LagSamples          int        `json:"lag_samples"`
		} `json:"state"`
	}
	var tasks []listed
	deadline := time.Now().Add(20 * time.Second)
	for {
		tasks = nil
		out := mustCLI(t, env, "task", "ls", "-o", "json")
		if err := json.Unmarshal([]byte(out), &tasks); err != nil || len(tasks) != 4 {
			t.Fatalf("task ls -o json: %v, %d tasks:\n%s", err, len(tasks), out)
		}
		// Each every-second task has ended a run and saved its lag (at
		// once, its first outcome), the failing one two failures.
		if st := tasks[0].State; st != nil && st.LastRun != nil && st.LagSamples > 0 &&
			tasks[3].State.ConsecutiveFailures >= 2 && tasks[3].State.LagSamples > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no last run after 20 s:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	now := time.Now()
	tick := tasks[0]
	if tick.Name != "every-second" || tick.NextFireTime == nil || tick.NextFireTime.Before(now.Add(-2*time.Second)) ||
		tick.NextFireTime.After(now.Add(2*time.Second)) {
		t.Errorf("every-second: next_fire_time %v, want within a second or two of %v", tick.NextFireTime, now)
	}
	if lr := tick.State.LastRun; lr.ID < 1 || lr.Status != "SUCCESS" || lr.FinishedAt == nil || lr.ScheduledTime.After(now) {
		t.Errorf("every-second: last_run %+v, want a SUCCESS that has finished", lr)
	}
	if st := tick.State; st.NextFireTime == nil || !st.NextFireTime.Equal(*tick.NextFireTime) || st.LastSuccessAt == nil ||
		st.LastFailureAt != nil || st.ConsecutiveFailures != 0 || st.LagP95MS == nil {
		t.Errorf("every-second: state %+v", st)
	}
	if st := tasks[3].State; st.LastRun.Status != "FAILED" || st.LastFailureAt == nil || st.LastSuccessAt != nil {
		t.Errorf("failing: state %+v", st)
	}
	if p := tasks[1]; p.Name != "paris" || p.Status != "DISABLED" || p.NextFireTime != nil || p.State == nil || p.State.LastRun != nil {
		t.Errorf("paris: %+v, want DISABLED, no next fire, a state without last run", p)
	}
	if l := tasks[2]; l.NextFireTime == nil || !l.NextFireTime.Equal(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("later: next_fire_time %v, want its run_at", l.NextFireTime)
	}

	table := mustCLI(t, env, "task", "ls")
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) != 5 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SCHEDULE TZ NEXT LAST LAG P95 FAILS STATUS" {
		t.Fatalf("task ls:\n%s", table)
	}
	const lag = `(\d+(\.\d+)?(ms|s|µs)|0s)`
	for i, want := range []*regexp.Regexp{
		regexp.MustCompile(`^every-second +\* \* \* \* \* \* +UTC +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \((in \d+s|now)\) +SUCCESS (\d+s ago|now) +` +
			lag + ` +0 +ENABLED$`),
		regexp.MustCompile(`^paris +0 30 9 \* \* MON-FRI +Europe/Paris +- +- +- +- +DISABLED$`),
		// 2030-01-02T03:04:05Z in Kolkata (UTC+5:30).
		regexp.MustCompile(`^later +once +Asia/Kolkata +2030-01-02 08:34:05 \(in \d+d\) +- +- +- +ENABLED$`),
		regexp.MustCompile(`^failing +\* \* \* \* \* \* +UTC +\S+ \S+ \((in \d+s|now)\) +FAILED (\d+s ago|now) +` + lag + ` +[1-9]\d* +ENABLED$`),
	} {
		if !want.MatchString(lines[i+1]) {
			t.Errorf("task ls row %d = %q, want %s", i+1, lines[i+1], want)
		}
	}
	wide := mustCLI(t, env, "task", "ls", "-o", "wide")
	for _, want := range []string{"EXPLAINED", "Every second", "At 09:30, on Monday through Friday", "Once, at 2030-01-02 08:34:05"} {
		if !strings.Contains(wide, want) {
			t.Errorf("task ls -o wide lacks %q:\n%s", want, wide)
		}
	}
	if out := mustCLI(t, env, "task", "ls", "--status", "DISABLED", "-o", "name"); out != "task/paris\n" {
		t.Errorf("task ls --status DISABLED -o name = %q", out)
	}

	// What task get -o yaml prints, apply reads back as it is.
	yamlFile := filepath.Join(t.TempDir(), "got.yaml")
	writeText(t, yamlFile, mustCLI(t, env, "task", "get", "paris", "later", "-o", "yaml"))
	if out := mustCLI(t, env, "diff", "-f", yamlFile); out != "0 to create, 0 to change, 2 unchanged\n" {
		t.Errorf("diff of task get -o yaml: %q", out)
	}
	// So does an array of tasks as task ls -o json prints it.
	jsonFile := filepath.Join(t.TempDir(), "all.json")
	writeText(t, jsonFile, mustCLI(t, env, "task", "ls", "-o", "json"))
	if out := mustCLI(t, env, "diff", "-f", jsonFile); out != "0 to create, 0 to change, 4 unchanged\n" {
		t.Errorf("diff of task ls -o json: %q", out)
	}

	// task get shows the whole state.
	got := mustCLI(t, env, "task", "get", "failing", "paris")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Task: +failing \(id 4\)$`),
		regexp.MustCompile(`(?m)^Schedule: +\* \* \* \* \* \*: Every second$`),
		regexp.MustCompile(`(?m)^Next fire: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \((in \d+s|now)\)$`),
		regexp.MustCompile(`(?m)^Last run: +\d+ FAILED, scheduled \S+ \S+ \((\d+s ago|now)\), ended (\d+s ago|now)$`),
		regexp.MustCompile(`(?m)^Last success: +-$`),
		regexp.MustCompile(`(?m)^Last failure: +\S+ \S+ \((\d+s ago|now)\)$`),
		regexp.MustCompile(`(?m)^Failures in a row: +[1-9]\d*$`),
		regexp.MustCompile(`(?m)^Lag p50, p95: +` + lag + `, ` + lag + ` \(\d+ fires?\)$`),
		regexp.MustCompile(`(?m)^\nTask: +paris \(id 2\)$`),
		regexp.MustCompile(`(?m)^Last run: +-$`),
	} {
		if !want.MatchString(got) {
			t.Errorf("task get lacks %s:\n%s", want, got)
		}
	}
}

// TestCLITriggerWait: task trigger --wait follows the run to its outcome
// and exits 0 for SUCCESS, 1 otherwise, saying why; --timeout gives up.
func TestCLITriggerWait(t *testing.T) {
	t.Parallel()
	failing := newHook(t)
	failing.mu.Lock()
	failing.status = 503
	failing.mu.Unlock()
	working := newHook(t)
	slow := newGate(t, 200, true)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "tasks.yaml")
	never := "cron_expr: \"0 0 0 1 1 * 2099\"\n"
	writeText(t, file, "name: failing\n"+never+"target_url: "+failing.srv.URL+"/x\nretry_policy: {max_attempts: 2, initial_backoff: 10ms}\n---\n"+
		"name: working\n"+never+"target_url: "+working.srv.URL+"/x\n---\n"+
		"name: slow\n"+never+"target_url: "+slow.srv.URL+"/x\n")
	mustCLI(t, env, "apply", "-f", file)

	res := failCLI(t, env, 1, []string{`of task "failing" ended FAILED: HTTP 503 Service Unavailable`}, "task", "trigger", "failing", "--wait")
	if !regexp.MustCompile(`^run/\d+ FAILED in \S+ \(HTTP 503\) after 2 deliveries: HTTP 503 Service Unavailable\n$`).MatchString(res.stdout) {
		t.Errorf("trigger --wait of a failing task printed %q", res.stdout)
	}
	failing.wait(t, 2, 10*time.Second)

	out := mustCLI(t, env, "task", "trigger", "working", "--wait")
	if !regexp.MustCompile(`^run/\d+ SUCCESS in \S+ \(HTTP 200\)\n$`).MatchString(out) {
		t.Errorf("trigger --wait of a working task printed %q", out)
	}
	var run struct {
		Status  string `json:"status"`
		Trigger string `json:"trigger"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, env, "task", "trigger", "working", "--wait", "-o", "json")), &run); err != nil ||
		run.Status != "SUCCESS" || run.Trigger != "MANUAL" {
		t.Errorf("trigger --wait -o json: %+v, %v", run, err)
	}

	failCLI(t, env, 1, []string{"is still RUNNING after 300ms; it goes on"}, "task", "trigger", "slow", "--wait", "--timeout", "300ms")
	slow.next(t)
	// Without --wait, the run as admission left it.
	if out := mustCLI(t, env, "task", "trigger", "slow"); !regexp.MustCompile(`^run/\d+ (RUNNING|QUEUED)\n$`).MatchString(out) {
		t.Errorf("trigger printed %q", out)
	}
	failCLI(t, env, 2, []string{"--params: not valid JSON"}, "task", "trigger", "working", "--params", "{nope")

	// A rerun: a new run of the run's task, followed as a trigger's is.
	failedID := strings.TrimPrefix(strings.Fields(res.stdout)[0], "run/")
	res = failCLI(t, env, 1, []string{"(a rerun of run " + failedID + ") ended FAILED: HTTP 503 Service Unavailable"},
		"run", "rerun", failedID, "--wait")
	if !regexp.MustCompile(`^run/\d+ FAILED in \S+ \(HTTP 503\) after 2 deliveries`).MatchString(res.stdout) {
		t.Errorf("run rerun --wait of a failing run printed %q", res.stdout)
	}
	raw := mustCLI(t, env, "run", "rerun", "run/"+failedID, "-o", "json")
	var got map[string]any
	if err := json.Unmarshal([]byte(raw), &got); err != nil || fmt.Sprint(got["rerun_of"]) != failedID || got["trigger"] != "MANUAL" {
		t.Errorf("run rerun -o json = %s (%v)", raw, err)
	}
	failCLI(t, env, 1, []string{"run 987654 not found"}, "run", "rerun", "987654")
	failCLI(t, env, 2, []string{"want a run's id"}, "run", "rerun", "x")
	failCLI(t, env, 1, []string{`task "nope" not found`}, "task", "trigger", "nope")
}

// TestCLIContexts: where a client command talks is, first found, --server
// (--token), the context --context names, SUNDIAL_SERVER (SUNDIAL_TOKEN),
// the current context, the default. The contexts file is the user's own
// (mode 0600), and get-contexts never shows a token. An API error is its
// message, field and token, and says how to give a token when one is
// missing.
func TestCLIContexts(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--auth.required", "true", "--auth.bootstrap_token", bootstrapSecret)
	nowhere := "http://127.0.0.1:1"
	home := t.TempDir()
	env := map[string]string{"HOME": home} // the contexts file under ~/.config
	path := filepath.Join(home, ".config", "sundial", "config.yaml")

	mustCLI(t, env, "config", "set-context", "prod", "--server", n.url, "--token", bootstrapSecret, "--use")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("contexts file %s: %v, %v; want mode 0600", path, fi, err)
	}
	mustCLI(t, env, "config", "set-context", "other", "--server", nowhere)
	if out := mustCLI(t, env, "config", "current-context"); out != "prod\n" {
		t.Errorf("current-context = %q", out)
	}
	out := mustCLI(t, env, "config", "get-contexts")
	if strings.Contains(out, bootstrapSecret) || !regexp.MustCompile(`\* +prod +`+regexp.QuoteMeta(n.url)+` +\*\*\*`).MatchString(out) {
		t.Errorf("get-contexts:\n%s", out)
	}
	if out := mustCLI(t, env, "config", "get-contexts", "-o", "json"); strings.Contains(out, bootstrapSecret) {
		t.Errorf("get-contexts -o json shows the token:\n%s", out)
	}

	mustCLI(t, env, "task", "ls") // the current context: prod, with its token
	env["SUNDIAL_SERVER"] = nowhere
	failCLI(t, env, 1, []string{"cannot reach the Sundial API at " + nowhere}, "task", "ls") // the environment beats the current context
	mustCLI(t, env, "task", "ls", "--context", "prod")                                       // --context beats the environment
	failCLI(t, env, 1, []string{"cannot reach"}, "task", "ls", "--context", "prod", "--server", nowhere)
	delete(env, "SUNDIAL_SERVER")

	// A token: the context's, or SUNDIAL_TOKEN, or --token.
	mustCLI(t, env, "config", "set-context", "prod", "--token", "")
	failCLI(t, env, 1, []string{"authentication required", "give an API token with --token, SUNDIAL_TOKEN or a context"}, "task", "ls")
	env["SUNDIAL_TOKEN"] = bootstrapSecret
	mustCLI(t, env, "task", "ls")
	viewer := strings.TrimSpace(mustCLI(t, env, "token", "create", "ci-viewer", "--role", "viewer"))
	if !strings.HasPrefix(viewer, "sdl_") {
		t.Fatalf("token create printed %q, want the secret alone", viewer)
	}
	mustCLI(t, env, "task", "ls", "--token", viewer)
	if out := mustCLI(t, env, "token", "whoami", "--token", viewer); !regexp.MustCompile(`(?m)^ci-viewer +viewer +on$`).MatchString(out) {
		t.Errorf("token whoami as ci-viewer:\n%s", out)
	}
	newTask := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, newTask, "name: x\ncron_expr: \"0 0 2 * * *\"\ntarget_url: http://127.0.0.1:9/\n")
	failCLI(t, env, 1, []string{"viewer", "editor"}, "task", "create", "-f", newTask, "--token", viewer)
	if out := mustCLI(t, env, "token", "ls", "-o", "name"); out != "token/ci-viewer\n" {
		t.Errorf("token ls -o name = %q", out)
	}
	mustCLI(t, env, "token", "revoke", "ci-viewer")
	failCLI(t, env, 1, []string{"the token is not valid"}, "task", "ls", "--token", viewer)
	audit := mustCLI(t, env, "audit", "ls")
	if !regexp.MustCompile(`(?m)^\d+ +\S+( ago)? +bootstrap +token\.delete +token/`).MatchString(audit) {
		t.Errorf("audit ls:\n%s", audit)
	}

	failCLI(t, env, 2, []string{`no context named "nope"`, "(it has prod, other)"}, "config", "use-context", "nope")
	failCLI(t, env, 2, []string{`--context: no context named "nope"`}, "task", "ls", "--context", "nope")
	mustCLI(t, env, "config", "delete-context", "other")
	mustCLI(t, env, "config", "use-context", "prod")
	if out := mustCLI(t, env, "config", "get-contexts", "-o", "name"); out != "prod\n" {
		t.Errorf("contexts left: %q", out)
	}
	failCLI(t, env, 2, []string{"--server", `"ftp://x": want an http or https URL`}, "config", "set-context", "x", "--server", "ftp://x")
}

// TestCLIErrors: a usage mistake exits 2 with a message naming the
// command; an error of the API exits 1 with its message, field and token,
// never its JSON.
func TestCLIErrors(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"task"}, "task: missing subcommand (backfill, bulk, create, delete, deps, disable, edit, enable, get, history, ls, patch, trigger, upcoming)"},
		{[]string{"task", "frob"}, `task: unknown subcommand "frob"`},
		{[]string{"task", "ls", "--bogus"}, "task ls: unknown flag: --bogus; run 'sundial task ls -h' for the flags"},
		{[]string{"task", "ls", "-o", "xml"}, `-o "xml": want table, wide, json, yaml, name`},
		{[]string{"task", "get"}, "task get: want the name or id of a task"},
		{[]string{"task", "ls", "extra"}, `task ls: unexpected argument "extra"`},
		{[]string{"run", "get", "abc"}, `run get: "abc": want a run's id`},
		{[]string{"task", "ls", "--server", "http://h:1/?q=1"}, `--server: "http://h:1/?q=1": want an http or https URL`},
		{[]string{"run", "ls", "--from", "yesterday"}, `--from "yesterday": want an RFC 3339 time`},
	} {
		failCLI(t, env, 2, []string{tc.want}, tc.args...)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeText(t, bad, "name: bad\ncron_expr: \"0 0 32 * *\"\ntarget_url: http://127.0.0.1:9/\n")
	failCLI(t, env, 1, []string{`bad.yaml:1: task "bad": day-of-month: "32": value out of range 1-31 (field cron_expr, token "32")`},
		"task", "create", "-f", bad)
	failCLI(t, env, 1, []string{"selector: at character 9: want ( after in", `(field selector, token "a")`}, "task", "ls", "-l", "team in a")
	failCLI(t, env, 1, []string{"run 999 not found"}, "run", "get", "999")
	failCLI(t, env, 1, []string{"(field status, token \"PAUSED\")"}, "run", "ls", "--status", "PAUSED")
}

// TestCLITasksAndRuns: the other task and run commands against a node:
// create, history, upcoming, disable, enable, run ls, get, cancel, delete,
// node ls.
func TestCLITasksAndRuns(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: nightly\ncron_expr: \"0 0 2 * * *\"\ntimezone: America/New_York\ntarget_url: "+target.srv.URL+"/n\n")
	if out := mustCLI(t, env, "task", "create", "-f", file); out != "task/nightly created (id 1)\n" {
		t.Fatalf("task create: %q", out)
	}
	failCLI(t, env, 1, []string{"nightly", "(field name"}, "task", "create", "-f", file)
	// A one-off task needs no name (the server makes one up) and may say
	// when as delay_seconds: task create sends it as it is.
	oneOff := filepath.Join(t.TempDir(), "once.yaml")
	writeText(t, oneOff, "delay_seconds: 3600\ntarget_url: "+target.srv.URL+"/once\n")
	if out := mustCLI(t, env, "task", "create", "-f", oneOff); !regexp.MustCompile(`^task/once-[0-9a-f]+ created \(id 2\)\n$`).MatchString(out) {
		t.Fatalf("task create of a one-off task: %q", out)
	}
	mustCLI(t, env, "task", "delete", "2")
	// A bare host:port is the server's http address.
	env["SUNDIAL_SERVER"] = strings.TrimPrefix(n.url, "http://")
	mustCLI(t, env, "task", "get", "nightly")
	env["SUNDIAL_SERVER"] = n.url

	if out := mustCLI(t, env, "task", "ls", "--search", "IGHT", "-o", "name"); out != "task/nightly\n" {
		t.Errorf("task ls --search IGHT: %q", out)
	}
	if out := mustCLI(t, env, "task", "ls", "--search", "nope", "-o", "name"); out != "" {
		t.Errorf("task ls --search nope: %q", out)
	}
	up := mustCLI(t, env, "task", "upcoming", "nightly", "--limit", "2")
	if !regexp.MustCompile(`^TIME \(America/New_York\) +IN +RUN +STATUS\n\d{4}-\d\d-\d\d 02:00:00 +in \S+ +- +not planned yet\n\d{4}-\d\d-\d\d 02:00:00 `).MatchString(up) {
		t.Errorf("task upcoming:\n%s", up)
	}
	if out := mustCLI(t, env, "task", "disable", "nightly"); out != "task/nightly disabled\n" {
		t.Errorf("disable: %q", out)
	}
	if out := mustCLI(t, env, "task", "disable", "1"); out != "task/nightly was disabled already\n" {
		t.Errorf("disable again, by id: %q", out)
	}
	mustCLI(t, env, "task", "enable", "nightly")
	runLine := mustCLI(t, env, "task", "trigger", "nightly", "--wait")
	id := strings.TrimPrefix(strings.Fields(runLine)[0], "run/")

	hist := mustCLI(t, env, "task", "history", "nightly")
	if !regexp.MustCompile(`^ID +TRIGGER +SCHEDULED +STATUS +HTTP +DURATION\n` + id + ` +MANUAL +\S+( ago)? +SUCCESS +200 +\S+\n$`).MatchString(hist) {
		t.Errorf("task history:\n%s", hist)
	}
	runs := mustCLI(t, env, "run", "ls", "--task", "nightly", "-o", "wide")
	if !regexp.MustCompile(`(?m)^` + id + ` +nightly +MANUAL +\S+ +SUCCESS +200 +\S+ +- +1 +\S+ +-$`).MatchString(runs) {
		t.Errorf("run ls -o wide:\n%s", runs)
	}
	got := mustCLI(t, env, "run", "get", id)
	for _, want := range []string{"Run:", "Task:", "nightly (id 1)", "Status:", "SUCCESS", "Deliveries:", "DELIVERY", "Idempotency-Key:"} {
		if !strings.Contains(got, want) {
			t.Errorf("run get lacks %q:\n%s", want, got)
		}
	}
	req := mustCLI(t, env, "run", "request", id)
	if !strings.HasPrefix(req, "POST "+target.srv.URL+"/n\n") || !strings.Contains(req, "\nX-Sundial-Run-Id: "+id+"\n") ||
		!strings.Contains(req, "\nX-Sundial-Trigger: MANUAL\n") {
		t.Errorf("run request:\n%s", req)
	}
	if curl := mustCLI(t, env, "run", "request", id, "-o", "curl"); !strings.HasPrefix(curl, "curl -X POST '"+target.srv.URL+"/n'") {
		t.Errorf("run request -o curl:\n%s", curl)
	}
	failCLI(t, env, 1, []string{"already", "(field status"}, "run", "cancel", id)
	if out := mustCLI(t, env, "node", "ls"); !regexp.MustCompile(`^ID +STATE +ADDRESS +HEARTBEAT +STARTED\n\S+ +ALIVE +127\.0\.0\.1:\d+ `).MatchString(out) {
		t.Errorf("node ls:\n%s", out)
	}
	if out := mustCLI(t, env, "task", "delete", "nightly"); out != "task/nightly deleted\n" {
		t.Errorf("delete: %q", out)
	}
	// The runs of a deleted task stay listed, by its id.
	if out := mustCLI(t, env, "run", "ls", "--task", "1"); !strings.Contains(out, "1 (deleted)") {
		t.Errorf("run ls of a deleted task:\n%s", out)
	}
	if out := mustCLI(t, env, "task", "ls"); out != "NAME   SCHEDULE   TZ   NEXT   LAST   LAG P95   FAILS   STATUS\n" {
		t.Errorf("task ls of none: %q", out)
	}
}

// TestCLICompletionAndHelp: completion of the client commands, of their
// flags' values, and of live task names, asked of the server; the help
// of a client command.
func TestCLICompletionAndHelp(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: nightly\ncron_expr: \"0 0 2 * * *\"\ntarget_url: http://127.0.0.1:9/\n---\n"+
		"name: hourly\ncron_expr: \"0 0 * * * *\"\ntarget_url: http://127.0.0.1:9/\n")
	mustCLI(t, env, "apply", "-f", file)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "task", "get", ""}, []string{"nightly\t0 0 2 * * *", "hourly\t0 0 * * * *"}},
		{[]string{"__complete", "task", "trigger", "ni"}, []string{"nightly\t0 0 2 * * *"}},
		{[]string{"__complete", "task", "ls", "-o", ""}, []string{"table", "wide", "json", "yaml", "name"}},
		{[]string{"__complete", "token", "create", "x", "--role", ""}, []string{"viewer", "operator", "editor", "admin"}},
		{[]string{"__complete", ""}, []string{"task\t", "run\t", "apply\t", "diff\t", "node\t", "token\t", "audit\t", "config\t"}},
		{[]string{"__complete", "task", ""}, []string{"ls\t", "get\t", "create\t", "delete\t", "enable\t", "disable\t",
			"trigger\t", "upcoming\t", "history\t"}},
	} {
		out := mustCLI(t, env, tc.args...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: completions lack %q:\n%s", tc.args, w, out)
			}
		}
	}
	if out := mustCLI(t, env, "__complete", "task", "trigger", "ni"); strings.Contains(out, "hourly") {
		t.Errorf("task names completed without their prefix:\n%s", out)
	}
	for _, args := range [][]string{{"task", "-h"}, {"help", "task"}} {
		res := runCLI(t, env, "", args...)
		if res.err != nil || !strings.Contains(res.stdout, "Available Commands:") || !strings.Contains(res.stdout, "trigger") {
			t.Errorf("%q: %v\n%s", args, res.err, res.stdout)
		}
	}
	if out := mustCLI(t, env, "apply", "-h"); !strings.Contains(out, `"***" keeps the stored value`) {
		t.Errorf("apply -h does not explain secrets:\n%s", out)
	}
}

// TestCLIEndpoint: with no flag, variable or context, the client talks to
// the default server without a token; a contexts file that is not valid
// is an error naming it.
func TestCLIEndpoint(t *testing.T) {
	t.Parallel()
	env := clientEnv(t, "")
	c := &cli{getenv: func(k string) string { return env[k] }, stderr: &bytes.Buffer{}}
	e, err := c.endpoint()
	if err != nil || e.server != defaultServer || e.token != "" || e.context != "" {
		t.Fatalf("endpoint() = %+v, %v; want %s, no token", e, err, defaultServer)
	}
	writeText(t, env["SUNDIAL_CLIENT_CONFIG"], "contexts:\n  - name: a\n    sever: http://x\n")
	if _, err := c.endpoint(); err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), `unknown key "sever"`) {
		t.Errorf("a misspelt key: %v", err)
	}
	writeText(t, env["SUNDIAL_CLIENT_CONFIG"], "current-context: gone\ncontexts:\n  - name: a\n    server: http://x\n")
	if _, err := c.endpoint(); err == nil || !strings.Contains(err.Error(), `the current context "gone" is not one of its contexts`) {
		t.Errorf("a current context that is not there: %v", err)
	}
	var stderr bytes.Buffer
	c.stderr = &stderr
	writeText(t, env["SUNDIAL_CLIENT_CONFIG"], "contexts:\n  - name: a\n    server: http://x\n    token: t\n") // mode 0644
	if _, err := c.endpoint(); err != nil || !strings.Contains(stderr.String(), "other users of this machine may read it: chmod 600 it") {
		t.Errorf("a contexts file others may read: %v, warned %q", err, stderr.String())
	}
}

// TestCLIDocumented: docs/cli.md shows every command, in code that
// starts with its path ("sundial task ls", or "sundial bench
// precision|throughput" for several).
func TestCLIDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	var spans []string
	for i, part := range strings.Split(string(doc), "`") {
		if i%2 == 1 {
			spans = append(spans, part)
		}
	}
	documented := func(cmd *cobra.Command) bool {
		prefix := cmd.Parent().CommandPath() + " "
		for _, s := range spans {
			if rest, ok := strings.CutPrefix(s, prefix); ok {
				first, _, _ := strings.Cut(rest, " ")
				for _, alt := range strings.Split(first, "|") {
					if alt == cmd.Name() {
						return true
					}
				}
			}
		}
		return false
	}
	root := (&cli{ctx: t.Context(), getenv: func(string) string { return "" }}).rootCommand()
	root.InitDefaultCompletionCmd()
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			if !sub.IsAvailableCommand() {
				continue
			}
			if len(sub.Commands()) == 0 && !documented(sub) {
				t.Errorf("docs/cli.md does not show %q", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(root)
}

// TestShortAge: ages keep their two largest units, rounded down.
func TestShortAge(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		4 * time.Second: "in 4s", -12 * time.Second: "12s ago", 500 * time.Millisecond: "now",
		190 * time.Second: "in 3m10s", 10*time.Minute + 5*time.Second: "in 10m", 2*time.Hour + 5*time.Minute + 9*time.Second: "in 2h5m",
		-(76 * time.Hour): "3d4h ago", 400 * 24 * time.Hour: "in 400d", time.Hour: "in 1h",
	} {
		if got := ago(now.Add(d), now); got != want {
			t.Errorf("ago(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestWriteYAML: the YAML of an answer keeps the JSON's key order, in
// block style, quotes what would read back as another type, and reads
// back as the same task.
func TestWriteYAML(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	err := writeYAML(&b, json.RawMessage(`{"name":"007","cron_expr":"*/5 * * * * *","target_url":"http://h/","`+
		`retry_policy":{"retry_on":["429","5xx"]},"priority":1,"run_at":null,"headers":{},"created_at":"2026-01-01T00:00:00Z"}`),
		json.RawMessage(`{"name":"y","run_at":"2030-01-01T00:00:00Z","target_url":"http://h/"}`))
	want := "name: \"007\"\ncron_expr: '*/5 * * * * *'\ntarget_url: http://h/\nretry_policy:\n  retry_on:\n    - \"429\"\n    - 5xx\n" +
		"priority: 1\nrun_at: null\nheaders: {}\ncreated_at: \"2026-01-01T00:00:00Z\"\n---\n" +
		"name: y\nrun_at: \"2030-01-01T00:00:00Z\"\ntarget_url: http://h/\n"
	if err != nil || b.String() != want {
		t.Fatalf("writeYAML: %v\n%s\nwant:\n%s", err, b.String(), want)
	}
	ms, err := parseManifests("x.yaml", b.Bytes(), true)
	if err != nil || len(ms) != 2 {
		t.Fatalf("read back: %v, %d tasks", err, len(ms))
	}
	if ms[0].name != "007" || ms[0].fields["cron_expr"] != "*/5 * * * * *" || ms[0].fields["created_at"] != nil ||
		strings.Join(ms[0].keys, " ") != "name cron_expr target_url retry_policy priority run_at headers" ||
		ms[1].fields["run_at"] != "2030-01-01T00:00:00Z" || ms[1].where != "x.yaml:13" {
		t.Errorf("read back: %+v, %+v", ms[0], ms[1])
	}
}

// TestCLIApplyPrune: apply a directory of three labeled tasks, remove one
// file, and apply --prune --selector deletes exactly that task: not a task
// of another owner, not one without labels. diff reports it first, and
// --dry-run only says so.
func TestCLIApplyPrune(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	env["PATH"] = os.Getenv("PATH")
	dir := t.TempDir()
	task := func(name string) string {
		return "name: " + name + "\ncron_expr: \"0 0 3 * * *\"\ntarget_url: http://127.0.0.1:9/" + name +
			"\nlabels:\n  owner: reports-repo\n  app.kubernetes.io/part-of: reports\n"
	}
	for _, name := range []string{"a", "b", "c"} {
		writeText(t, filepath.Join(dir, name+".yaml"), task(name))
	}
	other := filepath.Join(t.TempDir(), "other.yaml")
	writeText(t, other, "name: other\ncron_expr: \"0 0 3 * * *\"\ntarget_url: http://127.0.0.1:9/o\nlabels: {owner: another-repo}\n"+
		"---\nname: plain\ncron_expr: \"0 0 3 * * *\"\ntarget_url: http://127.0.0.1:9/p\n")
	if out := mustCLI(t, env, "apply", "-f", dir); out != "task/a created (id 1)\ntask/b created (id 2)\ntask/c created (id 3)\n" {
		t.Fatalf("apply: %q", out)
	}
	mustCLI(t, env, "apply", "-f", other)
	if out := mustCLI(t, env, "task", "ls", "-l", "owner=reports-repo", "-o", "name"); out != "task/a\ntask/b\ntask/c\n" {
		t.Fatalf("task ls -l owner=reports-repo: %q", out)
	}
	wide := mustCLI(t, env, "task", "ls", "-o", "wide")
	if !regexp.MustCompile(`(?m)^a +1 .* ENABLED +app\.kubernetes\.io/part-of=reports,owner=reports-repo +POST `).MatchString(wide) ||
		!regexp.MustCompile(`(?m)^plain +5 .* ENABLED +- +POST `).MatchString(wide) || !strings.Contains(wide, " LABELS ") {
		t.Errorf("task ls -o wide:\n%s", wide)
	}
	if res := runBinary(t, env, "diff", "-f", dir, "--prune", "-l", "owner=reports-repo"); res.status != 0 ||
		res.stdout != "0 to create, 0 to change, 3 unchanged, 0 to prune\n" {
		t.Fatalf("diff --prune before a file is removed: status %d %q", res.status, res.stdout)
	}

	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	if res := runBinary(t, env, "apply", "-f", dir, "--prune"); res.status != 2 || !strings.Contains(res.stderr, "--prune needs --selector") {
		t.Fatalf("apply --prune without a selector: status %d, stderr %q", res.status, res.stderr)
	}
	res := runBinary(t, env, "diff", "-f", dir, "--prune", "-l", "owner=reports-repo")
	if want := "- task/b (id 2, to prune)\n0 to create, 0 to change, 2 unchanged, 1 to prune\n"; res.status != 3 || res.stdout != want {
		t.Fatalf("diff --prune: status %d\n%s%s\nwant status 3 and:\n%s", res.status, res.stdout, res.stderr, want)
	}
	if out := mustCLI(t, env, "apply", "-f", dir, "--prune", "-l", "owner=reports-repo", "--dry-run"); out !=
		"task/a unchanged\ntask/c unchanged\ntask/b would be pruned (dry run)\n" {
		t.Fatalf("apply --prune --dry-run: %q", out)
	}
	if v := taskVersions(t, n); len(v) != 5 {
		t.Fatalf("tasks after a dry run: %v", v)
	}
	res = runBinary(t, env, "apply", "-f", dir, "--prune", "-l", "owner=reports-repo")
	if want := "task/a unchanged\ntask/c unchanged\ntask/b pruned\n"; res.status != 0 || res.stdout != want {
		t.Fatalf("apply --prune: status %d\n%s%s\nwant:\n%s", res.status, res.stdout, res.stderr, want)
	}
	v := taskVersions(t, n)
	if _, gone := v["b"]; gone || len(v) != 4 || v["a"] != 1 || v["c"] != 1 || v["other"] != 1 || v["plain"] != 1 {
		t.Fatalf("tasks after apply --prune = %v, want a, c, other and plain, unchanged", v)
	}
	var audit struct {
		Items []struct {
			Target string `json:"target"`
		} `json:"items"`
	}
	n.do(t, "GET", "/api/v1/audit?action=task.delete", "", 200, &audit)
	if len(audit.Items) != 1 || audit.Items[0].Target != "task/2" {
		t.Fatalf("deletes in the audit log: %+v", audit.Items)
	}
	if res := runBinary(t, env, "diff", "-f", dir, "--prune", "-l", "owner=reports-repo"); res.status != 0 {
		t.Fatalf("diff --prune after apply --prune: status %d %q", res.status, res.stdout)
	}
	failCLI(t, env, 1, []string{"selector: at character 10", "(field selector"}, "apply", "-f", dir, "--prune", "-l", "owner in x")
}

// TestCLIBulkAndRunFilters: task bulk by selector and by name, and the
// run list's filters by trigger, selector, status and time.
func TestCLIBulkAndRunFilters(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "tasks.yaml")
	never := "cron_expr: \"0 0 0 1 1 * 2099\"\ntarget_url: " + target.srv.URL + "/x\n"
	writeText(t, file, "name: pay-1\n"+never+"labels: {team: payments}\n---\nname: pay-2\n"+never+"labels: {team: payments}\n---\n"+
		"name: search\n"+never+"labels: {team: search}\n")
	mustCLI(t, env, "apply", "-f", file)

	if out := mustCLI(t, env, "task", "bulk", "disable", "-l", "team=payments"); out != "task/pay-1 disabled\ntask/pay-2 disabled\n" {
		t.Fatalf("task bulk disable -l: %q", out)
	}
	if out := mustCLI(t, env, "task", "ls", "--status", "DISABLED", "-o", "name"); out != "task/pay-1\ntask/pay-2\n" {
		t.Fatalf("disabled tasks: %q", out)
	}
	out := mustCLI(t, env, "task", "bulk", "trigger", "pay-1", "search", "3")
	if !regexp.MustCompile(`^task/pay-1 triggered: run/\d+ (RUNNING|SUCCESS|QUEUED)\ntask/search triggered: run/\d+ \S+\n$`).MatchString(out) {
		t.Fatalf("task bulk trigger: %q", out)
	}
	target.wait(t, 2, 10*time.Second)
	failCLI(t, env, 2, []string{`"pause" is not an action`}, "task", "bulk", "pause", "pay-1")
	failCLI(t, env, 2, []string{"give the tasks by name or id, or by --selector"}, "task", "bulk", "enable")
	failCLI(t, env, 2, []string{"not both"}, "task", "bulk", "enable", "pay-1", "-l", "team=payments")
	failCLI(t, env, 1, []string{`task "nope" not found`}, "task", "bulk", "enable", "nope")
	if out := mustCLI(t, env, "task", "bulk", "enable", "-l", "team=nobody"); out != "no task matches team=nobody\n" {
		t.Errorf("bulk of nothing: %q", out)
	}

	// The two manual runs, by trigger, by selector, by status and time.
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--trigger", "MANUAL"}, 2},
		{[]string{"--trigger", "SCHEDULE,CATCH_UP"}, 0},
		{[]string{"-l", "team=payments", "--trigger", "manual"}, 1},
		{[]string{"-l", "team notin (payments)", "--since", "1h", "--until", "0s"}, 1},
		{[]string{"--status", "SUCCESS,FAILED", "--finished-after", "1h"}, 2},
		{[]string{"--finished-before", "1h"}, 0},
	} {
		args := append([]string{"run", "ls", "-o", "name"}, tc.args...)
		if out := mustCLI(t, env, args...); strings.Count(out, "run/") != tc.want {
			t.Errorf("sundial %s = %q, want %d runs", strings.Join(args, " "), out, tc.want)
		}
	}
	failCLI(t, env, 2, []string{"--since and --from are the same"}, "run", "ls", "--since", "1h", "--from", "1h")
	failCLI(t, env, 1, []string{"(field trigger", `token "CRON"`}, "run", "ls", "--trigger", "CRON")
	failCLI(t, env, 2, []string{"--finished-after"}, "run", "ls", "--finished-after", "soon")

	// A delete needs an editor, which the anonymous client of a loopback
	// node is.
	if out := mustCLI(t, env, "task", "bulk", "delete", "pay-1", "pay-2"); out != "task/pay-1 deleted\ntask/pay-2 deleted\n" {
		t.Fatalf("task bulk delete: %q", out)
	}
	if out := mustCLI(t, env, "task", "ls", "-o", "name"); out != "task/search\n" {
		t.Fatalf("tasks after bulk delete: %q", out)
	}
}

// TestCLIBounds: a task applied with start_at, end_at, max_runs and
// jitter_seconds fires on real seconds from start_at, each delivery a
// jitter after its time, exactly max_runs times, then ends COMPLETED;
// task get shows its bounds and count, and what task get -o yaml prints
// applies back unchanged.
func TestCLIBounds(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	startAt := time.Now().Add(2 * time.Second).Truncate(time.Second)
	file := filepath.Join(t.TempDir(), "bounded.yaml")
	writeText(t, file, "name: bounded\ncron_expr: \"* * * * * *\"\ntarget_url: "+target.srv.URL+"/tick\n"+
		"start_at: \""+startAt.Format(time.RFC3339)+"\"\nend_at: \"2099-01-01T00:00:00Z\"\nmax_runs: 3\njitter_seconds: 1\n")
	mustCLI(t, env, "apply", "-f", file)
	got := target.wait(t, 3, 20*time.Second)
	for i, d := range got {
		if want := startAt.Add(time.Duration(i) * time.Second); !d.scheduled.Equal(want) {
			t.Errorf("delivery %d: the fire of %s, want %s", i, d.scheduled, want)
		}
		if lag := d.at.Sub(d.scheduled); lag < 0 {
			t.Errorf("delivery %d: at %s, before its time %s", i, d.at, d.scheduled)
		}
	}
	var task struct {
		Status    string `json:"status"`
		FireCount int    `json:"fire_count"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := json.Unmarshal([]byte(mustCLI(t, env, "task", "get", "bounded", "-o", "json")), &task); err != nil {
			t.Fatal(err)
		}
		if task.Status == "COMPLETED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task after its 3 fires = %+v, want COMPLETED", task)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if task.FireCount != 3 {
		t.Errorf("fire_count = %d, want 3", task.FireCount)
	}
	target.mu.Lock()
	delivered := len(target.got)
	target.mu.Unlock()
	if delivered != 3 {
		t.Errorf("%d deliveries once COMPLETED, want 3", delivered)
	}
	desc := mustCLI(t, env, "task", "get", "bounded")
	want := regexp.MustCompile(`(?m)^Bounds: +from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d, until 2099-01-01 00:00:00, 3 of 3 fires, jitter 1s$`)
	if !want.MatchString(desc) || !strings.Contains(desc, "COMPLETED") {
		t.Errorf("task get lacks %s and COMPLETED:\n%s", want, desc)
	}
	yamlFile := filepath.Join(t.TempDir(), "got.yaml")
	writeText(t, yamlFile, mustCLI(t, env, "task", "get", "bounded", "-o", "yaml"))
	if out := mustCLI(t, env, "diff", "-f", yamlFile); out != "0 to create, 0 to change, 1 unchanged\n" {
		t.Errorf("diff of task get -o yaml: %q", out)
	}
}

// TestCLIStats: sundial stats shows the counts the node writes every
// scheduler.stats_flush: its fires, per step, in total and by node, with
// the lag as an upper estimate; -o json is the API's answer; a bad
// --since is refused naming it.
func TestCLIStats(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--scheduler.stats_flush", "1s")
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: every-second\ncron_expr: \"* * * * * *\"\ntarget_url: "+target.srv.URL+"/s\n")
	mustCLI(t, env, "task", "create", "-f", file)
	var st struct {
		Totals struct {
			Fires    int64    `json:"fires"`
			LagP99MS *float64 `json:"lag_p99_ms"`
		} `json:"totals"`
		Steps []json.RawMessage `json:"steps"`
		Nodes []struct {
			NodeID string  `json:"node_id"`
			Share  float64 `json:"share"`
		} `json:"nodes"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for st.Totals.Fires < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no fires counted in 20 s: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
		if err := json.Unmarshal([]byte(mustCLI(t, env, "stats", "-o", "json", "--since", "10m")), &st); err != nil {
			t.Fatal(err)
		}
	}
	if len(st.Steps) != 2 || st.Totals.LagP99MS == nil || len(st.Nodes) != 1 || st.Nodes[0].Share != 1 {
		t.Errorf("stats -o json --since 10m (5-minute steps): %+v", st)
	}
	out := mustCLI(t, env, "stats", "--since", "3m", "--step", "1m")
	if !regexp.MustCompile(`^STEP \(UTC\) +FIRES +SUCCEEDED +FAILED +SKIPPED +CANCELED +LAG P50 +LAG P95 +LAG P99\n` +
		`(\d{4}-\d\d-\d\d \d\d:\d\d +\d+ +\d+ +0 +0 +0 +(-|≤\S+) +(-|≤\S+) +(-|≤\S+) *\n){3}` +
		`total +[1-9]\d* +\d+ +0 +0 +0 +≤\S+ +≤\S+ +≤\S+\n\n` +
		`NODE +SHARE +FIRES .*\n\S+ +100% +[1-9]\d* `).MatchString(out) {
		t.Errorf("stats:\n%s", out)
	}
	failCLI(t, env, 1, []string{"(field since"}, "stats", "--since", "abc")
}
