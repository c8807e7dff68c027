package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
)

// Limits of the task endpoints, and the paging shared by every list.
const (
	maxTaskBody       = 1 << 20  // bytes of a POST, PUT or PATCH body
	maxDisableBody    = 16 << 10 // bytes of a disable's body: a reason of 1,024 characters, escaped
	defaultPageLimit  = 50
	maxPageLimit      = 1000
	setStatusAttempts = 5 // enable and disable retry a stale version this often
)

// taskRequest is the body of POST /api/v1/tasks and PUT /api/v1/tasks/{id}
// (and a PATCH's patch applied to the task, see patch.go): the writable
// fields of sundial.Task, plus headers_json, seed 001's spelling of headers
// as a string holding a JSON object.
//
// The server-set fields are decoded only to be refused by name (PUT takes
// version, and requires it). A null counts as present.
type taskRequest struct {
	Name               string                    `json:"name"`
	Description        string                    `json:"description"`
	Labels             map[string]string         `json:"labels"`
	CronExpr           string                    `json:"cron_expr"`
	RunAt              json.RawMessage           `json:"run_at"`
	DelaySeconds       *int                      `json:"delay_seconds"`
	RequestID          string                    `json:"request_id"`
	BizID              string                    `json:"biz_id"`
	Params             json.RawMessage           `json:"params"`
	Timezone           string                    `json:"timezone"`
	ExecType           sundial.ExecType          `json:"exec_type"`
	HTTPMethod         string                    `json:"http_method"`
	TargetURL          string                    `json:"target_url"`
	Headers            map[string]string         `json:"headers"`
	HeadersJSON        *string                   `json:"headers_json"`
	BodyTemplate       string                    `json:"body_template"`
	TimeoutSeconds     int                       `json:"timeout_seconds"`
	RetryPolicy        json.RawMessage           `json:"retry_policy"`
	MaxConcurrency     int                       `json:"max_concurrency"`
	ConcurrencyPolicy  sundial.ConcurrencyPolicy `json:"concurrency_policy"`
	MaxQueue           int                       `json:"max_queue"`
	OverlapAction      sundial.OverlapAction     `json:"overlap_action"`
	FailureAction      sundial.FailureAction     `json:"failure_action"`
	CatchUpMode        sundial.CatchUpMode       `json:"catch_up_mode"`
	CatchUpLimit       int                       `json:"catch_up_limit"`
	CallbackMethod     string                    `json:"callback_method"`
	CallbackTimeout    int                       `json:"callback_timeout_sec"`
	StartingDeadline   int                       `json:"starting_deadline_seconds"`
	StartAt            json.RawMessage           `json:"start_at"`
	EndAt              json.RawMessage           `json:"end_at"`
	MaxRuns            int                       `json:"max_runs"`
	JitterSeconds      int                       `json:"jitter_seconds"`
	PauseAfterFailures int                       `json:"pause_after_failures"`
	DependsOn          []sundial.Dependency      `json:"depends_on"`
	Join               sundial.JoinMode          `json:"join"`
	JoinDeadline       int                       `json:"join_deadline_seconds"`
	DST                string                    `json:"dst"`
	Calendars          []string                  `json:"calendars"`
	Priority           int                       `json:"priority"`
	FollowRedirects    sundial.RedirectPolicy    `json:"follow_redirects"`
	SigningSecret      string                    `json:"signing_secret"`
	OIDC               *sundial.OIDCOption       `json:"oidc"`
	Status             sundial.TaskStatus        `json:"status"`
	// DisabledReason is the reason a DISABLED task is disabled for: left
	// out, the current one is kept; null or "" removes it (see
	// sundial.Task.NoteDisabled).
	DisabledReason json.RawMessage `json:"disabled_reason"`

	ID           json.RawMessage `json:"id"`
	Version      json.RawMessage `json:"version"`
	CreatedAt    json.RawMessage `json:"created_at"`
	UpdatedAt    json.RawMessage `json:"updated_at"`
	NextFireTime json.RawMessage `json:"next_fire_time"`
	DisabledAt   json.RawMessage `json:"disabled_at"`
	DisabledBy   json.RawMessage `json:"disabled_by"`
	State        json.RawMessage `json:"state"`
	FireCount    json.RawMessage `json:"fire_count"`

	// generated is the signing secret the server made for "generate",
	// answered once.
	generated string
	// actor is who makes the request: the task's disabled_by when the
	// request disables it.
	actor string
}

// generateSecret is the signing_secret that asks the server for one.
const generateSecret = "generate"

// task checks the request and returns the task it describes, normalised and
// validated but not yet stored. cur is the task a PUT replaces, as stored
// (nil for a create): a PUT must carry the version the task was read at,
// and its status is decided from cur's (sundial.WriteStatus).
func (req *taskRequest) task(cur *sundial.Task, now time.Time, sealer sundial.Sealer) (*sundial.Task, error) {
	replace := cur != nil
	// POST refuses the server-set fields. PUT takes the task as GET returned
	// it: their values are ignored, but an id must name the task of the path.
	readOnly := []struct {
		field string
		raw   json.RawMessage
	}{
		{"id", req.ID},
		{"version", req.Version},
		{"created_at", req.CreatedAt},
		{"updated_at", req.UpdatedAt},
		{"next_fire_time", req.NextFireTime},
		{"disabled_at", req.DisabledAt},
		{"disabled_by", req.DisabledBy},
		{"state", req.State},
		{"fire_count", req.FireCount},
	}
	for _, ro := range readOnly {
		if ro.raw == nil {
			continue
		}
		if replace {
			if ro.field == "id" && string(ro.raw) != "null" && string(ro.raw) != strconv.FormatInt(cur.ID, 10) {
				return nil, &sundial.Error{Code: sundial.EInvalid, Field: "id", Token: string(ro.raw),
					Message: "id differs from the task named by the path"}
			}
			continue
		}
		return nil, sundial.Errorf(sundial.EInvalid, ro.field, "%s is set by the server and cannot be given", ro.field)
	}

	t := &sundial.Task{
		Name:               req.Name,
		Description:        req.Description,
		Labels:             req.Labels,
		CronExpr:           req.CronExpr,
		DelaySeconds:       req.DelaySeconds,
		RequestID:          req.RequestID,
		BizID:              req.BizID,
		Params:             req.Params,
		Timezone:           req.Timezone,
		ExecType:           req.ExecType,
		HTTPMethod:         req.HTTPMethod,
		TargetURL:          req.TargetURL,
		Headers:            req.Headers,
		BodyTemplate:       req.BodyTemplate,
		TimeoutSeconds:     req.TimeoutSeconds,
		RetryPolicy:        req.RetryPolicy,
		MaxConcurrency:     req.MaxConcurrency,
		ConcurrencyPolicy:  req.ConcurrencyPolicy,
		MaxQueue:           req.MaxQueue,
		OverlapAction:      req.OverlapAction,
		FailureAction:      req.FailureAction,
		CatchUpMode:        req.CatchUpMode,
		CatchUpLimit:       req.CatchUpLimit,
		CallbackMethod:     req.CallbackMethod,
		CallbackTimeout:    req.CallbackTimeout,
		StartingDeadline:   req.StartingDeadline,
		MaxRuns:            req.MaxRuns,
		JitterSeconds:      req.JitterSeconds,
		PauseAfterFailures: req.PauseAfterFailures,
		DependsOn:          req.DependsOn,
		Join:               req.Join,
		JoinDeadline:       req.JoinDeadline,
		DST:                req.DST,
		Calendars:          req.Calendars,
		Priority:           req.Priority,
		FollowRedirects:    req.FollowRedirects,
		SigningSecret:      req.SigningSecret,
		OIDC:               req.OIDC,
		Status:             req.Status,
	}
	for _, f := range []struct {
		field string
		raw   json.RawMessage
		to    **time.Time
	}{{"run_at", req.RunAt, &t.RunAt}, {"start_at", req.StartAt, &t.StartAt}, {"end_at", req.EndAt, &t.EndAt}} {
		ts, err := parseTime(f.field, f.raw)
		if err != nil {
			return nil, err
		}
		*f.to = ts
	}
	if replace {
		v, err := parseVersion(req.Version)
		if err != nil {
			return nil, err
		}
		if v != cur.Version {
			// Refused before the status is decided from a task the
			// client has not seen (the update would refuse it anyway).
			return nil, sundial.Errorf(sundial.EConflict, "version",
				"task %d is at version %d, not %d: it changed since it was read", cur.ID, cur.Version, v)
		}
		t.Version = v
	}
	reason, err := req.reason()
	if err != nil {
		return nil, err
	}
	if reason != nil {
		t.DisabledReason = *reason
	}
	if req.HeadersJSON != nil {
		if req.Headers != nil {
			return nil, sundial.Errorf(sundial.EInvalid, "headers_json",
				"give headers or headers_json, not both")
		}
		h, err := parseHeadersJSON(*req.HeadersJSON)
		if err != nil {
			return nil, err
		}
		t.Headers = h
	}
	t.RequestHash = t.InputHash()
	if t.SigningSecret == generateSecret {
		req.generated = sundial.GenerateSigningSecret()
		t.SigningSecret = req.generated
	}
	if err := sundial.KeepMasked(t, cur, sealer); err != nil {
		return nil, err
	}
	normalize := t.Normalize
	if replace {
		normalize = func(now time.Time) error { return t.NormalizeReplacing(cur, now) }
	}
	if err := normalize(now); err != nil {
		return nil, err
	}
	if err := t.NoteDisabled(cur, reason, req.actor, now); err != nil {
		return nil, err
	}
	if err := executor.ValidateTemplate(t.BodyTemplate, sundial.ParentVarNames(t)...); err != nil {
		return nil, err
	}
	return t, nil
}

// parseTime reads the RFC 3339 time of field, nil for none (absent or
// null).
func parseTime(field string, raw json.RawMessage) (*time.Time, error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	var at string
	err := json.Unmarshal(raw, &at)
	ts, perr := time.Parse(time.RFC3339Nano, at)
	if err != nil || perr != nil {
		token := at // the string given, or the JSON of what was given instead
		if err != nil {
			token = string(raw)
		}
		return nil, &sundial.Error{Code: sundial.EInvalid, Field: field, Token: token,
			Message: field + " must be an RFC 3339 time, such as 2030-01-02T15:04:05Z"}
	}
	return &ts, nil
}

// reason is the disabled_reason the request gives: nil when it gives
// none, "" for null.
func (req *taskRequest) reason() (*string, error) {
	if req.DisabledReason == nil {
		return nil, nil
	}
	var v *string
	if err := json.Unmarshal(req.DisabledReason, &v); err != nil {
		return nil, &sundial.Error{Code: sundial.EInvalid, Field: "disabled_reason",
			Message: "must be a string, such as " + fieldExamples["disabled_reason"] + ", or null to remove it"}
	}
	if v == nil {
		v = new(string)
	}
	return v, nil
}

// checkTask is what a task written through the API must pass besides its
// own rules (sundial.Task.Normalize), because it depends on the server's
// configuration: its target_url is not an address the outbound guard
// refuses, and its body template cannot render a body larger than the
// server's limit with the task's params. It passes an error through.
func (s *Server) checkTask(t *sundial.Task, err error) (*sundial.Task, error) {
	if err != nil {
		return nil, err
	}
	if s.checkTarget != nil {
		if err := s.checkTarget(t.TargetURL); err != nil {
			return nil, err
		}
	}
	if err := executor.CheckBodyBound(t.BodyTemplate, t.Name, t.Params, s.maxBody); err != nil {
		return nil, err
	}
	return t, nil
}

// writable is the task a create (cur nil) or replace request describes,
// checked (req.task, checkTask) and with its secrets sealed, ready to be
// stored.
func (s *Server) writable(ctx context.Context, req *taskRequest, cur *sundial.Task, now time.Time) (*sundial.Task, error) {
	t, err := s.checkTask(req.task(cur, now, s.sealer))
	if err != nil {
		return nil, err
	}
	if err := s.checkCalendars(ctx, t); err != nil {
		return nil, err
	}
	if err := sundial.SealTask(t, cur, s.sealer); err != nil {
		return nil, err
	}
	if t.OIDC != nil && s.sealer == nil {
		return nil, sundial.Errorf(sundial.EInvalid, "oidc", "oidc needs the cluster's signing key, which is sealed "+
			"with the secrets key, and this server has none: its operator sets secrets.key, secrets.key_file or "+
			"SUNDIAL_SECRETS_KEY (the same on every node)")
	}
	return t, nil
}

// checkCalendars refuses a task that references a calendar that does not
// exist, naming it (calendars[i]).
func (s *Server) checkCalendars(ctx context.Context, t *sundial.Task) error {
	if s.store == nil {
		return nil
	}
	for i, name := range t.Calendars {
		_, err := s.store.CalendarGet(ctx, name)
		if sundial.ErrorCode(err) == sundial.ENotFound {
			return &sundial.Error{Code: sundial.EInvalid, Field: fmt.Sprintf("calendars[%d]", i), Token: name,
				Message: "no calendar is named " + name + " (GET /api/v1/calendars lists them)"}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// answerTask is taskView with the signing secret the server generated for
// the request, if any, shown this once.
func answerTask(t *sundial.Task, now time.Time, generated string) *sundial.Task {
	taskView(t, now)
	if generated != "" {
		t.SigningSecret = generated
	}
	return t
}

// parseVersion reads the version a PUT says the task was read at.
func parseVersion(raw json.RawMessage) (int64, error) {
	if raw == nil || string(raw) == "null" {
		return 0, sundial.Errorf(sundial.EInvalid, "version",
			"version is required: the version the task was read at")
	}
	var v int64
	if err := json.Unmarshal(raw, &v); err != nil || v < 1 {
		return 0, &sundial.Error{Code: sundial.EInvalid, Field: "version", Token: string(raw),
			Message: "version must be a positive integer: the version the task was read at"}
	}
	return v, nil
}

// parseHeadersJSON decodes headers_json, a JSON object of string to string
// in a string.
func parseHeadersJSON(s string) (map[string]string, error) {
	if f := findJSONFault([]byte(s)); f != nil {
		e := f.error()
		e.Field = "headers_json"
		if f.duplicate {
			e.Message = "headers_json gives the header " + strconv.Quote(e.Token) + " twice; give each header once"
		} else {
			e.Message = `headers_json must hold valid UTF-8 text: it holds bytes that are not, or an escaped ` +
				`surrogate (\ud800 to \udfff) that is not half of a pair`
		}
		return nil, e
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(s), &h); err != nil || h == nil {
		// The text is not echoed: it may hold a secret header's value.
		where := ""
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			where = fmt.Sprintf(" (it is not valid JSON at offset %d)", syntax.Offset)
		case errors.As(err, &typ):
			where = fmt.Sprintf(" (found a JSON %s at offset %d)", typ.Value, typ.Offset)
		}
		return nil, &sundial.Error{Code: sundial.EInvalid, Field: "headers_json",
			Message: `headers_json must be a string holding a JSON object of string to string, ` +
				`for example "{\"X-Team\":\"ops\"}"` + where}
	}
	return h, nil
}

// handleTaskCreate serves POST /api/v1/tasks.
func (s *Server) handleTaskCreate(w http.ResponseWriter, r *http.Request) {
	req := taskRequest{actor: actorOf(r)}
	if err := decodeJSON(w, r, &req, maxTaskBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	now := s.now()
	t, err := s.writable(r.Context(), &req, nil, now)
	if err == nil {
		err = s.checkDeps(r.Context(), t, nil, nil)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t.NextFireTime = nextFire(t, now)
	existed, err := s.store.TaskCreateMany(r.Context(), []*sundial.Task{t}, now)
	if err != nil {
		if be, ok := errors.AsType[*sundial.BatchError](err); ok && sundial.ErrorCode(err) != sundial.EUnavailable {
			err = be.Err
		}
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/tasks/"+strconv.FormatInt(t.ID, 10))
	if existed[0] {
		// The same request_id and body again: the task it created.
		s.answerStates(r, now, t)
		writeTask(w, http.StatusOK, taskView(t, now))
		return
	}
	s.sched.Poke()
	s.logChange(r, "task created", slog.Int64("task_id", t.ID), slog.String("name", t.Name))
	s.audit(r, "task.create", taskTarget(t.ID), t.ID, nil, t)
	t.State = t.Health(nil, nil, now) // a new task has no history
	writeTask(w, http.StatusCreated, answerTask(t, now, req.generated))
}

// handleTaskList serves
// GET /api/v1/tasks?status=&name=&name_prefix=&name_contains=&request_id=&biz_id=&selector=&limit=&cursor=,
// and with format=json or format=yaml, the export of the tasks (export.go).
// A selector is a condition of the store's query, like the others: each
// page is read from the cursor on until it is full.
func (s *Server) handleTaskList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := sundial.TaskListParams{
		Name:         q.Get("name"),
		NamePrefix:   q.Get("name_prefix"),
		NameContains: q.Get("name_contains"),
		RequestID:    q.Get("request_id"),
		BizID:        q.Get("biz_id"),
	}
	statuses, err := enumList(q, "status", taskStatuses)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f.Status = statuses
	if f.Selector, err = sundial.ParseSelector("selector", q.Get("selector")); err != nil {
		s.writeError(w, r, err)
		return
	}
	if format := q.Get("format"); format != "" {
		if _, ok := exportFormats[format]; !ok {
			s.writeError(w, r, &sundial.Error{Code: sundial.EInvalid, Field: "format", Token: format,
				Message: "must be json or yaml (the format apply reads), or left out for a page of tasks"})
			return
		}
		for _, p := range []string{"limit", "cursor"} {
			if q.Get(p) != "" {
				s.writeError(w, r, sundial.Errorf(sundial.EInvalid, p,
					"format=%s answers every task the filters select, not a page: leave out limit and cursor", format))
				return
			}
		}
		s.handleTaskExport(w, r, f, format)
		return
	}
	limit, err := parseLimit(q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	recent, err := parseRecent(q, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if v := q.Get("cursor"); v != "" {
		if f.AfterID, err = decodeTaskCursor(v); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	f.Limit = limit + 1

	tasks, err := s.store.TaskList(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tasks, next := page(tasks, limit, func(t *sundial.Task) string { return encodeTaskCursor(t.ID) })
	now := s.now()
	if err := s.withStates(r.Context(), tasks, now); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.withRecent(r.Context(), tasks, recent); err != nil {
		s.writeError(w, r, err)
		return
	}
	for _, t := range tasks {
		taskView(t, now)
	}
	writeJSON(w, http.StatusOK, listResponse[*sundial.Task]{Items: tasks, NextCursor: next})
}

// Bounds of a task list's recent=: the outcomes a row of the console
// shows, for a page of tasks a screen holds.
const (
	maxRecent          = 20
	maxRecentPageLimit = 200
)

// parseRecent reads recent: 0 (none, the default) to maxRecent, on a
// page of at most maxRecentPageLimit tasks.
func parseRecent(q url.Values, limit int) (int, error) {
	v := q.Get("recent")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxRecent {
		return 0, &sundial.Error{Code: sundial.EInvalid, Field: "recent", Token: v,
			Message: "recent must be an integer from 0 to " + strconv.Itoa(maxRecent)}
	}
	if n > 0 && limit > maxRecentPageLimit {
		return 0, &sundial.Error{Code: sundial.EInvalid, Field: "recent", Token: v,
			Message: "recent is read for a page of at most " + strconv.Itoa(maxRecentPageLimit) + " tasks: lower limit"}
	}
	return n, nil
}

// endedStatuses are the statuses of a run that has ended.
var endedStatuses = []sundial.RunStatus{sundial.RunSuccess, sundial.RunFailed, sundial.RunTimeout,
	sundial.RunFailedTimeout, sundial.RunCanceled, sundial.RunSkipped}

// withRecent gives each of ts (with their state block) its latest n runs
// that ended, newest first: one read of the runs' index per task, so a
// page of them costs what its size does, whatever the number of tasks.
// n 0 reads nothing.
func (s *Server) withRecent(ctx context.Context, ts []*sundial.Task, n int) error {
	if n == 0 {
		return nil
	}
	for _, t := range ts {
		runs, err := s.store.RunList(ctx, sundial.RunListParams{TaskID: t.ID, Status: endedStatuses, Limit: n})
		if err != nil {
			return err
		}
		recent := make([]sundial.LastRun, len(runs))
		for i, r := range runs {
			recent[i] = sundial.LastRun{ID: r.ID, Status: r.Status, SkipReason: r.SkipReason,
				ScheduledTime: r.ScheduledTime.UTC(), FinishedAt: utcPtr(r.FinishedAt)}
		}
		if t.State != nil {
			t.State.Recent = &recent
		}
	}
	return nil
}

// taskStatuses are the statuses a task list filters by.
var taskStatuses = []sundial.TaskStatus{sundial.TaskEnabled, sundial.TaskDisabled, sundial.TaskCompleted, sundial.TaskFailed}

// handleTaskGet serves GET /api/v1/tasks/{id}.
func (s *Server) handleTaskGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.store.TaskGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	now := s.now()
	if err := s.withStates(r.Context(), []*sundial.Task{t}, now); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeTask(w, http.StatusOK, taskView(t, now))
}

// handleTaskReplace serves PUT /api/v1/tasks/{id}: the whole task, with the
// version it was read at, in the body or as the ETag of If-Match.
func (s *Server) handleTaskReplace(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	pre, err := readIfMatch(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := taskRequest{actor: actorOf(r)}
	if err := decodeJSON(w, r, &req, maxTaskBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	// The status is decided from the current one; the version check of
	// the update refuses the change if the task changed since it was read
	// (a one-off task that ended meanwhile has a new version too).
	cur, err := s.store.TaskGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := pre.check(cur); err != nil {
		s.writeError(w, r, err)
		return
	}
	if pre.given() && req.Version == nil {
		// If-Match names the version.
		req.Version = json.RawMessage(strconv.FormatInt(cur.Version, 10))
	}
	now := s.now()
	t, err := s.writable(r.Context(), &req, cur, now)
	if err == nil {
		err = s.checkDeps(r.Context(), t, cur, nil)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.update(w, r, cur, t, pre, req.generated, now)
}

// update writes t, the change of the task cur a PUT or PATCH makes, and
// answers with the task. A change that changes no field writes nothing.
// When pre is given, a task that changed since cur was read is 412.
func (s *Server) update(w http.ResponseWriter, r *http.Request, cur, t *sundial.Task, pre precondition, generated string, now time.Time) {
	err := s.tryUpdate(r, cur, t, now)
	if err == nil {
		s.answerStates(r, now, t)
		writeTask(w, http.StatusOK, answerTask(t, now, generated))
		return
	}
	if errors.Is(err, errUnchanged) {
		// The task as it is: nothing to write, no fire to take back, and
		// the version stays (as kubectl apply leaves an unchanged object).
		s.answerStates(r, now, cur)
		writeTask(w, http.StatusOK, taskView(cur, now))
		return
	}
	if pre.given() && staleWrite(err) {
		err = s.stale(r, cur, pre)
	}
	s.writeError(w, r, err)
}

// errUnchanged is tryUpdate's answer to a change that changes nothing.
var errUnchanged = errors.New("unchanged")

// tryUpdate writes t, the change of the task cur, as an update does:
// logged, audited with the fields it changed, the scheduler poked, and the
// fires already on their way awaited. It returns errUnchanged, and writes
// nothing, when t changes no field of cur.
func (s *Server) tryUpdate(r *http.Request, cur, t *sundial.Task, now time.Time) error {
	t.ID = cur.ID
	// First, so that a bounded task sent back COMPLETED, with no fire
	// left, is unchanged.
	t.NextFireTime = nextFire(t, now)
	changed := changedFields(cur, t)
	if len(changed) == 0 && t.Version == cur.Version {
		return errUnchanged
	}
	if err := s.store.TaskUpdate(r.Context(), t, now); err != nil {
		return err
	}
	s.logChange(r, "task updated", slog.Int64("task_id", t.ID), slog.String("name", t.Name),
		slog.Any("changed", changed))
	s.audit(r, "task.update", taskTarget(t.ID), t.ID, cur, taskUpdate{Task: t, Changed: changed})
	s.sched.Poke()
	s.awaitSending(r.Context(), t.ID)
	return nil
}

// stale is the 412 of a conditional change of the task cur that another
// writer changed after it was read, naming the version it is at now.
func (s *Server) stale(r *http.Request, cur *sundial.Task, pre precondition) error {
	now, err := s.store.TaskGet(r.Context(), cur.ID)
	if err != nil {
		return err
	}
	if err := pre.check(now); err != nil {
		return err
	}
	return staleVersion(now, cur.Version)
}

// awaitSending returns once the fires of task id that were already being
// sent when it changed (committed ahead of an instant within
// sundial.SendMargin, which the change leaves alone) have gone out, so that
// no fire of the old definition starts after the change is answered.
func (s *Server) awaitSending(ctx context.Context, id int64) {
	limit := time.Now().Add(sundial.SendMargin)
	runs, err := s.store.RunList(ctx, sundial.RunListParams{TaskID: id, Status: []sundial.RunStatus{sundial.RunRunning}, Limit: 1000})
	if err != nil {
		return // the change is made; only the wait is lost
	}
	var until time.Time
	for _, r := range runs {
		if r.StartedAt != nil && r.StartedAt.After(until) && !r.StartedAt.After(limit) {
			until = *r.StartedAt
		}
	}
	if wait := time.Until(until); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// handleTaskDelete serves DELETE /api/v1/tasks/{id}: a logical delete that
// frees the name.
func (s *Server) handleTaskDelete(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	before, _ := s.store.TaskGet(r.Context(), id) // for the audit log; the delete decides
	if err := s.checkDelete(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.store.TaskDelete(r.Context(), id, s.now()); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.logChange(r, "task deleted", slog.Int64("task_id", id))
	s.audit(r, "task.delete", taskTarget(id), id, before, nil)
	s.sched.Poke()
	s.awaitSending(r.Context(), id)
	w.WriteHeader(http.StatusNoContent)
}

// handleTaskSetStatus serves POST /api/v1/tasks/{id}/enable and /disable.
// A disable takes an optional body, {"reason": "..."}.
func (s *Server) handleTaskSetStatus(status sundial.TaskStatus) http.HandlerFunc {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathID(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		var reason *string
		if status == sundial.TaskDisabled {
			var req disableRequest
			if err := decodeOptional(w, r, &req, maxDisableBody); err != nil {
				s.writeError(w, r, err)
				return
			}
			if req.Reason != nil {
				if err := sundial.CheckDisabledReason("reason", *req.Reason); err != nil {
					s.writeError(w, r, err)
					return
				}
			}
			reason = req.Reason
		}
		t, before, err := s.setTaskStatus(r.Context(), id, status, reason, actorOf(r))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if before != nil {
			msg, action := "task enabled", "task.enable"
			attrs := []slog.Attr{slog.Int64("task_id", t.ID), slog.String("name", t.Name)}
			if status == sundial.TaskDisabled {
				msg, action = "task disabled", "task.disable"
				attrs = append(attrs, slog.String("reason", t.DisabledReason))
			}
			s.logChange(r, msg, attrs...)
			s.audit(r, action, taskTarget(t.ID), t.ID, before, t)
		}
		now := s.now()
		s.answerStates(r, now, t)
		writeTask(w, http.StatusOK, taskView(t, now))
	})
}

// disableRequest is the optional body of POST /api/v1/tasks/{id}/disable.
type disableRequest struct {
	// Reason is why the task is disabled, kept and shown until it is
	// enabled again (sundial.Task.DisabledReason); null or absent: the
	// current one, if the task is disabled already.
	Reason *string `json:"reason"`
}

// setTaskStatus enables or disables a task for actor, reading it afresh
// and trying again when another writer changed it in between. reason, when
// given, is why it is disabled (see sundial.Task.NoteDisabled). A task
// already in that status, and with that reason, is returned as it is, and
// before is nil: enabling twice does not move its next fire. before is the
// task as it was, nil when unchanged.
func (s *Server) setTaskStatus(ctx context.Context, id int64, status sundial.TaskStatus, reason *string, actor string) (_, before *sundial.Task, _ error) {
	for attempt := 1; ; attempt++ {
		t, err := s.store.TaskGet(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if t.Status == status && (reason == nil || *reason == t.DisabledReason) {
			return t, nil, nil
		}
		if (t.Status == sundial.TaskCompleted || t.Status == sundial.TaskFailed) && t.OneOff() {
			return nil, nil, sundial.Errorf(sundial.EConflict, "status",
				"task %d is a one-off task that has ended (%s); PUT it with a new run_at to run it again", id, t.Status)
		}
		if t.Status == sundial.TaskCompleted && status == sundial.TaskEnabled {
			again := *t
			again.Status = status
			if again.FirstFire(s.now()) == nil {
				return nil, nil, sundial.Errorf(sundial.EConflict, "status",
					"task %d has no fire left within its start_at, end_at and max_runs (COMPLETED); "+
						"PUT it with a later end_at or a larger max_runs to run it again", id)
			}
		}
		now := s.now()
		prev := *t
		t.Status = status
		if err := t.NoteDisabled(&prev, reason, actor, now); err != nil {
			return nil, nil, err
		}
		t.NextFireTime = nextFire(t, now)
		err = s.store.TaskUpdate(ctx, t, now)
		if err == nil {
			s.sched.Poke()
			s.awaitSending(ctx, id)
			return t, &prev, nil
		}
		if !staleWrite(err) || attempt == setStatusAttempts {
			return nil, nil, err
		}
	}
}

// triggerRequest is the optional body of POST /api/v1/tasks/{id}/trigger.
type triggerRequest struct {
	// Params replace the task's params for this run only; null or absent:
	// the task's.
	Params json.RawMessage `json:"params"`
}

// handleTaskTrigger serves POST /api/v1/tasks/{id}/trigger: a manual run
// now, of an enabled or a disabled task, admitted in the request. The
// answer is 202 with the run as admission left it: RUNNING, QUEUED or
// SKIPPED with its reason.
func (s *Server) handleTaskTrigger(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := decodeTrigger(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	run, err := s.sched.Trigger(r.Context(), id, req.Params)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.logChange(r, "task triggered", runAttrs(run)...)
	s.audit(r, "task.trigger", taskTarget(id), id, nil, newRunChange(run))
	writeJSON(w, http.StatusAccepted, utcRun(run))
}

// decodeTrigger reads the body of a trigger, which is optional: none, or
// one of white space only, is a trigger with the task's params; any other
// is a JSON object (Content-Type application/json) that may hold params
// only, checked as a task's are (checkJSON, then strictly).
func decodeTrigger(w http.ResponseWriter, r *http.Request) (triggerRequest, error) {
	var req triggerRequest
	if err := decodeOptional(w, r, &req, maxTaskBody); err != nil {
		return req, err
	}
	req.Params = sundial.NormParams(req.Params)
	return req, sundial.CheckParams(req.Params)
}

// decodeOptional reads an optional body of at most maxBytes bytes into dst:
// none, or one of white space only, leaves dst as it is; any other is a
// JSON object (Content-Type application/json), checked (checkJSON) and
// decoded strictly.
func decodeOptional(w http.ResponseWriter, r *http.Request, dst any, maxBytes int64) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		return readError(r, err, maxBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := checkContentType(r); err != nil {
		return err
	}
	if err := checkJSON(body); err != nil {
		return err
	}
	return decodeStrict(body, dst)
}

// withStates gives each of ts its state block (sundial.Task.Health),
// read for all of them in one TaskStates call: their saved health and
// their latest runs that ended. It comes before taskView, which replaces
// the stored next_fire_time (the planner's cursor, which Health reads).
func (s *Server) withStates(ctx context.Context, ts []*sundial.Task, now time.Time) error {
	if len(ts) == 0 {
		return nil
	}
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	saved, last, err := s.store.TaskStates(ctx, ids, now)
	if err != nil {
		return err
	}
	for _, t := range ts {
		t.State = t.Health(saved[t.ID], last[t.ID], now)
	}
	return nil
}

// answerStates is withStates for the answer to a change already made,
// which a failed read does not undo: the tasks are then answered with the
// state of a task without history (their next fire alone), and the
// failure is logged.
func (s *Server) answerStates(r *http.Request, now time.Time, ts ...*sundial.Task) {
	err := s.withStates(r.Context(), ts, now)
	if err == nil {
		return
	}
	s.logger().LogAttrs(r.Context(), slog.LevelWarn, "read task states for an answer; answered without them",
		slog.String("component", "api"), slog.Int("tasks", len(ts)), slog.Any("err", err))
	for _, t := range ts {
		t.State = t.Health(nil, nil, now)
	}
}

// nextFire is the planner's cursor for t changed at now: its first fire
// after now (run_at for a one-off task), or nil for a task that is not
// enabled. An enabled bounded task with no fire left within its bounds
// (an end_at passed, max_runs reached) ends COMPLETED instead
// (sundial.Task.Arm).
func nextFire(t *sundial.Task, now time.Time) *time.Time {
	t.Arm(now)
	return t.NextFireTime
}

// taskView turns t, as stored, into the task an answer shows at now: its
// next_fire_time is the next fire that will really happen (see
// sundial.Task.NextFire; the stored one is the planner's cursor), its
// retry_policy has every key, its times are in UTC, the zone every
// response uses, and its secrets are masked (sundial.MaskTask). It
// changes t.
// defaultRetryPolicy is the default retry policy, every key written.
var defaultRetryPolicy = func() json.RawMessage {
	p, _ := sundial.ParseRetryPolicy(nil)
	b, _ := json.Marshal(p)
	return b
}()

func taskView(t *sundial.Task, now time.Time) *sundial.Task {
	t.NextFireTime = t.NextFire(now)
	// Every key of the policy in force: a task is stored so, but for one
	// stored with "{}" before it was (the default policy).
	if p := bytes.TrimSpace(t.RetryPolicy); len(p) == 0 || string(p) == "{}" || string(p) == "null" {
		t.RetryPolicy = defaultRetryPolicy
	}
	t.CreatedAt = t.CreatedAt.UTC()
	t.UpdatedAt = t.UpdatedAt.UTC()
	t.RunAt = utcPtr(t.RunAt)
	if t.Status != sundial.TaskDisabled {
		// An older node that enabled the task kept them (docs/design.md).
		t.DisabledReason, t.DisabledAt, t.DisabledBy = "", nil, ""
	}
	t.DisabledAt = utcPtr(t.DisabledAt)
	t.FollowRedirects = t.RedirectPolicyOf()
	sundial.MaskTask(t)
	return t
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// taskTarget names a task in the audit log.
func taskTarget(id int64) string { return "task/" + strconv.FormatInt(id, 10) }

// pathID parses the {id} of a path: a positive integer.
func pathID(r *http.Request) (int64, error) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, &sundial.Error{Code: sundial.EInvalid, Field: "id", Token: v,
			Message: "id must be a positive integer"}
	}
	return id, nil
}
