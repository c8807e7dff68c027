package sundial

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Jitter modes of a retry policy.
const (
	JitterFull  = "full"  // uniform in [0, backoff]
	JitterEqual = "equal" // backoff/2 plus uniform in [0, backoff/2]
	JitterNone  = "none"  // exactly the backoff
)

// Outcome classes a retry policy may retry.
const (
	RetryOnConnection = "connection_error" // no HTTP answer (refused, reset, DNS)
	RetryOnTimeout    = "timeout"
	RetryOn429        = "429"
	RetryOn5xx        = "5xx"
	RetryOn4xx        = "4xx" // any other 4xx: final unless listed
	// RetryOnCallback is an ASYNC run whose callback reported FAILED.
	RetryOnCallback = "callback_failed"
)

// Limits of a retry policy.
const (
	MaxRetryAttempts = 100
	MaxRetryBackoff  = 24 * time.Hour
)

// RetryPolicy says how the deliveries of one fire are retried (seed 001's
// retry_policy_json, seed 003's max retries). The zero value, and "{}",
// deliver once.
type RetryPolicy struct {
	MaxAttempts    int           // deliveries of one fire, first included
	InitialBackoff time.Duration // wait before the first retry
	MaxBackoff     time.Duration // no wait is longer, Retry-After included
	Multiplier     float64       // growth of the wait per retry
	Jitter         string        // full, equal or none
	RetryOn        []string      // outcome classes retried
}

// retryPolicyKeys are the keys of a retry_policy object, in the order they
// are written.
var retryPolicyKeys = []string{"max_attempts", "initial_backoff", "max_backoff", "multiplier", "jitter", "retry_on"}

// DefaultRetryOn are the outcomes retried when a policy does not say:
// connection errors, timeouts (a missed callback deadline included), 429,
// 5xx and failures an ASYNC run's callback reports. Any other 4xx is final.
var DefaultRetryOn = []string{RetryOnConnection, RetryOnTimeout, RetryOn429, RetryOn5xx, RetryOnCallback}

// retryClasses are the outcome classes, in the order a policy lists them.
var retryClasses = []string{RetryOnConnection, RetryOnTimeout, RetryOn429, RetryOn5xx, RetryOn4xx, RetryOnCallback}

// ParseRetryPolicy reads and checks a task's retry_policy object, filling
// defaults: max_attempts 1, initial_backoff 1s, max_backoff 5m, multiplier
// 2, jitter full, retry_on DefaultRetryOn. Errors name the key.
func ParseRetryPolicy(raw json.RawMessage) (RetryPolicy, error) {
	p := RetryPolicy{MaxAttempts: 1, InitialBackoff: time.Second, MaxBackoff: 5 * time.Minute,
		Multiplier: 2, Jitter: JitterFull, RetryOn: DefaultRetryOn}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return p, nil
	}
	var w retryPolicyInput
	if err := w.decode(raw); err != nil {
		return p, err
	}
	if w.MaxAttempts != nil {
		if *w.MaxAttempts < 1 || *w.MaxAttempts > MaxRetryAttempts {
			return p, &Error{Code: EInvalid, Field: "retry_policy.max_attempts", Token: fmt.Sprint(*w.MaxAttempts),
				Message: fmt.Sprintf("must be from 1 to %d", MaxRetryAttempts)}
		}
		p.MaxAttempts = *w.MaxAttempts
	}
	dur := func(key string, s *string, dst *time.Duration) error {
		if s == nil {
			return nil
		}
		d, err := time.ParseDuration(*s)
		if err != nil || d < 0 || d > MaxRetryBackoff {
			return &Error{Code: EInvalid, Field: "retry_policy." + key, Token: *s,
				Message: "must be a duration from 0s to 24h, such as 500ms, 10s or 2m"}
		}
		*dst = d
		return nil
	}
	if err := dur("initial_backoff", w.InitialBackoff, &p.InitialBackoff); err != nil {
		return p, err
	}
	if err := dur("max_backoff", w.MaxBackoff, &p.MaxBackoff); err != nil {
		return p, err
	}
	if p.MaxBackoff < p.InitialBackoff {
		return p, &Error{Code: EInvalid, Field: "retry_policy.max_backoff", Token: p.MaxBackoff.String(),
			Message: "must not be shorter than initial_backoff (" + p.InitialBackoff.String() + ")"}
	}
	if w.Multiplier != nil {
		if m := *w.Multiplier; m < 1 || m > 100 || math.IsNaN(m) {
			return p, &Error{Code: EInvalid, Field: "retry_policy.multiplier", Token: fmt.Sprint(m),
				Message: "must be from 1 to 100"}
		}
		p.Multiplier = *w.Multiplier
	}
	if w.Jitter != nil {
		switch j := lowerASCII(*w.Jitter); j {
		case JitterFull, JitterEqual, JitterNone:
			p.Jitter = j
		default:
			return p, &Error{Code: EInvalid, Field: "retry_policy.jitter", Token: *w.Jitter,
				Message: "must be one of full, equal, none"}
		}
	}
	if w.RetryOn != nil {
		seen := map[string]bool{}
		for _, c := range w.RetryOn {
			if c = lowerASCII(c); !slices.Contains(retryClasses, c) {
				return p, &Error{Code: EInvalid, Field: "retry_policy.retry_on", Token: c,
					Message: "must list connection_error, timeout, 429, 5xx, 4xx or callback_failed"}
			}
			seen[c] = true
		}
		p.RetryOn = nil
		for _, c := range retryClasses {
			if seen[c] {
				p.RetryOn = append(p.RetryOn, c)
			}
		}
	}
	return p, nil
}

// MarshalJSON writes the policy in its wire form, every key present
// (retry_on as [] when it lists nothing).
func (p RetryPolicy) MarshalJSON() ([]byte, error) {
	retryOn := p.RetryOn
	if retryOn == nil {
		retryOn = []string{}
	}
	return json.Marshal(struct {
		MaxAttempts    int      `json:"max_attempts"`
		InitialBackoff string   `json:"initial_backoff"`
		MaxBackoff     string   `json:"max_backoff"`
		Multiplier     float64  `json:"multiplier"`
		Jitter         string   `json:"jitter"`
		RetryOn        []string `json:"retry_on"`
	}{p.MaxAttempts, p.InitialBackoff.String(), p.MaxBackoff.String(), p.Multiplier, p.Jitter, retryOn})
}

// Backoff returns the wait before retry number n (1 for the first retry):
// InitialBackoff * Multiplier^(n-1), at most MaxBackoff, then jittered.
// rnd(k) must return a uniform value in [0, k); retryAfter, a Retry-After
// the target sent (0 if none), is honoured up to MaxBackoff.
func (p RetryPolicy) Backoff(n int, retryAfter time.Duration, rnd func(int64) int64) time.Duration {
	base := float64(p.InitialBackoff) * math.Pow(p.Multiplier, float64(max(n-1, 0)))
	d := time.Duration(min(base, float64(p.MaxBackoff)))
	switch p.Jitter {
	case JitterFull:
		d = time.Duration(rnd(int64(d) + 1))
	case JitterEqual:
		d = d/2 + time.Duration(rnd(int64(d-d/2)+1))
	}
	if retryAfter > 0 {
		d = max(d, min(retryAfter, p.MaxBackoff))
	}
	return d
}

// Retryable reports whether a delivery that ended with status (and
// httpStatus, 0 without an answer) may be retried under the policy.
func (p RetryPolicy) Retryable(status RunStatus, httpStatus int) bool {
	var class string
	switch {
	case status == RunTimeout || status == RunFailedTimeout:
		class = RetryOnTimeout
	case status != RunFailed:
		return false // success, cancellation, skips: never retried
	case httpStatus == 0:
		class = RetryOnConnection
	case httpStatus == 429:
		class = RetryOn429
	case httpStatus >= 500:
		class = RetryOn5xx
	case httpStatus >= 400:
		class = RetryOn4xx
	default:
		return false
	}
	return p.RetriesOn(class)
}

// RetriesOn reports whether the policy retries the outcome class.
func (p RetryPolicy) RetriesOn(class string) bool { return slices.Contains(p.RetryOn, class) }

// retryPolicyInput is a retry_policy object as a client gives it: each key
// present or not.
type retryPolicyInput struct {
	MaxAttempts    *int
	InitialBackoff *string
	MaxBackoff     *string
	Multiplier     *float64
	Jitter         *string
	RetryOn        []string
}

// decode reads a retry_policy object key by key, so that an error names
// the key, the type it wants and an example in the client's terms.
func (w *retryPolicyInput) decode(raw json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return &Error{Code: EInvalid, Field: "retry_policy",
			Message: `retry_policy must be an object, such as {"max_attempts": 3, "initial_backoff": "1s"}; got ` + jsonKindOf(raw)}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(retryPolicyKeys, k) {
			return &Error{Code: EInvalid, Field: "retry_policy." + k, Token: k,
				Message: UnknownName("key", k, retryPolicyKeys) + " (retry_policy has " + strings.Join(retryPolicyKeys, ", ") + ")"}
		}
	}
	for _, k := range retryPolicyKeys {
		v, ok := obj[k]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			continue
		}
		var dst any
		var want string
		switch k {
		case "max_attempts":
			dst, want = &w.MaxAttempts, "an integer, such as 3"
		case "initial_backoff":
			dst, want = &w.InitialBackoff, `a string holding a duration, such as "1s"`
		case "max_backoff":
			dst, want = &w.MaxBackoff, `a string holding a duration, such as "5m"`
		case "multiplier":
			dst, want = &w.Multiplier, "a number, such as 2"
		case "jitter":
			dst, want = &w.Jitter, `a string, such as "full"`
		case "retry_on":
			dst, want = &w.RetryOn, `an array of strings, such as ["5xx", "timeout"]`
		}
		if err := json.Unmarshal(v, dst); err != nil {
			got := jsonKindOf(v)
			if k == "retry_on" && got == "an array" {
				got = "an array with a value that is not a string"
			}
			return &Error{Code: EInvalid, Field: "retry_policy." + k, Token: string(bytes.TrimSpace(v)),
				Message: "must be " + want + "; got " + got}
		}
	}
	return nil
}

// jsonKindOf names the kind of a JSON value as a client would: a string,
// a number, an object...
func jsonKindOf(raw json.RawMessage) string {
	v := bytes.TrimSpace(raw)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "the number " + string(v)
}
