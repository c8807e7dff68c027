package sundial

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Alerts (docs/alerts.md). Channels say where a notification goes, rules
// say when a task's outcomes open an incident, and an incident, one open
// per (rule, task) at a time, sends a notification when it opens, again
// every repeat_every while it stays open, and once when it resolves. This
// file holds the types and every decision about them; the scheduler's
// alerter (scheduler/alerter.go) applies them where outcomes are
// recorded, and package alert delivers the notifications.

// ChannelKind is how a channel delivers.
type ChannelKind string

// Channel kinds.
const (
	// ChannelWebhook POSTs a JSON notification, signed like a delivery
	// (Standard Webhooks) when the channel has a signing secret.
	ChannelWebhook ChannelKind = "webhook"
	// ChannelSlack POSTs {"text": ...} to a Slack-compatible incoming
	// webhook.
	ChannelSlack ChannelKind = "slack"
	// ChannelEmail sends a mail over SMTP.
	ChannelEmail ChannelKind = "email"
)

// SMTP TLS modes of an email channel.
const (
	SMTPStartTLS = "starttls" // STARTTLS required before AUTH and MAIL (the default)
	SMTPTLS      = "tls"      // TLS from the first byte (port 465)
	SMTPNoTLS    = "none"     // plaintext; AUTH only to a loopback server
)

// AlertChannel is a stored channel. Its secrets (a webhook's
// signing_secret, a Slack channel's url, an SMTP password) are sealed at
// rest (SealChannel) and never shown (MaskChannel).
type AlertChannel struct {
	ID   int64       `json:"id"`
	Name string      `json:"name"`
	Kind ChannelKind `json:"kind"`
	// URL is where a webhook or a Slack channel POSTs.
	URL string `json:"url,omitempty"`
	// SigningSecret signs a webhook's notifications ("whsec_...").
	SigningSecret string `json:"signing_secret,omitempty"`
	// SMTP is an email channel's server and addresses.
	SMTP *SMTPSettings `json:"smtp,omitempty"`

	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SMTPSettings are an email channel's server, credentials and addresses.
type SMTPSettings struct {
	Host     string   `json:"host"`
	Port     int      `json:"port"`
	Username string   `json:"username,omitempty"`
	Password string   `json:"password,omitempty"`
	From     string   `json:"from"`
	To       []string `json:"to"`
	// TLS is starttls (the default), tls or none.
	TLS string `json:"tls,omitempty"`
}

// alertName is what the name of a channel or a rule may be.
var alertName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func checkAlertName(name string) error {
	if !alertName.MatchString(name) {
		e := Errorf(EInvalid, "name", "name is required: 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit")
		e.Token = name
		return e
	}
	return nil
}

// Validate refuses a channel that cannot deliver, naming the field.
func (c *AlertChannel) Validate() error {
	if err := checkAlertName(c.Name); err != nil {
		return err
	}
	switch c.Kind {
	case ChannelWebhook, ChannelSlack:
		if c.SMTP != nil {
			return Errorf(EInvalid, "smtp", "smtp is for an email channel, not a %s one", c.Kind)
		}
		if c.URL == "" {
			return Errorf(EInvalid, "url", "url is required for a %s channel", c.Kind)
		}
		if !Sealed(c.URL) {
			u, err := url.Parse(c.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return Errorf(EInvalid, "url", "url must be an absolute http or https URL")
			}
		}
		if c.Kind == ChannelSlack && c.SigningSecret != "" {
			return Errorf(EInvalid, "signing_secret", "a slack channel is not signed; signing_secret is for a webhook channel")
		}
		if c.SigningSecret != "" && c.SigningSecret != Masked && !Sealed(c.SigningSecret) {
			if err := CheckSigningSecret(c.SigningSecret); err != nil {
				return err
			}
		}
	case ChannelEmail:
		if c.URL != "" || c.SigningSecret != "" {
			return Errorf(EInvalid, "url", "an email channel has smtp settings, not a url or a signing_secret")
		}
		s := c.SMTP
		if s == nil {
			return Errorf(EInvalid, "smtp", "smtp is required for an email channel: host, port, from, to")
		}
		switch {
		case s.Host == "" || strings.ContainsAny(s.Host, "/: "):
			return Errorf(EInvalid, "smtp.host", "smtp.host must be a host name or address, without a port")
		case s.Port < 1 || s.Port > 65535:
			return Errorf(EInvalid, "smtp.port", "smtp.port must be from 1 to 65535 (587 for STARTTLS, 465 for TLS)")
		case s.TLS != "" && s.TLS != SMTPStartTLS && s.TLS != SMTPTLS && s.TLS != SMTPNoTLS:
			return Errorf(EInvalid, "smtp.tls", "smtp.tls must be starttls, tls or none")
		case s.Password != "" && s.Username == "":
			return Errorf(EInvalid, "smtp.username", "smtp.username is required with a password")
		case len(s.To) == 0 || len(s.To) > 50:
			return Errorf(EInvalid, "smtp.to", "smtp.to must list 1 to 50 addresses")
		}
		if _, err := mail.ParseAddress(s.From); err != nil {
			return Errorf(EInvalid, "smtp.from", "smtp.from is not a mail address: %v", err)
		}
		for i, to := range s.To {
			if _, err := mail.ParseAddress(to); err != nil {
				return Errorf(EInvalid, fmt.Sprintf("smtp.to[%d]", i), "not a mail address: %v", err)
			}
		}
	default:
		e := Errorf(EInvalid, "kind", "kind must be webhook, slack or email")
		e.Token = string(c.Kind)
		return e
	}
	return nil
}

// channelSecrets are the fields of a channel that hold secrets, by name.
func channelSecrets(c *AlertChannel) map[string]*string {
	m := map[string]*string{"signing_secret": &c.SigningSecret}
	if c.Kind == ChannelSlack {
		m["url"] = &c.URL // a Slack webhook's URL is its credential
	}
	if c.SMTP != nil {
		m["smtp.password"] = &c.SMTP.Password
	}
	return m
}

// SealChannel seals c's secrets before it is stored. A value sent back
// masked keeps cur's (the channel c replaces; nil for a create). With no
// Sealer, a channel with a secret is refused. It changes c.
func SealChannel(c, cur *AlertChannel, s Sealer) error {
	var stored map[string]*string
	if cur != nil {
		stored = channelSecrets(cur)
	}
	for field, v := range channelSecrets(c) {
		switch {
		case *v == "":
			continue
		case *v == Masked:
			if stored == nil || stored[field] == nil || *stored[field] == "" {
				return Errorf(EInvalid, field, "%s is %q, which keeps a stored secret, and there is none", field, Masked)
			}
			if field == "smtp.password" && (cur.SMTP.Host != c.SMTP.Host || cur.SMTP.Port != c.SMTP.Port) {
				// The stored password must not follow the channel to another
				// server, which would receive it in AUTH.
				return Errorf(EInvalid, field, "smtp.password must be given again when smtp.host or smtp.port changes")
			}
			*v = *stored[field]
			continue
		case Sealed(*v):
			return Errorf(EInvalid, field, "%s looks sealed; send the secret itself (or %q to keep it)", field, Masked)
		case s == nil:
			return noKey(field, "")
		}
		sealed, err := s.Seal(*v)
		if err != nil {
			return &Error{Code: EInternal, Field: field, Message: "sealing a secret failed", Err: err}
		}
		*v = sealed
	}
	return nil
}

// OpenChannel returns a copy of c, as stored, with its secrets opened for
// a delivery. The error names the field, never its value.
func OpenChannel(c *AlertChannel, s Sealer) (*AlertChannel, error) {
	o := *c
	if c.SMTP != nil {
		smtp := *c.SMTP
		o.SMTP = &smtp
	}
	for field, v := range channelSecrets(&o) {
		if !Sealed(*v) {
			continue
		}
		if s == nil {
			return nil, fmt.Errorf("channel %s: %s is sealed and this node has no secrets key", c.Name, field)
		}
		plain, err := s.Open(*v)
		if err != nil {
			return nil, fmt.Errorf("channel %s: %s is sealed with a key this node does not have", c.Name, field)
		}
		*v = plain
	}
	return &o, nil
}

// ResealChannel returns a copy of c, as stored, whose every secret that
// is set is what f makes of it (f gets the field's name, for a report):
// the secrets key's rotation (sundial secrets reseal).
func ResealChannel(c *AlertChannel, f func(field, v string) (string, error)) (*AlertChannel, error) {
	o := *c
	if c.SMTP != nil {
		smtp := *c.SMTP
		smtp.To = slices.Clone(c.SMTP.To)
		o.SMTP = &smtp
	}
	secrets := channelSecrets(&o)
	for _, field := range slices.Sorted(maps.Keys(secrets)) {
		v := secrets[field]
		if *v == "" {
			continue
		}
		next, err := f(field, *v)
		if err != nil {
			return nil, err
		}
		*v = next
	}
	return &o, nil
}

// MaskChannel returns a copy of c for an answer: every secret it holds
// shown as Masked.
func MaskChannel(c *AlertChannel) *AlertChannel {
	o := *c
	if c.SMTP != nil {
		smtp := *c.SMTP
		o.SMTP = &smtp
	}
	for _, v := range channelSecrets(&o) {
		if *v != "" {
			*v = Masked
		}
	}
	return &o
}

// ConditionKind is what a rule watches.
type ConditionKind string

// Alert conditions. Each opens its rule's incident for a task on an
// outcome (Judge) and resolves it as docs/alerts.md says.
const (
	// CondRunFailed: a run failed for good (FAILED, TIMEOUT,
	// FAILED_TIMEOUT after its retries; a cancel is not a failure).
	CondRunFailed ConditionKind = "run_failed"
	// CondConsecutiveFailures: the task's latest Count runs all failed.
	CondConsecutiveFailures ConditionKind = "consecutive_failures"
	// CondFailureRate: at least Rate of the runs that ended within
	// Window failed, out of at least MinRuns.
	CondFailureRate ConditionKind = "failure_rate"
	// CondMissedFire: a fire was recorded SKIPPED MISFIRE (no node
	// could start it within its starting deadline).
	CondMissedFire ConditionKind = "missed_fire"
	// CondLateStart: a fire's call started more than Threshold after it
	// was due.
	CondLateStart ConditionKind = "late_start"
	// CondLongRun: a run's call took longer than Threshold.
	CondLongRun ConditionKind = "long_run"
	// CondCallbackOverdue: an ASYNC run's callback did not come by its
	// deadline (FAILED_TIMEOUT).
	CondCallbackOverdue ConditionKind = "callback_overdue"
	// CondSkipped: a fire was skipped for one of Reasons (OVERLAP,
	// CONCURRENCY, QUEUE_FULL by default).
	CondSkipped ConditionKind = "skipped"
	// CondAutoPaused: the task paused itself (pause_after_failures).
	CondAutoPaused ConditionKind = "auto_paused"
)

var conditionKinds = []ConditionKind{CondRunFailed, CondConsecutiveFailures, CondFailureRate, CondMissedFire,
	CondLateStart, CondLongRun, CondCallbackOverdue, CondSkipped, CondAutoPaused}

// Duration is a time.Duration written in JSON as Go writes it ("90s",
// "1h30m").
type Duration time.Duration

// MarshalJSON writes d as "1h0m0s", or "0s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "90s", "5m", "1h30m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf(`a duration is a string such as "90s", "5m" or "1h30m"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf(`%q is not a duration such as "90s", "5m" or "1h30m"`, s)
	}
	*d = Duration(v)
	return nil
}

// AlertCondition is what a rule watches, with its thresholds.
type AlertCondition struct {
	Kind ConditionKind `json:"kind"`
	// Count is consecutive_failures' number of runs (>= 1).
	Count int `json:"count,omitempty"`
	// Rate (0 < Rate <= 1), Window and MinRuns are failure_rate's.
	Rate    float64  `json:"rate,omitempty"`
	Window  Duration `json:"window,omitempty"`
	MinRuns int      `json:"min_runs,omitempty"`
	// Threshold is late_start's lag and long_run's duration.
	Threshold Duration `json:"threshold,omitempty"`
	// Reasons are skipped's skip reasons; none: OVERLAP, CONCURRENCY,
	// QUEUE_FULL.
	Reasons []SkipReason `json:"reasons,omitempty"`
}

// MaxFailureRateRuns bounds the runs failure_rate reads of a window.
const MaxFailureRateRuns = 1000

// DefaultSkipReasons are the reasons a skipped rule watches by default.
func DefaultSkipReasons() []SkipReason {
	return []SkipReason{SkipOverlap, SkipConcurrency, SkipQueueFull}
}

// Silence is a window during which a rule's notifications are held: an
// absolute one (From, To), or a daily one (Start to End wall-clock times,
// "22:00" to "06:00" across midnight, on Days, in Timezone).
type Silence struct {
	From *time.Time `json:"from,omitempty"`
	To   *time.Time `json:"to,omitempty"`

	Start    string   `json:"start,omitempty"`
	End      string   `json:"end,omitempty"`
	Days     []string `json:"days,omitempty"` // mon, tue, ...: the day a window starts; none: every day
	Timezone string   `json:"timezone,omitempty"`
}

var weekdays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// AlertRule says which tasks a rule watches (one task, or those a label
// selector matches), what it watches, and where it notifies.
type AlertRule struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// TaskID is the task it watches, 0 with a Selector; TaskName is its
	// name, as a client may give it instead.
	TaskID   int64  `json:"task_id,omitempty"`
	TaskName string `json:"task,omitempty"`
	// Selector is a label selector of the tasks it watches.
	Selector  string         `json:"selector,omitempty"`
	Condition AlertCondition `json:"condition"`
	// RepeatEvery, when set, notifies again while an incident stays open.
	RepeatEvery Duration `json:"repeat_every,omitempty"`
	// Silences are windows during which its notifications are held.
	Silences []Silence `json:"silences,omitempty"`
	// Channels are the names of the channels it notifies.
	Channels []string `json:"channels"`

	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// MinRepeatEvery is the shortest repeat_every.
const MinRepeatEvery = time.Minute

// Validate refuses a rule that breaks a rule of its own, naming the
// field. The task and the channels it names are checked by the caller,
// which can read them.
func (r *AlertRule) Validate() error {
	if err := checkAlertName(r.Name); err != nil {
		return err
	}
	switch {
	case r.TaskID == 0 && r.TaskName == "" && r.Selector == "":
		return Errorf(EInvalid, "task", "a rule watches a task (task: its id or name) or the tasks of a selector")
	case (r.TaskID != 0 || r.TaskName != "") && r.Selector != "":
		return Errorf(EInvalid, "selector", "a rule watches a task or a selector, not both")
	case len(r.Channels) == 0 || len(r.Channels) > 20:
		return Errorf(EInvalid, "channels", "channels must name 1 to 20 channels")
	case r.RepeatEvery != 0 && time.Duration(r.RepeatEvery) < MinRepeatEvery:
		return Errorf(EInvalid, "repeat_every", "repeat_every must be at least %s, or absent", MinRepeatEvery)
	case len(r.Silences) > 20:
		return Errorf(EInvalid, "silences", "at most 20 silences")
	}
	if r.Selector != "" {
		if _, err := ParseSelector("selector", r.Selector); err != nil {
			return err
		}
	}
	if err := r.Condition.validate(); err != nil {
		return err
	}
	for i, s := range r.Silences {
		if err := s.validate(fmt.Sprintf("silences[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

func (c *AlertCondition) validate() error {
	f := func(field, format string, args ...any) error {
		return Errorf(EInvalid, "condition."+field, format, args...)
	}
	if !slices.Contains(conditionKinds, c.Kind) {
		names := make([]string, len(conditionKinds))
		for i, k := range conditionKinds {
			names[i] = string(k)
		}
		e := f("kind", "condition.kind must be one of %s", strings.Join(names, ", "))
		e.(*Error).Token = string(c.Kind)
		return e
	}
	uses := map[ConditionKind]string{CondConsecutiveFailures: "count", CondFailureRate: "rate window min_runs",
		CondLateStart: "threshold", CondLongRun: "threshold", CondSkipped: "reasons"}
	for _, p := range []struct {
		name string
		set  bool
	}{{"count", c.Count != 0}, {"rate", c.Rate != 0}, {"window", c.Window != 0}, {"min_runs", c.MinRuns != 0},
		{"threshold", c.Threshold != 0}, {"reasons", len(c.Reasons) > 0}} {
		if p.set && !slices.Contains(strings.Fields(uses[c.Kind]), p.name) {
			return f(p.name, "%s is not a setting of %s", p.name, c.Kind)
		}
	}
	switch c.Kind {
	case CondConsecutiveFailures:
		if c.Count < 1 || c.Count > 100 {
			return f("count", "consecutive_failures needs count from 1 to 100")
		}
	case CondFailureRate:
		switch {
		case c.Rate <= 0 || c.Rate > 1:
			return f("rate", "failure_rate needs rate above 0 and at most 1 (0.5: half the runs)")
		case c.Window < Duration(time.Minute) || c.Window > Duration(7*24*time.Hour):
			return f("window", "failure_rate needs window from 1m to 168h")
		case c.MinRuns < 0 || c.MinRuns > MaxFailureRateRuns:
			return f("min_runs", "min_runs must be from 0 to %d", MaxFailureRateRuns)
		}
	case CondLateStart, CondLongRun:
		if c.Threshold < Duration(time.Second) {
			return f("threshold", "%s needs a threshold of at least 1s", c.Kind)
		}
	case CondSkipped:
		for i, r := range c.Reasons {
			if r != SkipOverlap && r != SkipConcurrency && r != SkipQueueFull && r != SkipFailure && r != SkipMisfire {
				e := f(fmt.Sprintf("reasons[%d]", i), "a skipped rule watches OVERLAP, CONCURRENCY, QUEUE_FULL, FAILURE or MISFIRE")
				e.(*Error).Token = string(r)
				return e
			}
		}
	}
	return nil
}

func (s *Silence) validate(field string) error {
	absolute := s.From != nil || s.To != nil
	daily := s.Start != "" || s.End != "" || len(s.Days) > 0 || s.Timezone != ""
	switch {
	case absolute && daily:
		return Errorf(EInvalid, field, "a silence is absolute (from, to) or daily (start, end, days, timezone), not both")
	case absolute:
		if s.From == nil || s.To == nil || !s.To.After(*s.From) {
			return Errorf(EInvalid, field+".to", "an absolute silence needs from and a later to")
		}
	case daily:
		for _, p := range []struct{ name, v string }{{"start", s.Start}, {"end", s.End}} {
			if _, err := time.Parse("15:04", p.v); err != nil {
				return Errorf(EInvalid, field+"."+p.name, "%s must be a time of day, \"22:00\"", p.name)
			}
		}
		if s.Start == s.End {
			return Errorf(EInvalid, field+".end", "a daily silence's end must differ from its start")
		}
		for i, d := range s.Days {
			if !slices.Contains(weekdays, strings.ToLower(d)) {
				return Errorf(EInvalid, fmt.Sprintf("%s.days[%d]", field, i), "days are mon, tue, wed, thu, fri, sat, sun")
			}
		}
		if _, err := LoadLocation(s.Timezone); err != nil {
			return Errorf(EInvalid, field+".timezone", "unknown timezone %q", s.Timezone)
		}
	default:
		return Errorf(EInvalid, field, "a silence needs from and to, or start and end")
	}
	return nil
}

// SilencedUntil reports whether t falls in one of silences, and if so
// when the silence that holds it ends (the end of a chain of windows that
// overlap or touch).
func SilencedUntil(silences []Silence, t time.Time) (time.Time, bool) {
	end, held := t, false
	for range 50 { // windows that chain: bounded
		moved := false
		for _, s := range silences {
			if e, ok := s.endOf(end); ok && e.After(end) {
				end, held, moved = e, true, true
			}
		}
		if !moved {
			break
		}
	}
	return end, held
}

// endOf returns the end of s's window that holds t, if one does.
func (s Silence) endOf(t time.Time) (time.Time, bool) {
	if s.From != nil {
		if !t.Before(*s.From) && t.Before(*s.To) {
			return *s.To, true
		}
		return time.Time{}, false
	}
	loc, err := LoadLocation(s.Timezone)
	if err != nil {
		return time.Time{}, false
	}
	start, _ := time.Parse("15:04", s.Start)
	end, _ := time.Parse("15:04", s.End)
	lt := t.In(loc)
	// The window that started today, or yesterday (across midnight).
	for _, back := range []int{0, -1} {
		d := lt.AddDate(0, 0, back)
		if len(s.Days) > 0 && !slices.ContainsFunc(s.Days, func(x string) bool { return strings.EqualFold(x, weekdays[d.Weekday()]) }) {
			continue
		}
		from := time.Date(d.Year(), d.Month(), d.Day(), start.Hour(), start.Minute(), 0, 0, loc)
		to := time.Date(d.Year(), d.Month(), d.Day(), end.Hour(), end.Minute(), 0, 0, loc)
		if !to.After(from) {
			to = to.AddDate(0, 0, 1)
		}
		if !t.Before(from) && t.Before(to) {
			return to.UTC(), true
		}
	}
	return time.Time{}, false
}

// Watches reports whether rule r watches task t (a live task).
func (r *AlertRule) Watches(t *Task) bool {
	if r.TaskID != 0 {
		return r.TaskID == t.ID
	}
	if r.Selector == "" {
		return false
	}
	sel, err := ParseSelector("selector", r.Selector)
	return err == nil && sel.Matches(t.Labels)
}

// AlertOutcome is what a rule judges: an outcome the store recorded of a
// task's run, or its pause.
type AlertOutcome struct {
	Run    *Run
	Status RunStatus
	// Retry says the run will be delivered again: not final.
	Retry bool
	// Lag and Took are the call's lateness and duration, when the outcome
	// ended a call (Called).
	Called    bool
	Lag, Took time.Duration
	// Paused says the task paused itself (Run is the last failure).
	Paused bool
}

// AlertVerdict is what a rule makes of an outcome.
type AlertVerdict int

// Verdicts.
const (
	VerdictNone    AlertVerdict = iota // nothing to do
	VerdictOpen                        // open the incident (if none is open)
	VerdictResolve                     // resolve the open incident (if one is)
	VerdictHistory                     // read the task's runs and Judge them (NeedsHistory)
)

// final reports whether o ended its run for good with a success or a
// failure that counts (a cancel does not).
func (o AlertOutcome) success() bool { return !o.Retry && o.Status == RunSuccess }
func (o AlertOutcome) failed() bool  { return !o.Retry && o.Status.DeadLetter() }

// Judge decides what outcome o means for the incident of c on o's task,
// without reading anything: open it (with the reason to show), resolve
// it, nothing, or VerdictHistory for a condition that needs the task's
// recent runs (consecutive_failures, failure_rate: JudgeHistory). open
// says whether an incident is known open, so that a success of a task
// without one is not looked at.
func (c *AlertCondition) Judge(o AlertOutcome, open bool) (AlertVerdict, string) {
	r := o.Run
	if o.Paused {
		if c.Kind == CondAutoPaused {
			return VerdictOpen, "the task paused itself after consecutive failures"
		}
		return VerdictNone, ""
	}
	switch c.Kind {
	case CondRunFailed:
		if o.failed() {
			return VerdictOpen, fmt.Sprintf("run %d failed: %s", r.ID, runError(o))
		}
	case CondConsecutiveFailures, CondFailureRate:
		if o.failed() || (o.success() && open) {
			return VerdictHistory, ""
		}
		return VerdictNone, ""
	case CondMissedFire:
		if o.Status == RunSkipped && r.SkipReason == SkipMisfire {
			return VerdictOpen, fmt.Sprintf("fire of %s missed (%d fire(s))", r.ScheduledTime.UTC().Format(time.RFC3339), max(r.MissedCount, 1))
		}
	case CondCallbackOverdue:
		if !o.Retry && o.Status == RunFailedTimeout {
			return VerdictOpen, fmt.Sprintf("run %d: no callback by its deadline", r.ID)
		}
	case CondSkipped:
		reasons := c.Reasons
		if len(reasons) == 0 {
			reasons = DefaultSkipReasons()
		}
		if o.Status == RunSkipped && slices.Contains(reasons, r.SkipReason) {
			return VerdictOpen, fmt.Sprintf("fire of %s skipped (%s)", r.ScheduledTime.UTC().Format(time.RFC3339), r.SkipReason)
		}
	case CondLateStart:
		if o.Called {
			if o.Lag > time.Duration(c.Threshold) {
				return VerdictOpen, fmt.Sprintf("run %d started %s late (threshold %s)", r.ID, o.Lag.Round(time.Millisecond), time.Duration(c.Threshold))
			}
			if open {
				return VerdictResolve, ""
			}
		}
		return VerdictNone, ""
	case CondLongRun:
		if o.Called {
			if o.Took > time.Duration(c.Threshold) {
				return VerdictOpen, fmt.Sprintf("run %d took %s (threshold %s)", r.ID, o.Took.Round(time.Millisecond), time.Duration(c.Threshold))
			}
			if open && !o.Retry && o.Status.Final() {
				return VerdictResolve, ""
			}
		}
		return VerdictNone, ""
	}
	if o.success() && open {
		return VerdictResolve, ""
	}
	return VerdictNone, ""
}

// JudgeRunning decides what run r, still RUNNING at now, means for a
// long_run incident: open it when its call has run past the threshold.
// Every other condition is judged on outcomes only.
func (c *AlertCondition) JudgeRunning(r *Run, now time.Time) (AlertVerdict, string) {
	if c.Kind != CondLongRun || r.Status != RunRunning || r.StartedAt == nil {
		return VerdictNone, ""
	}
	if took := now.Sub(*r.StartedAt); took > time.Duration(c.Threshold) {
		return VerdictOpen, fmt.Sprintf("run %d has been running for %s (threshold %s)", r.ID, took.Round(time.Second),
			time.Duration(c.Threshold))
	}
	return VerdictNone, ""
}

// runError is the error of o's run as a notification says it.
func runError(o AlertOutcome) string {
	if o.Run.Error != "" {
		return o.Run.Error
	}
	return string(o.Status)
}

// HistoryParams are the runs JudgeHistory needs of task taskID at now:
// its latest runs that ended in AutoPauseCounted statuses.
func (c *AlertCondition) HistoryParams(taskID int64, now time.Time) RunListParams {
	p := RunListParams{TaskID: taskID, Status: AutoPauseCounted()}
	if c.Kind == CondFailureRate {
		p.FinishedFrom, p.Limit = now.Add(-time.Duration(c.Window)), MaxFailureRateRuns
	} else {
		p.Limit = c.Count
	}
	return p
}

// JudgeHistory decides consecutive_failures and failure_rate from the
// task's latest runs (HistoryParams, newest first).
func (c *AlertCondition) JudgeHistory(latest []*Run) (AlertVerdict, string) {
	switch c.Kind {
	case CondConsecutiveFailures:
		if len(latest) < c.Count {
			return VerdictResolve, ""
		}
		for _, r := range latest[:c.Count] {
			if !r.Status.DeadLetter() {
				return VerdictResolve, ""
			}
		}
		last := latest[0].Error
		if last == "" {
			last = string(latest[0].Status)
		}
		return VerdictOpen, fmt.Sprintf("%d consecutive failures, the last: %s", c.Count, last)
	case CondFailureRate:
		failed := 0
		for _, r := range latest {
			if r.Status.DeadLetter() {
				failed++
			}
		}
		if len(latest) == 0 || len(latest) < c.MinRuns || float64(failed)/float64(len(latest)) < c.Rate {
			return VerdictResolve, ""
		}
		return VerdictOpen, fmt.Sprintf("%d of %d runs failed within %s (threshold %.0f%%)", failed, len(latest),
			time.Duration(c.Window), 100*c.Rate)
	}
	return VerdictNone, ""
}

// IncidentStatus is whether an incident is open.
type IncidentStatus string

// Incident statuses.
const (
	IncidentOpen     IncidentStatus = "OPEN"
	IncidentResolved IncidentStatus = "RESOLVED"
)

// Incident is a rule's condition holding for a task, from when it opened
// to when it resolved. The database holds at most one open incident per
// (rule, task).
type Incident struct {
	ID         int64          `json:"id"`
	RuleID     int64          `json:"rule_id"`
	RuleName   string         `json:"rule"`
	TaskID     int64          `json:"task_id"`
	TaskName   string         `json:"task"`
	Condition  ConditionKind  `json:"condition"`
	Status     IncidentStatus `json:"status"`
	Reason     string         `json:"reason"`
	OpenedAt   time.Time      `json:"opened_at"`
	ResolvedAt *time.Time     `json:"resolved_at"`
	// NotifiedAt is when its latest opened or repeat notification was
	// made: repeat_every counts from it.
	NotifiedAt time.Time `json:"notified_at"`
	// RunID is the run that opened it (0: none, or not recorded).
	RunID int64 `json:"run_id,omitempty"`
	// AckedAt, AckedBy and AckNote are its acknowledgement, if someone
	// made one (IncidentAck): an acknowledged incident sends no repeat
	// notification; it still sends the resolved one.
	AckedAt       *time.Time      `json:"acked_at"`
	AckedBy       string          `json:"acked_by,omitempty"`
	AckNote       string          `json:"ack_note,omitempty"`
	Notifications []*Notification `json:"notifications"`
}

// MaxAckNote bounds the note of an acknowledgement, in characters.
const MaxAckNote = 1000

// CheckAckNote refuses a note an acknowledgement cannot hold.
func CheckAckNote(note string) error {
	if utf8.RuneCountInString(note) > MaxAckNote {
		return Errorf(EInvalid, "note", "note must be at most %d characters", MaxAckNote)
	}
	if !utf8.ValidString(note) {
		return Errorf(EInvalid, "note", "note must be UTF-8 text")
	}
	return nil
}

// NotificationEvent is what a notification tells of its incident.
type NotificationEvent string

// Notification events.
const (
	EventOpened   NotificationEvent = "opened"
	EventRepeat   NotificationEvent = "repeat"
	EventResolved NotificationEvent = "resolved"
	EventTest     NotificationEvent = "test"
)

// NotificationStatus is where a notification is in its delivery.
type NotificationStatus string

// Notification statuses.
const (
	NotifyPending NotificationStatus = "PENDING" // to be sent at DueAt
	NotifySent    NotificationStatus = "SENT"
	NotifyFailed  NotificationStatus = "FAILED" // MaxNotifyAttempts failed
	// NotifyCanceled is a repeat not sent: its incident was acknowledged
	// or resolved before it went out (while its channel failed, say).
	NotifyCanceled NotificationStatus = "CANCELED"
)

// MaxNotifyAttempts bounds the tries of a notification; MaxNotifyRecorded
// the attempts it keeps (the latest).
const (
	MaxNotifyAttempts = 8
	MaxNotifyRecorded = 10
)

// Notification is one message of an incident to one channel: a row of the
// outbox that any node may claim and deliver, tried again with backoff on
// a failure, each attempt recorded.
type Notification struct {
	ID          int64              `json:"id"`
	IncidentID  int64              `json:"incident_id"`
	ChannelID   int64              `json:"channel_id"`
	ChannelName string             `json:"channel"`
	Event       NotificationEvent  `json:"event"`
	Status      NotificationStatus `json:"status"`
	// Held says it was made in a silence window and held until its end
	// (DueAt).
	Held      bool                  `json:"held"`
	DueAt     time.Time             `json:"due_at"`
	CreatedAt time.Time             `json:"created_at"`
	SentAt    *time.Time            `json:"sent_at"`
	Tries     int                   `json:"tries"`
	Attempts  []NotificationAttempt `json:"attempts"`

	// ClaimedBy and ClaimedUntil are the node delivering it and its lease.
	ClaimedBy    string    `json:"-"`
	ClaimedUntil time.Time `json:"-"`
}

// NotificationAttempt is one try of a notification.
type NotificationAttempt struct {
	At    time.Time `json:"at"`
	Node  string    `json:"node"`
	Error string    `json:"error,omitempty"`
}

// NotifyBackoff is the wait after the tries'th failed try: 10s doubling,
// at most 10 minutes.
func NotifyBackoff(tries int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < tries && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}

// Attempted records a try of n at at by node that ended with err (nil: it
// was sent): the notification is SENT, or PENDING again after its
// backoff, or FAILED after MaxNotifyAttempts.
func (n *Notification) Attempted(at time.Time, node string, err error) {
	a := NotificationAttempt{At: at.UTC(), Node: node}
	n.Tries++
	switch {
	case err == nil:
		n.Status, n.SentAt = NotifySent, &a.At
	case n.Tries >= MaxNotifyAttempts:
		n.Status, a.Error = NotifyFailed, err.Error()
	default:
		n.Status, a.Error, n.DueAt = NotifyPending, err.Error(), at.Add(NotifyBackoff(n.Tries))
	}
	if len(a.Error) > 500 {
		a.Error = a.Error[:500]
	}
	n.Attempts = append(n.Attempts, a)
	if len(n.Attempts) > MaxNotifyRecorded {
		n.Attempts = n.Attempts[len(n.Attempts)-MaxNotifyRecorded:]
	}
}

// Cancel records that n was not sent, and will not be, for why: it is
// CANCELED, why its last attempt's error.
func (n *Notification) Cancel(at time.Time, node, why string) {
	n.Status = NotifyCanceled
	n.Attempts = append(n.Attempts, NotificationAttempt{At: at.UTC(), Node: node, Error: why})
	if len(n.Attempts) > MaxNotifyRecorded {
		n.Attempts = n.Attempts[len(n.Attempts)-MaxNotifyRecorded:]
	}
}

// Notifications returns the notifications of incident inc's event to
// rule's channels (their ids), made at now: held until the end of the
// rule's silence that holds now, if one does.
func Notifications(rule *AlertRule, channels []*AlertChannel, event NotificationEvent, now time.Time) []*Notification {
	due, held := SilencedUntil(rule.Silences, now)
	out := make([]*Notification, 0, len(channels))
	for _, ch := range channels {
		out = append(out, &Notification{ChannelID: ch.ID, ChannelName: ch.Name, Event: event, Status: NotifyPending,
			Held: held, DueAt: due.UTC(), CreatedAt: now.UTC()})
	}
	return out
}

// AlertMessage is what a channel sends: the JSON body of a webhook, the
// text of a Slack message and a mail.
type AlertMessage struct {
	Event     NotificationEvent `json:"event"`
	Incident  int64             `json:"incident_id"`
	Rule      string            `json:"rule"`
	Condition ConditionKind     `json:"condition"`
	TaskID    int64             `json:"task_id"`
	Task      string            `json:"task"`
	Status    IncidentStatus    `json:"status"`
	Reason    string            `json:"reason"`
	OpenedAt  time.Time         `json:"opened_at"`
	// ResolvedAt is set on a resolved event.
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	// Key is the same on every try of one notification: the
	// Idempotency-Key (and Webhook-Id) of its request.
	Key string `json:"notification_id"`
}

// MessageOf is the message of notification n of incident inc.
func MessageOf(inc *Incident, n *Notification) AlertMessage {
	return AlertMessage{Event: n.Event, Incident: inc.ID, Rule: inc.RuleName, Condition: inc.Condition,
		TaskID: inc.TaskID, Task: inc.TaskName, Status: inc.Status, Reason: inc.Reason, OpenedAt: inc.OpenedAt.UTC(),
		ResolvedAt: inc.ResolvedAt, Key: fmt.Sprintf("ntf_%d", n.ID)}
}

// Subject is a one-line summary of m: a mail's subject, a Slack text's
// first line.
func (m AlertMessage) Subject() string {
	switch m.Event {
	case EventResolved:
		return fmt.Sprintf("[Sundial] RESOLVED %s: task %s", m.Rule, m.Task)
	case EventRepeat:
		return fmt.Sprintf("[Sundial] STILL FIRING %s: task %s", m.Rule, m.Task)
	case EventTest:
		return "[Sundial] test notification"
	}
	return fmt.Sprintf("[Sundial] FIRING %s: task %s", m.Rule, m.Task)
}

// Text is m as plain text: the subject, then the details.
func (m AlertMessage) Text() string {
	if m.Event == EventTest {
		return m.Subject() + "\nThis channel works."
	}
	s := fmt.Sprintf("%s\nReason: %s\nCondition: %s\nTask: %s (id %d)\nIncident: %d, opened %s", m.Subject(), m.Reason,
		m.Condition, m.Task, m.TaskID, m.Incident, m.OpenedAt.Format(time.RFC3339))
	if m.ResolvedAt != nil {
		s += ", resolved " + m.ResolvedAt.UTC().Format(time.RFC3339)
	}
	return s
}

// IncidentListParams selects incidents for IncidentList.
type IncidentListParams struct {
	Status   IncidentStatus // "": any
	TaskID   int64
	RuleID   int64
	RunID    int64 // the run that opened it; 0: any
	BeforeID int64 // a page's cursor: incidents older than this id
	Limit    int   // 0: 100
}
