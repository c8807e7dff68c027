// Package api serves Sundial's REST API under /api/v1: the [Server] that owns
// the route table, the mapping of Sundial's domain errors to HTTP statuses
// and JSON error bodies, strict JSON request decoding, the check of each
// route's query parameters (query.go), who may call each route (auth.go:
// bearer tokens, roles, the Host and cross-site checks, rate limits), the
// audit log of every change (audit.go), and the endpoints themselves (one
// file per resource: cron.go for /api/v1/cron, and so on).
//
// Every error a client sees has the same shape:
//
//	{"error": {"code": "invalid", "message": "...", "field": "...", "token": "..."}}
//
// including the 404 for an unknown path and the 405 for a wrong method, and,
// on a [Listener], the answers net/http writes itself to a request it
// cannot read.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/event"
	"github.com/sundialhq/sundial/executor"
)

// Config is what NewServer needs. The zero Config is usable: it logs nowhere,
// reads the wall clock and serves only the routes that need no database
// (/api/v1/cron/next and /healthz).
type Config struct {
	Logger *slog.Logger     // nil: discard logs
	Now    func() time.Time // nil: time.Now

	// Store, when set, turns on the task, run and node endpoints and
	// /readyz. Scheduler is then required.
	Store     Store
	Scheduler Scheduler

	// MaxBodyBytes is the largest body a task's template may render to
	// (executor.max_body_bytes); 0: executor.DefaultMaxBodyBytes. A task
	// that can render a larger one is refused.
	MaxBodyBytes int

	// CheckTarget, when set, refuses a task's target_url before it is
	// stored: executor.Guard.CheckURL, which refuses an IP address the
	// outbound guard would refuse to dial.
	CheckTarget func(rawURL string) error

	// Auth, when set, is who may do what (see Auth). Nil: no checks, and
	// every request is anonymous.
	Auth *Auth
	// Sealer seals a task's secrets before they are stored and opens them
	// when a replacement sends them back masked. Nil: a task with a
	// secret (a sensitive header, credentials in target_url, a
	// signing_secret) is refused with a message saying how to set a key.
	Sealer sundial.Sealer

	// Notify sends a channel's test message (POST
	// /api/v1/alert-channels/{id}/test): package alert's Sender.Send.
	// Nil: a test reports that this server sends no notifications.
	Notify func(ctx context.Context, ch *sundial.AlertChannel, m sundial.AlertMessage) error

	// Events is the node's hub of live events, which GET /api/v1/events
	// reads and to which the API publishes the changes of tasks it makes.
	// Nil: a hub of the API's own events (a server without a scheduler
	// to publish its runs' events, in tests).
	Events *event.Hub
}

// Store is what the API reads and writes in the database: a sundial.Store
// in production. Runs change through the Scheduler, which applies their
// policies; tasks change here.
type Store interface {
	Ping(ctx context.Context) error
	TaskCreateMany(ctx context.Context, ts []*sundial.Task, now time.Time) (existed []bool, err error)
	TaskGet(ctx context.Context, id int64) (*sundial.Task, error)
	TaskExists(ctx context.Context, id int64) (bool, error)
	TaskList(ctx context.Context, p sundial.TaskListParams) ([]*sundial.Task, error)
	TaskUpdate(ctx context.Context, t *sundial.Task, now time.Time) error
	TaskDelete(ctx context.Context, id int64, now time.Time) error
	TaskStates(ctx context.Context, ids []int64, now time.Time) (map[int64]*sundial.TaskState, map[int64]*sundial.LastRun, error)
	RunGet(ctx context.Context, id int64) (*sundial.Run, error)
	RunList(ctx context.Context, p sundial.RunListParams) ([]*sundial.Run, error)
	RunUpcoming(ctx context.Context, taskID int64, limit int) ([]*sundial.Run, error)
	RunAttempts(ctx context.Context, runID int64) ([]*sundial.Attempt, error)
	NodeList(ctx context.Context) ([]*sundial.Node, error)
	StatsList(ctx context.Context, from, to time.Time) ([]*sundial.StatsMinute, error)
	TokenCreate(ctx context.Context, t *sundial.Token) error
	TokenByHash(ctx context.Context, hash string) (*sundial.Token, error)
	TokenList(ctx context.Context) ([]*sundial.Token, error)
	TokenDelete(ctx context.Context, id string) (*sundial.Token, error)
	AuditInsert(ctx context.Context, es []*sundial.AuditEntry) error
	AuditList(ctx context.Context, f sundial.AuditListParams) ([]*sundial.AuditEntry, error)
	CalendarCreate(ctx context.Context, c *sundial.Calendar) error
	CalendarGet(ctx context.Context, name string) (*sundial.Calendar, error)
	CalendarList(ctx context.Context) ([]*sundial.Calendar, error)
	CalendarUpdate(ctx context.Context, c *sundial.Calendar) (*sundial.Calendar, error)
	CalendarDelete(ctx context.Context, name string) (*sundial.Calendar, error)
}

// Scheduler is what the API asks of the scheduler: *scheduler.Scheduler in
// production, a fake in tests.
type Scheduler interface {
	// Trigger makes a manual run of a task now, with params in place of
	// the task's (nil: the task's), and returns it as admitted.
	Trigger(ctx context.Context, taskID int64, params json.RawMessage) (*sundial.Run, error)
	// Rerun makes a manual run of the task of the run of, with of's
	// params, recording of as the run it runs again (Run.RerunOf), and
	// returns it as Trigger does.
	Rerun(ctx context.Context, of *sundial.Run) (*sundial.Run, error)
	// Backfill makes a BACKFILL run of task t for each of times (past
	// fire times of its schedule, oldest first), for the nodes to claim
	// and admit. It returns the run made for each time, nil for a time
	// that has a backfilled run already.
	Backfill(ctx context.Context, t *sundial.Task, times []time.Time) ([]*sundial.Run, error)
	// Cancel cancels a run, or stops it if it is in flight.
	Cancel(ctx context.Context, runID int64) (*sundial.Run, error)
	// Poke asks for a planner pass now, after a task was created or changed.
	Poke()
	// Ready reports whether the scheduler runs and holds its membership.
	Ready() bool
	// CompensationStatus returns the state of this node's compensator.
	CompensationStatus() sundial.CompensationStatus
	// TriggerCompensation forces a compensation round now.
	TriggerCompensation()
	// CallbackSecret is the secret callback tokens are signed with.
	CallbackSecret() []byte
	// Complete ends an ASYNC run with its callback, made under the
	// delivery of fence (from the token); t is nil for a deleted task.
	Complete(ctx context.Context, r *sundial.Run, t *sundial.Task, fence int64, cb sundial.CallbackReport) (*sundial.Run, error)
	// Progress saves a long job's progress and checkpoint, and extends its
	// callback deadline.
	Progress(ctx context.Context, r *sundial.Run, t *sundial.Task, fence int64, progress, checkpoint json.RawMessage) (*sundial.Run, error)
	// Request is the HTTP request run r of task t sends (its last
	// delivery's, or its first's before any), every secret masked.
	Request(ctx context.Context, t *sundial.Task, r *sundial.Run) (executor.Prepared, error)
}

// Server routes and serves the REST API. Build it with NewServer; other
// files in this package and cmd/sundial add routes with Handle.
type Server struct {
	Logger *slog.Logger     // nil: discard logs
	Now    func() time.Time // nil: time.Now

	store       Store
	sched       Scheduler
	mux         *http.ServeMux
	maxBody     int
	checkTarget func(string) error
	auth        *Auth
	limiter     *limiter
	roles       map[string]sundial.Role // the role each route's pattern needs
	params      map[string][]string     // the query parameters each built-in route reads
	sealer      sundial.Sealer
	notify      func(ctx context.Context, ch *sundial.AlertChannel, m sundial.AlertMessage) error
	events      *event.Hub
	streamsDone chan struct{} // closed by EndStreams
	endStreams  sync.Once
}

// NewServer returns a Server with the built-in routes registered. It panics
// if cfg has a Store but no Scheduler.
func NewServer(cfg Config) *Server {
	if cfg.Store != nil && cfg.Scheduler == nil {
		panic("api: Config.Store is set but Config.Scheduler is nil")
	}
	s := &Server{
		Logger: cfg.Logger,
		Now:    cfg.Now,
		store:  cfg.Store,
		sched:  cfg.Scheduler,
		mux:    http.NewServeMux(),
		roles:  make(map[string]sundial.Role),
		params: make(map[string][]string),

		events:      cfg.Events,
		streamsDone: make(chan struct{}),
	}
	if s.events == nil {
		s.events = event.NewHub(event.Options{Now: cfg.Now})
	}
	s.maxBody, s.checkTarget = cfg.MaxBodyBytes, cfg.CheckTarget
	if cfg.Auth != nil {
		a := *cfg.Auth
		s.auth, s.limiter = &a, newLimiter(a.RateLimit, a.RateBurst)
		if s.store == nil && a.Required {
			panic("api: Config.Auth.Required needs a Store to read tokens from")
		}
	}
	s.sealer, s.notify = cfg.Sealer, cfg.Notify
	if s.maxBody <= 0 {
		s.maxBody = executor.DefaultMaxBodyBytes
	}
	// Each built-in route names the role it needs and lists the query
	// parameters it reads; it refuses any other (see route). The roles:
	// a viewer reads, an operator acts on tasks and runs (trigger,
	// enable, disable, cancel, rerun; a bulk action, but a bulk delete
	// needs an editor's), an editor writes tasks, an admin manages
	// tokens and reads the audit log. RoleNone marks the open routes:
	// health, readiness, and the callback and progress endpoints, which
	// check the run's own token. openapi.yaml describes every route: a
	// route added here goes there too (openapi_test.go checks both ways).
	s.route("GET /healthz", sundial.RoleNone, s.handleHealthz)
	s.route("GET /api/v1/cron/next", sundial.RoleViewer, s.handleCronNext, "expr", "tz", "from", "count", "dst")
	s.route("GET /api/v1/openapi.json", sundial.RoleViewer, s.handleOpenAPI)
	s.route("GET /api/v1/whoami", sundial.RoleViewer, s.handleWhoami)
	if s.store == nil {
		return s
	}
	s.route("GET /readyz", sundial.RoleNone, s.handleReadyz)

	s.route("POST /api/v1/tasks", sundial.RoleEditor, s.handleTaskCreate)
	s.route("POST /api/v1/tasks:batch", sundial.RoleEditor, s.handleTaskBatch)
	s.route("POST /api/v1/tasks:bulk", sundial.RoleOperator, s.handleTaskBulk)
	s.route("GET /api/v1/tasks", sundial.RoleViewer, s.handleTaskList,
		"status", "name", "name_prefix", "name_contains", "request_id", "biz_id", "selector", "limit", "cursor", "format", "recent")
	s.route("GET /api/v1/tasks/{id}", sundial.RoleViewer, s.handleTaskGet)
	s.route("GET /api/v1/tasks/{id}/deps", sundial.RoleViewer, s.handleTaskDeps)
	s.route("PUT /api/v1/tasks/{id}", sundial.RoleEditor, s.handleTaskReplace)
	s.route("PATCH /api/v1/tasks/{id}", sundial.RoleEditor, s.handleTaskPatch)
	s.route("DELETE /api/v1/tasks/{id}", sundial.RoleEditor, s.handleTaskDelete)
	s.route("POST /api/v1/tasks/{id}/enable", sundial.RoleOperator, s.handleTaskSetStatus(sundial.TaskEnabled))
	s.route("POST /api/v1/tasks/{id}/disable", sundial.RoleOperator, s.handleTaskSetStatus(sundial.TaskDisabled))
	s.route("POST /api/v1/tasks/{id}/trigger", sundial.RoleOperator, s.handleTaskTrigger)
	s.route("POST /api/v1/tasks/{id}/backfill", sundial.RoleOperator, s.handleTaskBackfill)
	s.route("POST /api/v1/tasks/{id}/backfill:cancel", sundial.RoleOperator, s.handleTaskBackfillCancel)
	s.route("GET /api/v1/tasks/{id}/runs", sundial.RoleViewer, s.handleTaskRuns, runListParams[1:]...)
	s.route("GET /api/v1/tasks/{id}/upcoming", sundial.RoleViewer, s.handleTaskUpcoming, "limit")

	s.route("GET /api/v1/runs", sundial.RoleViewer, s.handleRunList, runListParams...)
	s.route("POST /api/v1/runs:replay", sundial.RoleOperator, s.handleRunReplay)
	s.route("GET /api/v1/runs/{id}", sundial.RoleViewer, s.handleRunGet)
	s.route("POST /api/v1/runs/{id}/cancel", sundial.RoleOperator, s.handleRunCancel)
	s.route("POST /api/v1/runs/{id}/rerun", sundial.RoleOperator, s.handleRunRerun)
	s.route("GET /api/v1/runs/{id}/request", sundial.RoleViewer, s.handleRunRequest)
	// Any method: the task's callback_method decides which one is right.
	// With GET (and only then) the outcome comes in the query.
	s.route("GET /api/v1/runs/{id}/callback", sundial.RoleNone, s.handleRunCallback, "status", "message")
	s.route("/api/v1/runs/{id}/callback", sundial.RoleNone, s.handleRunCallback)
	s.route("POST /api/v1/runs/{id}/progress", sundial.RoleNone, s.handleRunProgress)

	s.route("GET /api/v1/events", sundial.RoleViewer, s.handleEvents, "task"+repeatable, "kinds"+repeatable, "selector", "since")

	s.route("POST /api/v1/calendars", sundial.RoleEditor, s.handleCalendarCreate)
	s.route("GET /api/v1/calendars", sundial.RoleViewer, s.handleCalendarList)
	s.route("GET /api/v1/calendars/{name}", sundial.RoleViewer, s.handleCalendarGet)
	s.route("PUT /api/v1/calendars/{name}", sundial.RoleEditor, s.handleCalendarReplace)
	s.route("DELETE /api/v1/calendars/{name}", sundial.RoleEditor, s.handleCalendarDelete)

	s.route("GET /api/v1/nodes", sundial.RoleViewer, s.handleNodeList)
	s.route("GET /api/v1/stats", sundial.RoleViewer, s.handleStats, "since", "step")
	s.route("GET /api/v1/admin/compensation", sundial.RoleViewer, s.handleCompensation)
	s.route("POST /api/v1/admin/compensation/trigger", sundial.RoleOperator, s.handleCompensationTrigger)

	s.route("POST /api/v1/alert-channels", sundial.RoleEditor, s.handleChannelCreate)
	s.route("GET /api/v1/alert-channels", sundial.RoleViewer, s.handleChannelList)
	s.route("GET /api/v1/alert-channels/{id}", sundial.RoleViewer, s.handleChannelGet)
	s.route("PUT /api/v1/alert-channels/{id}", sundial.RoleEditor, s.handleChannelReplace)
	s.route("DELETE /api/v1/alert-channels/{id}", sundial.RoleEditor, s.handleChannelDelete)
	s.route("POST /api/v1/alert-channels/{id}/test", sundial.RoleOperator, s.handleChannelTest)
	s.route("POST /api/v1/alert-rules", sundial.RoleEditor, s.handleRuleCreate)
	s.route("GET /api/v1/alert-rules", sundial.RoleViewer, s.handleRuleList, "task_id")
	s.route("GET /api/v1/alert-rules/{id}", sundial.RoleViewer, s.handleRuleGet)
	s.route("PUT /api/v1/alert-rules/{id}", sundial.RoleEditor, s.handleRuleReplace)
	s.route("DELETE /api/v1/alert-rules/{id}", sundial.RoleEditor, s.handleRuleDelete)
	s.route("GET /api/v1/incidents", sundial.RoleViewer, s.handleIncidentList, "status", "task_id", "rule_id", "limit", "cursor")
	s.route("GET /api/v1/incidents/{id}", sundial.RoleViewer, s.handleIncidentGet)
	s.route("POST /api/v1/incidents/{id}/ack", sundial.RoleOperator, s.handleIncidentAck)

	s.route("POST /api/v1/tokens", sundial.RoleAdmin, s.handleTokenCreate)
	s.route("GET /api/v1/tokens", sundial.RoleAdmin, s.handleTokenList)
	s.route("DELETE /api/v1/tokens/{id}", sundial.RoleAdmin, s.handleTokenDelete)
	s.route("GET /api/v1/audit", sundial.RoleAdmin, s.handleAuditList, "actor", "action", "task_id", "from", "to", "limit", "cursor")
	return s
}

// Handle registers h for pattern, a Go 1.22 ServeMux pattern such as
// "GET /api/v1/cron/next", for clients of role at least (RoleNone: open to
// anyone). It panics, as ServeMux does, on a pattern that is malformed or
// conflicts with one already registered. The query string is h's to
// check: only the built-in routes refuse parameters they do not read.
func (s *Server) Handle(pattern string, role sundial.Role, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.roles[pattern] = role
}

// Handler returns the http.Handler that serves every registered route and
// answers unknown paths and wrong methods with a JSON error.
func (s *Server) Handler() http.Handler {
	if s.auth == nil {
		return http.HandlerFunc(s.serveHTTP)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r = s.authenticate(w, r); r != nil {
			s.serveHTTP(w, r)
		}
	})
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// The request target * (OPTIONS *, or an HTTP/2 preface sent to an
	// HTTP/1 listener) names no endpoint; the mux would redirect it.
	if r.RequestURI == "*" {
		s.writeError(w, r, sundial.Errorf(sundial.ENotFound, "", "no such endpoint: %s *", r.Method))
		return
	}
	// The mux would redirect a path that is not clean (//api/v1/tasks,
	// /api/v1/tasks/2/../3) to its clean form with an HTML answer. A
	// client gets the JSON error shape instead, naming the path to use:
	// a redirect would send a PUT or DELETE somewhere it did not name.
	if esc := r.URL.EscapedPath(); r.Method != http.MethodConnect {
		if clean := cleanPath(esc); clean != esc {
			s.writeError(w, r, sundial.Errorf(sundial.ENotFound, "",
				"no such endpoint: %s %s; paths are taken as sent, not cleaned: the path meant is likely %s", r.Method, esc, clean))
			return
		}
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		// A route matched, or the mux redirects to a cleaned path.
		s.mux.ServeHTTP(w, r)
		return
	}

	// No route: the mux's own handler answers in plain text. Run it
	// aside and translate its 404 or 405 into the JSON error shape.
	cw := &captureWriter{header: make(http.Header)}
	h.ServeHTTP(cw, r)
	switch cw.status {
	case http.StatusNotFound:
		s.writeError(w, r, errNoRoute(r))
	case http.StatusMethodNotAllowed:
		allow := cw.header.Get("Allow")
		w.Header().Set("Allow", allow)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: errorDetail{
			Code:    codeMethodNotAllowed,
			Message: "method " + r.Method + " is not allowed on " + r.URL.Path + " (allowed: " + allow + ")",
		}})
	default:
		// Not expected from ServeMux; pass the answer through unchanged.
		for k, v := range cw.header {
			w.Header()[k] = v
		}
		w.WriteHeader(cw.statusOrOK())
		_, _ = w.Write(cw.body.Bytes())
	}
}

// cleanPath is the canonical form of an escaped path as net/http's
// ServeMux makes it: rooted, without . or .. elements or repeated slashes,
// keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// now returns the current time from the injected clock.
func (s *Server) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// logger returns the injected logger, or one that discards.
func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// captureWriter records what a handler writes without sending it.
type captureWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *captureWriter) Header() http.Header { return c.header }

func (c *captureWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *captureWriter) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(b)
}

func (c *captureWriter) statusOrOK() int {
	if c.status == 0 {
		return http.StatusOK
	}
	return c.status
}
