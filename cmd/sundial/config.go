package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
	"github.com/sundialhq/sundial/scheduler"
	"github.com/sundialhq/sundial/seal"
)

// config is the whole configuration of "sundial serve". Every setting is a
// key of the YAML file, a flag of the same name and an environment variable
// (SUNDIAL_ and the key in upper case with dots as underscores); a flag
// beats the environment, which beats the file, which beats the default.
type config struct {
	Listen string    `yaml:"listen"`
	DB     dbConfig  `yaml:"db"`
	Log    logConfig `yaml:"log"`

	API struct {
		MaxConnections int           `yaml:"max_connections"`
		ReadTimeout    time.Duration `yaml:"read_timeout"`
		WriteTimeout   time.Duration `yaml:"write_timeout"`
		IdleTimeout    time.Duration `yaml:"idle_timeout"`
		AllowedHosts   []string      `yaml:"allowed_hosts"`
		Console        bool          `yaml:"console"`
	} `yaml:"api"`

	Auth struct {
		Required       bool   `yaml:"required"`
		BootstrapToken string `yaml:"bootstrap_token"`
		RateLimit      int    `yaml:"rate_limit"`
		RateBurst      int    `yaml:"rate_burst"`
	} `yaml:"auth"`

	Audit struct {
		Retention time.Duration `yaml:"retention"`
	} `yaml:"audit"`

	Scheduler struct {
		PollInterval      time.Duration `yaml:"poll_interval"`
		Lookahead         time.Duration `yaml:"lookahead"`
		MisfireThreshold  time.Duration `yaml:"misfire_threshold"`
		HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
		DeadAfter         time.Duration `yaml:"dead_after"`
		DrainTimeout      time.Duration `yaml:"drain_timeout"`
		Retention         time.Duration `yaml:"retention"`
		NodeRetention     time.Duration `yaml:"node_retention"`
		ClaimInterval     time.Duration `yaml:"claim_interval"`
		MaxDeliveries     int           `yaml:"max_deliveries"`
		StateFlush        time.Duration `yaml:"state_flush"`
		StatsFlush        time.Duration `yaml:"stats_flush"`
		AlertSweep        time.Duration `yaml:"alert_sweep"`
		DependencyRefresh time.Duration `yaml:"dependency_refresh"`
	} `yaml:"scheduler"`

	Compensator struct {
		BaseInterval time.Duration `yaml:"base_interval"`
		Increment    time.Duration `yaml:"increment"`
		MaxInterval  time.Duration `yaml:"max_interval"`
		StuckAfter   time.Duration `yaml:"stuck_after"`
		StatusEvery  time.Duration `yaml:"status_every"`
	} `yaml:"compensator"`

	Callback struct {
		BaseURL    string        `yaml:"base_url"`
		Secret     string        `yaml:"secret"`
		SecretFile string        `yaml:"secret_file"`
		Timeout    time.Duration `yaml:"timeout"`
	} `yaml:"callback"`

	Secrets struct {
		Key          string   `yaml:"key"`
		KeyFile      string   `yaml:"key_file"`
		PreviousKeys []string `yaml:"previous_keys"`
	} `yaml:"secrets"`

	OIDC struct {
		Issuer      string        `yaml:"issuer"`
		KeyRotation time.Duration `yaml:"key_rotation"`
	} `yaml:"oidc"`

	Executor struct {
		WorkerPoolSize int                      `yaml:"worker_pool_size"`
		RequestTimeout time.Duration            `yaml:"request_timeout"`
		StartIntervals map[string]time.Duration `yaml:"start_intervals"`
		MaxBodyBytes   int                      `yaml:"max_body_bytes"`
		DenyNetworks   []string                 `yaml:"deny_networks"`
		AllowNetworks  []string                 `yaml:"allow_networks"`
	} `yaml:"executor"`

	TLS tlsConfig `yaml:"tls"`

	Debug struct {
		PprofListen string `yaml:"pprof_listen"`
	} `yaml:"debug"`
}

// dbConfig is the database and its connection pool. In the YAML file, db
// is either the database's URL alone or a mapping of url and the pool's
// settings.
type dbConfig struct {
	URL             string        `yaml:"url"`
	MaxOpenConns    int           `yaml:"max_open_conns"`
	MaxIdleConns    int           `yaml:"max_idle_conns"`
	ConnMaxLifetime time.Duration `yaml:"conn_max_lifetime"`
	ConnMaxIdleTime time.Duration `yaml:"conn_max_idle_time"`
	ListenURL       string        `yaml:"listen_url"`
}

// UnmarshalYAML takes "db: URL" as well as the mapping, strictly.
func (d *dbConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&d.URL)
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: db: want a URL, or a mapping of url and the db.* settings", n.Line)
	}
	known := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[dbConfig]()) {
		known[f.Tag.Get("yaml")] = true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !known[k] {
			return fmt.Errorf("line %d: unknown key \"db.%s\"", n.Content[i].Line, k)
		}
	}
	type plain dbConfig // without this method
	return n.Decode((*plain)(d))
}

type logConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// defaultConfig is the configuration before file, environment and flags:
// the scheduler's own defaults (scheduler.DefaultConfig) and the server's.
func defaultConfig() *config {
	d := scheduler.DefaultConfig()
	c := &config{Listen: "127.0.0.1:8080", DB: dbConfig{URL: "sqlite:./sundial.db"}, Log: logConfig{Level: "info", Format: "text"}}
	c.API.MaxConnections = 1024
	c.API.Console = true
	c.API.ReadTimeout = time.Minute
	c.API.WriteTimeout = 2 * time.Minute
	c.API.IdleTimeout = 2 * time.Minute
	c.Auth.RateLimit = 50
	c.Auth.RateBurst = 100
	c.Audit.Retention = d.AuditRetention
	c.Scheduler.PollInterval = d.PollInterval
	c.Scheduler.Lookahead = d.Lookahead
	c.Scheduler.MisfireThreshold = d.MisfireThreshold
	c.Scheduler.HeartbeatInterval = d.HeartbeatInterval
	c.Scheduler.DeadAfter = d.DeadAfter
	c.Scheduler.DrainTimeout = d.DrainTimeout
	c.Scheduler.Retention = d.Retention
	c.Scheduler.NodeRetention = d.NodeRetention
	c.Scheduler.ClaimInterval = d.ClaimInterval
	c.Scheduler.MaxDeliveries = d.MaxDeliveries
	c.Scheduler.StateFlush = d.StateFlush
	c.Scheduler.StatsFlush = d.StatsFlush
	c.Scheduler.AlertSweep = d.AlertSweep
	c.Scheduler.DependencyRefresh = d.DependencyRefresh
	c.Compensator.BaseInterval = d.Compensator.Base
	c.Compensator.Increment = d.Compensator.Increment
	c.Compensator.MaxInterval = d.Compensator.Max
	c.Compensator.StuckAfter = d.Compensator.Threshold
	c.Compensator.StatusEvery = d.Compensator.Monitor
	c.Callback.Timeout = d.CallbackTimeout
	c.Executor.WorkerPoolSize = d.Workers
	c.Executor.RequestTimeout = d.RequestTimeout
	c.Executor.MaxBodyBytes = executor.DefaultMaxBodyBytes
	return c
}

// setting is one configuration key.
type setting struct {
	key  string
	help string
	ptr  any // *string, *int, *bool, *time.Duration, *map[string]time.Duration or *[]string inside a config
}

// settings lists every setting in the order of the help and of the
// README's table: the ones everybody sets first, then section by section.
func (c *config) settings() []setting {
	return []setting{
		{"listen", "address of the REST API", &c.Listen},
		{"db", "database: sqlite:PATH, postgres://user@host:5432/db or mysql://user:pass@host:3306/db", &c.DB.URL},
		{"log.level", "debug, info, warn or error", &c.Log.Level},
		{"log.format", "text or json", &c.Log.Format},
		{"db.max_open_conns", "database connections open at once, at most (0: PostgreSQL the larger of 4 and the CPUs, MySQL 16, SQLite the larger of 4 and the CPUs for reads and one for writes)", &c.DB.MaxOpenConns},
		{"db.max_idle_conns", "database connections kept open while idle, at most (0: as many as db.max_open_conns)", &c.DB.MaxIdleConns},
		{"db.conn_max_lifetime", "a database connection is closed this long after it was opened (0: PostgreSQL 1h, MySQL never; not SQLite)", &c.DB.ConnMaxLifetime},
		{"db.conn_max_idle_time", "an idle database connection is closed after this (0: PostgreSQL 30m, MySQL 5m; not SQLite)", &c.DB.ConnMaxIdleTime},
		{"db.listen_url", "PostgreSQL: the URL of a direct connection (not through a pooler in transaction mode) the node LISTENs on for the cluster's live events; default db", &c.DB.ListenURL},
		{"api.max_connections", "connections the API keeps open at once; more wait to be accepted", &c.API.MaxConnections},
		{"api.read_timeout", "a request, its body included, must be read within this", &c.API.ReadTimeout},
		{"api.write_timeout", "a request must be answered within this after its header is read", &c.API.WriteTimeout},
		{"api.idle_timeout", "an idle keep-alive connection is closed after this", &c.API.IdleTimeout},
		{"api.console", "serve the web console under /ui/ (and redirect / there); false: the API alone, / and /ui/ are 404", &c.API.Console},
		{"api.allowed_hosts", "Host header values the API answers (name or name:port); default: any, or only localhost, 127.0.0.1 and [::1] with the port when it listens on loopback", &c.API.AllowedHosts},
		{"auth.required", "require an API token even when the API listens only on loopback (it is always required otherwise)", &c.Auth.Required},
		{"auth.bootstrap_token", "a secret that is an admin API token while it is set, to create the first tokens (at least 16 characters)", &c.Auth.BootstrapToken},
		{"auth.rate_limit", "requests per second each API token may make on this node (0: no limit)", &c.Auth.RateLimit},
		{"auth.rate_burst", "requests an API token may make at once above its rate", &c.Auth.RateBurst},
		{"audit.retention", "audit entries older than this are purged", &c.Audit.Retention},
		{"scheduler.poll_interval", "how often the planner claims due tasks", &c.Scheduler.PollInterval},
		{"scheduler.lookahead", "how far ahead fires are planned, from 2 poll intervals to 24h", &c.Scheduler.Lookahead},
		{"scheduler.misfire_threshold", "a fire later than this was missed and follows the task's catch_up_mode", &c.Scheduler.MisfireThreshold},
		{"scheduler.heartbeat_interval", "how often this node renews its membership", &c.Scheduler.HeartbeatInterval},
		{"scheduler.dead_after", "a node silent this long is dead and its runs are taken over", &c.Scheduler.DeadAfter},
		{"scheduler.drain_timeout", "on SIGTERM, how long calls in flight may finish", &c.Scheduler.DrainTimeout},
		{"scheduler.retention", "finished runs older than this are purged", &c.Scheduler.Retention},
		{"scheduler.node_retention", "nodes gone (LEFT or DEAD) for longer than this are deleted from the node list", &c.Scheduler.NodeRetention},
		{"scheduler.claim_interval", "how often this node claims its share of the runs coming due", &c.Scheduler.ClaimInterval},
		{"scheduler.max_deliveries", "deliveries of one fire when nodes die or stop during its call", &c.Scheduler.MaxDeliveries},
		{"scheduler.state_flush", "a task whose runs succeed has its health (lags, last success) saved at most this often; a failure is saved at once", &c.Scheduler.StateFlush},
		{"scheduler.stats_flush", "how often a node writes its counts of the current minute (fires, outcomes, lags) for GET /api/v1/stats", &c.Scheduler.StatsFlush},
		{"scheduler.alert_sweep", "how often each node reloads the alert rules, resolves incidents whose condition cleared and sends repeats", &c.Scheduler.AlertSweep},
		{"scheduler.dependency_refresh", "how often a node reads the tasks that have parents (a new child counts on every node within it) and skips the joins past their deadline", &c.Scheduler.DependencyRefresh},
		{"compensator.base_interval", "first interval of the start compensator, and after a round that found work", &c.Compensator.BaseInterval},
		{"compensator.increment", "added to the interval after every round that found nothing", &c.Compensator.Increment},
		{"compensator.max_interval", "the compensator's interval never grows past this", &c.Compensator.MaxInterval},
		{"compensator.stuck_after", "a run this late and not started is stuck", &c.Compensator.StuckAfter},
		{"compensator.status_every", "how often the compensator logs its state", &c.Compensator.StatusEvery},
		{"callback.base_url", "URL targets of ASYNC tasks call back on (this node's API, or a load balancer before every node); default http://LISTEN, or https://LISTEN with TLS", &c.Callback.BaseURL},
		{"callback.secret", "secret callback tokens are signed with, the same on every node; default: one generated once and kept in the database", &c.Callback.Secret},
		{"callback.secret_file", "file holding callback.secret (its first line), so that the secret is not on the command line", &c.Callback.SecretFile},
		{"callback.timeout", "how long an ASYNC run waits for its callback when its task's callback_timeout_sec is 0", &c.Callback.Timeout},
		{"executor.worker_pool_size", "concurrent HTTP deliveries", &c.Executor.WorkerPoolSize},
		{"executor.request_timeout", "HTTP timeout of tasks whose timeout_seconds is 0", &c.Executor.RequestTimeout},
		{"executor.start_intervals", "space the starts of calls to a host: host=5s,host:8080=1s (queued, never dropped)", &c.Executor.StartIntervals},
		{"executor.max_body_bytes", "largest body a task's template may render to; a task that can render more is refused", &c.Executor.MaxBodyBytes},
		{"executor.deny_networks", "networks tasks may not call, besides link-local, unspecified, multicast and this node's listeners: 10.0.0.0/8,fc00::/7", &c.Executor.DenyNetworks},
		{"executor.allow_networks", "when set, the only networks tasks may call (deny_networks still applies)", &c.Executor.AllowNetworks},
		{"secrets.key", "key sealing task secrets at rest: 32 bytes in base64, the same on every node; prefer secrets.key_file or the environment; default on SQLite: a key file beside the database", &c.Secrets.Key},
		{"secrets.key_file", "file holding secrets.key", &c.Secrets.KeyFile},
		{"secrets.previous_keys", "keys that still open secrets sealed before a rotation: key,key", &c.Secrets.PreviousKeys},
		{"oidc.issuer", "iss of the OIDC ID tokens deliveries carry, where targets find /.well-known/openid-configuration; default callback.base_url", &c.OIDC.Issuer},
		{"oidc.key_rotation", "how often the OIDC signing key changes (from 1h; the old key stays published while its tokens live); 0: never", &c.OIDC.KeyRotation},
		{"tls.cert_file", "PEM certificate (chain) of the API: with tls.key_file, the API is served over HTTPS only; reread on SIGHUP and when the file changes", &c.TLS.CertFile},
		{"tls.key_file", "PEM private key of tls.cert_file", &c.TLS.KeyFile},
		{"tls.client_ca_file", "PEM CA certificates: when set, every client must present a certificate signed by one of them", &c.TLS.ClientCAFile},
		{"debug.pprof_listen", "address of a separate listener serving Go's /debug/pprof/ profiles (empty: none)", &c.Debug.PprofListen},
	}
}

// commandKeys are the settings of the commands that take only some of
// serve's: "sundial migrate" only opens the database; "sundial secrets
// reseal" opens it with the secrets keys. serve takes them all.
var commandKeys = map[string][]string{
	"migrate":        {"db", "log.level", "log.format"},
	"secrets reseal": {"db", "log.level", "log.format", "secrets.key", "secrets.key_file", "secrets.previous_keys"},
	"backup":         {"db", "log.level", "log.format"},
}

// commandSettings returns the settings the command takes, in help order.
func (c *config) commandSettings(name string) []setting {
	all := c.settings()
	keys, ok := commandKeys[name]
	if !ok {
		return all
	}
	var out []setting
	for _, s := range all {
		if slices.Contains(keys, s.key) {
			out = append(out, s)
		}
	}
	return out
}

// commandSummaries is the first line of each command's help.
var commandSummaries = map[string]string{
	"serve":   "Run a scheduler node and the REST API until SIGINT or SIGTERM.",
	"migrate": "Create or upgrade the database schema, then exit (serve also does it on start).",
	"backup": "Write a consistent copy of a SQLite database to FILE, while its node runs (VACUUM INTO), and\n" +
		"the database's secrets key file, if it has one, to FILE.key. An existing FILE is an error\n" +
		"unless --force. Start a node on the copy to restore it; see docs/deploy.md.\n\n" +
		"  --to string\n        the file to write (required)\n" +
		"  --force\n        replace FILE (and FILE.key) if they exist\n\n--to and --force are flags only.",
	"secrets reseal": "Seal every stored secret (of tasks, live or deleted, and the OIDC signing keys) again with\n" +
		"the current secrets key (secrets.key, or else a SQLite database's key file), opening each with\n" +
		"whichever of it and secrets.previous_keys sealed it, and seal what is stored in clear, so that\n" +
		"the previous keys can be dropped. Nodes may serve meanwhile, every one with the current key.\n" +
		"A value no key opens is listed and left as it is, and the command exits with status 1.",
}

// sectionTitles names the groups of settings in the help, by key prefix.
var sectionTitles = map[string]string{
	"db":          "Database connections",
	"api":         "API server",
	"auth":        "Authentication",
	"audit":       "Audit log",
	"scheduler":   "Scheduler",
	"compensator": "Start compensator (seed 000)",
	"callback":    "Callbacks of ASYNC tasks",
	"executor":    "Executor (HTTP deliveries)",
	"secrets":     "Secrets sealed at rest",
	"oidc":        "OIDC ID tokens of deliveries",
	"tls":         "TLS of the API",
	"debug":       "Debugging",
}

// writeHelp prints the help of "sundial NAME": a one-line description, how
// flags, environment and file combine, then every flag with the type of
// its value and its default, the common ones first and the rest grouped by
// section.
func writeHelp(w io.Writer, name string, settings []setting) {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: sundial %s [flags]\n\n%s\n\n", name, commandSummaries[name])
	b.WriteString("Every flag is also an environment variable, SUNDIAL_ and the name in upper case\n" +
		"with dots as underscores (--log.level is SUNDIAL_LOG_LEVEL), and a key of the\n" +
		"YAML file given with --config. A flag beats the environment, which beats the\n" +
		"file, which beats the default.\n\n")
	flagHelp(&b, "config", "string", "YAML configuration file (env SUNDIAL_CONFIG)", "")
	section := ""
	for _, s := range settings {
		if sec, _, ok := strings.Cut(s.key, "."); ok && sec != "log" && sec != section {
			section = sec
			fmt.Fprintf(&b, "\n%s:\n", sectionTitles[sec])
		}
		flagHelp(&b, s.key, s.typeName(), s.help, s.text())
	}
	io.WriteString(w, b.String())
}

func flagHelp(b *strings.Builder, key, typ, help, def string) {
	fmt.Fprintf(b, "  --%s %s\n        %s", key, typ, help)
	if def != "" {
		fmt.Fprintf(b, " (default %s)", def)
	}
	b.WriteString("\n")
}

// typeName is the placeholder of the setting's value in the help.
func (s setting) typeName() string {
	switch s.ptr.(type) {
	case *int:
		return "int"
	case *time.Duration:
		return "duration"
	case *map[string]time.Duration:
		return "host=duration,..."
	case *[]string:
		switch {
		case s.key == "api.allowed_hosts":
			return "host,..."
		case strings.HasSuffix(s.key, "_networks"):
			return "cidr,..."
		}
		return "value,..."
	case *bool:
		return "bool"
	default:
		return "string"
	}
}

// text returns the setting's current value as it would be written on the
// command line; empty when it has none.
func (s setting) text() string {
	switch p := s.ptr.(type) {
	case *string:
		return *p
	case *int:
		return strconv.Itoa(*p)
	case *time.Duration:
		return shortDuration(*p)
	case *map[string]time.Duration:
		pairs := make([]string, 0, len(*p))
		for host, d := range *p {
			pairs = append(pairs, host+"="+shortDuration(d))
		}
		slices.Sort(pairs)
		return strings.Join(pairs, ",")
	case *[]string:
		return strings.Join(*p, ",")
	case *bool:
		if *p {
			return "true"
		}
	}
	return ""
}

// shortDuration writes d as time.Duration does, without the zero units it
// ends with: 1m rather than 1m0s, 168h rather than 168h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func envName(key string) string {
	return "SUNDIAL_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// set parses text into the setting.
func (s setting) set(text string) error {
	switch p := s.ptr.(type) {
	case *string:
		*p = text
	case *int:
		n, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("want a whole number, got %q", text)
		}
		*p = n
	case *time.Duration:
		d, err := time.ParseDuration(strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("want a duration such as 500ms, 1s or 2m, got %q", text)
		}
		*p = d
	case *map[string]time.Duration:
		m := map[string]time.Duration{}
		for item := range strings.SplitSeq(text, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			host, dur, ok := strings.Cut(item, "=")
			d, err := time.ParseDuration(strings.TrimSpace(dur))
			if !ok || strings.TrimSpace(host) == "" || err != nil {
				return fmt.Errorf("want host=duration pairs such as svc.internal=5s, got %q", item)
			}
			m[strings.TrimSpace(host)] = d
		}
		*p = m
	case *bool:
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("want true or false, got %q", text)
		}
		*p = b
	case *[]string:
		var list []string
		for item := range strings.SplitSeq(text, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = append(list, item)
			}
		}
		*p = list
	}
	return nil
}

// loadConfig builds the configuration of "sundial serve" from its flags, the
// environment and the YAML file named by --config (or SUNDIAL_CONFIG).
func loadConfig(name string, args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	return loadConfigWith(name, args, getenv, stderr, nil)
}

// loadConfigWith is loadConfig for a command that has flags of its own
// besides settings: flags declares them on the command's flag set.
func loadConfigWith(name string, args []string, getenv func(string) string, stderr io.Writer, flags func(*flag.FlagSet)) (*config, error) {
	c := defaultConfig()
	settings := c.commandSettings(name)
	fs := flag.NewFlagSet("sundial "+name, flag.ContinueOnError)
	if flags != nil {
		flags(fs)
	}
	fs.SetOutput(io.Discard) // errors are returned; -h prints writeHelp
	fs.Usage = func() {}
	configPath := fs.String("config", "", "")
	given := map[string]string{}
	for _, s := range settings {
		fs.Func(s.key, s.help, func(v string) error {
			given[s.key] = v
			return nil
		})
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeHelp(stderr, name, settings)
			return nil, err
		}
		return nil, usageErrorf("%s: %v; run 'sundial %s -h' for the flags", name, err, name)
	}
	if fs.NArg() > 0 {
		return nil, usageErrorf("%s: unexpected argument %q", name, fs.Arg(0))
	}

	path := *configPath
	if path == "" {
		path = getenv("SUNDIAL_CONFIG")
	}
	if path != "" {
		if err := c.readFile(path); err != nil {
			return nil, usageErrorf("config %s: %v", path, err)
		}
	}
	for _, s := range settings {
		if v := getenv(envName(s.key)); v != "" {
			if err := s.set(v); err != nil {
				return nil, usageErrorf("%s: %v", envName(s.key), err)
			}
		}
	}
	for _, s := range settings {
		if v, ok := given[s.key]; ok {
			if err := s.set(v); err != nil {
				return nil, usageErrorf("--%s: %v", s.key, err)
			}
		}
	}
	if err := c.validate(); err != nil {
		return nil, usageErrorf("%v", err)
	}
	return c, nil
}

// readFile decodes the YAML file strictly: an unknown or misspelt key is an
// error naming it.
func (c *config) readFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		if te, ok := errors.AsType[*yaml.TypeError](err); ok {
			msgs := make([]string, len(te.Errors))
			for i, m := range te.Errors {
				msgs[i] = unknownField.ReplaceAllString(m, `unknown key "$1"`)
			}
			return errors.New(strings.Join(msgs, "; "))
		}
		return err
	}
	return nil
}

// unknownField matches the YAML decoder's message for a key the config
// does not have, which otherwise spells out a Go struct type.
var unknownField = regexp.MustCompile(`field (\S+) not found in type .*`)

// validate checks every setting and names the first one that is wrong.
func (c *config) validate() error {
	sc, ex := &c.Scheduler, &c.Executor
	switch {
	case c.Listen == "":
		return errors.New("listen: must not be empty")
	case !strings.HasPrefix(c.DB.URL, "sqlite:") && !isPostgres(c.DB.URL) && !strings.HasPrefix(c.DB.URL, "mysql://"):
		return fmt.Errorf("db: %q: want sqlite:PATH, postgres://URL or mysql://URL", redact(c.DB.URL))
	case c.DB.URL == "sqlite:":
		return errors.New("db: sqlite: needs a file path, such as sqlite:./sundial.db")
	case c.DB.MaxOpenConns < 0 || c.DB.MaxOpenConns > 10000:
		return fmt.Errorf("db.max_open_conns: %d: want from 0 (the database's default) to 10000", c.DB.MaxOpenConns)
	case c.DB.MaxIdleConns < 0 || c.DB.MaxIdleConns > 10000:
		return fmt.Errorf("db.max_idle_conns: %d: want from 0 (as many as db.max_open_conns) to 10000", c.DB.MaxIdleConns)
	case c.DB.MaxOpenConns > 0 && c.DB.MaxIdleConns > c.DB.MaxOpenConns:
		return fmt.Errorf("db.max_idle_conns: %d: want at most db.max_open_conns (%d)", c.DB.MaxIdleConns, c.DB.MaxOpenConns)
	case c.DB.ConnMaxLifetime != 0 && (c.DB.ConnMaxLifetime < time.Second || c.DB.ConnMaxLifetime > 24*time.Hour):
		return fmt.Errorf("db.conn_max_lifetime: %s: want 0 (the database's default) or from 1s to 24h", c.DB.ConnMaxLifetime)
	case c.DB.ConnMaxIdleTime != 0 && (c.DB.ConnMaxIdleTime < time.Second || c.DB.ConnMaxIdleTime > 24*time.Hour):
		return fmt.Errorf("db.conn_max_idle_time: %s: want 0 (the database's default) or from 1s to 24h", c.DB.ConnMaxIdleTime)
	case c.DB.ListenURL != "" && !isPostgres(c.DB.URL):
		return errors.New("db.listen_url: only for a PostgreSQL db")
	case c.DB.ListenURL != "" && !isPostgres(c.DB.ListenURL):
		return fmt.Errorf("db.listen_url: %q: want a postgres:// URL", redact(c.DB.ListenURL))
	case !oneOf(c.Log.Level, "debug", "info", "warn", "error"):
		return fmt.Errorf("log.level: %q: want debug, info, warn or error", c.Log.Level)
	case !oneOf(c.Log.Format, "text", "json"):
		return fmt.Errorf("log.format: %q: want text or json", c.Log.Format)
	case c.API.MaxConnections < 1 || c.API.MaxConnections > 1<<20:
		return fmt.Errorf("api.max_connections: %d: want from 1 to %d", c.API.MaxConnections, 1<<20)
	case c.API.ReadTimeout < 100*time.Millisecond || c.API.ReadTimeout > time.Hour:
		return fmt.Errorf("api.read_timeout: %s: want from 100ms to 1h", c.API.ReadTimeout)
	case c.API.WriteTimeout < time.Second || c.API.WriteTimeout > time.Hour:
		return fmt.Errorf("api.write_timeout: %s: want from 1s to 1h", c.API.WriteTimeout)
	case c.API.IdleTimeout < 100*time.Millisecond || c.API.IdleTimeout > time.Hour:
		return fmt.Errorf("api.idle_timeout: %s: want from 100ms to 1h", c.API.IdleTimeout)
	case sc.PollInterval < 10*time.Millisecond || sc.PollInterval > time.Minute:
		return fmt.Errorf("scheduler.poll_interval: %s: want from 10ms to 1m", sc.PollInterval)
	case sc.Lookahead < 2*sc.PollInterval || sc.Lookahead > 24*time.Hour:
		return fmt.Errorf("scheduler.lookahead: %s: want from 2 poll intervals (%s) to 24h", sc.Lookahead, 2*sc.PollInterval)
	case sc.MisfireThreshold < time.Second:
		return fmt.Errorf("scheduler.misfire_threshold: %s: want at least 1s", sc.MisfireThreshold)
	case sc.HeartbeatInterval < 10*time.Millisecond:
		return fmt.Errorf("scheduler.heartbeat_interval: %s: want at least 10ms", sc.HeartbeatInterval)
	case sc.DeadAfter < 2*sc.HeartbeatInterval:
		return fmt.Errorf("scheduler.dead_after: %s: want at least 2 heartbeat intervals (%s)", sc.DeadAfter, 2*sc.HeartbeatInterval)
	case sc.DrainTimeout < 0:
		return fmt.Errorf("scheduler.drain_timeout: %s: must not be negative", sc.DrainTimeout)
	case sc.Retention < time.Minute:
		return fmt.Errorf("scheduler.retention: %s: want at least 1m", sc.Retention)
	case sc.NodeRetention < time.Minute:
		return fmt.Errorf("scheduler.node_retention: %s: want at least 1m", sc.NodeRetention)
	case sc.ClaimInterval < 5*time.Millisecond || sc.ClaimInterval > time.Second:
		return fmt.Errorf("scheduler.claim_interval: %s: want from 5ms to 1s", sc.ClaimInterval)
	case sc.MaxDeliveries < 1 || sc.MaxDeliveries > 100:
		return fmt.Errorf("scheduler.max_deliveries: %d: want from 1 to 100", sc.MaxDeliveries)
	case sc.StateFlush < time.Second || sc.StateFlush > 24*time.Hour:
		return fmt.Errorf("scheduler.state_flush: %s: want from 1s to 24h", sc.StateFlush)
	case sc.StatsFlush < time.Second || sc.StatsFlush > time.Minute:
		return fmt.Errorf("scheduler.stats_flush: %s: want from 1s to 1m", sc.StatsFlush)
	case sc.AlertSweep < 100*time.Millisecond || sc.AlertSweep > time.Hour:
		return fmt.Errorf("scheduler.alert_sweep: %s: want from 100ms to 1h", sc.AlertSweep)
	case sc.DependencyRefresh < 100*time.Millisecond || sc.DependencyRefresh > time.Hour:
		return fmt.Errorf("scheduler.dependency_refresh: %s: want from 100ms to 1h", sc.DependencyRefresh)
	case c.Compensator.BaseInterval < time.Second:
		return fmt.Errorf("compensator.base_interval: %s: want at least 1s", c.Compensator.BaseInterval)
	case c.Compensator.Increment < 0:
		return fmt.Errorf("compensator.increment: %s: must not be negative", c.Compensator.Increment)
	case c.Compensator.MaxInterval < c.Compensator.BaseInterval:
		return fmt.Errorf("compensator.max_interval: %s: want at least base_interval (%s)", c.Compensator.MaxInterval, c.Compensator.BaseInterval)
	case c.Compensator.StuckAfter < time.Second:
		return fmt.Errorf("compensator.stuck_after: %s: want at least 1s", c.Compensator.StuckAfter)
	case c.Compensator.StatusEvery < time.Second:
		return fmt.Errorf("compensator.status_every: %s: want at least 1s", c.Compensator.StatusEvery)
	case len(c.Callback.BaseURL) > sundial.MaxURLLen:
		return fmt.Errorf("callback.base_url: longer than %d bytes", sundial.MaxURLLen)
	case c.Callback.BaseURL != "" && !validBaseURL(c.Callback.BaseURL):
		return fmt.Errorf("callback.base_url: %q: want an absolute http or https URL, such as https://sundial.example.com", c.Callback.BaseURL)
	case c.Callback.Secret != "" && len(c.Callback.Secret) < 16:
		return errors.New("callback.secret: want at least 16 characters")
	case c.Callback.Secret != "" && c.Callback.SecretFile != "":
		return errors.New("callback.secret_file: give callback.secret or callback.secret_file, not both")
	case c.Secrets.Key != "" && c.Secrets.KeyFile != "":
		return errors.New("secrets.key_file: give secrets.key or secrets.key_file, not both")
	case c.OIDC.Issuer != "" && !validBaseURL(c.OIDC.Issuer):
		return fmt.Errorf("oidc.issuer: %q: want an absolute http or https URL, such as https://sundial.example.com", c.OIDC.Issuer)
	case c.OIDC.KeyRotation != 0 && (c.OIDC.KeyRotation < time.Hour || c.OIDC.KeyRotation%time.Second != 0):
		return fmt.Errorf("oidc.key_rotation: %s: want 0 (never) or a whole number of seconds from 1h", c.OIDC.KeyRotation)
	case c.Callback.Timeout < time.Second || c.Callback.Timeout > 7*24*time.Hour:
		return fmt.Errorf("callback.timeout: %s: want from 1s to 168h", c.Callback.Timeout)
	case ex.WorkerPoolSize < 1 || ex.WorkerPoolSize > 10000:
		return fmt.Errorf("executor.worker_pool_size: %d: want from 1 to 10000", ex.WorkerPoolSize)
	case ex.RequestTimeout < time.Second || ex.RequestTimeout > 24*time.Hour:
		return fmt.Errorf("executor.request_timeout: %s: want from 1s to 24h", ex.RequestTimeout)
	case c.Auth.BootstrapToken != "" && len(c.Auth.BootstrapToken) < 16:
		return errors.New("auth.bootstrap_token: want at least 16 characters, such as the output of: openssl rand -hex 32")
	case c.Auth.RateLimit < 0 || c.Auth.RateLimit > 1000000:
		return fmt.Errorf("auth.rate_limit: %d: want from 0 (no limit) to 1000000", c.Auth.RateLimit)
	case c.Auth.RateLimit > 0 && (c.Auth.RateBurst < 1 || c.Auth.RateBurst > 1000000):
		return fmt.Errorf("auth.rate_burst: %d: want from 1 to 1000000", c.Auth.RateBurst)
	case c.Audit.Retention < time.Hour:
		return fmt.Errorf("audit.retention: %s: want at least 1h", c.Audit.Retention)
	case ex.MaxBodyBytes < 1 || ex.MaxBodyBytes > 64<<20:
		return fmt.Errorf("executor.max_body_bytes: %d: want from 1 to %d (64 MiB)", ex.MaxBodyBytes, 64<<20)
	}
	if err := c.TLS.validate(); err != nil {
		return err
	}
	if _, err := parseNetworks(ex.DenyNetworks); err != nil {
		return fmt.Errorf("executor.deny_networks: %v", err)
	}
	if _, err := parseNetworks(ex.AllowNetworks); err != nil {
		return fmt.Errorf("executor.allow_networks: %v", err)
	}
	if c.Secrets.Key != "" {
		if _, err := seal.ParseKey(c.Secrets.Key); err != nil {
			return fmt.Errorf("secrets.key: %v", err)
		}
	}
	for i, k := range c.Secrets.PreviousKeys {
		if _, err := seal.ParseKey(k); err != nil {
			return fmt.Errorf("secrets.previous_keys: key %d: %v", i+1, err)
		}
	}
	for _, h := range c.API.AllowedHosts {
		if strings.ContainsAny(h, "/ @?#") {
			return fmt.Errorf("api.allowed_hosts: %q: want a host name or address, with or without a port, such as sundial.example.com or 10.0.0.5:8080", h)
		}
	}
	for host, d := range ex.StartIntervals {
		if host == "" || strings.ContainsAny(host, "/ ") || d <= 0 || d > time.Hour {
			return fmt.Errorf("executor.start_intervals: %s=%s: want a host[:port] and a duration from 1ms to 1h", host, d)
		}
	}
	return nil
}

func validBaseURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// parseNetworks parses a list of CIDRs, such as 10.0.0.0/8 and fc00::/7.
func parseNetworks(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, item := range list {
		p, err := netip.ParsePrefix(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("%q: want a network in CIDR notation, such as 10.0.0.0/8 or fc00::/7", item)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
