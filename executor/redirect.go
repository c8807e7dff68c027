package executor

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sundialhq/sundial"
)

// maxRedirects is how many redirects a delivery follows at most (as Go's
// default client).
const maxRedirects = 10

// checkRedirect returns the CheckRedirect of a delivery of req under its
// redirect policy (see sundial.RedirectPolicy). Every hop is dialled
// through the guard like the first. From the first hop that leaves the
// origin of the task's target_url on, each request loses the task's own
// headers, Sundial's tokens (the callback's, the signature, the OIDC
// token) and its body, and becomes a GET (HEAD stays HEAD), as after a
// 303: Go's client would otherwise resend a 307's body and every header
// but Authorization and Cookie.
func checkRedirect(req *Request) func(*http.Request, []*http.Request) error {
	policy := req.Redirects
	if policy == "" {
		policy = sundial.RedirectSameOrigin
	}
	return func(next *http.Request, via []*http.Request) error {
		if policy == sundial.RedirectNone {
			return http.ErrUseLastResponse // the 3xx is the outcome
		}
		// Go's client sets Referer to the previous URL, path and query
		// included, which may hold a secret (a webhook's key): no hop
		// carries it.
		next.Header.Del("Referer")
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		prev := via[len(via)-1]
		if prev.URL.Scheme == "https" && next.URL.Scheme != "https" {
			return errors.New("redirect from https to " + sundial.URLOrigin(next.URL) + " refused: a delivery never leaves https")
		}
		first := via[0].URL
		left := false
		for _, r := range append(via[1:], next) {
			if sundial.URLOrigin(r.URL) != sundial.URLOrigin(first) {
				left = true
			}
		}
		if !left {
			return nil
		}
		if policy == sundial.RedirectSameOrigin {
			return fmt.Errorf("redirect to %s refused: follow_redirects is same_origin and the target_url's origin is %s",
				sundial.URLOrigin(next.URL), sundial.URLOrigin(first))
		}
		for k := range req.Headers {
			next.Header.Del(k)
		}
		for k := range next.Header {
			if dropOffOrigin(k) {
				next.Header.Del(k)
			}
		}
		if next.Method != http.MethodHead {
			next.Method = http.MethodGet
		}
		next.Body, next.GetBody, next.ContentLength = nil, nil, 0
		return nil
	}
}

// dropOffOrigin reports whether a header Sundial sets is dropped on a hop
// to another origin: credentials, tokens, and what describes the body.
func dropOffOrigin(canonical string) bool {
	switch canonical {
	case "Authorization", "Proxy-Authorization", "Cookie", "Content-Type",
		"X-Sundial-Callback-Token", "X-Sundial-Callback-Url", "X-Sundial-Checkpoint":
		return true
	}
	return strings.HasPrefix(canonical, "Webhook-")
}
