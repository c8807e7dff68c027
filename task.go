package sundial

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sundialhq/sundial/cron"
)

// ExecType says how a run is completed: SYNC by the HTTP answer, ASYNC by a
// later callback.
type ExecType string

const (
	ExecSync  ExecType = "SYNC"
	ExecAsync ExecType = "ASYNC"
)

// ConcurrencyPolicy decides what a fire does when max_concurrency runs of its
// task are already active (seed 001 section 8).
type ConcurrencyPolicy string

const (
	ConcurrencyQueue    ConcurrencyPolicy = "QUEUE"    // wait as QUEUED, first in first out, up to max_queue
	ConcurrencySkip     ConcurrencyPolicy = "SKIP"     // record a SKIPPED run (CONCURRENCY)
	ConcurrencyParallel ConcurrencyPolicy = "PARALLEL" // ignore the limit
)

// OverlapAction decides what a fire does while an earlier run of its task is
// still pending or running (seed 001 section 5 step 5).
type OverlapAction string

const (
	OverlapAllow      OverlapAction = "ALLOW"       // go on to the concurrency policy
	OverlapSkip       OverlapAction = "SKIP"        // record a SKIPPED run (OVERLAP)
	OverlapCancelPrev OverlapAction = "CANCEL_PREV" // cancel the running ones, then run
	OverlapParallel   OverlapAction = "PARALLEL"    // run, ignoring the concurrency limit
)

// FailureAction decides the attempt number, or a skip, after the task's last
// effective run failed (seed 001 section 5 step 6).
type FailureAction string

const (
	FailureRunNew FailureAction = "RUN_NEW" // attempt 1
	FailureSkip   FailureAction = "SKIP"    // skip once (recorded), then attempt previous + 2
	FailureRetry  FailureAction = "RETRY"   // attempt previous + 1
)

// CatchUpMode decides what happens to the fires missed while Sundial was
// down or the task could not be planned.
type CatchUpMode string

const (
	CatchUpNone    CatchUpMode = "NONE"    // count them in one MISFIRE record
	CatchUpCompact CatchUpMode = "COMPACT" // one run now stands for all of them
	CatchUpFull    CatchUpMode = "FULL"    // every missed fire, oldest first, up to catch_up_limit
)

// TaskStatus is whether a task plans fires.
type TaskStatus string

const (
	TaskEnabled  TaskStatus = "ENABLED"
	TaskDisabled TaskStatus = "DISABLED"
)

// Limits on task fields.
const (
	MaxNameLen         = 128
	MaxDescriptionLen  = 512
	MaxURLLen          = 2048
	MaxBodyTemplateLen = 64 << 10
	MaxTimeoutSeconds  = 24 * 3600
	DefaultMaxQueue    = 100
	DefaultCatchUp     = 100
	MaxCatchUpLimit    = 10000
)

// Task is a schedule and the HTTP call it makes. The JSON shape is the
// task API's (seed 001's table in snake_case).
type Task struct {
	ID                int64             `json:"id"`
	Name              string            `json:"name"`
	Description       string            `json:"description"`
	CronExpr          string            `json:"cron_expr"`
	Timezone          string            `json:"timezone"`
	ExecType          ExecType          `json:"exec_type"`
	HTTPMethod        string            `json:"http_method"`
	TargetURL         string            `json:"target_url"`
	Headers           map[string]string `json:"headers"`
	BodyTemplate      string            `json:"body_template"`
	TimeoutSeconds    int               `json:"timeout_seconds"` // 0: the server's executor.request_timeout
	RetryPolicy       json.RawMessage   `json:"retry_policy"`
	MaxConcurrency    int               `json:"max_concurrency"`
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrency_policy"`
	MaxQueue          int               `json:"max_queue"`
	OverlapAction     OverlapAction     `json:"overlap_action"`
	FailureAction     FailureAction     `json:"failure_action"`
	CatchUpMode       CatchUpMode       `json:"catch_up_mode"`
	CatchUpLimit      int               `json:"catch_up_limit"`
	CallbackMethod    string            `json:"callback_method"`
	CallbackTimeout   int               `json:"callback_timeout_sec"`
	Priority          int               `json:"priority"`
	Status            TaskStatus        `json:"status"`
	Version           int64             `json:"version"`
	CreatedAt         time.Time         `json:"created_at"`
	UpdatedAt         time.Time         `json:"updated_at"`
	NextFireTime      *time.Time        `json:"next_fire_time"`
}

// Schedule parses the task's expression and loads its zone.
func (t *Task) Schedule() (*cron.Schedule, *time.Location, error) {
	s, err := cron.Parse(t.CronExpr)
	if err != nil {
		return nil, nil, err
	}
	loc, err := LoadLocation(t.Timezone)
	if err != nil {
		return nil, nil, err
	}
	return s, loc, nil
}

var zones sync.Map // name -> *time.Location

// LoadLocation is time.LoadLocation with a cache: loading a zone reads and
// parses its file (about 7 µs and 5 KB here), and the planner needs the zone
// of every task it plans. Zones are few and a loaded one never changes.
func LoadLocation(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}

// NextAfter returns the task's first fire strictly after the instant after,
// in UTC, or nil when the schedule has no more fires. The task must be valid.
func (t *Task) NextAfter(after time.Time) *time.Time {
	s, loc, err := t.Schedule()
	if err != nil {
		return nil
	}
	next := s.Next(after.In(loc))
	if next.IsZero() {
		return nil
	}
	next = next.UTC()
	return &next
}

// Normalize fills defaults and normalises the fields of a task about to be
// created or replaced, then validates it. On error the task may be partly
// normalised; callers discard it.
func (t *Task) Normalize() error {
	t.Name = strings.TrimSpace(t.Name)
	if t.Timezone == "" {
		t.Timezone = "UTC"
	}
	if t.ExecType == "" {
		t.ExecType = ExecSync
	}
	t.HTTPMethod = strings.ToUpper(t.HTTPMethod)
	if t.HTTPMethod == "" {
		t.HTTPMethod = "POST"
	}
	if t.ConcurrencyPolicy == "" {
		t.ConcurrencyPolicy = ConcurrencyQueue
	}
	if t.MaxQueue == 0 {
		t.MaxQueue = DefaultMaxQueue
	}
	if t.OverlapAction == "" {
		t.OverlapAction = OverlapAllow
	}
	if t.FailureAction == "" {
		t.FailureAction = FailureRunNew
	}
	if t.CatchUpMode == "" {
		t.CatchUpMode = CatchUpNone
	}
	if t.CatchUpLimit == 0 {
		t.CatchUpLimit = DefaultCatchUp
	}
	if t.Status == "" {
		t.Status = TaskEnabled
	}
	if t.Headers == nil {
		t.Headers = map[string]string{}
	}
	if len(t.RetryPolicy) == 0 || string(t.RetryPolicy) == "null" {
		t.RetryPolicy = json.RawMessage("{}")
	}
	if t.CallbackMethod == "" {
		t.CallbackMethod = "POST"
	}
	t.CallbackMethod = strings.ToUpper(t.CallbackMethod)
	return t.validate()
}

func (t *Task) validate() error {
	for field, v := range map[string]string{"name": t.Name, "description": t.Description, "cron_expr": t.CronExpr,
		"timezone": t.Timezone, "target_url": t.TargetURL, "body_template": t.BodyTemplate} {
		if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			return Errorf(EInvalid, field, "%s contains a NUL byte or invalid UTF-8", field)
		}
	}
	switch {
	case t.Name == "":
		return Errorf(EInvalid, "name", "name is required")
	case utf8.RuneCountInString(t.Name) > MaxNameLen:
		return Errorf(EInvalid, "name", "name is longer than %d characters", MaxNameLen)
	case utf8.RuneCountInString(t.Description) > MaxDescriptionLen:
		return Errorf(EInvalid, "description", "description is longer than %d characters", MaxDescriptionLen)
	}
	if t.CronExpr == "" {
		return Errorf(EInvalid, "cron_expr", "cron_expr is required")
	}
	s, err := cron.Parse(t.CronExpr)
	if err != nil {
		pe, _ := err.(*cron.ParseError)
		if pe == nil {
			return Errorf(EInvalid, "cron_expr", "%v", err)
		}
		return &Error{Code: EInvalid, Field: "cron_expr", Token: pe.Token,
			Message: fmt.Sprintf("%s: %q: %s", pe.Field, pe.Token, pe.Reason)}
	}
	t.CronExpr = s.String()
	if _, err := LoadLocation(t.Timezone); err != nil || t.Timezone == "Local" {
		return &Error{Code: EInvalid, Field: "timezone", Token: t.Timezone,
			Message: "not an IANA time zone name (for example UTC, Europe/Berlin)"}
	}
	switch t.ExecType {
	case ExecSync:
	case ExecAsync:
		return &Error{Code: EInvalid, Field: "exec_type", Token: string(t.ExecType),
			Message: "ASYNC execution is not available yet; use SYNC"}
	default:
		return enumErr("exec_type", string(t.ExecType), "SYNC", "ASYNC")
	}
	switch t.HTTPMethod {
	case "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD":
	default:
		return enumErr("http_method", t.HTTPMethod, "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
	}
	if err := validateURL(t.TargetURL); err != nil {
		return err
	}
	for k, v := range t.Headers {
		if !validHeaderName(k) {
			return &Error{Code: EInvalid, Field: "headers", Token: k, Message: "not a valid HTTP header name"}
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return &Error{Code: EInvalid, Field: "headers", Token: k, Message: "header value contains a line break or NUL"}
		}
	}
	if len(t.BodyTemplate) > MaxBodyTemplateLen {
		return Errorf(EInvalid, "body_template", "body_template is larger than %d bytes", MaxBodyTemplateLen)
	}
	if t.TimeoutSeconds < 0 || t.TimeoutSeconds > MaxTimeoutSeconds {
		return Errorf(EInvalid, "timeout_seconds",
			"timeout_seconds must be from 1 to %d, or 0 for the server's executor.request_timeout", MaxTimeoutSeconds)
	}
	if err := validateObject("retry_policy", t.RetryPolicy); err != nil {
		return err
	}
	if t.MaxConcurrency < 0 {
		return Errorf(EInvalid, "max_concurrency", "max_concurrency must be 0 (no limit) or more")
	}
	switch t.ConcurrencyPolicy {
	case ConcurrencyQueue, ConcurrencySkip, ConcurrencyParallel:
	default:
		return enumErr("concurrency_policy", string(t.ConcurrencyPolicy), "QUEUE", "SKIP", "PARALLEL")
	}
	if t.MaxQueue < 1 || t.MaxQueue > 100000 {
		return Errorf(EInvalid, "max_queue", "max_queue must be from 1 to 100000")
	}
	switch t.OverlapAction {
	case OverlapAllow, OverlapSkip, OverlapCancelPrev, OverlapParallel:
	default:
		return enumErr("overlap_action", string(t.OverlapAction), "ALLOW", "SKIP", "CANCEL_PREV", "PARALLEL")
	}
	switch t.FailureAction {
	case FailureRunNew, FailureSkip, FailureRetry:
	default:
		return enumErr("failure_action", string(t.FailureAction), "RUN_NEW", "SKIP", "RETRY")
	}
	switch t.CatchUpMode {
	case CatchUpNone, CatchUpCompact, CatchUpFull:
	default:
		return enumErr("catch_up_mode", string(t.CatchUpMode), "NONE", "COMPACT", "FULL")
	}
	if t.CatchUpLimit < 1 || t.CatchUpLimit > MaxCatchUpLimit {
		return Errorf(EInvalid, "catch_up_limit", "catch_up_limit must be from 1 to %d", MaxCatchUpLimit)
	}
	switch t.CallbackMethod {
	case "GET", "POST", "PUT", "PATCH":
	default:
		return enumErr("callback_method", t.CallbackMethod, "GET", "POST", "PUT", "PATCH")
	}
	if t.CallbackTimeout < 0 {
		return Errorf(EInvalid, "callback_timeout_sec", "callback_timeout_sec must be 0 or more")
	}
	if t.Priority < -1000 || t.Priority > 1000 {
		return Errorf(EInvalid, "priority", "priority must be from -1000 to 1000")
	}
	switch t.Status {
	case TaskEnabled, TaskDisabled:
	default:
		return enumErr("status", string(t.Status), "ENABLED", "DISABLED")
	}
	return nil
}

func enumErr(field, got string, allowed ...string) *Error {
	return &Error{Code: EInvalid, Field: field, Token: got,
		Message: fmt.Sprintf("must be one of %s", strings.Join(allowed, ", "))}
}

func validateURL(raw string) error {
	if raw == "" {
		return Errorf(EInvalid, "target_url", "target_url is required")
	}
	if len(raw) > MaxURLLen {
		return Errorf(EInvalid, "target_url", "target_url is longer than %d bytes", MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &Error{Code: EInvalid, Field: "target_url", Token: raw,
			Message: "must be an absolute http or https URL"}
	}
	return nil
}

func validateObject(field string, raw json.RawMessage) error {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Errorf(EInvalid, field, "%s must be a JSON object", field)
	}
	return nil
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
