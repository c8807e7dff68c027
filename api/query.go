package api

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sundialhq/sundial"
)

// route registers a built-in route: h serves pattern to a client of role
// at least, and reads only the query parameters params (none when empty).
// Any other parameter, one given twice (but those marked repeatable), or
// one that is malformed is refused with a 400 before h runs, so that a
// misspelt filter never returns everything.
func (s *Server) route(pattern string, role sundial.Role, h http.HandlerFunc, params ...string) {
	names := make([]string, len(params))
	repeat := map[string]bool{}
	for i, p := range params {
		names[i] = strings.TrimSuffix(p, repeatable)
		repeat[names[i]] = names[i] != p
	}
	s.params[pattern] = names
	s.Handle(pattern, role, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(r, pattern, names, repeat); err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r)
	}))
}

// repeatable, after the name of a query parameter given to route, marks one
// that a request may give more than once: each value is one item of a list
// (task=a&task=b).
const repeatable = "..."

// checkQuery checks the query string of r against the parameters params
// that the route of pattern accepts: each must be one of them, appear
// once (but those repeat says may repeat), be well-formed
// (percent-encoding, & as the only separator) and be valid UTF-8, name and
// value. An empty value counts as given.
func checkQuery(r *http.Request, pattern string, params []string, repeat map[string]bool) error {
	seen := make(map[string]bool)
	for piece := range strings.SplitSeq(r.URL.RawQuery, "&") {
		if piece == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(piece, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			return &sundial.Error{Code: sundial.EInvalid, Field: rawKey,
				Message: "malformed query parameter name: a % must start a %XX escape"}
		}
		if !utf8.ValidString(key) {
			return &sundial.Error{Code: sundial.EInvalid, Field: strings.ToValidUTF8(key, "\uFFFD"),
				Message: "query parameter name is not valid UTF-8"}
		}
		if strings.Contains(piece, ";") {
			return &sundial.Error{Code: sundial.EInvalid, Field: key,
				Message: "malformed query string: separate parameters with &, not ;"}
		}
		if !slices.Contains(params, key) {
			return unknownParam(r, pattern, key, params)
		}
		if seen[key] && !repeat[key] {
			return sundial.Errorf(sundial.EInvalid, key, "query parameter %q is given more than once; give it once%s",
				key, listHint(key))
		}
		seen[key] = true
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return &sundial.Error{Code: sundial.EInvalid, Field: key,
				Message: "malformed value: a % must start a %XX escape"}
		}
		if !utf8.ValidString(value) {
			return &sundial.Error{Code: sundial.EInvalid, Field: key, Message: "value is not valid UTF-8"}
		}
	}
	return nil
}

// unknownParam is the error for a query parameter the route does not read.
func unknownParam(r *http.Request, pattern, key string, params []string) error {
	route := pattern
	if !strings.Contains(pattern, " ") {
		route = r.Method + " " + pattern // a route for any method
	}
	accepts := route + " takes no query parameters"
	if len(params) > 0 {
		accepts = route + " accepts " + strings.Join(params, ", ")
	}
	if key == "" {
		return sundial.Errorf(sundial.EInvalid, "", "a query parameter has no name; %s", accepts)
	}
	return sundial.Errorf(sundial.EInvalid, key, "unknown query parameter %q; %s", key, accepts)
}

// listHint tells how to give several values of a parameter that takes a
// list.
func listHint(key string) string {
	switch key {
	case "status":
		return " (several statuses are one comma-separated value: status=A,B)"
	case "trigger":
		return " (several triggers are one comma-separated value: trigger=A,B)"
	case "selector":
		return " (a selector's requirements are one comma-separated value: selector=a=b,c!=d)"
	}
	return ""
}

// enumList reads the query parameter name as a comma-separated list of
// values of an enum, each one of valid in any case (status=enabled,failed),
// and returns them normalised (upper case) without repeats; nil when the
// parameter is absent or empty.
func enumList[E ~string](q url.Values, name string, valid []E) ([]E, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	var out []E
	for item := range strings.SplitSeq(v, ",") {
		e := E(sundial.UpperASCII(strings.TrimSpace(item)))
		if !slices.Contains(valid, e) {
			names := make([]string, len(valid))
			for i, x := range valid {
				names[i] = string(x)
			}
			return nil, &sundial.Error{Code: sundial.EInvalid, Field: name, Token: strings.TrimSpace(item),
				Message: "must be one of " + strings.Join(names, ", ") + ", or several of them separated by commas"}
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// timeRange parses the query's from and to (RFC 3339) into *from and *to,
// leaving an absent one zero; what names what [from, to) selects ("runs
// are selected by scheduled time") in the error of a to not after from.
func timeRange(q url.Values, from, to *time.Time, what string) error {
	return timeRangeOf(q, "from", "to", from, to, what)
}

// timeRangeOf is timeRange of the parameters named fromName and toName.
func timeRangeOf(q url.Values, fromName, toName string, from, to *time.Time, what string) error {
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{fromName, from}, {toName, to}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return &sundial.Error{Code: sundial.EInvalid, Field: p.name, Token: v,
				Message: "not an RFC 3339 time (for example 2026-01-01T00:00:00Z)"}
		}
		*p.dst = t.UTC()
	}
	if !from.IsZero() && !to.IsZero() && !to.After(*from) {
		return &sundial.Error{Code: sundial.EInvalid, Field: toName, Token: q.Get(toName),
			Message: toName + " must be after " + fromName + ": " + what + " in [" + fromName + ", " + toName + ")"}
	}
	return nil
}
