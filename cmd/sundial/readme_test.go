package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeExcluded are the README's commands this test does not run, matched
// by prefix, each with the reason.
var readmeExcluded = []struct{ prefix, why string }{
	// "Two commands": the second is this very test suite.
	{"go test ./...", "runs the test suite this test is part of"},
	// "A cluster": the nodes need a PostgreSQL server named db.
	{"sundial serve --listen 127.0.0.1:808", "needs an external PostgreSQL server (db:5432)"},
	// "Precision": benchmarks that take minutes, one on a PostgreSQL server.
	{"go run ./cmd/sundial bench ", "a benchmark: it loads the machine for its whole duration, and the second needs a PostgreSQL server"},
	{"go test -run XXX -bench", "a benchmark: it loads the machine for its whole duration"},
	// "Development": CI runs the linter itself (.ci/run).
	{"go run github.com/golangci/golangci-lint", "the linter, which .ci/run runs on the whole tree"},
}

// readmeStep is what the test expects of the README command it matches.
type readmeStep struct {
	name  string
	match *regexp.Regexp // on the command as the README writes it
	// listen, for a server (serve, target): the address it must listen
	// on. It runs in the background until the end of the test.
	listen string
	// before runs first (wait for what the command's answer depends on).
	before func(t *testing.T, r *readmeRun)
	// status is the exit status the command must end with (diff's 3).
	status int
	// check judges the command's standard output. When it fails, the
	// command is run again after the target's next call, a few times.
	check func(out string) error
}

// readmeRun is the state of one run through the README.
type readmeRun struct {
	dir, bin string
	env      []string
	servers  []*readmeServer
	target   *watchBuffer // the output of "sundial target"
}

type readmeServer struct {
	cmd    *exec.Cmd
	out    *watchBuffer
	exited chan struct{}
	err    error
}

// TestREADME runs every shell command of README.md in order, as a new user
// would on a fresh clone, in an empty directory, with "go run
// ./cmd/sundial" replaced by a binary built from this tree: serve and the
// target start in the background, the tasks are created, their calls reach
// the target, and their runs are listed SUCCESS.
func TestREADME(t *testing.T) {
	t.Parallel()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("runs the README's commands against a built binary (about 20 s)")
	}
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, fmt.Sprintf("the README's commands need %s, which is not on PATH", tool))
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := readmeCommands(string(readme))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	for _, addr := range []string{"127.0.0.1:8080", "127.0.0.1:9000"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			// Outside CI this is often the README's own walkthrough, left
			// running; CI never skips.
			skipOrFail(t, fmt.Sprintf("%s is taken, but the README's commands use it: stop what listens there "+
				"and run the test again (%v)", addr, err))
		}
		ln.Close()
	}
	r := &readmeRun{dir: t.TempDir(), bin: readmeBinary(t)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUNDIAL_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			r.env = append(r.env, kv)
		}
	}
	// The client's contexts file is the fresh user's, not this one's.
	r.env = append(r.env, "XDG_CONFIG_HOME="+filepath.Join(r.dir, ".config"))
	defer r.stopServers(t)

	steps := readmeSteps()
	used := make([]bool, len(steps))
	excludedUsed := make([]bool, len(readmeExcluded))
commands:
	for _, cmd := range cmds {
		for i, ex := range readmeExcluded {
			if strings.HasPrefix(cmd, ex.prefix) {
				excludedUsed[i] = true
				t.Logf("not run (%s): %s", ex.why, cmd)
				continue commands
			}
		}
		var step *readmeStep
		for i := range steps {
			if !used[i] && steps[i].match.MatchString(cmd) {
				step, used[i] = &steps[i], true
				break
			}
		}
		if step == nil {
			step = &readmeStep{name: "a command"} // it must succeed
		}
		r.do(t, step, cmd)
	}
	for i, s := range steps {
		if !used[i] {
			t.Errorf("the README has no command for step %q (%s)", s.name, s.match)
		}
	}
	for i, ex := range readmeExcluded {
		if !excludedUsed[i] {
			t.Errorf("the excluded command %q is no longer in the README: take it off readmeExcluded", ex.prefix)
		}
	}
	r.stopServers(t)
}

// readmeSteps are the README's walkthrough as the test expects it, in order.
func readmeSteps() []readmeStep {
	runsSucceeded := func(out string) error {
		if !strings.HasPrefix(out, "ID ") {
			return errors.New("not a run list")
		}
		if !regexp.MustCompile(`(?m)^\d+ +SCHEDULE +\S+( ago)? +SUCCESS +200 +\S+$`).MatchString(out) {
			return errors.New("no SUCCESS run answered 200")
		}
		return nil
	}
	created := func(id int64, key, value string) func(string) error {
		return func(out string) error {
			var task map[string]any
			if err := json.Unmarshal([]byte(out), &task); err != nil {
				return fmt.Errorf("not a task: %v", err)
			}
			if task["id"] != float64(id) || task[key] != value || task["status"] != "ENABLED" {
				return fmt.Errorf("want task %d, ENABLED, with %s %q", id, key, value)
			}
			return nil
		}
	}
	return []readmeStep{
		{name: "serve", match: regexp.MustCompile(`^go run \./cmd/sundial serve\b`), listen: "127.0.0.1:8080"},
		{name: "target", match: regexp.MustCompile(`^go run \./cmd/sundial target\b`), listen: "127.0.0.1:9000"},
		{name: "create the cron task", match: regexp.MustCompile(`(?s)^curl .*/api/v1/tasks .*"cron_expr"`),
			check: created(1, "cron_expr", "*/5 * * * * *")},
		{name: "create the one-off task", match: regexp.MustCompile(`(?s)^curl .*/api/v1/tasks .*"delay_seconds"`),
			check: created(2, "request_id", "order-42-reminder")},
		{name: "list the tasks", match: regexp.MustCompile(`^go run \./cmd/sundial task ls$`),
			before: func(t *testing.T, r *readmeRun) {
				// Both tasks have called the target, and one call more
				// came after the one-off task's: its outcome is recorded.
				await(t, r.target.when("X-Sundial-Task-Id: 1\n"), 20*time.Second, "the cron task calling the target", r.target)
				await(t, r.target.when("X-Sundial-Task-Id: 2\n"), 30*time.Second, "the one-off task calling the target", r.target)
				await(t, r.target.whenCount("X-Sundial-Run-Id:", r.target.count("X-Sundial-Run-Id:")+1), 20*time.Second,
					"a call after the one-off task's", r.target)
			},
			check: func(out string) error {
				rows := []*regexp.Regexp{
					regexp.MustCompile(`(?m)^hello +\*/5 \* \* \* \* \* +UTC +\S+ \S+ \((in \d+s|now)\) +SUCCESS \S+( ago)? +\S+ +0 +ENABLED$`),
					regexp.MustCompile(`(?m)^once-[0-9a-f]+ +once +UTC +- +SUCCESS \S+( ago)? +\S+ +0 +COMPLETED$`),
				}
				for _, row := range rows {
					if !row.MatchString(out) {
						return fmt.Errorf("no row matches %s", row)
					}
				}
				return nil
			}},
		{name: "list the cron task's runs", match: regexp.MustCompile(`^go run \./cmd/sundial task history hello\b`), check: runsSucceeded},
		{name: "list the one-off task's runs", match: regexp.MustCompile(`^go run \./cmd/sundial task history 2$`), check: runsSucceeded},
		{name: "diff", match: regexp.MustCompile(`^go run \./cmd/sundial diff -f hello\.yaml$`), status: 3, check: func(out string) error {
			if want := "~ task/hello (id 1)\n    cron_expr: \"*/5 * * * * *\" -> \"*/10 * * * * *\"\n0 to create, 1 to change, 0 unchanged\n"; out != want {
				return fmt.Errorf("want:\n%s", want)
			}
			return nil
		}},
		{name: "apply", match: regexp.MustCompile(`^go run \./cmd/sundial apply -f hello\.yaml$`), check: func(out string) error {
			if out != "task/hello updated: cron_expr\n" {
				return errors.New("want task/hello updated: cron_expr")
			}
			return nil
		}},
		{name: "trigger and wait", match: regexp.MustCompile(`^go run \./cmd/sundial task trigger hello --wait$`), check: func(out string) error {
			if !regexp.MustCompile(`^run/\d+ SUCCESS in \S+ \(HTTP 200\)\n$`).MatchString(out) {
				return errors.New("want the run's SUCCESS")
			}
			return nil
		}},
		{name: "cron next", match: regexp.MustCompile(`^go run \./cmd/sundial cron next `), check: func(out string) error {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for _, l := range lines {
				if _, err := time.Parse(time.RFC3339, l); err != nil {
					return fmt.Errorf("line %q: %v", l, err)
				}
			}
			if len(lines) != 3 {
				return fmt.Errorf("%d times, want 3", len(lines))
			}
			return nil
		}},
		{name: "cron explain", match: regexp.MustCompile(`^go run \./cmd/sundial cron explain `), check: func(out string) error {
			if out != "At 12:00, on the last weekday of the month\n" {
				return errors.New("want the explanation of 0 0 12 LW * ?")
			}
			return nil
		}},
	}
}

// do runs one README command as the step expects.
func (r *readmeRun) do(t *testing.T, step *readmeStep, readmeCmd string) {
	t.Helper()
	cmd := strings.ReplaceAll(readmeCmd, "go run ./cmd/sundial", "'"+r.bin+"'")
	if step.listen != "" {
		r.startServer(t, step, cmd)
		return
	}
	if strings.HasSuffix(shellCode(readmeCmd), "&") {
		t.Fatalf("the README starts a process in the background, which a reader cannot stop and this test cannot "+
			"wait for: run it in a terminal of its own instead:\n%s", readmeCmd)
	}
	if step.before != nil {
		step.before(t, r)
	}
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c := exec.CommandContext(ctx, "bash", "-c", cmd)
		c.Dir, c.Env = r.dir, r.env
		c.WaitDelay = 5 * time.Second // a child left behind does not hold the output open
		var stderr strings.Builder
		c.Stderr = &stderr
		out, err := c.Output()
		cancel()
		status := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			status, err = ee.ExitCode(), nil
		}
		if err != nil || status != step.status {
			t.Fatalf("README command failed (%v, exit status %d, want %d):\n%s\nstdout:\n%s\nstderr:\n%s",
				err, status, step.status, readmeCmd, out, stderr.String())
		}
		if step.check == nil {
			return
		}
		err = step.check(string(out))
		if err == nil {
			t.Logf("%s: ok", step.name)
			return
		}
		if try == 3 || r.target == nil {
			t.Fatalf("%s: %v\ncommand:\n%s\noutput:\n%s", step.name, err, readmeCmd, out)
		}
		// The answer may come from an outcome not yet written: try again
		// after the target's next call.
		await(t, r.target.whenCount("X-Sundial-Run-Id:", r.target.count("X-Sundial-Run-Id:")+1), 20*time.Second,
			"the target's next call", r.target)
	}
}

// startServer starts a long-running README command and waits until it
// listens on the step's address.
func (r *readmeRun) startServer(t *testing.T, step *readmeStep, cmd string) {
	t.Helper()
	s := &readmeServer{out: &watchBuffer{}, exited: make(chan struct{})}
	listening := s.out.when("listening on http://" + step.listen + " ")
	s.cmd = exec.Command("bash", "-c", "exec "+cmd)
	s.cmd.Dir, s.cmd.Env = r.dir, r.env
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", step.name, err)
	}
	r.servers = append(r.servers, s)
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	select {
	case <-listening:
	case <-s.exited:
		t.Fatalf("%s exited (%v) before listening on %s:\n%s", step.name, s.err, step.listen, s.out)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s is not listening on %s after 30 s:\n%s", step.name, step.listen, s.out)
	}
	if step.name == "target" {
		r.target = s.out
	}
	t.Logf("%s: listening on %s", step.name, step.listen)
}

// stopServers stops the servers in the order they started (serve before
// the target it calls) as Ctrl-C would, and checks that each stopped
// cleanly.
func (r *readmeRun) stopServers(t *testing.T) {
	t.Helper()
	for _, s := range r.servers {
		select {
		case <-s.exited:
			continue // stopped already
		default:
		}
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.exited:
			if s.err != nil || !strings.Contains(s.out.String(), "stopped\n") {
				t.Errorf("%s stopped with %v, want a clean stop:\n%s", s.cmd.Args, s.err, s.out)
			}
		case <-time.After(40 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
			t.Errorf("%s did not stop on SIGINT:\n%s", s.cmd.Args, s.out)
		}
	}
}

// readmeCommands returns the commands of the README's sh blocks, in order:
// comment lines dropped, a command running on while a quote is open or a
// line ends with a backslash.
func readmeCommands(readme string) ([]string, error) {
	var cmds []string
	inBlock := false
	var cur strings.Builder
	var single, double bool
	for line := range strings.Lines(readme) {
		line = strings.TrimRight(line, "\n")
		switch {
		case !inBlock && line == "```sh":
			inBlock = true
			continue
		case !inBlock:
			continue
		case line == "```":
			if cur.Len() > 0 {
				return nil, fmt.Errorf("a command does not end in its block: %q", cur.String())
			}
			inBlock = false
			continue
		}
		if cur.Len() == 0 && (strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#")) {
			continue
		}
		cur.WriteString(line + "\n")
		for i := 0; i < len(line); i++ {
			switch c := line[i]; {
			case single:
				single = c != '\''
			case double:
				switch c {
				case '\\':
					i++
				case '"':
					double = false
				}
			case c == '\\':
				i++
			case c == '\'':
				single = true
			case c == '"':
				double = true
			case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
				i = len(line) // a comment to the end of the line
			}
		}
		if !single && !double && !strings.HasSuffix(line, "\\") {
			cmds = append(cmds, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if inBlock {
		return nil, errors.New("an sh block is not closed")
	}
	return cmds, nil
}

// shellCode returns a command without its trailing comment and spaces.
func shellCode(cmd string) string {
	lines := strings.Split(cmd, "\n")
	last := lines[len(lines)-1]
	if i := strings.Index(last, " #"); i >= 0 && !strings.ContainsAny(last[:i], "'\"") {
		last = last[:i]
	}
	lines[len(lines)-1] = strings.TrimSpace(last)
	return strings.Join(lines, "\n")
}

// readmeBinary builds the sundial binary the README's commands run.
func readmeBinary(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		skipOrFail(t, "no go command on PATH to build the sundial binary the README's commands run")
	}
	bin := filepath.Join(t.TempDir(), "sundial")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("cannot build the sundial binary the README's commands run: %v\n%s", err, out))
	}
	return bin
}

// skipOrFail skips the test saying why, except in CI (CI=true), where
// what it needs must be there.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why + " (CI=true: the test must run)")
	}
	t.Skip(why)
}

func TestReadmeCommands(t *testing.T) {
	t.Parallel()
	got, err := readmeCommands("text\n```sh\n# a comment\ngo run ./x serve   # with 'a comment'\n\n" +
		"curl -d '{\n  \"a\": \"b # not a comment\"\n}'\necho \"it's\" \\\n  done\n```\n```yaml\nnot: run\n```\n")
	want := []string{"go run ./x serve   # with 'a comment'", "curl -d '{\n  \"a\": \"b # not a comment\"\n}'", "echo \"it's\" \\\n  done"}
	if err != nil || len(got) != len(want) {
		t.Fatalf("readmeCommands = %q, %v; want %q", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("command %d = %q, want %q", i, got[i], want[i])
		}
	}
	if _, err := readmeCommands("```sh\ncurl -d '{\n```\n"); err == nil {
		t.Error("an unterminated quote was accepted")
	}
}
