package sundial

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var now0 = time.Date(2030, 1, 2, 3, 4, 5, 600_000_000, time.UTC)

func oneOff(mod func(*Task)) *Task {
	t := &Task{TargetURL: "http://127.0.0.1:9/hook", DelaySeconds: new(30)}
	if mod != nil {
		mod(t)
	}
	return t
}

func TestNormalizeOneOff(t *testing.T) {
	tk := oneOff(func(t *Task) { t.Params = json.RawMessage(`{"order_id": 7}`); t.BizID = "order-7" })
	if err := tk.Normalize(now0); err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	if !tk.OneOff() {
		t.Fatal("a task with delay_seconds is not one-off")
	}
	if want := now0.Add(30 * time.Second); tk.RunAt == nil || !tk.RunAt.Equal(want) {
		t.Errorf("run_at = %v, want %v", tk.RunAt, want)
	}
	if tk.DelaySeconds != nil {
		t.Errorf("delay_seconds kept after it became run_at")
	}
	if !strings.HasPrefix(tk.Name, "once-") {
		t.Errorf("name = %q, want a generated once-... name", tk.Name)
	}
	if got := tk.FirstFire(now0); got == nil || !got.Equal(*tk.RunAt) {
		t.Errorf("FirstFire = %v, want run_at %v", got, tk.RunAt)
	}
	tk.Status = TaskDisabled
	if got := tk.FirstFire(now0); got != nil {
		t.Errorf("FirstFire of a disabled task = %v, want nil", got)
	}
}

func TestNormalizeOneOffErrors(t *testing.T) {
	past := now0.Add(-time.Hour)
	for _, c := range []struct {
		name, field string
		mod         func(*Task)
	}{
		{"no schedule", "cron_expr", func(t *Task) { t.DelaySeconds = nil; t.Name = "x" }},
		{"cron and run_at", "run_at", func(t *Task) { t.DelaySeconds = nil; t.RunAt = &past; t.CronExpr = "* * * * * *" }},
		{"run_at and delay", "delay_seconds", func(t *Task) { t.RunAt = &past }},
		{"negative delay", "delay_seconds", func(t *Task) { t.DelaySeconds = new(-1) }},
		{"delay too long", "delay_seconds", func(t *Task) { t.DelaySeconds = new(MaxDelaySeconds + 1) }},
		{"ancient run_at", "run_at", func(t *Task) {
			t.DelaySeconds = nil
			t.RunAt = new(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC))
		}},
		{"long request_id", "request_id", func(t *Task) { t.RequestID = strings.Repeat("r", MaxRequestIDLen+1) }},
		{"long biz_id", "biz_id", func(t *Task) { t.BizID = strings.Repeat("b", MaxBizIDLen+1) }},
		{"params not JSON", "params", func(t *Task) { t.Params = json.RawMessage(`{"a":`) }},
		{"request_id NUL", "request_id", func(t *Task) { t.RequestID = "a\x00b" }},
		{"server status", "status", func(t *Task) { t.Status = TaskCompleted }},
		{"retry policy key", "retry_policy.tries", func(t *Task) { t.RetryPolicy = json.RawMessage(`{"tries": 3}`) }},
		{"retry policy value", "retry_policy.max_attempts", func(t *Task) { t.RetryPolicy = json.RawMessage(`{"max_attempts": 0}`) }},
		{"callback timeout", "callback_timeout_sec", func(t *Task) { t.CallbackTimeout = MaxCallbackTimeout + 1 }},
		{"negative starting deadline", "starting_deadline_seconds", func(t *Task) { t.StartingDeadline = -1 }},
		{"starting deadline too long", "starting_deadline_seconds", func(t *Task) { t.StartingDeadline = MaxStartingDeadline + 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := oneOff(c.mod).Normalize(now0)
			e, ok := err.(*Error)
			if !ok || e.Code != EInvalid || e.Field != c.field {
				t.Fatalf("Normalize = %v, want EInvalid on field %q", err, c.field)
			}
		})
	}
}

func TestNormalizeAsyncAndRetryPolicy(t *testing.T) {
	tk := &Task{Name: "a", CronExpr: "0 * * * * *", TargetURL: "https://example.com/", ExecType: ExecAsync,
		RetryPolicy: json.RawMessage(`{"max_attempts": 4, "initial_backoff": "2s"}`)}
	if err := tk.Normalize(now0); err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	p := tk.RetryPolicyOf()
	if p.MaxAttempts != 4 || p.InitialBackoff != 2*time.Second || p.MaxBackoff != 5*time.Minute {
		t.Errorf("policy = %+v, want 4 attempts from 2s, up to the default 5m", p)
	}
	// Stored with every key, so a read shows the policy in force.
	var m map[string]any
	if err := json.Unmarshal(tk.RetryPolicy, &m); err != nil || m["jitter"] != "full" || m["multiplier"] != 2.0 {
		t.Errorf("stored policy %s, want every key with its default", tk.RetryPolicy)
	}
}

func TestInputHash(t *testing.T) {
	a := oneOff(func(t *Task) { t.RequestID = "r1"; t.Params = json.RawMessage(`{"a": 1, "b": [1, 2]}`) })
	b := oneOff(func(t *Task) { t.RequestID = "r1"; t.Params = json.RawMessage("{\"a\":1,\n \"b\":[1,2]}") })
	c := oneOff(func(t *Task) { t.RequestID = "r1"; t.Params = json.RawMessage(`{"a": 2, "b": [1, 2]}`) })
	if a.InputHash() != b.InputHash() {
		t.Error("the same params with other white space hash differently")
	}
	if a.InputHash() == c.InputHash() {
		t.Error("different params hash the same")
	}
	// delay_seconds is hashed as given, so a retry of the same request a
	// second later is still the same request.
	d := oneOff(func(t *Task) { t.RequestID = "r1"; t.Params = json.RawMessage(`{"a":1,"b":[1,2]}`) })
	hd := d.InputHash()
	if err := d.Normalize(now0); err != nil {
		t.Fatal(err)
	}
	if hd != a.InputHash() {
		t.Error("hash depends on when it was computed")
	}
}

func TestCallbackToken(t *testing.T) {
	secret := []byte("0123456789abcdef")
	tok := CallbackToken(secret, 42, 3)
	if f, ok := VerifyCallbackToken(secret, 42, tok); !ok || f != 3 {
		t.Fatalf("Verify(own token) = %d, %v; want 3, true", f, ok)
	}
	for name, c := range map[string]struct {
		id  int64
		tok string
		key []byte
	}{
		"other run":      {43, tok, secret},
		"other secret":   {42, tok, []byte("fedcba9876543210")},
		"fence changed":  {42, strings.Replace(tok, "v1.3.", "v1.4.", 1), secret},
		"mac changed":    {42, tok[:len(tok)-1] + "A", secret},
		"no version":     {42, strings.TrimPrefix(tok, "v1."), secret},
		"empty":          {42, "", secret},
		"fence not int":  {42, "v1.x.abc", secret},
		"fence negative": {42, "v1.-1.abc", secret},
		// The fence must be written as CallbackToken writes it: these
		// name fence 3 too, with the MAC of fence 3.
		"fence with a leading zero":  {42, strings.Replace(tok, "v1.3.", "v1.03.", 1), secret},
		"fence with two zeros":       {42, strings.Replace(tok, "v1.3.", "v1.003.", 1), secret},
		"fence with a plus sign":     {42, strings.Replace(tok, "v1.3.", "v1.+3.", 1), secret},
		"fence with a plus and zero": {42, strings.Replace(tok, "v1.3.", "v1.+03.", 1), secret},
		"fence with white space":     {42, strings.Replace(tok, "v1.3.", "v1. 3.", 1), secret},
		"fence with an underscore":   {42, strings.Replace(tok, "v1.3.", "v1.3_.", 1), secret},
		"version in capitals":        {42, strings.Replace(tok, "v1.", "V1.", 1), secret},
		"trailing dot":               {42, tok + ".", secret},
	} {
		if _, ok := VerifyCallbackToken(c.key, c.id, c.tok); ok {
			t.Errorf("%s: token accepted", name)
		}
	}
}

func TestNextFire(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 500_000_000, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Truncate(time.Second).Add(d); return &v }
	cron := func(expr string, status TaskStatus, cursor *time.Time) *Task {
		return &Task{CronExpr: expr, Timezone: "UTC", Status: status, NextFireTime: cursor}
	}
	once := func(runAt *time.Time, status TaskStatus, cursor *time.Time) *Task {
		return &Task{RunAt: runAt, Timezone: "UTC", Status: status, NextFireTime: cursor}
	}
	tests := []struct {
		name string
		task *Task
		want *time.Time
	}{
		// A per-second task planned 10 s ahead: its next fire is the next
		// second, not the cursor.
		{"cron planned ahead", cron("* * * * * *", TaskEnabled, at(11*time.Second)), at(time.Second)},
		{"cron planned up to the next fire", cron("* * * * * *", TaskEnabled, at(time.Second)), at(time.Second)},
		{"cron every 10 s planned ahead", cron("*/10 * * * * *", TaskEnabled, at(25*time.Second)), at(5 * time.Second)},
		{"cron with a time zone", &Task{CronExpr: "0 0 9 * * *", Timezone: "Asia/Tokyo", Status: TaskEnabled,
			NextFireTime: at(48 * time.Hour)}, timeP(time.Date(2030, 1, 3, 0, 0, 0, 0, time.UTC))},
		// The planner is behind (Sundial was down): the overdue fire goes
		// out first.
		{"cron overdue", cron("* * * * * *", TaskEnabled, at(-30*time.Second)), at(-30 * time.Second)},
		{"cron due this second", cron("* * * * * *", TaskEnabled, at(0)), at(0)},
		// Every fire is planned and the schedule ends after the last one.
		{"cron ending, last fire planned", cron("0 0 0 1 1 * 2031", TaskEnabled, nil),
			timeP(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))},
		{"cron ended", cron("0 0 0 1 1 * 2029", TaskEnabled, nil), nil},
		{"cron ended, an overdue fire left", cron("0 0 0 1 1 * 2029-2030", TaskEnabled,
			timeP(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))), timeP(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))},
		{"cron disabled", cron("* * * * * *", TaskDisabled, nil), nil},
		{"cron disabled with a cursor", cron("* * * * * *", TaskDisabled, at(3*time.Second)), nil},
		// Bounds: no fire before start_at, after end_at, past max_runs.
		{"cron before start_at", bound(cron("* * * * * *", TaskEnabled, at(time.Hour)), at(time.Hour), nil, 0), at(time.Hour)},
		{"cron start_at between seconds", bound(cron("* * * * * *", TaskEnabled, at(time.Hour+time.Second)),
			timeP(at(time.Hour).Add(300*time.Millisecond)), nil, 0), at(time.Hour + time.Second)},
		{"@every from start_at", bound(cron("@every 10s", TaskEnabled, at(time.Hour)), at(time.Hour), nil, 0), at(time.Hour)},
		{"cron past end_at", bound(cron("*/10 * * * * *", TaskEnabled, nil), nil, at(4*time.Second), 0), nil},
		{"cron on end_at", bound(cron("*/10 * * * * *", TaskEnabled, nil), nil, at(5*time.Second), 0), at(5 * time.Second)},
		{"cron max_runs reached, a planned fire left", counted(bound(cron("* * * * * *", TaskEnabled, nil), nil, nil, 3),
			3, at(2*time.Second)), at(time.Second)},
		{"cron max_runs reached", counted(bound(cron("* * * * * *", TaskEnabled, nil), nil, nil, 3),
			3, at(0)), nil},
		{"cron max_runs not reached", counted(bound(cron("* * * * * *", TaskEnabled, at(time.Second)), nil, nil, 3),
			2, at(0)), at(time.Second)},

		{"one-off not planned", once(at(time.Hour), TaskEnabled, at(time.Hour)), at(time.Hour)},
		{"one-off planned", once(at(5*time.Second), TaskEnabled, nil), at(5 * time.Second)},
		{"one-off overdue, not planned", once(at(-time.Minute), TaskEnabled, at(-time.Minute)), at(-time.Minute)},
		{"one-off gone", once(at(-time.Second), TaskEnabled, nil), nil},
		{"one-off disabled", once(at(time.Hour), TaskDisabled, nil), nil},
		{"one-off completed", once(at(-time.Hour), TaskCompleted, nil), nil},
		{"one-off failed", once(at(-time.Hour), TaskFailed, nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.task.NextFire(now)
			if (got == nil) != (tt.want == nil) || got != nil && !got.Equal(*tt.want) {
				t.Errorf("NextFire = %v, want %v", got, tt.want)
			}
			if got != nil && got.Location() != time.UTC {
				t.Errorf("NextFire in %v, want UTC", got.Location())
			}
		})
	}
}

func timeP(t time.Time) *time.Time { return &t }

// bound gives t the bounds start, end and max.
func bound(t *Task, start, end *time.Time, max int) *Task {
	t.StartAt, t.EndAt, t.MaxRuns = start, end, max
	return t
}

// counted gives t n fires counted, through at.
func counted(t *Task, n int, at *time.Time) *Task {
	t.FireCount, t.CountedThrough = n, at
	return t
}

func TestNormalizeBounds(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	for _, tc := range []struct {
		name  string
		mod   func(*Task)
		field string // "" for valid
	}{
		{"bounds", func(t *Task) { t.StartAt, t.EndAt, t.MaxRuns, t.JitterSeconds = at(time.Hour), at(2*time.Hour), 5, 30 }, ""},
		{"end_at only, passed", func(t *Task) { t.EndAt = at(-time.Hour) }, ""},
		{"end_at at start_at", func(t *Task) { t.StartAt, t.EndAt = at(time.Hour), at(time.Hour) }, "end_at"},
		{"end_at before start_at", func(t *Task) { t.StartAt, t.EndAt = at(time.Hour), at(time.Minute) }, "end_at"},
		{"start_at year 1999", func(t *Task) { v := time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC); t.StartAt = &v }, "start_at"},
		{"negative max_runs", func(t *Task) { t.MaxRuns = -1 }, "max_runs"},
		{"negative jitter", func(t *Task) { t.JitterSeconds = -1 }, "jitter_seconds"},
		{"jitter over an hour", func(t *Task) { t.JitterSeconds = MaxJitterSeconds + 1 }, "jitter_seconds"},
		{"one-off with start_at", func(t *Task) { t.CronExpr, t.RunAt, t.StartAt = "", at(time.Hour), at(time.Minute) }, "start_at"},
		{"one-off with end_at", func(t *Task) { t.CronExpr, t.RunAt, t.EndAt = "", at(time.Hour), at(2*time.Hour) }, "end_at"},
		{"one-off with max_runs", func(t *Task) { t.CronExpr, t.RunAt, t.MaxRuns = "", at(time.Hour), 2 }, "max_runs"},
		{"one-off with jitter", func(t *Task) { t.CronExpr, t.RunAt, t.JitterSeconds = "", at(time.Hour), 5 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := &Task{Name: "t", CronExpr: "* * * * * *", TargetURL: "https://example.com/"}
			tc.mod(tk)
			err := tk.Normalize(now)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Normalize: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != EInvalid || e.Field != tc.field {
				t.Fatalf("Normalize = %v, want invalid %s", err, tc.field)
			}
		})
	}
}

func TestWriteStatus(t *testing.T) {
	t.Parallel()
	task := func(s TaskStatus) *Task { return &Task{Status: s} }
	tests := []struct {
		name  string
		given TaskStatus
		cur   *Task
		rearm bool
		want  TaskStatus
		code  string // "" when accepted
	}{
		{name: "create, none given", given: "", want: TaskEnabled},
		{name: "create enabled", given: TaskEnabled, want: TaskEnabled},
		{name: "create disabled", given: TaskDisabled, want: TaskDisabled},
		{name: "create completed", given: TaskCompleted, code: EInvalid},
		{name: "create failed", given: TaskFailed, code: EInvalid},
		{name: "create unknown", given: "PAUSED", code: EInvalid},

		{name: "none given keeps disabled", given: "", cur: task(TaskDisabled), want: TaskDisabled},
		{name: "none given keeps enabled", given: "", cur: task(TaskEnabled), want: TaskEnabled},
		{name: "disable", given: TaskDisabled, cur: task(TaskEnabled), want: TaskDisabled},
		{name: "enable", given: TaskEnabled, cur: task(TaskDisabled), want: TaskEnabled},
		{name: "new run_at keeps disabled", given: "", cur: task(TaskDisabled), rearm: true, want: TaskDisabled},
		{name: "completed onto enabled", given: TaskCompleted, cur: task(TaskEnabled), code: EInvalid},
		{name: "unknown onto enabled", given: "paused", cur: task(TaskEnabled), code: EInvalid},

		{name: "ended, sent back", given: TaskCompleted, cur: task(TaskCompleted), want: TaskCompleted},
		{name: "failed, sent back", given: TaskFailed, cur: task(TaskFailed), want: TaskFailed},
		{name: "ended, none given", given: "", cur: task(TaskCompleted), want: TaskCompleted},
		{name: "ended, other end", given: TaskFailed, cur: task(TaskCompleted), code: EInvalid},
		{name: "ended, enabled without a new time", given: TaskEnabled, cur: task(TaskCompleted), code: EConflict},
		{name: "ended, disabled without a new time", given: TaskDisabled, cur: task(TaskFailed), code: EConflict},
		{name: "ended, new time, sent back", given: TaskCompleted, cur: task(TaskCompleted), rearm: true, want: TaskEnabled},
		{name: "ended, new time, none given", given: "", cur: task(TaskFailed), rearm: true, want: TaskEnabled},
		{name: "ended, new time, enabled", given: TaskEnabled, cur: task(TaskFailed), rearm: true, want: TaskEnabled},
		{name: "ended, new time, disabled", given: TaskDisabled, cur: task(TaskCompleted), rearm: true, want: TaskDisabled},
		{name: "ended, new time, other end", given: TaskFailed, cur: task(TaskCompleted), rearm: true, code: EInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WriteStatus(tt.given, tt.cur, tt.rearm)
			if tt.code != "" {
				if ErrorCode(err) != tt.code {
					t.Fatalf("WriteStatus = %q, %v; want a %s error", got, err, tt.code)
				}
				if e := err.(*Error); e.Field != "status" || e.Token != string(tt.given) {
					t.Errorf("error field %q token %q, want status and %q", e.Field, e.Token, tt.given)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("WriteStatus = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestMissAfter(t *testing.T) {
	for _, c := range []struct {
		deadline int
		want     time.Duration
	}{
		{0, time.Minute},     // none: the server's threshold
		{5, 5 * time.Second}, // shorter than the threshold
		{3600, time.Hour},    // longer: the task's word wins
		{MaxStartingDeadline, MaxStartingDeadline * time.Second},
	} {
		tk := &Task{StartingDeadline: c.deadline}
		if got := tk.MissAfter(time.Minute); got != c.want {
			t.Errorf("MissAfter with starting_deadline_seconds %d = %s, want %s", c.deadline, got, c.want)
		}
	}
}

// FuzzVerifyCallbackToken: VerifyCallbackToken never panics; a token it
// accepts is exactly the one CallbackToken makes for that run, secret and
// the fence it returns (at least 1), so each delivery has one token; one it
// refuses gives fence 0. And the token CallbackToken makes for a fence of
// at least 1 verifies, for that run and secret only.
func FuzzVerifyCallbackToken(f *testing.F) {
	secret := []byte("0123456789abcdef")
	tok := CallbackToken(secret, 42, 3)
	for _, s := range []string{tok, "", "v1.x.abc", "v1.-1.abc", "v1.03." + tok[5:], "v1.+3." + tok[5:],
		"V1.3." + tok[5:], tok + ".", "v1.3", "v1..", "v1.9223372036854775807." + tok[5:]} {
		f.Add(secret, int64(42), s, int64(3))
	}
	f.Add([]byte(nil), int64(-1), "v1.1.", int64(0))
	f.Add([]byte("k"), int64(0), CallbackToken([]byte("k"), 0, 1<<62), int64(-5))
	f.Fuzz(func(t *testing.T, secret []byte, id int64, token string, fence int64) {
		got, ok := VerifyCallbackToken(secret, id, token)
		switch {
		case !ok && got != 0:
			t.Fatalf("refused %q but returned fence %d", token, got)
		case ok && got < 1:
			t.Fatalf("accepted %q with fence %d, want at least 1", token, got)
		case ok && token != CallbackToken(secret, id, got):
			t.Fatalf("accepted %q, which CallbackToken does not make for run %d, fence %d (%q)",
				token, id, got, CallbackToken(secret, id, got))
		}

		made := CallbackToken(secret, id, fence)
		got, ok = VerifyCallbackToken(secret, id, made)
		if fence < 1 {
			if ok {
				t.Fatalf("the token of fence %d verifies", fence)
			}
			return
		}
		if !ok || got != fence {
			t.Fatalf("CallbackToken(%d, %d) = %q verifies as %d, %v; want %d, true", id, fence, made, got, ok, fence)
		}
		if _, ok := VerifyCallbackToken(secret, id^1, made); ok {
			t.Fatalf("the token of run %d verifies for run %d", id, id^1)
		}
		if _, ok := VerifyCallbackToken(append(secret[:len(secret):len(secret)], 'x'), id, made); ok {
			t.Fatalf("the token verifies under another secret")
		}
	})
}
