package main

import (
	"io"
	"net"
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
	if c.Scheduler.PollInterval != time.Second || c.Listen != "127.0.0.1:8080" || c.DB.URL != "sqlite:./sundial.db" ||
		c.Scheduler.NodeRetention != 24*time.Hour {
		t.Errorf("defaults lost: %+v", c)
	}
	if got := c.Executor.StartIntervals; len(got) != 2 || got["a.example"] != 5*time.Second || got["b.example:8080"] != time.Second {
		t.Errorf("start_intervals %v", got)
	}
}

// TestConfigDB: db is a URL, or in the file a mapping of the URL and the
// pool's settings, each also a flag and a variable.
func TestConfigDB(t *testing.T) {
	t.Parallel()
	c, err := loadConfig("serve", []string{"--config", writeConfig(t, "db: postgres://db/x\n")}, func(string) string { return "" }, io.Discard)
	if err != nil || c.DB != (dbConfig{URL: "postgres://db/x"}) {
		t.Fatalf("db as a URL: %+v, %v", c.DB, err)
	}
	path := writeConfig(t, `db:
  url: postgres://pgbouncer:6432/x
  max_open_conns: 8
  max_idle_conns: 2
  conn_max_lifetime: 30m
  listen_url: postgres://db:5432/x
`)
	env := map[string]string{"SUNDIAL_DB_CONN_MAX_IDLE_TIME": "1m"}
	c, err = loadConfig("serve", []string{"--config", path, "--db.max_idle_conns", "3"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := dbConfig{URL: "postgres://pgbouncer:6432/x", MaxOpenConns: 8, MaxIdleConns: 3, ConnMaxLifetime: 30 * time.Minute,
		ConnMaxIdleTime: time.Minute, ListenURL: "postgres://db:5432/x"}
	if c.DB != want {
		t.Errorf("db %+v, want %+v", c.DB, want)
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
		{"node retention too short", "", []string{"--scheduler.node_retention", "30s"}, nil, "scheduler.node_retention: 30s: want at least 1m"},
		{"bad database", "", []string{"--db", "oracle://x"}, nil, `db: "oracle://x"`},
		{"bad start interval", "", []string{"--executor.start_intervals", "host"}, nil, "want host=duration pairs"},
		{"unexpected argument", "", []string{"extra"}, nil, `unexpected argument "extra"`},
		{"bad deny network", "", []string{"--executor.deny_networks", "10.0.0.0/8,10.0.0.0/33"}, nil,
			`executor.deny_networks: "10.0.0.0/33": want a network in CIDR notation`},
		{"bad allow network in file", "executor:\n  allow_networks: [10.0.0.1]\n", nil, nil, `executor.allow_networks: "10.0.0.1"`},
		{"max body zero", "", []string{"--executor.max_body_bytes", "0"}, nil, "executor.max_body_bytes: 0: want from 1"},
		{"max connections zero", "", []string{"--api.max_connections", "0"}, nil, "api.max_connections: 0"},
		{"idle timeout too short", "", []string{"--api.idle_timeout", "1ms"}, nil, "api.idle_timeout: 1ms: want from 100ms to 1h"},
		{"read timeout too short", "", nil, map[string]string{"SUNDIAL_API_READ_TIMEOUT": "1ms"}, "api.read_timeout: 1ms"},
		{"misspelt db key", "db:\n  url: sqlite:x.db\n  max_open_con: 4\n", nil, nil, `line 3: unknown key "db.max_open_con"`},
		{"db a list", "db: [a, b]\n", nil, nil, "db: want a URL, or a mapping"},
		{"negative max open", "", []string{"--db.max_open_conns", "-1"}, nil, "db.max_open_conns: -1: want from 0"},
		{"idle above open", "", nil, map[string]string{"SUNDIAL_DB_MAX_OPEN_CONNS": "4", "SUNDIAL_DB_MAX_IDLE_CONNS": "5"},
			"db.max_idle_conns: 5: want at most db.max_open_conns (4)"},
		{"lifetime too short", "", []string{"--db.conn_max_lifetime", "10ms"}, nil, "db.conn_max_lifetime: 10ms: want 0"},
		{"idle time too long", "", []string{"--db.conn_max_idle_time", "48h"}, nil, "db.conn_max_idle_time: 48h0m0s: want 0"},
		{"listen url on sqlite", "", []string{"--db.listen_url", "postgres://db/x"}, nil, "db.listen_url: only for a PostgreSQL db"},
		{"listen url not postgres", "", []string{"--db", "postgres://pgbouncer:6432/x", "--db.listen_url", "mysql://u:secret@db/x"}, nil,
			`db.listen_url: "mysql://u:***@db/x": want a postgres:// URL`},
		{"database password not echoed", "", []string{"--db", "oracle://u:secret@db/x"}, nil, `db: "oracle://u:***@db/x"`},
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
	for in, want := range map[string]string{
		"postgres://app:secret@db:5432/x":                         "postgres://app:***@db:5432/x",
		"postgres://app@db/x?sslmode=require&password=secret":     "postgres://app@db/x?sslmode=require&password=***",
		"postgres://a:b@db/x?sslpassword=secret&Password=s2&x=pw": "postgres://a:***@db/x?sslpassword=***&Password=***&x=pw",
		"mysql://root:secret@127.0.0.1:3306/test?parseTime=true":  "mysql://root:***@127.0.0.1:3306/test?parseTime=true",
		"sqlite:./sundial.db":                                     "sqlite:./sundial.db",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestServeHelp: serve -h starts with what the command does, lists the
// flags people need first and the rest in the README's order, each with
// the type of its value and its default.
func TestServeHelp(t *testing.T) {
	t.Parallel()
	res := runArgs(t, "serve", "-h")
	if res.err != nil || res.stdout != "" {
		t.Fatalf("serve -h: %v, stdout %q; want the help on stderr", res.err, res.stdout)
	}
	help := res.stderr
	if !strings.HasPrefix(help, "Usage: sundial serve [flags]\n\nRun a scheduler node and the REST API") {
		t.Errorf("help does not start with the usage and a one-line description:\n%s", help)
	}
	// Every flag, in this order, with its placeholder and default.
	want := []string{"--config string\n", "--listen string\n", "--db string\n", "--log.level string\n", "--log.format string\n"}
	for _, s := range defaultConfig().settings()[4:] {
		want = append(want, "--"+s.key+" ")
	}
	at := 0
	for _, w := range want {
		i := strings.Index(help[at:], w)
		if i < 0 {
			t.Fatalf("help lacks %q after position %d (or has it out of order):\n%s", w, at, help)
		}
		at += i + len(w)
	}
	for _, line := range []string{
		"  --listen string\n        address of the REST API (default 127.0.0.1:8080)\n",
		"(default sqlite:./sundial.db)\n",
		"  --log.level string\n        debug, info, warn or error (default info)\n",
		"  --scheduler.poll_interval duration\n",
		"(default 1s)\n",
		"  --scheduler.retention duration\n        finished runs older than this are purged (default 168h)\n",
		"  --compensator.max_interval duration\n        the compensator's interval never grows past this (default 5m)\n",
		"  --executor.worker_pool_size int\n        concurrent HTTP deliveries (default 16)\n",
		"  --executor.start_intervals host=duration,...\n",
		"\nScheduler:\n", "\nExecutor (HTTP deliveries):\n",
	} {
		if !strings.Contains(help, line) {
			t.Errorf("help lacks %q:\n%s", line, help)
		}
	}
	if strings.Contains(help, " value\n") {
		t.Errorf("help has a bare 'value' placeholder:\n%s", help)
	}
}

// TestMigrateHelp: migrate takes only the database, the log and the
// config file.
func TestMigrateHelp(t *testing.T) {
	t.Parallel()
	res := runArgs(t, "migrate", "-h")
	if res.err != nil {
		t.Fatal(res.err)
	}
	help := res.stderr
	for _, flag := range []string{"--config string", "--db string", "--log.level string", "--log.format string"} {
		if !strings.Contains(help, flag) {
			t.Errorf("migrate help lacks %s:\n%s", flag, help)
		}
	}
	for _, other := range []string{"--listen", "scheduler.", "compensator.", "callback.", "executor.", "debug."} {
		if strings.Contains(help, other) {
			t.Errorf("migrate help lists %s, which migrate does not use:\n%s", other, help)
		}
	}
	res = runArgs(t, "migrate", "--db", "sqlite:"+filepath.Join(t.TempDir(), "sundial.db"), "--scheduler.poll_interval", "1s")
	if res.err == nil || !strings.Contains(res.err.Error(), "flag provided but not defined: -scheduler.poll_interval") {
		t.Errorf("migrate with a scheduler flag: %v, want it refused", res.err)
	}
}

func TestShortDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		50 * time.Millisecond: "50ms", time.Second: "1s", time.Minute: "1m", 90 * time.Second: "1m30s",
		168 * time.Hour: "168h", 90 * time.Minute: "1h30m", time.Hour + time.Second: "1h0m1s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestConfigNetworks: the network lists are CIDRs from a YAML list, a
// flag or the environment (comma-separated).
func TestConfigNetworks(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "executor:\n  deny_networks: [10.0.0.0/8, 'fc00::/7']\n")
	c, err := loadConfig("serve", []string{"--config", path}, func(k string) string {
		if k == "SUNDIAL_EXECUTOR_ALLOW_NETWORKS" {
			return "10.0.0.0/8, 192.168.0.0/16"
		}
		return ""
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Executor.DenyNetworks, " "); got != "10.0.0.0/8 fc00::/7" {
		t.Errorf("deny_networks = %q", got)
	}
	if got := strings.Join(c.Executor.AllowNetworks, " "); got != "10.0.0.0/8 192.168.0.0/16" {
		t.Errorf("allow_networks = %q", got)
	}
	g := outboundGuard(c, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, nil)
	if len(g.Deny) != 2 || len(g.Allow) != 2 || len(g.Self) != 1 || g.Self[0].String() != "127.0.0.1:8080" {
		t.Errorf("guard = %+v", g)
	}
}
