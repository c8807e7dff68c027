package executor

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Outcome statuses.
const (
	StatusSuccess  = "SUCCESS"  // the target answered 2xx
	StatusFailed   = "FAILED"   // any other status, a bad request or a transport error
	StatusTimeout  = "TIMEOUT"  // the request's timeout elapsed
	StatusCanceled = "CANCELED" // the caller's context was cancelled
)

// Outcome is the result of one delivery.
type Outcome struct {
	Status     string        // StatusSuccess, StatusFailed, StatusTimeout or StatusCanceled
	HTTPStatus int           // 0 if there was no response
	Body       string        // the first 4 KiB of the response body, bytes as received
	Error      string        // what went wrong, for people: "HTTP 503 Service Unavailable"; empty on success
	RetryAfter time.Duration // the response's Retry-After, 0 if absent or unparsable
	Started    time.Time
	Finished   time.Time
}

// maxRetryAfter caps a Retry-After in seconds so it cannot overflow.
const maxRetryAfter = math.MaxInt64 / int64(time.Second)

// parseRetryAfter parses a Retry-After value: delay-seconds, or an
// HTTP-date taken relative to the response's Date header, or to now when
// that is absent or unparsable. It returns 0 for anything else and for a
// date in the past.
func parseRetryAfter(value, date string, now time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	if '0' <= value[0] && value[0] <= '9' {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return time.Duration(maxRetryAfter) * time.Second
			}
			return 0
		}
		return time.Duration(min(n, maxRetryAfter)) * time.Second
	}
	at, err := http.ParseTime(value)
	if err != nil {
		return 0
	}
	if d, err := http.ParseTime(date); err == nil {
		now = d
	}
	return max(at.Sub(now), 0)
}

// statusError describes a non-2xx response: "HTTP 503 Service Unavailable",
// or "HTTP 599" for a code without a standard text.
func statusError(code int) string {
	if text := http.StatusText(code); text != "" {
		return "HTTP " + strconv.Itoa(code) + " " + text
	}
	return "HTTP " + strconv.Itoa(code)
}
