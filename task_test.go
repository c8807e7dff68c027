package sundial

import (
	"encoding/json"
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
		{"retry policy key", "retry_policy", func(t *Task) { t.RetryPolicy = json.RawMessage(`{"tries": 3}`) }},
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
	} {
		if _, ok := VerifyCallbackToken(c.key, c.id, c.tok); ok {
			t.Errorf("%s: token accepted", name)
		}
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
