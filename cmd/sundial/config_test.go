package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sundial.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigSeedExample: seed 001 section 14's configuration works as
// written.
func TestConfigSeedExample(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `scheduler:
  poll_interval: 1s   # 建议 <=1s, 否则高频任务触发会被抽样
executor:
  worker_pool_size: 16
  request_timeout: 15s
`)
	c, err := loadConfig("serve", []string{"--config", path}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Scheduler.PollInterval != time.Second || c.Executor.WorkerPoolSize != 16 || c.Executor.RequestTimeout != 15*time.Second {
		t.Errorf("config %+v", c)
	}
}

// TestConfigPrecedence: a flag beats the environment, which beats the file,
// which beats the default.
func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "executor:\n  worker_pool_size: 8\n  request_timeout: 20s\nscheduler:\n  lookahead: 30s\n")
	env := map[string]string{"SUNDIAL_CONFIG": path, "SUNDIAL_EXECUTOR_WORKER_POOL_SIZE": "32",
		"SUNDIAL_EXECUTOR_REQUEST_TIMEOUT": "25s", "SUNDIAL_EXECUTOR_START_INTERVALS": "a.example=5s, b.example:8080=1s"}
	c, err := loadConfig("serve", []string{"--executor.worker_pool_size", "64"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Executor.WorkerPoolSize != 64 {
		t.Errorf("worker_pool_size %d, want the flag's 64", c.Executor.WorkerPoolSize)
	}
	if c.Executor.RequestTimeout != 25*time.Second {
		t.Errorf("request_timeout %s, want the environment's 25s", c.Executor.RequestTimeout)
	}
	if c.Scheduler.Lookahead != 30*time.Second {
		t.Errorf("lookahead %s, want the file's 30s", c.Scheduler.Lookahead)
	}
	if c.Scheduler.PollInterval != time.Second || c.Listen != "127.0.0.1:8080" || c.DB != "sqlite:./sundial.db" {
		t.Errorf("defaults lost: %+v", c)
	}
	if got := c.Executor.StartIntervals; len(got) != 2 || got["a.example"] != 5*time.Second || got["b.example:8080"] != time.Second {
		t.Errorf("start_intervals %v", got)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		args []string
		env  map[string]string
		want string
	}{
		{"misspelt key", "scheduler:\n  pol_interval: 1s\n", nil, nil, `line 2: unknown key "pol_interval"`},
		{"bad duration in file", "executor:\n  request_timeout: soon\n", nil, nil, "soon"},
		{"bad flag value", "", []string{"--scheduler.poll_interval", "fast"}, nil, `--scheduler.poll_interval: want a duration`},
		{"bad environment value", "", nil, map[string]string{"SUNDIAL_EXECUTOR_WORKER_POOL_SIZE": "many"}, "SUNDIAL_EXECUTOR_WORKER_POOL_SIZE: want a whole number"},
		{"unknown flag", "", []string{"--nope", "1"}, nil, "flag provided but not defined"},
		{"poll interval out of range", "", []string{"--scheduler.poll_interval", "2m"}, nil, "scheduler.poll_interval: 2m0s: want from 10ms to 1m"},
		{"pool size zero", "", []string{"--executor.worker_pool_size", "0"}, nil, "executor.worker_pool_size: 0"},
		{"lookahead below two polls", "", []string{"--scheduler.lookahead", "1s"}, nil, "scheduler.lookahead"},
		{"dead_after below two heartbeats", "", []string{"--scheduler.dead_after", "1s"}, nil, "scheduler.dead_after"},
		{"bad database", "", []string{"--db", "oracle://x"}, nil, `db: "oracle://x"`},
		{"bad start interval", "", []string{"--executor.start_intervals", "host"}, nil, "want host=duration pairs"},
		{"unexpected argument", "", []string{"extra"}, nil, `unexpected argument "extra"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeConfig(t, tc.file)}, args...)
			}
			_, err := loadConfig("serve", args, func(k string) string { return tc.env[k] }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != 2 {
				t.Errorf("loadConfig = %v (exit %d), want an error containing %q with exit 2", err, exitCode(err), tc.want)
			}
		})
	}
}

func TestMySQLDSN(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"mysql://root@127.0.0.1:3306/test", "root@tcp(127.0.0.1:3306)/test"},
		{"mysql://user:p%40ss@db.internal/sundial?tls=true", "user:p@ss@tcp(db.internal:3306)/sundial?tls=true"},
	}
	for _, tc := range tests {
		got, err := mysqlDSN(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("mysqlDSN(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"mysql://root@127.0.0.1", "mysql:///test"} {
		if _, err := mysqlDSN(bad); err == nil {
			t.Errorf("mysqlDSN(%q) accepted", bad)
		}
	}
	if got := redact("postgres://app:secret@db:5432/x"); got != "postgres://app:***@db:5432/x" {
		t.Errorf("redact = %q", got)
	}
}
