package sundial

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRetryPolicy(t *testing.T) {
	t.Parallel()
	def := RetryPolicy{MaxAttempts: 1, InitialBackoff: time.Second, MaxBackoff: 5 * time.Minute,
		Multiplier: 2, Jitter: JitterFull, RetryOn: DefaultRetryOn}
	tests := []struct {
		in   string
		want RetryPolicy
	}{
		{``, def},
		{`null`, def},
		{`{}`, def},
		{`{"max_attempts":5}`, func() RetryPolicy { p := def; p.MaxAttempts = 5; return p }()},
		{`{"max_attempts":3,"initial_backoff":"500ms","max_backoff":"10s","multiplier":1.5,"jitter":"equal","retry_on":["5xx","timeout"]}`,
			RetryPolicy{MaxAttempts: 3, InitialBackoff: 500 * time.Millisecond, MaxBackoff: 10 * time.Second,
				Multiplier: 1.5, Jitter: JitterEqual, RetryOn: []string{RetryOnTimeout, RetryOn5xx}}},
		{`{"retry_on":[]}`, func() RetryPolicy { p := def; p.RetryOn = nil; return p }()},
		// Enum values in any case, normalised.
		{`{"jitter":"EQUAL","retry_on":["5XX","Timeout","CALLBACK_FAILED"]}`, func() RetryPolicy {
			p := def
			p.Jitter, p.RetryOn = JitterEqual, []string{RetryOnTimeout, RetryOn5xx, RetryOnCallback}
			return p
		}()},
		{`{"max_attempts":null,"jitter":null}`, def},
	}
	for _, tc := range tests {
		got, err := ParseRetryPolicy(json.RawMessage(tc.in))
		if err != nil {
			t.Errorf("ParseRetryPolicy(%s): %v", tc.in, err)
			continue
		}
		if got.MaxAttempts != tc.want.MaxAttempts || got.InitialBackoff != tc.want.InitialBackoff ||
			got.MaxBackoff != tc.want.MaxBackoff || got.Multiplier != tc.want.Multiplier ||
			got.Jitter != tc.want.Jitter || !slices.Equal(got.RetryOn, tc.want.RetryOn) {
			t.Errorf("ParseRetryPolicy(%s) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseRetryPolicyErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, field, token string }{
		{`[]`, "retry_policy", ""},
		{`5`, "retry_policy", ""},
		{`{"max_tries":3}`, "retry_policy.max_tries", "max_tries"},
		{`{"max_attempts":0}`, "retry_policy.max_attempts", "0"},
		{`{"max_attempts":101}`, "retry_policy.max_attempts", "101"},
		{`{"initial_backoff":"soon"}`, "retry_policy.initial_backoff", "soon"},
		{`{"initial_backoff":"-1s"}`, "retry_policy.initial_backoff", "-1s"},
		{`{"max_backoff":"48h"}`, "retry_policy.max_backoff", "48h"},
		{`{"initial_backoff":"10s","max_backoff":"1s"}`, "retry_policy.max_backoff", "1s"},
		{`{"multiplier":0.5}`, "retry_policy.multiplier", "0.5"},
		{`{"jitter":"some"}`, "retry_policy.jitter", "some"},
		{`{"retry_on":["500"]}`, "retry_policy.retry_on", "500"},
	}
	for _, tc := range tests {
		_, err := ParseRetryPolicy(json.RawMessage(tc.in))
		e, ok := err.(*Error)
		if !ok || e.Code != EInvalid || e.Field != tc.field || (tc.token != "" && e.Token != tc.token) {
			t.Errorf("ParseRetryPolicy(%s) = %v, want invalid %s %q", tc.in, err, tc.field, tc.token)
		}
	}
}

func TestRetryPolicyRoundTrip(t *testing.T) {
	t.Parallel()
	in := `{"max_attempts":4,"initial_backoff":"250ms","max_backoff":"30s","multiplier":3,"jitter":"none","retry_on":["connection_error","429"]}`
	p, err := ParseRetryPolicy(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseRetryPolicy(out)
	if err != nil {
		t.Fatalf("re-parse %s: %v", out, err)
	}
	if q.MaxAttempts != p.MaxAttempts || q.InitialBackoff != p.InitialBackoff || q.MaxBackoff != p.MaxBackoff ||
		q.Multiplier != p.Multiplier || q.Jitter != p.Jitter || !slices.Equal(q.RetryOn, p.RetryOn) {
		t.Errorf("round trip %s -> %s -> %+v", in, out, q)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	none := RetryPolicy{InitialBackoff: time.Second, MaxBackoff: 10 * time.Second, Multiplier: 2, Jitter: JitterNone}
	top := func(k int64) int64 { return k - 1 } // the largest value rnd may return
	zero := func(int64) int64 { return 0 }
	tests := []struct {
		name       string
		p          RetryPolicy
		n          int
		retryAfter time.Duration
		rnd        func(int64) int64
		want       time.Duration
	}{
		{"first retry waits the initial backoff", none, 1, 0, zero, time.Second},
		{"the wait doubles", none, 2, 0, zero, 2 * time.Second},
		{"and doubles again", none, 3, 0, zero, 4 * time.Second},
		{"up to max_backoff", none, 5, 0, zero, 10 * time.Second},
		{"far past it, still max_backoff", none, 60, 0, zero, 10 * time.Second},
		{"Retry-After longer than the backoff is honoured", none, 1, 7 * time.Second, zero, 7 * time.Second},
		{"Retry-After is capped by max_backoff", none, 1, time.Hour, zero, 10 * time.Second},
		{"Retry-After shorter than the backoff does not shorten it", none, 3, time.Second, zero, 4 * time.Second},
		{"full jitter at its low end", func() RetryPolicy { p := none; p.Jitter = JitterFull; return p }(), 3, 0, zero, 0},
		{"full jitter at its high end", func() RetryPolicy { p := none; p.Jitter = JitterFull; return p }(), 3, 0, top, 4 * time.Second},
		{"equal jitter at its low end", func() RetryPolicy { p := none; p.Jitter = JitterEqual; return p }(), 3, 0, zero, 2 * time.Second},
		{"equal jitter at its high end", func() RetryPolicy { p := none; p.Jitter = JitterEqual; return p }(), 3, 0, top, 4 * time.Second},
		{"multiplier 1 is constant", func() RetryPolicy { p := none; p.Multiplier = 1; return p }(), 9, 0, zero, time.Second},
	}
	for _, tc := range tests {
		if got := tc.p.Backoff(tc.n, tc.retryAfter, tc.rnd); got != tc.want {
			t.Errorf("%s: Backoff(%d, %s) = %s, want %s", tc.name, tc.n, tc.retryAfter, got, tc.want)
		}
	}
}

// TestBackoffJitterBounds draws many jittered waits and checks they stay
// within the bounds of their mode.
func TestBackoffJitterBounds(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	rnd := func(k int64) int64 { return r.Int64N(k) }
	for _, mode := range []string{JitterFull, JitterEqual} {
		p := RetryPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second, Multiplier: 2, Jitter: mode}
		for n := 1; n <= 10; n++ {
			base := min(100*time.Millisecond<<(n-1), 5*time.Second)
			lo := time.Duration(0)
			if mode == JitterEqual {
				lo = base / 2
			}
			for range 1000 {
				if d := p.Backoff(n, 0, rnd); d < lo || d > base {
					t.Fatalf("%s jitter, retry %d: %s outside [%s, %s]", mode, n, d, lo, base)
				}
			}
		}
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	def := RetryPolicy{RetryOn: DefaultRetryOn}
	tests := []struct {
		status RunStatus
		http   int
		want   bool
	}{
		{RunFailed, 0, true},    // connection error
		{RunTimeout, 0, true},   // timeout
		{RunFailed, 429, true},  // too many requests
		{RunFailed, 500, true},  // server error
		{RunFailed, 503, true},  // unavailable
		{RunFailed, 400, false}, // bad request is final
		{RunFailed, 404, false},
		{RunFailed, 302, false},
		{RunSuccess, 200, false},
		{RunCanceled, 0, false},
	}
	for _, tc := range tests {
		if got := def.Retryable(tc.status, tc.http); got != tc.want {
			t.Errorf("Retryable(%s, %d) = %v, want %v", tc.status, tc.http, got, tc.want)
		}
	}
	only4xx := RetryPolicy{RetryOn: []string{RetryOn4xx}}
	if !only4xx.Retryable(RunFailed, 404) || only4xx.Retryable(RunFailed, 500) {
		t.Error("retry_on [4xx] must retry a 404 and not a 500")
	}
}

// TestParseRetryPolicyMessages: errors say what is wrong in the client's
// terms: the key, the type it wants with an example, never Go's types.
func TestParseRetryPolicyMessages(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, field, message string }{
		{`{"initial_backoff":5}`, "retry_policy.initial_backoff",
			`must be a string holding a duration, such as "1s"; got the number 5`},
		{`{"max_backoff":true}`, "retry_policy.max_backoff",
			`must be a string holding a duration, such as "5m"; got a boolean`},
		{`{"max_attempts":"3"}`, "retry_policy.max_attempts", "must be an integer, such as 3; got a string"},
		{`{"max_attempts":2.5}`, "retry_policy.max_attempts", "must be an integer, such as 3; got the number 2.5"},
		{`{"multiplier":"x"}`, "retry_policy.multiplier", "must be a number, such as 2; got a string"},
		{`{"jitter":1}`, "retry_policy.jitter", `must be a string, such as "full"; got the number 1`},
		{`{"retry_on":"5xx"}`, "retry_policy.retry_on", `must be an array of strings, such as ["5xx", "timeout"]; got a string`},
		{`{"retry_on":[5]}`, "retry_policy.retry_on", `must be an array of strings, such as ["5xx", "timeout"]; got an array with a value that is not a string`},
		{`[1]`, "retry_policy", `retry_policy must be an object, such as {"max_attempts": 3, "initial_backoff": "1s"}; got an array`},
		{`{"max_attempt":3}`, "retry_policy.max_attempt",
			`unknown key "max_attempt"; did you mean "max_attempts"? (retry_policy has max_attempts, initial_backoff, max_backoff, multiplier, jitter, retry_on)`},
		{`{"Jitter":"full"}`, "retry_policy.Jitter",
			`unknown key "Jitter"; did you mean "jitter"? (retry_policy has max_attempts, initial_backoff, max_backoff, multiplier, jitter, retry_on)`},
	}
	for _, tc := range tests {
		_, err := ParseRetryPolicy(json.RawMessage(tc.in))
		e, ok := err.(*Error)
		if !ok || e.Code != EInvalid || e.Field != tc.field || e.Message != tc.message {
			t.Errorf("ParseRetryPolicy(%s) = %#v\nwant field %s, message %q", tc.in, err, tc.field, tc.message)
			continue
		}
		for _, leak := range []string{"Go ", "struct", "unmarshal", "retryPolicy", "json:"} {
			if strings.Contains(e.Message, leak) {
				t.Errorf("ParseRetryPolicy(%s): message %q mentions %q", tc.in, e.Message, leak)
			}
		}
	}
}
