package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// runResult is what one call of run produced.
type runResult struct {
	stdout, stderr string
	err            error
}

// runArgs calls run as main would, with buffers and no environment.
func runArgs(t *testing.T, args ...string) runResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	getenv := func(string) string { return "" }
	err := run(t.Context(), args, getenv, strings.NewReader(""), &stdout, &stderr)
	return runResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

func TestRunOK(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		stdout string
	}{
		{
			name: "next in UTC",
			args: []string{"cron", "next", "--from", "2026-01-01T00:00:00Z", "*/15 * * * * *"},
			stdout: "2026-01-01T00:00:15Z\n2026-01-01T00:00:30Z\n2026-01-01T00:00:45Z\n" +
				"2026-01-01T00:01:00Z\n2026-01-01T00:01:15Z\n",
		},
		{
			name: "next across fall back in New York",
			args: []string{"cron", "next", "--tz", "America/New_York", "--from", "2026-11-01T04:00:00Z", "--count", "4", "0 30 * * * *"},
			stdout: "2026-11-01T00:30:00-04:00\n2026-11-01T01:30:00-04:00\n" +
				"2026-11-01T01:30:00-05:00\n2026-11-01T02:30:00-05:00\n",
		},
		{
			name:   "next across spring forward in New York",
			args:   []string{"cron", "next", "--tz", "America/New_York", "--from", "2026-03-07T12:00:00Z", "--count", "2", "0 30 2 * * *"},
			stdout: "2026-03-08T03:00:00-04:00\n2026-03-09T02:30:00-04:00\n",
		},
		{
			name:   "next with five fields",
			args:   []string{"cron", "next", "--from", "2026-01-01T00:00:00Z", "--count", "2", "30 9 * * MON-FRI"},
			stdout: "2026-01-01T09:30:00Z\n2026-01-02T09:30:00Z\n",
		},
		{
			name:   "next after --",
			args:   []string{"cron", "next", "--from", "2026-01-01T00:00:00Z", "--count", "2", "--", "@every 90s"},
			stdout: "2026-01-01T00:01:30Z\n2026-01-01T00:03:00Z\n",
		},
		{
			name:   "next with single-dash flags and an offset",
			args:   []string{"cron", "next", "-tz", "Asia/Kolkata", "-from", "2025-12-31T19:00:00-05:00", "-count", "1", "@daily"},
			stdout: "2026-01-02T00:00:00+05:30\n",
		},
		{
			name:   "next with --count 1",
			args:   []string{"cron", "next", "--from", "2026-01-01T00:00:00.5Z", "--count", "1", "* * * * * *"},
			stdout: "2026-01-01T00:00:01Z\n",
		},
		{
			name:   "next of a schedule that ends",
			args:   []string{"cron", "next", "--from", "2026-12-31T00:00:00Z", "--count", "3", "0 0 0 1 1,7 * 2026-2027"},
			stdout: "2027-01-01T00:00:00Z\n2027-07-01T00:00:00Z\n",
		},
		{
			name:   "next of a schedule that is over",
			args:   []string{"cron", "next", "0 0 0 1 1 * 2020"},
			stdout: "",
		},
		{
			name:   "explain",
			args:   []string{"cron", "explain", "0 30 9 * * MON-FRI"},
			stdout: "At 09:30, on Monday through Friday\n",
		},
		{
			name:   "explain every",
			args:   []string{"cron", "explain", "--", "@every 90s"},
			stdout: "Every 1 minute 30 seconds, counted from when the schedule starts\n",
		},
		{name: "help", args: []string{"help"}, stdout: usage},
		{name: "-h", args: []string{"-h"}, stdout: usage},
		{name: "--help", args: []string{"--help"}, stdout: usage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := runArgs(t, tt.args...)
			if res.err != nil {
				t.Fatalf("run(%q) = %v", tt.args, res.err)
			}
			if res.stdout != tt.stdout {
				t.Errorf("stdout = %q\nwant     %q", res.stdout, tt.stdout)
			}
			if res.stderr != "" {
				t.Errorf("stderr = %q, want nothing", res.stderr)
			}
		})
	}
}

func TestRunUsageText(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"serve", "migrate", "secrets reseal", "target", "cron next", "cron explain", "version", "help"} {
		if !strings.Contains(usage, "sundial "+cmd) {
			t.Errorf("usage does not list %q", cmd)
		}
	}
}

func TestRunCronNextDefaults(t *testing.T) {
	t.Parallel()
	before := time.Now()
	res := runArgs(t, "cron", "next", "* * * * * *")
	if res.err != nil {
		t.Fatal(res.err)
	}
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("got %d lines, want 5: %q", len(lines), res.stdout)
	}
	for _, line := range lines {
		fire, err := time.Parse(time.RFC3339, line)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if !fire.After(before) || fire.Location() != time.UTC {
			t.Errorf("fire %q: want a UTC time after %v", line, before)
		}
	}
}

func TestRunFlagHelp(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"next", "explain"} {
		res := runArgs(t, "cron", sub, "-h")
		if res.err != nil {
			t.Errorf("cron %s -h: %v", sub, res.err)
		}
		if res.stdout != "" || !strings.HasPrefix(res.stderr, "usage: sundial cron "+sub) {
			t.Errorf("cron %s -h: stdout %q, stderr %q; want the usage on stderr only", sub, res.stdout, res.stderr)
		}
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	const every = "* * * * * *"
	tests := []struct {
		name    string
		args    []string
		message string // the whole message; empty to check only prefix
		prefix  string
	}{
		{name: "no command", args: nil, message: "no command given; run 'sundial help' for usage"},
		{name: "unknown command", args: []string{"frobnicate"}, message: `unknown command "frobnicate"; run 'sundial help' for usage`},
		{name: "cron alone", args: []string{"cron"}, prefix: "cron: missing subcommand"},
		{name: "unknown cron subcommand", args: []string{"cron", "last", every}, prefix: `cron: unknown subcommand "last"`},
		{
			name:    "day of month out of range",
			args:    []string{"cron", "next", "0 0 32 * *"},
			message: `invalid cron expression: day-of-month "32": value out of range 1-31`,
		},
		{
			name:    "wrong field count",
			args:    []string{"cron", "next", "* * *"},
			message: `invalid cron expression: expression "* * *": has 3 fields, want 5, 6 or 7 (sec min hour dom mon dow [year])`,
		},
		{
			name:    "empty expression",
			args:    []string{"cron", "next", ""},
			message: `invalid cron expression: expression "": empty expression`,
		},
		{
			name:    "every too short",
			args:    []string{"cron", "next", "@every 500ms"},
			message: `invalid cron expression: @every "500ms": interval must be at least 1s`,
		},
		{
			name:    "explain invalid",
			args:    []string{"cron", "explain", "0 0 32 * *"},
			message: `invalid cron expression: day-of-month "32": value out of range 1-31`,
		},
		{name: "no expression", args: []string{"cron", "next"}, prefix: "cron next: want exactly one EXPR argument, got 0;"},
		{name: "unquoted expression", args: []string{"cron", "next", "0", "0", "*", "*", "*"}, prefix: "cron next: want exactly one EXPR argument, got 5;"},
		{name: "flag after expression", args: []string{"cron", "next", every, "--count", "2"}, prefix: "cron next: want exactly one EXPR argument, got 3;"},
		{name: "explain two arguments", args: []string{"cron", "explain", "a", "b"}, prefix: "cron explain: want exactly one EXPR argument, got 2;"},
		{name: "unknown flag", args: []string{"cron", "next", "--bogus", every}, prefix: "cron next: flag provided but not defined: -bogus"},
		{name: "flag without value", args: []string{"cron", "next", "--tz"}, prefix: "cron next: flag needs an argument: -tz"},
		{
			name:    "unknown zone",
			args:    []string{"cron", "next", "--tz", "Mars/Olympus_Mons", every},
			message: `invalid --tz "Mars/Olympus_Mons": not a known IANA time zone (for example Europe/Paris)`,
		},
		{
			name:    "from not a time",
			args:    []string{"cron", "next", "--from", "tomorrow", every},
			message: `invalid --from "tomorrow": want an RFC 3339 time (for example 2026-01-01T00:00:00Z)`,
		},
		{
			name:    "from without zone",
			args:    []string{"cron", "next", "--from", "2026-01-01T00:00:00", every},
			message: `invalid --from "2026-01-01T00:00:00": want an RFC 3339 time (for example 2026-01-01T00:00:00Z)`,
		},
		{name: "count zero", args: []string{"cron", "next", "--count", "0", every}, message: `invalid --count "0": want an integer from 1 to 1000`},
		{name: "count too big", args: []string{"cron", "next", "--count", "1001", every}, message: `invalid --count "1001": want an integer from 1 to 1000`},
		{name: "count not a number", args: []string{"cron", "next", "--count", "ten", every}, message: `invalid --count "ten": want an integer from 1 to 1000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := runArgs(t, tt.args...)
			var ee *exitError
			if !errors.As(res.err, &ee) || ee.code != 2 {
				t.Fatalf("run(%q) = %v, want an *exitError with code 2", tt.args, res.err)
			}
			msg := res.err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("message %q is not one line", msg)
			}
			if tt.message != "" && msg != tt.message {
				t.Errorf("message = %q\nwant      %q", msg, tt.message)
			}
			if !strings.HasPrefix(msg, tt.prefix) {
				t.Errorf("message = %q, want prefix %q", msg, tt.prefix)
			}
			if res.stdout != "" || res.stderr != "" {
				t.Errorf("printed stdout %q, stderr %q; main prints the one error line", res.stdout, res.stderr)
			}
		})
	}
}

// TestCompletion: cobra's completion scripts, and completion of the
// commands and of their flags, those of the configuration's settings
// included, though the commands parse their flags themselves.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		res := runArgs(t, "completion", shell)
		if res.err != nil || !strings.Contains(res.stdout, "sundial") || len(res.stdout) < 1000 {
			t.Errorf("completion %s: %v, %d bytes", shell, res.err, len(res.stdout))
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", ""}, []string{"serve\t", "migrate\t", "secrets\t", "target\t", "cron\t", "bench\t", "completion\t", "version\t"}},
		{[]string{"__complete", "serve", "--sched"}, []string{"--scheduler.poll_interval\thow often the planner claims due tasks"}},
		{[]string{"__complete", "migrate", "--"}, []string{"--db\t", "--config\t"}},
		{[]string{"__complete", "secrets", "reseal", "--secrets."}, []string{"--secrets.previous_keys\t"}},
		{[]string{"__complete", "cron", ""}, []string{"next\t", "explain\t"}},
		{[]string{"__complete", "cron", "next", "--t"}, []string{"--tz\t"}},
		{[]string{"__complete", "bench", ""}, []string{"precision\t", "throughput\t", "scale\t", "failover\t"}},
	} {
		res := runArgs(t, tc.args...)
		for _, w := range tc.want {
			if res.err != nil || !strings.Contains(res.stdout, w) {
				t.Errorf("%q: %v; completions lack %q:\n%s", tc.args, res.err, w, res.stdout)
			}
		}
	}
	if res := runArgs(t, "__complete", "migrate", "--"); strings.Contains(res.stdout, "--listen") {
		t.Errorf("migrate completes serve's flags:\n%s", res.stdout)
	}
	// help COMMAND is the command's own help.
	res := runArgs(t, "help", "serve")
	if res.err != nil || !strings.HasPrefix(res.stderr, "Usage: sundial serve [flags]") {
		t.Errorf("help serve: %v, stderr %q", res.err, res.stderr)
	}
	res = runArgs(t, "help", "cron")
	if res.err != nil || !strings.HasPrefix(res.stdout, "usage:\n  sundial cron next") {
		t.Errorf("help cron: %v, stdout %q", res.err, res.stdout)
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{errors.New("disk full"), 1},
		{usageErrorf("bad"), 2},
		{&exitError{code: 3, err: errors.New("x")}, 3},
		{context.Canceled, 1},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestBinary builds the real command and runs it as a user would.
func TestBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "sundial")
	gobin := goTool(t)
	if out, err := exec.CommandContext(t.Context(), gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	tests := []struct {
		name   string
		args   []string
		status int
		stdout string
		stderr string
	}{
		{
			name:   "next",
			args:   []string{"cron", "next", "--from", "2026-01-01T00:00:00Z", "--count", "2", "--", "*/15 * * * * *"},
			stdout: "2026-01-01T00:00:15Z\n2026-01-01T00:00:30Z\n",
		},
		{
			name:   "invalid expression",
			args:   []string{"cron", "next", "0 0 32 * *"},
			status: 2,
			stderr: "sundial: invalid cron expression: day-of-month \"32\": value out of range 1-31\n",
		},
		{
			name:   "unknown command",
			args:   []string{"frobnicate"},
			status: 2,
			stderr: "sundial: unknown command \"frobnicate\"; run 'sundial help' for usage\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tt.args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			status := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("run %q: %v", tt.args, err)
			}
			if status != tt.status {
				t.Errorf("exit status = %d, want %d", status, tt.status)
			}
			if stdout.String() != tt.stdout {
				t.Errorf("stdout = %q, want %q", stdout.String(), tt.stdout)
			}
			if stderr.String() != tt.stderr {
				t.Errorf("stderr = %q, want %q", stderr.String(), tt.stderr)
			}
		})
	}
}

// TestVersionLine: the version says which source the binary was built
// from, read from the build information; -ldflags wins for the release.
func TestVersionLine(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"},
		{Key: "vcs.time", Value: "2026-05-04T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	tests := []struct {
		name    string
		ldflags string
		bi      *debug.BuildInfo
		want    string
	}{
		{"devel with VCS", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"sundial devel (revision 1a2b3c4d5e6f, 2026-05-04T10:00:00Z, modified, go1.26.1)"},
		{"module version, clean tree", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v1.2.0"},
			Settings: []debug.BuildSetting{vcs[2], vcs[3], {Key: "vcs.modified", Value: "false"}}},
			"sundial v1.2.0 (revision 1a2b3c4d5e6f, 2026-05-04T10:00:00Z, go1.26.1)"},
		// What Go stamps from the repository's tags: a tagged commit, a
		// later one (a pseudo-version), a tagged one with changes.
		{"release tag", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.1.0"},
			Settings: []debug.BuildSetting{vcs[2], vcs[3], {Key: "vcs.modified", Value: "false"}}},
			"sundial v0.1.0 (revision 1a2b3c4d5e6f, 2026-05-04T10:00:00Z, go1.26.1)"},
		{"after the tag", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.1.1-0.20260504100000-1a2b3c4d5e6f"},
			Settings: []debug.BuildSetting{vcs[2], vcs[3], {Key: "vcs.modified", Value: "false"}}},
			"sundial v0.1.1-0.20260504100000-1a2b3c4d5e6f (revision 1a2b3c4d5e6f, 2026-05-04T10:00:00Z, go1.26.1)"},
		{"tag with changes", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.1.0+dirty"}, Settings: vcs},
			"sundial v0.1.0+dirty (revision 1a2b3c4d5e6f, 2026-05-04T10:00:00Z, modified, go1.26.1)"},
		{"ldflags wins", "v9.9.9", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v1.2.0"}, Settings: vcs},
			"sundial v9.9.9 (revision 1a2b3c4d5e6f, 2026-05-04T10:00:00Z, modified, go1.26.1)"},
		{"no VCS information", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}},
			"sundial devel (go1.26.1)"},
		{"no build information", "", nil, "sundial devel"},
	}
	for _, tt := range tests {
		if got := versionLine(tt.ldflags, tt.bi); got != tt.want {
			t.Errorf("%s: versionLine = %q\nwant %q", tt.name, got, tt.want)
		}
	}
	res := runArgs(t, "version")
	if res.err != nil || !strings.HasPrefix(res.stdout, "sundial ") || strings.Contains(res.stdout, "(devel)") {
		t.Errorf("version printed %q, %v", res.stdout, res.err)
	}
}
