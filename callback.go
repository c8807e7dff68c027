package sundial

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
)

// A callback token lets the target of an ASYNC run report on that run, and
// on that delivery only: it is "v1.<fence>.<mac>", where mac is the
// HMAC-SHA256, under the cluster's callback secret, of the run ID and the
// fence the delivery was made under. A later delivery of the run has a new
// fence, so a token of an earlier one is recognised as superseded rather
// than accepted.

// CallbackToken returns the token of the delivery of run id under fence.
func CallbackToken(secret []byte, id, fence int64) string {
	return "v1." + strconv.FormatInt(fence, 10) + "." + callbackMAC(secret, id, fence)
}

func callbackMAC(secret []byte, id, fence int64) string {
	m := hmac.New(sha256.New, secret)
	var b []byte
	b = strconv.AppendInt(b, id, 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, fence, 10)
	m.Write(b)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// VerifyCallbackToken checks token against run id and returns the fence it
// was issued for; ok is false for a token this secret did not issue for
// this run. The MAC is compared in constant time.
func VerifyCallbackToken(secret []byte, id int64, token string) (fence int64, ok bool) {
	rest, found := strings.CutPrefix(token, "v1.")
	if !found {
		return 0, false
	}
	f, mac, found := strings.Cut(rest, ".")
	if !found {
		return 0, false
	}
	fence, err := strconv.ParseInt(f, 10, 64)
	if err != nil || fence < 1 {
		return 0, false
	}
	want := callbackMAC(secret, id, fence)
	if !hmac.Equal([]byte(mac), []byte(want)) {
		return 0, false
	}
	return fence, true
}

// CallbackReport is what the target of an ASYNC run reports at the end of
// its work (POST /api/v1/runs/{id}/callback).
type CallbackReport struct {
	Status  RunStatus       // SUCCESS or FAILED
	Result  json.RawMessage // any JSON; nil for none
	Message string          // kept as the run's message, whatever the status
	// NoRetry marks a failure as final even when the task's retry policy
	// has attempts left.
	NoRetry bool
}

// Failure is what the report says went wrong, kept as its run's error: a
// FAILED report's message. A SUCCESS has none, whatever its message says.
func (c CallbackReport) Failure() string {
	if c.Status == RunFailed {
		return c.Message
	}
	return ""
}
