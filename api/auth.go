package api

import (
	"context"
	"crypto/subtle"
	"math"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sundialhq/sundial"
)

// Auth is who may do what through the API, and the checks that keep a web
// page from acting through a browser (docs/security.md, "Who may do
// what"). A Server without one (Config.Auth nil) checks nothing: every
// request is anonymous and allowed, as in the package's own tests.
type Auth struct {
	// Required turns authentication on: every route but the open ones
	// needs a bearer token whose role is at least the route's.
	Required bool
	// Bootstrap, when not empty, is a secret that is an admin token
	// (auth.bootstrap_token), whose actor is "bootstrap".
	Bootstrap string
	// Hosts are the Host header values a request may carry, each a host
	// name or address with or without a port (a value without a port
	// matches any port). Empty: any Host.
	Hosts []string
	// RateLimit is the requests per second each token may make on this
	// node, RateBurst how many it may make at once; 0: no limit.
	RateLimit float64
	RateBurst int
}

// roleOf is the role a route pattern needs (Handle). A request that
// matches no route (a 404 or 405 to come) needs a viewer's, so that an
// anonymous client learns nothing of the routes when authentication is on.
func (s *Server) roleOf(pattern string) sundial.Role {
	if pattern == "" {
		return sundial.RoleViewer
	}
	if role, ok := s.roles[pattern]; ok {
		return role
	}
	return sundial.RoleAdmin // registered on the mux directly: closed
}

// principal is who made a request: a token's name and role, "bootstrap",
// or "anonymous" when authentication is off.
type principal struct {
	actor string
	role  sundial.Role
	key   string // the rate limiter's key: the token's ID
}

type principalKey struct{}

// actorOf is the actor of r for the audit log.
func actorOf(r *http.Request) string {
	if p, ok := r.Context().Value(principalKey{}).(*principal); ok {
		return p.actor
	}
	return sundial.ActorAnonymous
}

// authenticate checks r before it reaches its route: its Host, that a
// state-changing request is not one a web page could make, its token and
// rate, and its role. It answers the request itself when one fails, and
// returns nil; else the request to serve.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) *http.Request {
	_, pattern := s.mux.Handler(r)
	need := s.roleOf(pattern)
	if need == sundial.RoleNone {
		return r // open, or checked with a run's own token
	}
	if err := s.auth.checkHost(r.Host); err != nil {
		s.writeError(w, r, err)
		return nil
	}
	if err := checkCrossSite(r); err != nil {
		s.writeError(w, r, err)
		return nil
	}
	if !s.auth.Required {
		return r
	}
	p, err := s.principalOf(r)
	if err != nil {
		if sundial.ErrorCode(err) == sundial.EUnauthorized {
			challenge := `Bearer realm="sundial"`
			if r.Header.Get("Authorization") != "" {
				challenge += `, error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
		}
		s.writeError(w, r, err)
		return nil
	}
	if wait, ok := s.limiter.allow(p.key, s.now()); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		s.writeError(w, r, sundial.Errorf(sundial.ERateLimited, "",
			"token %q is over its rate limit of %g requests per second (burst %d); retry after %d s",
			p.actor, s.auth.RateLimit, s.auth.RateBurst, wait))
		return nil
	}
	if !p.role.Allows(need) {
		s.writeError(w, r, sundial.Errorf(sundial.EForbidden, "",
			"%s %s needs the role %s; token %q has the role %s", r.Method, r.URL.Path, need, p.actor, p.role))
		return nil
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
}

// principalOf reads the bearer token of r and finds whose it is. The token
// itself is never written anywhere: not to an answer, not to a log.
func (s *Server) principalOf(r *http.Request) (*principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, sundial.Errorf(sundial.EUnauthorized, "",
			"authentication required: send an API token as Authorization: Bearer <token>")
	}
	scheme, secret, _ := strings.Cut(h, " ")
	secret = strings.TrimSpace(secret)
	if !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return nil, sundial.Errorf(sundial.EUnauthorized, "",
			"the Authorization header must be Bearer <token>")
	}
	if s.auth.Bootstrap != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.auth.Bootstrap)) == 1 {
		return &principal{actor: sundial.ActorBootstrap, role: sundial.RoleAdmin, key: "bootstrap"}, nil
	}
	// Read afresh on every request, through the index of hashes: a token
	// revoked on any node is refused here at once.
	t, err := s.store.TokenByHash(r.Context(), sundial.HashToken(secret))
	if sundial.ErrorCode(err) == sundial.ENotFound {
		return nil, sundial.Errorf(sundial.EUnauthorized, "", "the token is not valid: unknown or revoked")
	}
	if err != nil {
		return nil, err
	}
	if t.Expired(s.now()) {
		return nil, sundial.Errorf(sundial.EUnauthorized, "", "token %q expired at %s", t.Name, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return &principal{actor: t.Name, role: t.Role, key: t.ID}, nil
}

// checkHost refuses a Host header that is not one of the node's names,
// when the node has a list of them: a page whose name was made to
// resolve to the node's address (DNS rebinding) still sends its own.
func (a *Auth) checkHost(host string) error {
	return checkHost(a.Hosts, host)
}

// checkHost refuses host unless hosts is empty or it is one of them: a
// name with its port, or a name alone, which matches any port.
func checkHost(hosts []string, host string) error {
	if len(hosts) == 0 {
		return nil
	}
	h := strings.ToLower(host)
	name := h
	if n, _, err := net.SplitHostPort(h); err == nil {
		name = n
	}
	for _, allowed := range hosts {
		allowed = strings.ToLower(allowed)
		if h == allowed || name == allowed || "["+name+"]" == allowed {
			return nil
		}
	}
	e := sundial.Errorf(sundial.EForbidden, "Host",
		"Host %q is not a name of this node (api.allowed_hosts); use one of: %s", host, strings.Join(hosts, ", "))
	e.Token = host
	return e
}

// RequireHost serves h only the requests whose Host is one of hosts (as
// Auth.Hosts), and answers the others 403 in the JSON error shape: the
// check of the API, for a listener of its own (the profiler's).
func RequireHost(hosts []string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkHost(hosts, r.Host); err != nil {
			e := err.(*sundial.Error)
			writeJSON(w, http.StatusForbidden, errorBody{Error: errorDetail{Code: e.Code, Message: e.Message, Field: e.Field, Token: e.Token}})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkCrossSite refuses a state-changing request that a web page on
// another site could make a browser send (a form, or a fetch without
// CORS): one with neither a bearer token nor the JSON content type, which
// a browser sends cross-site only after the target has allowed it
// (CORS preflight), and Sundial allows none.
func checkCrossSite(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " "); strings.EqualFold(scheme, "Bearer") {
		return nil
	}
	// Neither is a type a web page's form may send (both need a CORS
	// preflight).
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil &&
		(mt == "application/json" || mt == mergePatchType) {
		return nil
	}
	return sundial.Errorf(sundial.EForbidden, "Content-Type",
		"a %s without a bearer token must be sent with Content-Type: application/json, even without a body, so that a web page cannot make a browser send it", r.Method)
}

// limiter holds a token bucket per token: RateLimit requests a second,
// RateBurst at once. It is per node: behind a load balancer across n
// nodes, a token may make up to n times as many.
type limiter struct {
	rate  float64
	burst float64

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst int) *limiter {
	if burst < 1 {
		burst = max(1, int(math.Ceil(rate)))
	}
	return &limiter{rate: rate, burst: float64(burst), buckets: make(map[string]*bucket)}
}

// allow takes one request from key's bucket at now. When the bucket is
// empty it returns false and the whole seconds until it holds one.
func (l *limiter) allow(key string, now time.Time) (retryAfter int, ok bool) {
	if l == nil || l.rate <= 0 {
		return 0, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(l.burst, b.tokens+d.Seconds()*l.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return max(1, int(math.Ceil((1-b.tokens)/l.rate))), false
}
