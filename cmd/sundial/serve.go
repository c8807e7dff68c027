package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/alert"
	"github.com/sundialhq/sundial/api"
	"github.com/sundialhq/sundial/event"
	"github.com/sundialhq/sundial/executor"
	"github.com/sundialhq/sundial/idtoken"
	"github.com/sundialhq/sundial/scheduler"
	"github.com/sundialhq/sundial/store/mysql"
	"github.com/sundialhq/sundial/store/postgres"
	"github.com/sundialhq/sundial/store/sqlite"
	"github.com/sundialhq/sundial/ui"
)

// Bounds of the API server's requests that are not settings.
const (
	headerTimeout  = 10 * time.Second // to read a request's header
	maxHeaderBytes = 64 << 10         // of a request's header; more is a 431
)

// runServe runs a scheduler node and the REST API until ctx is cancelled
// (SIGINT or SIGTERM), then stops gracefully: no new fires, calls in flight
// get the drain timeout, what is cut off is recorded, and it exits 0. The
// second stop ctx carries (a second signal) cuts the drain short: calls
// still in flight are cut off and recorded at once, and it exits 0 too.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("serve", args, getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log := newLogger(cfg.Log, stderr)
	serveLog := log.With("component", "serve") // this command's own lines

	certs, err := apiTLS(cfg.TLS, log)
	if err != nil {
		return err
	}

	// Bind before touching the database: a busy port fails at once,
	// without having created or migrated anything.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	var pprofAddr net.Addr
	if cfg.Debug.PprofListen != "" {
		addr, stopPprof, err := servePprof(cfg.Debug.PprofListen, cfg.API.AllowedHosts, log)
		if err != nil {
			return err
		}
		defer stopPprof()
		pprofAddr = addr
	}

	store, err := openStoreAs(ctx, cfg.DB, log, false)
	if err != nil {
		return err
	}
	defer store.Close()

	node := newNode(ln.Addr().String())
	configured, err := configuredCallbackSecret(cfg)
	if err != nil {
		return err
	}
	secret, err := callbackSecret(ctx, store, configured)
	if err != nil {
		return err
	}
	baseURL := cfg.Callback.BaseURL
	if baseURL == "" {
		baseURL = apiScheme(certs) + "://" + callbackHost(ln.Addr().String())
	}
	sealer, err := secretsBox(ctx, cfg, store, log)
	if err != nil {
		return err
	}
	var issuer *idtoken.Issuer
	var mint func(audience, subject string) (string, error)
	if sealer != nil {
		iss := cfg.OIDC.Issuer
		if iss == "" {
			iss = baseURL
		}
		if issuer, err = idtoken.Load(ctx, store, sealer, iss, cfg.OIDC.KeyRotation, nil); err != nil {
			return err
		}
		mint = issuer.Mint
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if s, ok := store.(*sqlite.Store); ok {
		reg.MustRegister(newSQLiteRows(s))
	}
	// The live events of every node, which this node's API streams: they
	// travel through the database, if it has more than one node.
	hub := event.NewHub(event.Options{Node: node.ID, Relay: eventRelay(store), Logger: log, Registry: reg})
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	hubDone := make(chan error, 1)
	go func() { hubDone <- hub.Run(hubCtx) }()
	// Last, once the scheduler has recorded its last outcomes and the API
	// has stopped: the events made meanwhile go out to the other nodes.
	defer func() {
		stopHub()
		if err := <-hubDone; err != nil {
			serveLog.Error("live events", "err", err)
		}
	}()
	select {
	case <-hub.Ready():
	case <-time.After(10 * time.Second):
		serveLog.Warn("live events: not listening for the other nodes' events yet; serving meanwhile")
	case <-ctx.Done():
	}
	guard := outboundGuard(cfg, ln.Addr(), pprofAddr)
	exec := executor.New(executor.Options{DefaultTimeout: cfg.Executor.RequestTimeout,
		MaxIdleConnsPerHost: max(cfg.Executor.WorkerPoolSize, 64), MaxBodyBytes: cfg.Executor.MaxBodyBytes, Guard: guard})
	defer exec.Close()
	notifier := alert.New(guard)
	sched, err := scheduler.New(scheduler.Config{
		Node:              node,
		PollInterval:      cfg.Scheduler.PollInterval,
		Lookahead:         cfg.Scheduler.Lookahead,
		MisfireThreshold:  cfg.Scheduler.MisfireThreshold,
		Workers:           cfg.Executor.WorkerPoolSize,
		RequestTimeout:    cfg.Executor.RequestTimeout,
		HeartbeatInterval: cfg.Scheduler.HeartbeatInterval,
		DeadAfter:         cfg.Scheduler.DeadAfter,
		Retention:         cfg.Scheduler.Retention,
		NodeRetention:     cfg.Scheduler.NodeRetention,
		AuditRetention:    cfg.Audit.Retention,
		DrainTimeout:      cfg.Scheduler.DrainTimeout,
		StartIntervals:    cfg.Executor.StartIntervals,
		ClaimInterval:     cfg.Scheduler.ClaimInterval,
		MaxDeliveries:     cfg.Scheduler.MaxDeliveries,
		StateFlush:        cfg.Scheduler.StateFlush,
		StatsFlush:        cfg.Scheduler.StatsFlush,
		AlertSweep:        cfg.Scheduler.AlertSweep,
		Notify:            notifier.Send,
		DependencyRefresh: cfg.Scheduler.DependencyRefresh,
		CallbackURL:       baseURL,
		CallbackSecret:    secret,
		CallbackTimeout:   cfg.Callback.Timeout,
		Sealer:            sealer,
		IDToken:           mint,
		Events:            hub.Publish,
		QuietGC:           true,
		Compensator: scheduler.CompensatorConfig{
			Base:      cfg.Compensator.BaseInterval,
			Increment: cfg.Compensator.Increment,
			Max:       cfg.Compensator.MaxInterval,
			Threshold: cfg.Compensator.StuckAfter,
			Monitor:   cfg.Compensator.StatusEvery,
		},
	}, store, exec, log, reg)
	if err != nil {
		return err
	}

	auth, err := apiAuth(ctx, cfg, ln.Addr(), store, serveLog)
	if err != nil {
		return err
	}
	srv := api.NewServer(api.Config{Logger: log, Store: store, Scheduler: sched,
		MaxBodyBytes: cfg.Executor.MaxBodyBytes, CheckTarget: guard.CheckURL, Auth: auth, Sealer: sealer, Events: hub,
		Notify: notifier.Send})
	srv.Handle("GET /metrics", sundial.RoleViewer, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if issuer != nil {
		// Open: targets fetch them to verify the tokens.
		srv.Handle("GET "+idtoken.JWKSPath, sundial.RoleNone, http.HandlerFunc(issuer.ServeJWKS))
		srv.Handle("GET "+idtoken.DiscoveryPath, sundial.RoleNone, http.HandlerFunc(issuer.ServeDiscovery))
	}
	handler := srv.Handler()
	if cfg.API.Console {
		// The console (/ui/, and / redirected to it) is static: it reads
		// and acts through the API with the user's token.
		handler = ui.New().Handler(handler)
	}
	httpSrv := &http.Server{
		Handler: handler,
		// A slow client holds a connection for a bounded time: its header
		// in 10s at most, its whole request in read_timeout, the answer
		// in write_timeout; an idle keep-alive is closed after
		// idle_timeout. LimitListener bounds how many it may hold.
		ReadHeaderTimeout: min(headerTimeout, cfg.API.ReadTimeout),
		ReadTimeout:       cfg.API.ReadTimeout,
		WriteTimeout:      cfg.API.WriteTimeout,
		IdleTimeout:       cfg.API.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelWarn),
		// OPTIONS * goes to the API too, which answers it in JSON.
		DisableGeneralOptionsHandler: true,
	}
	// Shutdown waits for every request to end: the event streams end
	// when it begins.
	httpSrv.RegisterOnShutdown(srv.EndStreams)

	schedDone := make(chan error, 1)
	schedCtx, stopSched := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSched()
	go func() { schedDone <- sched.Run(schedCtx) }()
	apiLn, stopTLS := tlsListener(api.LimitListener(ln, cfg.API.MaxConnections), certs)
	defer stopTLS()
	serveDone := make(chan error, 1)
	go func() { serveDone <- httpSrv.Serve(api.Listener(apiLn)) }()

	fmt.Fprintf(stdout, "Sundial listening on %s://%s (node %s, database %s)\n", apiScheme(certs), ln.Addr(), node.ID, redact(cfg.DB.URL))
	serveLog.Info("serving", "addr", ln.Addr().String(), "node_id", node.ID)
	if pprofAddr != nil {
		serveLog.Info("serving profiles", "url", "http://"+pprofAddr.String()+"/debug/pprof/")
	}

	select {
	case <-ctx.Done():
		serveLog.Info("stopping: no new fires; draining calls in flight", "drain_timeout", cfg.Scheduler.DrainTimeout)
	case err := <-serveDone:
		stopSched()
		if serr := <-schedDone; serr != nil {
			serveLog.Error("scheduler stop", "err", serr) // the API's failure is the one returned
		}
		return fmt.Errorf("serve http: %w", err)
	case err := <-schedDone:
		shutdownHTTP(httpSrv)
		if err != nil {
			return fmt.Errorf("scheduler: %w", err)
		}
		return errors.New("scheduler stopped unexpectedly")
	}
	// Stop the scheduler first, keeping the API up meanwhile so that the
	// drain can be watched; then the API. A second signal ends the drain
	// at once, as its timeout would.
	stopSched()
	var err2 error
	select {
	case err2 = <-schedDone:
	case <-secondStop(ctx):
		serveLog.Warn("stopping at once: second signal while draining")
		sched.EndDrain()
		err2 = <-schedDone
		_ = httpSrv.Close()
	}
	if err2 != nil {
		serveLog.Error("scheduler stop", "err", err2)
	}
	shutdownHTTP(httpSrv)
	fmt.Fprintln(stdout, "Sundial stopped")
	return nil
}

// outboundGuard is the guard of every delivery: the configured networks,
// and this node's own listeners (the API's and the profiler's, nil when
// there is none).
func outboundGuard(cfg *config, listeners ...net.Addr) *executor.Guard {
	g := &executor.Guard{}
	g.Deny, _ = parseNetworks(cfg.Executor.DenyNetworks) // checked by validate
	g.Allow, _ = parseNetworks(cfg.Executor.AllowNetworks)
	for _, a := range listeners {
		if a == nil {
			continue
		}
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			g.Self = append(g.Self, ap)
		}
	}
	return g
}

func shutdownHTTP(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}

// runMigrate creates or upgrades the database schema and exits.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("migrate", args, getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	store, err := openStoreAs(ctx, cfg.DB, newLogger(cfg.Log, stderr), false)
	if err != nil {
		return err
	}
	if err := store.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "Schema of %s is up to date\n", redact(cfg.DB.URL))
	return err
}

// eventRelay is how live events travel between the nodes on store's
// database: NOTIFY on PostgreSQL, a poll on MySQL; none on SQLite, whose
// database has one node.
func eventRelay(store sundial.Store) sundial.EventRelay {
	switch s := store.(type) {
	case *postgres.Store:
		return s.EventRelay()
	case *mysql.Store:
		return s.EventRelay()
	}
	return nil
}

// openStore opens the database named by dsn, with the default pool, and
// migrates its schema.
func openStore(ctx context.Context, dsn string, log *slog.Logger) (sundial.Store, error) {
	return openStoreAs(ctx, dbConfig{URL: dsn}, log, false)
}

// openStoreAs opens the database db names with db's pool settings; with
// noMigrate, it leaves the schema as it is and refuses a database whose
// schema is not current (or, on SQLite, a file that does not exist),
// changing nothing.
func openStoreAs(ctx context.Context, db dbConfig, log *slog.Logger, noMigrate bool) (sundial.Store, error) {
	dsn := db.URL
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(dsn, "sqlite:")
		s, err := sqlite.Open(ctx, path, sqlite.Options{Logger: log, NoMigrate: noMigrate,
			ReadConns: db.MaxOpenConns, ReadIdleConns: db.MaxIdleConns})
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", dsn, err)
		}
		return s, nil
	case isPostgres(dsn):
		s, err := postgres.Open(ctx, dsn, postgres.Options{Logger: log, NoMigrate: noMigrate,
			MaxConns: db.MaxOpenConns, MaxIdleConns: db.MaxIdleConns,
			ConnMaxLifetime: db.ConnMaxLifetime, ConnMaxIdleTime: db.ConnMaxIdleTime, ListenDSN: db.ListenURL})
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", redact(dsn), err)
		}
		return s, nil
	case strings.HasPrefix(dsn, "mysql://"):
		driverDSN, err := mysqlDSN(dsn)
		if err != nil {
			return nil, usageErrorf("db: %v", err)
		}
		s, err := mysql.Open(ctx, driverDSN, mysql.Options{Logger: log, NoMigrate: noMigrate,
			MaxConns: db.MaxOpenConns, MaxIdleConns: db.MaxIdleConns,
			ConnMaxLifetime: db.ConnMaxLifetime, ConnMaxIdleTime: db.ConnMaxIdleTime})
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", redact(dsn), err)
		}
		return s, nil
	default:
		return nil, usageErrorf("db: %s: want sqlite:PATH, postgres://... or mysql://...", redact(dsn))
	}
}

// mysqlDSN turns mysql://user:password@host:port/database?params into the
// driver's user:password@tcp(host:port)/database?params.
func mysqlDSN(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return "", fmt.Errorf("%s: want mysql://user:password@host:port/database", redact(dsn))
	}
	host := u.Host
	if u.Port() == "" {
		host += ":3306"
	}
	var b strings.Builder
	if u.User != nil {
		b.WriteString(u.User.Username())
		if pw, ok := u.User.Password(); ok {
			b.WriteString(":" + pw)
		}
		b.WriteString("@")
	}
	b.WriteString("tcp(" + host + ")/" + strings.Trim(u.Path, "/"))
	if u.RawQuery != "" {
		b.WriteString("?" + u.RawQuery)
	}
	return b.String(), nil
}

// newNode returns this process's identity: host, process id, a random
// suffix (a restarted process is a new member) and the API address.
func newNode(addr string) sundial.Node {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	return sundial.Node{
		ID:      fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(suffix)),
		Host:    host,
		PID:     os.Getpid(),
		Address: addr,
	}
}

// newLogger returns the process's logger: text or JSON lines on w, at the
// configured level, with durations written as Go duration strings.
func newLogger(c logConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationText}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// durationText writes a duration as a Go duration string ("1.5s"), as
// the text format does, instead of the JSON format's integer nanoseconds.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// isPostgres says whether a database URL names a PostgreSQL server.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// redact hides the passwords of a database URL: the userinfo's, and the
// value of every query parameter whose name holds "pass" (PostgreSQL's
// password and sslpassword). The userinfo ends at the last "@" before the
// path, so a password may hold "?" or "#" unencoded; the query starts
// after the host.
func redact(dsn string) string {
	i := strings.Index(dsn, "://")
	if i < 0 {
		return dsn
	}
	head, rest := dsn[:i+3], dsn[i+3:]
	authority := rest
	if slash := strings.Index(rest, "/"); slash >= 0 {
		authority = rest[:slash]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if colon := strings.Index(authority[:at], ":"); colon >= 0 {
			head += authority[:colon] + ":***@"
			rest = rest[at+1:]
		}
	}
	base, query, hasQuery := strings.Cut(rest, "?")
	if !hasQuery {
		return head + base
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		if name, _, ok := strings.Cut(p, "="); ok && strings.Contains(strings.ToLower(name), "pass") {
			params[i] = name + "=***"
		}
	}
	return head + base + "?" + strings.Join(params, "&")
}

// callbackSecret is the secret callback tokens are signed with: the
// configured one, or else the cluster's, generated by the first node to
// start and kept in the database so that every node and restart shares it.
func callbackSecret(ctx context.Context, store sundial.Store, configured string) ([]byte, error) {
	if configured != "" {
		return []byte(configured), nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generate callback secret: %w", err)
	}
	v, err := store.SettingEnsure(ctx, "callback_secret", hex.EncodeToString(b))
	if err != nil {
		return nil, fmt.Errorf("read callback secret: %w", err)
	}
	return []byte(v), nil
}

// callbackHost is the host:port targets can call back on when the API
// listens on addr: an unspecified address (0.0.0.0, ::) becomes this
// machine's host name.
func callbackHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}

// servePprof serves Go's profiles on a listener of their own, so that they
// are never reachable through the API's address. It has no
// authentication, so it guards what it can: it does not serve the
// command line (/debug/pprof/cmdline, where flags such as secrets would
// show); on loopback it answers only requests whose Host is a loopback
// name with its port, or one of hosts (api.allowed_hosts), so a web page
// cannot read it by DNS rebinding; elsewhere it answers the Hosts of
// hosts, or any when there are none, and says at start that whoever
// reaches it reads the process's stacks and memory profiles.
func servePprof(addr string, hosts []string, log *slog.Logger) (bound net.Addr, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("debug.pprof_listen %s: %w", addr, err)
	}
	hosts = append(append([]string(nil), hosts...), loopbackHosts(ln.Addr())...)
	if !isLoopback(ln.Addr()) {
		log.Warn("debug.pprof_listen is not a loopback address: whoever reaches it reads this process's stacks and memory profiles, without authentication",
			"addr", ln.Addr().String())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // named profiles; "cmdline" is none
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No write timeout: a CPU profile or a trace streams for as long as
	// it was asked to.
	srv := &http.Server{Handler: api.RequireHost(hosts, mux), ReadHeaderTimeout: headerTimeout, ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr(), func() { _ = srv.Close() }, nil
}
