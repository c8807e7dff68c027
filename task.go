package sundial

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sundialhq/sundial/cron"
	"github.com/sundialhq/sundial/label"
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
	// A one-off task ends COMPLETED when its fire succeeded, FAILED when it
	// failed for good (retries used up, cancelled or skipped). The server
	// sets these; a client may only set ENABLED or DISABLED.
	TaskCompleted TaskStatus = "COMPLETED"
	TaskFailed    TaskStatus = "FAILED"
)

// Limits on task fields.
const (
	MaxNameLen          = 128
	MaxDescriptionLen   = 512
	MaxURLLen           = 2048
	MaxBodyTemplateLen  = 64 << 10
	MaxTimeoutSeconds   = 24 * 3600
	DefaultMaxQueue     = 100
	DefaultCatchUp      = 100
	MaxCatchUpLimit     = 10000
	MaxRequestIDLen     = 128
	MaxBizIDLen         = 128
	MaxParamsLen        = 64 << 10
	MaxDelaySeconds     = 10 * 366 * 24 * 3600 // ten years
	MaxCallbackTimeout  = 7 * 24 * 3600        // seconds
	MaxStartingDeadline = 366 * 24 * 3600      // seconds
	MaxJitterSeconds    = 3600
	DefaultDST          = "vixie"
	MaxMaxRuns          = 1_000_000_000
)

// Task is a schedule and the HTTP call it makes. The JSON shape is the
// task API's (seed 001's table in snake_case).
type Task struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Labels are the client's key/value pairs that selectors pick tasks
	// by (GET /tasks?selector=), in Kubernetes' syntax (see package
	// label); never nil once normalised.
	Labels   map[string]string `json:"labels"`
	CronExpr string            `json:"cron_expr"` // "" for a one-off task
	// RunAt is the one moment a one-off task fires (seed 003's push task,
	// seed 004's timer); nil for a cron task. DelaySeconds is its other
	// spelling on input: RunAt becomes the time of the request plus it.
	RunAt        *time.Time `json:"run_at"`
	DelaySeconds *int       `json:"delay_seconds,omitempty"`
	// RequestID is the client's idempotency key: creating a task with the
	// RequestID of a live task answers with that task when the request was
	// the same (RequestHash), and is a conflict when it was not.
	RequestID         string            `json:"request_id,omitempty"`
	RequestHash       string            `json:"-"`
	BizID             string            `json:"biz_id,omitempty"` // the client's business key, filterable
	Params            json.RawMessage   `json:"params,omitempty"` // any JSON: {{params}} and {{params.path}}
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
	CallbackTimeout   int               `json:"callback_timeout_sec"` // 0: the server's callback timeout
	// StartingDeadline is how late, in seconds, a fire of a cron task may
	// still start (Kubernetes CronJob's startingDeadlineSeconds); a fire
	// later than that was missed and follows CatchUpMode. 0: the server's
	// scheduler.misfire_threshold.
	StartingDeadline int `json:"starting_deadline_seconds"`
	// StartAt and EndAt bound the fires of a cron task: none is scheduled
	// before StartAt or after EndAt (both included; the bounds apply to a
	// fire's scheduled time, before its jitter). Nil: no bound. A task
	// whose schedule has no fire left within them ends COMPLETED (see
	// BoundsEnd).
	StartAt *time.Time `json:"start_at"`
	EndAt   *time.Time `json:"end_at"`
	// MaxRuns, when positive, is how many scheduled fires a cron task has:
	// once that many are counted (FireCount) it plans no more and ends
	// COMPLETED. 0: no limit.
	MaxRuns int `json:"max_runs"`
	// FireCount is how many fires of the task the planner has planned
	// (SCHEDULE and CATCH_UP runs, not manual triggers nor fires counted
	// missed in a MISFIRE record), each scheduled time counted once:
	// CountedThrough is the latest scheduled time counted, so a fire
	// planned again (after an outage or an edit) is not counted twice.
	// Server-set, kept across edits.
	FireCount      int        `json:"fire_count"`
	CountedThrough *time.Time `json:"-"`
	// JitterSeconds, when positive, delays each scheduled fire by a random
	// amount in [0, JitterSeconds) seconds, decided when the fire is
	// planned and recorded on its run (Run.DueAt is ScheduledTime plus it).
	JitterSeconds int `json:"jitter_seconds"`
	// DST is what a cron task's schedule does with the wall times that a
	// daylight-saving change skips or repeats (see cron.DST): vixie (the
	// default; docs/cron.md), skip_gap (a skipped wall time does not fire)
	// or repeat (a repeated wall time fires in both passes).
	DST string `json:"dst"`
	// Calendars names the calendars (Calendar) on whose days the task's
	// scheduled fires do not run: each such fire is recorded SKIPPED with
	// reason CALENDAR when it is planned. Never nil once normalised.
	Calendars []string `json:"calendars"`
	// PauseAfterFailures, when above 0, disables the task once that many
	// of its runs in a row failed for good (see AutoPause); 0: never.
	PauseAfterFailures int `json:"pause_after_failures"`
	// DependsOn are the task's parents (see dependency.go): it fires once
	// per logical time of their runs, as Join says, besides its schedule
	// if it has one. A task with parents may have no schedule. Join and
	// JoinDeadline (seconds; 0: DefaultJoinDeadline) are empty for a task
	// without parents.
	DependsOn    []Dependency `json:"depends_on,omitempty"`
	Join         JoinMode     `json:"join,omitempty"`
	JoinDeadline int          `json:"join_deadline_seconds,omitempty"`
	Priority     int          `json:"priority"`
	// FollowRedirects is which redirects a delivery follows (see
	// RedirectPolicy); "" is read as same_origin.
	FollowRedirects RedirectPolicy `json:"follow_redirects"`
	// SigningSecret, a Standard Webhooks secret ("whsec_" and base64), has
	// every delivery signed (webhook-id, webhook-timestamp,
	// webhook-signature). Write-only and sealed at rest like a secret
	// header (see SealTask); "" for none.
	SigningSecret string `json:"signing_secret,omitempty"`
	// OIDC, when set, has every delivery carry an OIDC ID token signed by
	// the cluster's key as Authorization: Bearer.
	OIDC   *OIDCOption `json:"oidc,omitempty"`
	Status TaskStatus  `json:"status"`
	// DisabledReason, DisabledAt and DisabledBy say why, when and by whom
	// (the actor of the request) a DISABLED task was disabled; a task
	// that is not DISABLED has none (see NoteDisabled).
	DisabledReason string     `json:"disabled_reason,omitempty"`
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
	DisabledBy     string     `json:"disabled_by,omitempty"`
	Version        int64      `json:"version"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	NextFireTime   *time.Time `json:"next_fire_time"`
	// State is the task's health (Health), in the API's answers only: nil
	// in the store and in the audit log.
	State *TaskHealth `json:"state,omitempty"`
}

// RedirectPolicy says which redirects a delivery follows. Whatever it
// says, a redirect from https to http is refused, every hop is checked by
// the outbound guard, and on a hop to another origin (scheme, host and
// port) the task's headers, Sundial's tokens and the body are dropped.
type RedirectPolicy string

const (
	RedirectNone       RedirectPolicy = "none"        // a 3xx answer is the outcome (a failure)
	RedirectSameOrigin RedirectPolicy = "same_origin" // only to the origin of target_url (the default)
	RedirectAny        RedirectPolicy = "any"         // to any origin
)

// OIDCOption is a task's OIDC ID token: its audience, the target_url
// when empty.
type OIDCOption struct {
	Audience string `json:"audience"`
}

// MaxAudienceLen bounds an OIDC audience.
const MaxAudienceLen = 2048

// RedirectPolicyOf is the task's redirect policy, the default for none.
func (t *Task) RedirectPolicyOf() RedirectPolicy {
	if t.FollowRedirects == "" {
		return RedirectSameOrigin
	}
	return t.FollowRedirects
}

// Audience is the aud of the task's OIDC tokens: the configured one, else
// target_url without its credentials, query or fragment.
func (t *Task) Audience(targetURL string) string {
	if t.OIDC != nil && t.OIDC.Audience != "" {
		return t.OIDC.Audience
	}
	u, err := url.Parse(targetURL)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	return u.String()
}

// OneOff reports whether the task fires once, at RunAt, instead of on a
// cron schedule.
func (t *Task) OneOff() bool { return t.CronExpr == "" && t.RunAt != nil }

// RetryPolicyOf returns the task's retry policy; a stored policy is valid,
// so an error (impossible) falls back to one delivery.
func (t *Task) RetryPolicyOf() RetryPolicy {
	p, err := ParseRetryPolicy(t.RetryPolicy)
	if err != nil {
		p.MaxAttempts = 1
	}
	return p
}

// MissAfter is how late a fire of the task may still start: its
// starting_deadline_seconds, or threshold (the server's misfire
// threshold) when it sets none. A later fire was missed.
func (t *Task) MissAfter(threshold time.Duration) time.Duration {
	if t.StartingDeadline > 0 {
		return time.Duration(t.StartingDeadline) * time.Second
	}
	return threshold
}

// FirstFire is the first fire of the task after now: RunAt for a one-off
// task (at once if RunAt has passed), the next cron time otherwise, and nil
// for a task that is not ENABLED.
func (t *Task) FirstFire(now time.Time) *time.Time {
	if t.Status != TaskEnabled {
		return nil
	}
	if t.OneOff() {
		at := t.RunAt.UTC()
		return &at
	}
	return t.NextAfter(now)
}

// NextFire is the next fire of the task that will really happen, seen at
// now, whether it is planned already or not: what a client is shown as
// next_fire_time. It is nil for a task that will not fire again.
//
// NextFireTime is the planner's cursor, not that: it is the first fire not
// yet planned (up to the planner's lookahead ahead, or further for a task
// planned up to its refill boundary), and every fire of an enabled cron
// task from now up to it is planned already. So for an enabled
// cron task the next fire is the schedule's first after now, unless the
// cursor is earlier (a fire that is overdue but still goes out) or the
// schedule has ended. An enabled one-off task fires at RunAt while its fire
// has not gone: while it is unplanned (the cursor is set; a RunAt that has
// passed then fires at once) or planned for a RunAt still ahead.
func (t *Task) NextFire(now time.Time) *time.Time {
	if t.Status != TaskEnabled {
		return nil
	}
	if t.OneOff() {
		if t.NextFireTime == nil && !t.RunAt.After(now) {
			return nil
		}
		at := t.RunAt.UTC()
		return &at
	}
	next := t.NextAfter(now)
	if t.NextFireTime != nil && (next == nil || t.NextFireTime.Before(*next)) {
		at := t.NextFireTime.UTC()
		return &at
	}
	return next
}

// InputHash identifies what a client asked for when it created the task:
// the writable fields as given (before defaults), with JSON values
// compacted and secrets masked (MaskTask): the hash is stored, and an
// unsalted hash of a secret would let whoever reads it test guesses.
// Two requests with the same request_id are the same request when their
// hashes are equal.
func (t *Task) InputHash() string {
	in := *t
	MaskTask(&in)
	in.ID, in.Version, in.CreatedAt, in.UpdatedAt, in.NextFireTime = 0, 0, time.Time{}, time.Time{}, nil
	in.DisabledAt, in.DisabledBy = nil, ""
	in.FireCount, in.CountedThrough = 0, nil
	in.RequestHash = ""
	compact := func(raw json.RawMessage) json.RawMessage {
		var b bytes.Buffer
		if len(raw) == 0 || json.Compact(&b, raw) != nil {
			return raw
		}
		return b.Bytes()
	}
	in.RetryPolicy, in.Params = compact(in.RetryPolicy), compact(in.Params)
	in.RunAt, in.StartAt, in.EndAt = utcOf(in.RunAt), utcOf(in.StartAt), utcOf(in.EndAt)
	// No labels are left out, so that a task without any hashes as it did
	// before tasks had labels: a request repeated across an upgrade is
	// still the same request.
	// The same goes for the schedule's bounds, max_runs and jitter: left
	// out when not given.
	// And dst and calendars.
	b, _ := json.Marshal(hashedTask{Task: &in, Labels: in.Labels, StartAt: in.StartAt, EndAt: in.EndAt,
		MaxRuns: in.MaxRuns, JitterSeconds: in.JitterSeconds, PauseAfterFailures: in.PauseAfterFailures,
		DST: in.DST, Calendars: in.Calendars})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// utcOf is *at in UTC, nil for nil.
func utcOf(at *time.Time) *time.Time {
	if at == nil {
		return nil
	}
	u := at.UTC()
	return &u
}

// hashedTask is a task as InputHash encodes it: its labels, when it has
// any, and its pause_after_failures, when set, come last, in place of the
// task's own fields.
type hashedTask struct {
	*Task
	Labels        map[string]string `json:"labels,omitempty"`
	StartAt       *time.Time        `json:"start_at,omitempty"`
	EndAt         *time.Time        `json:"end_at,omitempty"`
	MaxRuns       int               `json:"max_runs,omitempty"`
	FireCount     int               `json:"fire_count,omitempty"`
	JitterSeconds int               `json:"jitter_seconds,omitempty"`
	// PauseAfterFailures is left out when 0, as the hash was made
	// before tasks had it.
	PauseAfterFailures int `json:"pause_after_failures,omitempty"`
	// DST and Calendars, likewise, when given.
	DST       string   `json:"dst,omitempty"`
	Calendars []string `json:"calendars,omitempty"`
}

// Schedule parses the task's expression, with the task's DST policy, and
// loads its zone.
func (t *Task) Schedule() (*cron.Schedule, *time.Location, error) {
	s, err := cron.Parse(t.CronExpr)
	if err != nil {
		return nil, nil, err
	}
	if t.DST != "" && t.DST != DefaultDST {
		d, ok := cron.ParseDST(t.DST)
		if !ok {
			return nil, nil, fmt.Errorf("dst %q: not a policy", t.DST)
		}
		s = s.WithDST(d)
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
// The fire is within the task's bounds (Fires): none before StartAt (an
// "@every" schedule counts its intervals from StartAt), none after EndAt,
// none past MaxRuns.
func (t *Task) NextAfter(after time.Time) *time.Time {
	s, loc, err := t.Schedule()
	if err != nil {
		return nil
	}
	var next time.Time
	switch {
	case t.StartAt != nil && after.Before(*t.StartAt) && s.Interval() > 0:
		next = *t.StartAt
	case t.StartAt != nil && after.Before(*t.StartAt):
		// The first whole second at or after StartAt.
		next = s.Next(t.StartAt.Add(-time.Nanosecond).In(loc))
	default:
		next = s.Next(after.In(loc))
	}
	if next.IsZero() || !t.Fires(next) {
		return nil
	}
	next = next.UTC()
	return &next
}

// Fires reports whether the task's schedule may fire at at: at is within
// StartAt and EndAt (both included), and, for a task with MaxRuns, a fire
// is left to count or at was counted already (CountedThrough). Fires are
// counted as they are planned, so that every fire up to CountedThrough
// may still (again) be planned.
func (t *Task) Fires(at time.Time) bool {
	if t.StartAt != nil && at.Before(*t.StartAt) {
		return false
	}
	if t.EndAt != nil && at.After(*t.EndAt) {
		return false
	}
	return t.MaxRuns <= 0 || t.FireCount < t.MaxRuns || (t.CountedThrough != nil && !at.After(*t.CountedThrough))
}

// Bounded reports whether the task's schedule can end before the
// schedule's own end: it has an EndAt or a MaxRuns.
func (t *Task) Bounded() bool { return !t.OneOff() && (t.EndAt != nil || t.MaxRuns > 0) }

// Arm sets the planner's cursor of t, a task about to be written at now:
// its first fire (FirstFire). An ENABLED bounded task with no fire left
// within its bounds ends COMPLETED instead (EndBounded), as its last fire
// would have ended it: created past its end_at, or sent back with its
// max_runs reached.
func (t *Task) Arm(now time.Time) {
	t.NextFireTime = t.FirstFire(now)
	if t.NextFireTime == nil {
		t.EndBounded()
	}
}

// EndBounded ends t COMPLETED, as a change of it about to be written, if
// it is an ENABLED bounded task (Bounded): its caller found no fire left
// within its bounds (FirstFire is nil). It reports whether t ended.
func (t *Task) EndBounded() bool {
	if t.Status != TaskEnabled || !t.Bounded() {
		return false
	}
	t.Status = TaskCompleted
	return true
}

// Count counts the fire at at, planned now, against MaxRuns: it reports
// whether the fire is new (later than CountedThrough) and, if so, counts
// it. The planner calls it under the task's lock (Store.PlanDue), and the
// counters are written with the plan (Plan.FireCount).
func (t *Task) Count(at time.Time) bool {
	if t.CountedThrough != nil && !at.After(*t.CountedThrough) {
		return false
	}
	at = at.UTC()
	t.FireCount++
	t.CountedThrough = &at
	return true
}

// Normalize fills defaults and normalises the fields of a task about to be
// created, then validates it. now resolves delay_seconds into run_at. On
// error the task may be partly normalised; callers discard it.
func (t *Task) Normalize(now time.Time) error { return t.normalize(nil, now) }

// NormalizeReplacing is Normalize for a task that replaces cur, the task as
// stored (PUT): its status is decided from the status given and cur's (see
// WriteStatus), so that an omitted status keeps the current one and an
// ended one-off task is run again by a new run_at.
func (t *Task) NormalizeReplacing(cur *Task, now time.Time) error { return t.normalize(cur, now) }

func (t *Task) normalize(cur *Task, now time.Time) error {
	t.Name = strings.TrimSpace(t.Name)
	if cur != nil {
		// The planner's, kept across edits: a fire counted stays counted.
		t.FireCount, t.CountedThrough = cur.FireCount, cur.CountedThrough
	}
	// A new fire time: delay_seconds, or a run_at that is not the current.
	newTime := t.DelaySeconds != nil
	if t.DelaySeconds != nil {
		if t.RunAt != nil {
			return Errorf(EInvalid, "delay_seconds", "give run_at or delay_seconds, not both")
		}
		if d := *t.DelaySeconds; d < 0 || d > MaxDelaySeconds {
			return &Error{Code: EInvalid, Field: "delay_seconds", Token: fmt.Sprint(d),
				Message: fmt.Sprintf("must be from 0 to %d", MaxDelaySeconds)}
		}
		at := now.Add(time.Duration(*t.DelaySeconds) * time.Second).UTC().Truncate(time.Microsecond)
		t.RunAt, t.DelaySeconds = &at, nil
	}
	if t.RunAt != nil {
		at := t.RunAt.UTC().Truncate(time.Microsecond)
		t.RunAt = &at
		newTime = newTime || cur == nil || cur.RunAt == nil || !cur.RunAt.Equal(at)
		if t.Name == "" {
			t.Name = "once-" + randomHex(8)
		}
	}
	for _, b := range []**time.Time{&t.StartAt, &t.EndAt} {
		if *b != nil {
			at := (*b).UTC().Truncate(time.Microsecond)
			*b = &at
		}
	}
	t.Params = NormParams(t.Params)
	t.normalizeDeps()
	// Enum values are accepted in any case, and kept as documented.
	t.ExecType = ExecType(UpperASCII(string(t.ExecType)))
	t.HTTPMethod = UpperASCII(t.HTTPMethod)
	t.ConcurrencyPolicy = ConcurrencyPolicy(UpperASCII(string(t.ConcurrencyPolicy)))
	t.OverlapAction = OverlapAction(UpperASCII(string(t.OverlapAction)))
	t.FailureAction = FailureAction(UpperASCII(string(t.FailureAction)))
	t.CatchUpMode = CatchUpMode(UpperASCII(string(t.CatchUpMode)))
	t.CallbackMethod = UpperASCII(t.CallbackMethod)
	t.Status = TaskStatus(UpperASCII(string(t.Status)))
	if t.Timezone == "" {
		t.Timezone = "UTC"
	}
	if t.ExecType == "" {
		t.ExecType = ExecSync
	}
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
	if t.Headers == nil {
		t.Headers = map[string]string{}
	}
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.DST = strings.ToLower(strings.TrimSpace(t.DST))
	if t.DST == "" {
		t.DST = DefaultDST
	}
	if t.Calendars == nil {
		t.Calendars = []string{}
	}
	// Stored with every key, so a read shows the policy in force.
	policy, err := ParseRetryPolicy(t.RetryPolicy)
	if err != nil {
		return err
	}
	t.RetryPolicy, _ = json.Marshal(policy)
	if t.CallbackMethod == "" {
		t.CallbackMethod = "POST"
	}
	t.FollowRedirects = RedirectPolicy(strings.ToLower(string(t.FollowRedirects)))
	if t.FollowRedirects == "" {
		t.FollowRedirects = RedirectSameOrigin
	}
	if err := t.validate(); err != nil {
		return err
	}
	status, err := WriteStatus(t.Status, cur, newTime || t.CronExpr != "")
	if err != nil {
		return err
	}
	t.Status = status
	return nil
}

// Ended reports whether the status is the end of a one-off task.
func (s TaskStatus) Ended() bool { return s == TaskCompleted || s == TaskFailed }

// WriteStatus decides the status of a task a client writes, from the
// status the request gave ("" for none). cur is the task as stored when the
// request replaces it (PUT), nil when it creates one; rearm says the
// request gives the task a new fire time (a new run_at, delay_seconds, or a
// cron_expr), which runs an ended one-off task again.
//
//   - A new task is ENABLED unless DISABLED is given.
//   - A replacement without a status keeps the current one, and one that
//     gives the current status back changes nothing, COMPLETED and FAILED
//     included (a task sent back as GET returned it).
//   - An ended one-off task given a new fire time is ENABLED again, or
//     DISABLED if that is given; without one it cannot be set ENABLED or
//     DISABLED: there is no fire left to enable (409).
//   - COMPLETED and FAILED are otherwise the server's to set (400).
func WriteStatus(given TaskStatus, cur *Task, rearm bool) (TaskStatus, error) {
	switch given {
	case "", TaskEnabled, TaskDisabled, TaskCompleted, TaskFailed:
	default:
		return "", enumErr("status", string(given), "ENABLED", "DISABLED")
	}
	serverSet := &Error{Code: EInvalid, Field: "status", Token: string(given),
		Message: "COMPLETED and FAILED are set by the server when a one-off task ends; give ENABLED or DISABLED"}
	if cur == nil {
		switch given {
		case "":
			return TaskEnabled, nil
		case TaskCompleted, TaskFailed:
			return "", serverSet
		}
		return given, nil
	}
	if cur.Status.Ended() && rearm {
		switch given {
		case TaskDisabled:
			return TaskDisabled, nil
		case "", TaskEnabled, cur.Status:
			return TaskEnabled, nil
		}
		return "", serverSet
	}
	switch {
	case given == "" || given == cur.Status:
		return cur.Status, nil
	case given.Ended():
		serverSet.Message += ", or send the task's current status (" + string(cur.Status) + ") unchanged"
		return "", serverSet
	case cur.Status.Ended():
		return "", &Error{Code: EConflict, Field: "status", Token: string(given),
			Message: fmt.Sprintf("the task is a one-off task that has ended (%s); give a new run_at or delay_seconds to run it again", cur.Status)}
	}
	return given, nil
}

func (t *Task) validate() error {
	for field, v := range map[string]string{"name": t.Name, "description": t.Description, "cron_expr": t.CronExpr,
		"timezone": t.Timezone, "target_url": t.TargetURL, "body_template": t.BodyTemplate,
		"request_id": t.RequestID, "biz_id": t.BizID} {
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
	switch {
	case t.CronExpr == "" && t.RunAt == nil && !t.HasParents():
		return Errorf(EInvalid, "cron_expr", "give cron_expr for a recurring task, run_at or delay_seconds for a one-off task, or depends_on for a task fired by its parents")
	case t.CronExpr != "" && t.RunAt != nil:
		return Errorf(EInvalid, "run_at", "a task has cron_expr or run_at (delay_seconds), not both")
	case t.RunAt != nil && t.HasParents():
		return Errorf(EInvalid, "depends_on", "a one-off task (run_at, delay_seconds) cannot have depends_on: give cron_expr, or no schedule at all")
	case t.CronExpr != "":
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
	case t.RunAt != nil && (t.RunAt.Year() < 2000 || t.RunAt.Year() > 9999):
		return &Error{Code: EInvalid, Field: "run_at", Token: t.RunAt.Format(time.RFC3339),
			Message: "run_at must be a time from the year 2000 to 9999"}
	}
	if len(t.RequestID) > MaxRequestIDLen {
		return Errorf(EInvalid, "request_id", "request_id is longer than %d bytes", MaxRequestIDLen)
	}
	if len(t.BizID) > MaxBizIDLen {
		return Errorf(EInvalid, "biz_id", "biz_id is longer than %d bytes", MaxBizIDLen)
	}
	if err := CheckParams(t.Params); err != nil {
		return err
	}
	if err := CheckLabels(t.Labels); err != nil {
		return err
	}
	if _, err := LoadLocation(t.Timezone); err != nil || t.Timezone == "Local" {
		return &Error{Code: EInvalid, Field: "timezone", Token: t.Timezone,
			Message: "not an IANA time zone name (for example UTC, Europe/Berlin)"}
	}
	switch t.ExecType {
	case ExecSync:
	case ExecAsync:
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
	if err := CheckHeaders(t.Headers); err != nil {
		return err
	}
	if len(t.BodyTemplate) > MaxBodyTemplateLen {
		return Errorf(EInvalid, "body_template", "body_template is larger than %d bytes", MaxBodyTemplateLen)
	}
	if t.TimeoutSeconds < 0 || t.TimeoutSeconds > MaxTimeoutSeconds {
		return Errorf(EInvalid, "timeout_seconds",
			"timeout_seconds must be from 1 to %d, or 0 for the server's executor.request_timeout", MaxTimeoutSeconds)
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
	if t.CallbackTimeout < 0 || t.CallbackTimeout > MaxCallbackTimeout {
		return Errorf(EInvalid, "callback_timeout_sec",
			"callback_timeout_sec must be from 1 to %d, or 0 for the server's callback timeout", MaxCallbackTimeout)
	}
	if t.PauseAfterFailures < 0 || t.PauseAfterFailures > MaxPauseAfterFailures {
		return Errorf(EInvalid, "pause_after_failures",
			"pause_after_failures must be from 1 to %d, or 0 never to pause the task", MaxPauseAfterFailures)
	}
	if t.StartingDeadline < 0 || t.StartingDeadline > MaxStartingDeadline {
		return Errorf(EInvalid, "starting_deadline_seconds",
			"starting_deadline_seconds must be from 1 to %d, or 0 for the server's scheduler.misfire_threshold", MaxStartingDeadline)
	}
	if err := t.validateBounds(); err != nil {
		return err
	}
	if err := t.validateDeps(); err != nil {
		return err
	}
	if err := t.validateCalendars(); err != nil {
		return err
	}
	if t.Priority < -1000 || t.Priority > 1000 {
		return Errorf(EInvalid, "priority", "priority must be from -1000 to 1000")
	}
	switch t.FollowRedirects {
	case RedirectNone, RedirectSameOrigin, RedirectAny:
	default:
		return enumErr("follow_redirects", string(t.FollowRedirects), "none", "same_origin", "any")
	}
	if err := CheckSigningSecret(t.SigningSecret); err != nil {
		return err
	}
	if t.OIDC != nil {
		if len(t.OIDC.Audience) > MaxAudienceLen || strings.ContainsRune(t.OIDC.Audience, 0) || !utf8.ValidString(t.OIDC.Audience) {
			return Errorf(EInvalid, "oidc.audience", "oidc.audience must be valid UTF-8 text of at most %d bytes", MaxAudienceLen)
		}
		for k := range t.Headers {
			if strings.EqualFold(k, "Authorization") {
				return &Error{Code: EInvalid, Field: "oidc", Token: k,
					Message: "a task with oidc sends its ID token as Authorization; remove the Authorization header or oidc"}
			}
		}
	}
	return nil
}

// validateBounds checks start_at, end_at, max_runs and jitter_seconds.
func (t *Task) validateBounds() error {
	for _, b := range []struct {
		field string
		at    *time.Time
	}{{"start_at", t.StartAt}, {"end_at", t.EndAt}} {
		if b.at == nil {
			continue
		}
		if t.CronExpr == "" {
			return &Error{Code: EInvalid, Field: b.field, Token: b.at.Format(time.RFC3339Nano),
				Message: b.field + " bounds the fires of a cron task; a one-off task fires once, at run_at"}
		}
		if b.at.Year() < 2000 || b.at.Year() > 9999 {
			return &Error{Code: EInvalid, Field: b.field, Token: b.at.Format(time.RFC3339Nano),
				Message: b.field + " must be a time from the year 2000 to 9999"}
		}
	}
	if t.StartAt != nil && t.EndAt != nil && !t.EndAt.After(*t.StartAt) {
		return &Error{Code: EInvalid, Field: "end_at", Token: t.EndAt.Format(time.RFC3339Nano),
			Message: "end_at must be after start_at (" + t.StartAt.Format(time.RFC3339Nano) + ")"}
	}
	switch {
	case t.MaxRuns < 0 || t.MaxRuns > MaxMaxRuns:
		return &Error{Code: EInvalid, Field: "max_runs", Token: fmt.Sprint(t.MaxRuns),
			Message: fmt.Sprintf("max_runs must be from 1 to %d, or 0 for no limit", MaxMaxRuns)}
	case t.MaxRuns > 0 && t.CronExpr == "":
		return &Error{Code: EInvalid, Field: "max_runs", Token: fmt.Sprint(t.MaxRuns),
			Message: "max_runs limits the fires of a cron task; a one-off task fires once"}
	case t.JitterSeconds < 0 || t.JitterSeconds > MaxJitterSeconds:
		return &Error{Code: EInvalid, Field: "jitter_seconds", Token: fmt.Sprint(t.JitterSeconds),
			Message: fmt.Sprintf("jitter_seconds must be from 0 (none) to %d", MaxJitterSeconds)}
	}
	return nil
}

// validateCalendars checks dst and the names in calendars (whether each
// calendar exists is the API's to check, against the store).
func (t *Task) validateCalendars() error {
	if _, ok := cron.ParseDST(t.DST); !ok {
		return enumErr("dst", t.DST, "vixie", "skip_gap", "repeat")
	}
	if t.CronExpr == "" && t.DST != DefaultDST {
		return &Error{Code: EInvalid, Field: "dst", Token: t.DST,
			Message: "dst applies to the schedule of a cron task; a one-off task fires at run_at"}
	}
	if len(t.Calendars) > 0 && t.CronExpr == "" {
		return Errorf(EInvalid, "calendars", "calendars skip the fires of a cron task; a one-off task fires once, at run_at")
	}
	if len(t.Calendars) > MaxCalendarsPerTask {
		return Errorf(EInvalid, "calendars", "a task references at most %d calendars", MaxCalendarsPerTask)
	}
	for i, name := range t.Calendars {
		field := fmt.Sprintf("calendars[%d]", i)
		if err := CheckCalendarName(field, name); err != nil {
			return err
		}
		for _, prev := range t.Calendars[:i] {
			if prev == name {
				return &Error{Code: EInvalid, Field: field, Token: name, Message: "calendar " + name + " is listed twice"}
			}
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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
		return &Error{Code: EInvalid, Field: "target_url", Token: RedactURL(raw),
			Message: "must be an absolute http or https URL"}
	}
	return nil
}

// CheckLabels refuses labels that break Kubernetes' rules (label.Check),
// naming the label: field labels.<key>, the key or the value as token.
func CheckLabels(labels map[string]string) error {
	err := label.Check(labels)
	le, ok := err.(*label.Error)
	switch {
	case err == nil:
		return nil
	case !ok:
		return &Error{Code: EInvalid, Field: "labels", Message: "labels: " + err.Error()}
	}
	field := "labels." + le.Key
	if le.Key == "" {
		field = "labels"
	}
	if le.OnValue {
		return &Error{Code: EInvalid, Field: field, Token: le.Value,
			Message: fmt.Sprintf("label %q: not a label value: %s", le.Key, le.Reason)}
	}
	return &Error{Code: EInvalid, Field: field, Token: le.Key,
		Message: fmt.Sprintf("label %q: not a label key: %s", le.Key, le.Reason)}
}

// ParseSelector reads a label selector (label.Parse) given as the field
// (or query parameter) field, as a client error naming it: the position
// and the problem in the message, the offending text as token.
func ParseSelector(field, text string) (label.Selector, error) {
	sel, err := label.Parse(text)
	if err == nil {
		return sel, nil
	}
	pe, ok := err.(*label.ParseError)
	if !ok {
		return nil, &Error{Code: EInvalid, Field: field, Message: field + ": " + err.Error()}
	}
	return nil, &Error{Code: EInvalid, Field: field, Token: pe.Token,
		Message: fmt.Sprintf("%s: at character %d: %s (the syntax is Kubernetes': k=v, k!=v, k in (a,b), k notin (a,b), k, !k, separated by commas)",
			field, pe.Pos, pe.Reason)}
}

// NormParams is params as a task or run stores them: nil for none, which a
// JSON null also means.
func NormParams(p json.RawMessage) json.RawMessage {
	if len(p) == 0 || string(p) == "null" {
		return nil
	}
	return p
}

// CheckParams refuses params (of a task, or of a manual run) that are
// larger than MaxParamsLen or not JSON. Nil, none, passes.
func CheckParams(p json.RawMessage) error {
	if len(p) > MaxParamsLen {
		return Errorf(EInvalid, "params", "params are larger than %d bytes", MaxParamsLen)
	}
	if p != nil && !json.Valid(p) {
		return Errorf(EInvalid, "params", "params must be JSON")
	}
	return nil
}
