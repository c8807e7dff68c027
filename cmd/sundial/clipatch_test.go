package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// editorScript writes a shell script that stands for the user's editor: it
// runs body with the file to edit as $1. It returns the EDITOR that runs it.
func editorScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "editor.sh")
	writeText(t, path, body)
	return "sh " + path
}

// TestCLITaskPatch: task patch changes the fields -p or --set give, and
// says which; null removes one; an error of the API is its message and
// field, and changes nothing.
func TestCLITaskPatch(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: nightly\ncron_expr: \"0 0 3 * * *\"\ntarget_url: http://127.0.0.1:9/n\nheaders: {X-Team: ops}\n")
	mustCLI(t, env, "apply", "-f", file)

	out := mustCLI(t, env, "task", "patch", "nightly", "--set", "cron_expr=0 30 4 * * *", "--set", "headers.X-Env=prod",
		"--set", "retry_policy.max_attempts=3", "--set", "description=5")
	if want := "task/nightly patched: description, cron_expr, headers.X-Env, retry_policy.max_attempts\n"; out != want {
		t.Errorf("patch: %q, want %q", out, want)
	}
	var task struct {
		Description string            `json:"description"`
		CronExpr    string            `json:"cron_expr"`
		Headers     map[string]string `json:"headers"`
		Priority    int               `json:"priority"`
		Version     int64             `json:"version"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, env, "task", "get", "nightly", "-o", "json")), &task); err != nil ||
		task.Description != "5" || task.CronExpr != "0 30 4 * * *" || task.Headers["X-Team"] != "ops" || task.Headers["X-Env"] != "prod" {
		t.Fatalf("after the patch: %+v, %v", task, err)
	}
	patchFile := filepath.Join(t.TempDir(), "patch.yaml")
	writeText(t, patchFile, "priority: 10\nheaders:\n  X-Env: null\n")
	if out := mustCLI(t, env, "task", "patch", "nightly", "-p", "@"+patchFile); out != "task/nightly patched: headers.X-Env, priority\n" {
		t.Errorf("patch -p @FILE: %q", out)
	}
	if out := mustCLI(t, env, "task", "patch", "1", "-p", `{"priority": 10}`); out != "task/nightly unchanged\n" {
		t.Errorf("a patch that changes nothing: %q", out)
	}
	failCLI(t, env, 1, []string{"priority must be from -1000 to 1000", "(field priority"}, "task", "patch", "nightly", "--set", "priority=5000")
	failCLI(t, env, 1, []string{"id is set by the server and cannot be patched", "(field id)"}, "task", "patch", "nightly", "-p", `{"id": 3}`)
	failCLI(t, env, 2, []string{"give the fields to change with -p JSON|@FILE or --set FIELD=VALUE"}, "task", "patch", "nightly")
	failCLI(t, env, 2, []string{`--set "priority": want FIELD=VALUE`}, "task", "patch", "nightly", "--set", "priority")
	failCLI(t, env, 2, []string{"a patch is an object of the fields to change"}, "task", "patch", "nightly", "-p", "[1]")
	if err := json.Unmarshal([]byte(mustCLI(t, env, "task", "get", "nightly", "-o", "json")), &task); err != nil ||
		task.Priority != 10 || task.Version != 3 {
		t.Fatalf("after refused patches: %+v, %v", task, err)
	}
}

// TestCLITaskEdit: task edit opens the task's YAML in $EDITOR and sends
// what was changed as a patch with If-Match; a task changed meanwhile is a
// clear conflict that writes nothing and keeps the edit; no change sends
// nothing.
func TestCLITaskEdit(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: nightly\ncron_expr: \"0 0 3 * * *\"\ntimezone: Europe/Paris\ntarget_url: http://127.0.0.1:9/n\n"+
		"headers: {X-Team: ops, Authorization: Bearer s3cret}\npriority: 4\n")
	mustCLI(t, env, "apply", "-f", file)

	// The editor sees the task as apply reads it; it changes the schedule
	// and drops the priority (back to its default).
	seen := filepath.Join(t.TempDir(), "seen.yaml")
	env["EDITOR"] = editorScript(t, `cp "$1" `+seen+`
sed -i -e 's/0 0 3 \* \* \*/0 15 3 * * */' -e '/^priority:/d' "$1"
`)
	if out := mustCLI(t, env, "task", "edit", "nightly"); out != "task/nightly edited: cron_expr, priority\n" {
		t.Errorf("edit: %q", out)
	}
	shown, _ := os.ReadFile(seen)
	for _, want := range []string{"# task/nightly (id 1, version 1).", "\nname: nightly\ncron_expr: 0 0 3 * * *\ntimezone: Europe/Paris\n",
		"  Authorization: '***'\n", "priority: 4\n"} {
		if !strings.Contains(string(shown), want) {
			t.Errorf("the editor was shown:\n%s\nwithout %q", shown, want)
		}
	}
	if strings.Contains(string(shown), "s3cret") || strings.Contains(string(shown), "version:") {
		t.Errorf("the editor was shown a secret or a server-set field:\n%s", shown)
	}
	var task struct {
		CronExpr string            `json:"cron_expr"`
		Headers  map[string]string `json:"headers"`
		Priority int               `json:"priority"`
		Version  int64             `json:"version"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, env, "task", "get", "nightly", "-o", "json")), &task); err != nil ||
		task.CronExpr != "0 15 3 * * *" || task.Priority != 0 || task.Headers["Authorization"] != "***" || task.Version != 2 {
		t.Fatalf("after the edit: %+v, %v", task, err)
	}

	// Changed meanwhile: the editor itself has the task changed while it is
	// open. The edit is not applied, and is kept.
	env["EDITOR"] = editorScript(t, sundialBinary(t)+` task patch nightly --set description=meanwhile --server `+n.url+` >/dev/null
sed -i 's/0 15 3/0 20 3/' "$1"
`)
	res := failCLI(t, env, 1, []string{`conflict: task "nightly" changed on the server since it was read (version 3, read at version 2)`,
		"so the edit was not applied", `run "sundial task edit nightly" again`}, "task", "edit", "nightly")
	kept := regexp.MustCompile(`it is kept in (\S+):`).FindStringSubmatch(res.err.Error())
	if kept == nil {
		t.Fatalf("the conflict does not say where the edit is kept: %v", res.err)
	}
	if data, err := os.ReadFile(kept[1]); err != nil || !strings.Contains(string(data), "0 20 3") {
		t.Errorf("the edit kept in %s: %q, %v", kept[1], data, err)
	}
	_ = os.Remove(kept[1])
	if err := json.Unmarshal([]byte(mustCLI(t, env, "task", "get", "nightly", "-o", "json")), &task); err != nil ||
		task.CronExpr != "0 15 3 * * *" || task.Version != 3 {
		t.Fatalf("after the conflict: %+v, %v", task, err)
	}

	// No change, or an empty file: nothing is sent.
	env["EDITOR"] = "true"
	if out := mustCLI(t, env, "task", "edit", "nightly"); out != "task/nightly unchanged: the edit was cancelled\n" {
		t.Errorf("an edit without change: %q", out)
	}
	env["EDITOR"] = editorScript(t, `: > "$1"`)
	if out := mustCLI(t, env, "task", "edit", "nightly"); out != "task/nightly unchanged: the edit was cancelled\n" {
		t.Errorf("an emptied file: %q", out)
	}
	// Refused by the server: its message, and the edit kept.
	env["EDITOR"] = editorScript(t, `sed -i 's/^cron_expr: .*/cron_expr: 0 0 0 32 * */' "$1"`)
	res = failCLI(t, env, 1, []string{`day-of-month: "32": value out of range 1-31 (field cron_expr, token "32")`, "the edit is kept in"},
		"task", "edit", "nightly")
	if kept := regexp.MustCompile(`kept in (\S+)$`).FindStringSubmatch(res.err.Error()); kept != nil {
		_ = os.Remove(kept[1])
	}
	if v := taskVersions(t, n); v["nightly"] != 3 {
		t.Errorf("version after edits that sent nothing: %d, want 3", v["nightly"])
	}
}

// TestCLIDisableReason: task disable --reason keeps the reason, shown by
// task get -o yaml and task ls -o wide until the task is enabled again.
func TestCLIDisableReason(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: nightly\ncron_expr: \"0 0 3 * * *\"\ntarget_url: http://127.0.0.1:9/n\n---\n"+
		"name: hourly\ncron_expr: \"@hourly\"\ntarget_url: http://127.0.0.1:9/h\n")
	mustCLI(t, env, "apply", "-f", file)

	if out := mustCLI(t, env, "task", "disable", "nightly", "--reason", "waiting for the vendor's fix"); out != "task/nightly disabled\n" {
		t.Errorf("disable: %q", out)
	}
	got := mustCLI(t, env, "task", "get", "nightly", "-o", "yaml")
	for _, want := range []string{"\nstatus: DISABLED\ndisabled_reason: waiting for the vendor's fix\ndisabled_at: \"", "\ndisabled_by: anonymous\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("task get -o yaml lacks %q:\n%s", want, got)
		}
	}
	table := mustCLI(t, env, "task", "ls")
	if !regexp.MustCompile(`(?m)^nightly +0 0 3 \* \* \* +UTC +- +- +- +- +DISABLED$`).MatchString(table) {
		t.Errorf("task ls:\n%s", table)
	}
	wide := mustCLI(t, env, "task", "ls", "-o", "wide")
	if !regexp.MustCompile(`(?m)^nightly .* DISABLED .* waiting for the vendor's fix \(by anonymous, (now|\d+s ago)\)$`).MatchString(wide) ||
		!regexp.MustCompile(`(?m)^hourly .* ENABLED .* -$`).MatchString(wide) {
		t.Errorf("task ls -o wide:\n%s", wide)
	}
	if out := mustCLI(t, env, "task", "disable", "nightly", "--reason", "vendor fix due Monday"); out != "task/nightly was disabled already; its reason is now \"vendor fix due Monday\"\n" {
		t.Errorf("a new reason: %q", out)
	}
	if out := mustCLI(t, env, "task", "disable", "nightly"); out != "task/nightly was disabled already\n" {
		t.Errorf("disable again: %q", out)
	}
	failCLI(t, env, 1, []string{"reason is 1025 characters long; at most 1024 (field reason)"},
		"task", "disable", "hourly", "--reason", strings.Repeat("x", 1025))

	// A file that leaves out status and disabled_reason keeps them, as the
	// server does: the file that created the tasks is still what is live.
	if out := mustCLI(t, env, "diff", "-f", file); out != "0 to create, 0 to change, 2 unchanged\n" {
		t.Errorf("diff of a disabled task:\n%s", out)
	}
	// One that gives them is compared.
	withReason := filepath.Join(t.TempDir(), "reason.yaml")
	writeText(t, withReason, "name: nightly\ncron_expr: \"0 0 3 * * *\"\ntarget_url: http://127.0.0.1:9/n\nstatus: DISABLED\ndisabled_reason: other\n")
	if res := runCLI(t, env, "", "diff", "-f", withReason); exitCode(res.err) != 3 ||
		!strings.Contains(res.stdout, "    disabled_reason: \"vendor fix due Monday\" -> \"other\"\n") {
		t.Errorf("diff of another reason: %v\n%s", res.err, res.stdout)
	}
	mustCLI(t, env, "task", "enable", "nightly")
	if got := mustCLI(t, env, "task", "get", "nightly", "-o", "json"); strings.Contains(got, "disabled_") {
		t.Errorf("an enabled task shows why it was disabled:\n%s", got)
	}
}

// TestCLIExportApply: the export of the tasks (GET /tasks?format=yaml),
// written to a file, is what apply reads, and applying it changes
// nothing: diff finds no difference, apply leaves every task unchanged.
func TestCLIExportApply(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: nightly\ncron_expr: \"0 0 3 * * *\"\ntimezone: Europe/Paris\ntarget_url: http://u:pw@127.0.0.1:9/n\n"+
		"headers: {X-Team: ops, Authorization: Bearer s3cret}\nretry_policy: {max_attempts: 3}\nparams: {day: mon, n: [1, 2]}\n"+
		"signing_secret: generate\nstatus: DISABLED\ndisabled_reason: not yet\n---\n"+
		"name: later\nrun_at: \"2030-01-02T03:04:05Z\"\ntarget_url: http://127.0.0.1:9/l\nmax_queue: 7\n---\n"+
		"name: plain\ncron_expr: \"@hourly\"\ntarget_url: http://127.0.0.1:9/p\n")
	mustCLI(t, env, "apply", "-f", file)
	mustCLI(t, env, "task", "disable", "plain", "--reason", "paused from the command line")
	before := taskVersions(t, n)

	resp, err := http.Get(n.url + "/api/v1/tasks?format=yaml")
	if err != nil {
		t.Fatal(err)
	}
	export, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/yaml" || strings.Contains(string(export), "s3cret") {
		t.Fatalf("export: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), export)
	}
	exported := filepath.Join(t.TempDir(), "export.yaml")
	writeText(t, exported, string(export))
	if out := mustCLI(t, env, "diff", "-f", exported); out != "0 to create, 0 to change, 3 unchanged\n" {
		t.Errorf("diff of the export:\n%s\n%s", out, export)
	}
	if out := mustCLI(t, env, "apply", "-f", exported); out != "task/nightly unchanged\ntask/later unchanged\ntask/plain unchanged\n" {
		t.Errorf("apply of the export:\n%s", out)
	}
	if after := taskVersions(t, n); after["nightly"] != before["nightly"] || after["later"] != before["later"] || after["plain"] != before["plain"] {
		t.Errorf("versions after applying the export: %v, before %v", after, before)
	}
}
