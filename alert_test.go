package sundial_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestAlertJudge: what each condition makes of an outcome, with and
// without an open incident.
func TestAlertJudge(t *testing.T) {
	t.Parallel()
	run := &sundial.Run{ID: 5, ScheduledTime: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Error: "HTTP 500"}
	skipped := func(reason sundial.SkipReason) *sundial.Run {
		r := *run
		r.SkipReason = reason
		return &r
	}
	failed := sundial.AlertOutcome{Run: run, Status: sundial.RunFailed}
	retry := sundial.AlertOutcome{Run: run, Status: sundial.RunFailed, Retry: true}
	cancel := sundial.AlertOutcome{Run: run, Status: sundial.RunCanceled}
	ok := sundial.AlertOutcome{Run: run, Status: sundial.RunSuccess, Called: true, Lag: time.Second, Took: time.Second}
	late := sundial.AlertOutcome{Run: run, Status: sundial.RunSuccess, Called: true, Lag: time.Minute, Took: time.Minute}
	timeout := sundial.AlertOutcome{Run: run, Status: sundial.RunFailedTimeout}
	misfire := sundial.AlertOutcome{Run: skipped(sundial.SkipMisfire), Status: sundial.RunSkipped}
	queueFull := sundial.AlertOutcome{Run: skipped(sundial.SkipQueueFull), Status: sundial.RunSkipped}
	overlap := sundial.AlertOutcome{Run: skipped(sundial.SkipOverlap), Status: sundial.RunSkipped}
	paused := sundial.AlertOutcome{Run: run, Paused: true}
	c := func(kind sundial.ConditionKind, mod ...func(*sundial.AlertCondition)) sundial.AlertCondition {
		cond := sundial.AlertCondition{Kind: kind, Threshold: sundial.Duration(30 * time.Second), Count: 3}
		for _, m := range mod {
			m(&cond)
		}
		return cond
	}
	for _, tc := range []struct {
		name string
		cond sundial.AlertCondition
		o    sundial.AlertOutcome
		open bool
		want sundial.AlertVerdict
	}{
		{"a failure opens run_failed", c(sundial.CondRunFailed), failed, false, sundial.VerdictOpen},
		{"a retry is no failure yet", c(sundial.CondRunFailed), retry, false, sundial.VerdictNone},
		{"a cancel is no failure", c(sundial.CondRunFailed), cancel, false, sundial.VerdictNone},
		{"a success with nothing open is not looked at", c(sundial.CondRunFailed), ok, false, sundial.VerdictNone},
		{"a success resolves", c(sundial.CondRunFailed), ok, true, sundial.VerdictResolve},
		{"consecutive failures read the runs", c(sundial.CondConsecutiveFailures), failed, false, sundial.VerdictHistory},
		{"a success of an open one reads them", c(sundial.CondConsecutiveFailures), ok, true, sundial.VerdictHistory},
		{"a success of none reads nothing", c(sundial.CondFailureRate), ok, false, sundial.VerdictNone},
		{"a misfire opens missed_fire", c(sundial.CondMissedFire), misfire, false, sundial.VerdictOpen},
		{"an overlap is no misfire", c(sundial.CondMissedFire), overlap, false, sundial.VerdictNone},
		{"late_start over the threshold", c(sundial.CondLateStart), late, false, sundial.VerdictOpen},
		{"late_start on time resolves", c(sundial.CondLateStart), ok, true, sundial.VerdictResolve},
		{"long_run over the threshold", c(sundial.CondLongRun), late, false, sundial.VerdictOpen},
		{"long_run short resolves", c(sundial.CondLongRun), ok, true, sundial.VerdictResolve},
		{"an overdue callback", c(sundial.CondCallbackOverdue), timeout, false, sundial.VerdictOpen},
		{"a plain failure is no overdue callback", c(sundial.CondCallbackOverdue), failed, false, sundial.VerdictNone},
		{"skipped, by default QUEUE_FULL", c(sundial.CondSkipped), queueFull, false, sundial.VerdictOpen},
		{"skipped, only the reasons given", c(sundial.CondSkipped, func(c *sundial.AlertCondition) {
			c.Reasons = []sundial.SkipReason{sundial.SkipOverlap}
		}), queueFull, false, sundial.VerdictNone},
		{"a pause opens auto_paused", c(sundial.CondAutoPaused), paused, false, sundial.VerdictOpen},
		{"a pause is nothing to run_failed", c(sundial.CondRunFailed), paused, false, sundial.VerdictNone},
	} {
		if got, reason := tc.cond.Judge(tc.o, tc.open); got != tc.want || (got == sundial.VerdictOpen && reason == "") {
			t.Errorf("%s: %v %q, want %v", tc.name, got, reason, tc.want)
		}
	}
}

// TestAlertJudgeRunning: a run still in its call opens long_run once it
// has run past the threshold; nothing else is judged on a running run.
func TestAlertJudgeRunning(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 1, 0, 0, time.UTC)
	running := func(started time.Duration, status sundial.RunStatus) *sundial.Run {
		at := now.Add(-started)
		return &sundial.Run{ID: 9, Status: status, StartedAt: &at}
	}
	long := sundial.AlertCondition{Kind: sundial.CondLongRun, Threshold: sundial.Duration(30 * time.Second)}
	for _, tc := range []struct {
		name string
		cond sundial.AlertCondition
		run  *sundial.Run
		want sundial.AlertVerdict
	}{
		{"past the threshold", long, running(31*time.Second, sundial.RunRunning), sundial.VerdictOpen},
		{"at the threshold", long, running(30*time.Second, sundial.RunRunning), sundial.VerdictNone},
		{"not started", long, &sundial.Run{ID: 9, Status: sundial.RunRunning}, sundial.VerdictNone},
		{"waiting for its callback", long, running(time.Hour, sundial.RunWaitingCallback), sundial.VerdictNone},
		{"another condition", sundial.AlertCondition{Kind: sundial.CondLateStart, Threshold: long.Threshold},
			running(time.Hour, sundial.RunRunning), sundial.VerdictNone},
	} {
		got, reason := tc.cond.JudgeRunning(tc.run, now)
		if got != tc.want || (got == sundial.VerdictOpen && !strings.Contains(reason, "run 9 has been running for 31s")) {
			t.Errorf("%s: %v %q, want %v", tc.name, got, reason, tc.want)
		}
	}
}

// TestAlertJudgeHistory: consecutive_failures wants its count of
// failures at the top of the latest runs; failure_rate the share of the
// window's runs, with enough of them.
func TestAlertJudgeHistory(t *testing.T) {
	t.Parallel()
	runs := func(statuses ...sundial.RunStatus) []*sundial.Run {
		out := make([]*sundial.Run, len(statuses))
		for i, s := range statuses {
			out[i] = &sundial.Run{Status: s, Error: "HTTP 503"}
		}
		return out
	}
	F, S := sundial.RunFailed, sundial.RunSuccess
	three := sundial.AlertCondition{Kind: sundial.CondConsecutiveFailures, Count: 3}
	if v, reason := three.JudgeHistory(runs(F, F, F, S)); v != sundial.VerdictOpen || !strings.Contains(reason, "3 consecutive failures, the last: HTTP 503") {
		t.Errorf("3 failures: %v %q", v, reason)
	}
	for _, rs := range [][]*sundial.Run{runs(F, F), runs(F, S, F), runs(S, F, F)} {
		if v, _ := three.JudgeHistory(rs); v != sundial.VerdictResolve {
			t.Errorf("%d runs: %v, want resolve", len(rs), v)
		}
	}
	rate := sundial.AlertCondition{Kind: sundial.CondFailureRate, Rate: 0.5, Window: sundial.Duration(time.Hour), MinRuns: 4}
	for _, tc := range []struct {
		runs []*sundial.Run
		want sundial.AlertVerdict
	}{
		{runs(F, S, F, S), sundial.VerdictOpen},
		{runs(F, F, F), sundial.VerdictResolve}, // fewer than min_runs
		{runs(F, S, S, S), sundial.VerdictResolve},
		{nil, sundial.VerdictResolve},
	} {
		if v, _ := rate.JudgeHistory(tc.runs); v != tc.want {
			t.Errorf("failure_rate of %d runs: %v, want %v", len(tc.runs), v, tc.want)
		}
	}
}

// TestSilencedUntil: absolute and daily windows, across midnight, on
// given days, in a time zone, and windows that touch.
func TestSilencedUntil(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	from, to := at("2030-01-01T10:00:00Z"), at("2030-01-01T12:00:00Z")
	nightly := sundial.Silence{Start: "22:00", End: "06:00", Timezone: "Europe/Berlin"}
	weekend := sundial.Silence{Start: "00:00", End: "23:59", Days: []string{"sat"}}
	for _, tc := range []struct {
		name     string
		silences []sundial.Silence
		at       string
		held     bool
		until    string
	}{
		{"inside an absolute window", []sundial.Silence{{From: &from, To: &to}}, "2030-01-01T11:00:00Z", true, "2030-01-01T12:00:00Z"},
		{"at its end", []sundial.Silence{{From: &from, To: &to}}, "2030-01-01T12:00:00Z", false, ""},
		// 23:30 in Berlin (UTC+1 in January) is 22:30 UTC; the window ends
		// at 06:00 Berlin, 05:00 UTC, the next day.
		{"a nightly window before midnight", []sundial.Silence{nightly}, "2030-01-01T22:30:00Z", true, "2030-01-02T05:00:00Z"},
		{"after midnight", []sundial.Silence{nightly}, "2030-01-02T03:00:00Z", true, "2030-01-02T05:00:00Z"},
		{"in the day", []sundial.Silence{nightly}, "2030-01-02T12:00:00Z", false, ""},
		{"on its day", []sundial.Silence{weekend}, "2030-01-05T10:00:00Z", true, "2030-01-05T23:59:00Z"},
		{"not on another", []sundial.Silence{weekend}, "2030-01-04T10:00:00Z", false, ""},
		{"windows that touch hold to the last end", []sundial.Silence{{From: &from, To: &to}, {Start: "12:00", End: "13:00"}},
			"2030-01-01T11:00:00Z", true, "2030-01-01T13:00:00Z"},
	} {
		until, held := sundial.SilencedUntil(tc.silences, at(tc.at))
		if held != tc.held || (held && !until.Equal(at(tc.until))) {
			t.Errorf("%s: %v until %s, want %v until %s", tc.name, held, until, tc.held, tc.until)
		}
	}
}

// TestAlertValidate: a channel and a rule name the field that is wrong;
// secrets are sealed, kept when sent back masked, and never shown.
func TestAlertValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ch    sundial.AlertChannel
		field string
	}{
		{sundial.AlertChannel{Name: "x", Kind: "pager"}, "kind"},
		{sundial.AlertChannel{Name: "x", Kind: sundial.ChannelWebhook}, "url"},
		{sundial.AlertChannel{Name: "x", Kind: sundial.ChannelWebhook, URL: "https://x", SigningSecret: "nope"}, "signing_secret"},
		{sundial.AlertChannel{Name: "x", Kind: sundial.ChannelEmail}, "smtp"},
		{sundial.AlertChannel{Name: "x", Kind: sundial.ChannelEmail, SMTP: &sundial.SMTPSettings{Host: "h", Port: 25, From: "a@b.c", To: []string{"a@b.c", "bad"}}}, "smtp.to[1]"},
		{sundial.AlertChannel{Name: "x", Kind: sundial.ChannelEmail, SMTP: &sundial.SMTPSettings{Host: "h", Port: 0, From: "a@b.c", To: []string{"a@b.c"}}}, "smtp.port"},
	} {
		err := tc.ch.Validate()
		if e, ok := err.(*sundial.Error); !ok || e.Field != tc.field {
			t.Errorf("%+v: %v, want field %s", tc.ch, err, tc.field)
		}
	}
	rule := func(mod func(*sundial.AlertRule)) *sundial.AlertRule {
		r := &sundial.AlertRule{Name: "r", TaskID: 1, Condition: sundial.AlertCondition{Kind: sundial.CondRunFailed}, Channels: []string{"c"}}
		mod(r)
		return r
	}
	for field, r := range map[string]*sundial.AlertRule{
		"condition.kind":  rule(func(r *sundial.AlertRule) { r.Condition.Kind = "often" }),
		"condition.count": rule(func(r *sundial.AlertRule) { r.Condition.Count = 2 }),
		"condition.rate": rule(func(r *sundial.AlertRule) {
			r.Condition = sundial.AlertCondition{Kind: sundial.CondFailureRate, Rate: 2, Window: sundial.Duration(time.Hour)}
		}),
		"selector":        rule(func(r *sundial.AlertRule) { r.Selector = "a=b" }),
		"repeat_every":    rule(func(r *sundial.AlertRule) { r.RepeatEvery = sundial.Duration(time.Second) }),
		"silences[0].end": rule(func(r *sundial.AlertRule) { r.Silences = []sundial.Silence{{Start: "10:00", End: "10:00"}} }),
		"silences[0].to":  rule(func(r *sundial.AlertRule) { f := time.Now(); r.Silences = []sundial.Silence{{From: &f, To: &f}} }),
		"condition.reasons[0]": rule(func(r *sundial.AlertRule) {
			r.Condition = sundial.AlertCondition{Kind: sundial.CondSkipped, Reasons: []sundial.SkipReason{"LATER"}}
		}),
	} {
		err := r.Validate()
		if e, ok := err.(*sundial.Error); !ok || e.Field != field {
			t.Errorf("want field %s: %v", field, err)
		}
	}

	box := fakeSealer{}
	ch := &sundial.AlertChannel{Name: "m", Kind: sundial.ChannelEmail, SMTP: &sundial.SMTPSettings{Host: "h", Port: 25, Username: "u",
		Password: "pw", From: "a@b.c", To: []string{"a@b.c"}}}
	if err := sundial.SealChannel(ch, nil, box); err != nil || ch.SMTP.Password != sundial.SealedPrefix+"pw" {
		t.Fatalf("sealed: %v %q", err, ch.SMTP.Password)
	}
	if m := sundial.MaskChannel(ch); m.SMTP.Password != sundial.Masked || ch.SMTP.Password == sundial.Masked {
		t.Fatalf("masked %q, the stored one %q", m.SMTP.Password, ch.SMTP.Password)
	}
	next := *sundial.MaskChannel(ch)
	if err := sundial.SealChannel(&next, ch, box); err != nil || next.SMTP.Password != ch.SMTP.Password {
		t.Fatalf("kept: %v %q", err, next.SMTP.Password)
	}
	moved := *sundial.MaskChannel(ch)
	moved.SMTP.Host = "evil.example"
	if err := sundial.SealChannel(&moved, ch, box); err == nil {
		t.Fatal("a masked password followed the channel to another server")
	}
	open, err := sundial.OpenChannel(ch, box)
	if err != nil || open.SMTP.Password != "pw" || ch.SMTP.Password == "pw" {
		t.Fatalf("opened: %v %q (stored %q)", err, open.SMTP.Password, ch.SMTP.Password)
	}
	if err := sundial.SealChannel(&sundial.AlertChannel{Kind: sundial.ChannelSlack, URL: "https://hooks"}, nil, nil); err == nil {
		t.Fatal("a Slack URL without a secrets key was taken")
	}
}

type fakeSealer struct{}

func (fakeSealer) Seal(p string) (string, error) { return sundial.SealedPrefix + p, nil }
func (fakeSealer) Open(s string) (string, error) {
	return strings.TrimPrefix(s, sundial.SealedPrefix), nil
}
