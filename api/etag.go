package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/sundialhq/sundial"
)

// Optimistic concurrency on a task: every answer that carries one task has
// its ETag, a strong entity tag of its id and version ("7-3"); a PUT or a
// PATCH that sends it back in If-Match is made only if the task is still
// at that version, and is 412 otherwise (RFC 9110, section 13.1.1). A
// PATCH may give the version in its body instead.

// etag is the entity tag of t as it is now.
func etag(t *sundial.Task) string {
	return `"` + strconv.FormatInt(t.ID, 10) + "-" + strconv.FormatInt(t.Version, 10) + `"`
}

// writeTask answers with status and t, which taskView has made ready,
// with its ETag.
func writeTask(w http.ResponseWriter, status int, t *sundial.Task) {
	w.Header().Set("ETag", etag(t))
	writeJSON(w, status, t)
}

// precondition is what a request says the task it changes must be: the
// entity tags of its If-Match ("*": any), and the version a PATCH gives.
type precondition struct {
	ifMatch string   // the header, as sent ("" for none)
	tags    []string // its entity tags; weak ones are kept to never match
	any     bool     // If-Match: *
	version int64    // a PATCH's version; 0 for none
}

// given reports whether the request makes its change conditional.
func (p precondition) given() bool { return p.ifMatch != "" || p.version != 0 }

// readIfMatch reads the If-Match of r: "*", or entity tags separated by
// commas, each in double quotes (a weak one, W/"...", never matches: the
// comparison is strong).
func readIfMatch(r *http.Request) (precondition, error) {
	p := precondition{ifMatch: strings.TrimSpace(strings.Join(r.Header.Values("If-Match"), ", "))}
	if p.ifMatch == "*" {
		p.any = true
		return p, nil
	}
	bad := &sundial.Error{Code: sundial.EInvalid, Field: "If-Match", Token: p.ifMatch,
		Message: `If-Match takes the ETag an answer gave for the task, in its double quotes (such as "7-3"), or *`}
	for rest := p.ifMatch; ; {
		if rest = strings.TrimLeft(rest, " \t,"); rest == "" {
			return p, nil
		}
		weak := strings.HasPrefix(rest, "W/")
		rest = strings.TrimPrefix(rest, "W/")
		end := strings.IndexByte(rest[min(1, len(rest)):], '"')
		if !strings.HasPrefix(rest, `"`) || end < 0 {
			return p, bad
		}
		tag := rest[:end+2]
		if rest = strings.TrimLeft(rest[end+2:], " \t"); rest != "" && rest[0] != ',' {
			return p, bad
		}
		if !weak {
			p.tags = append(p.tags, tag)
		}
	}
}

// check refuses cur, the task as stored, when it is not what p names: 412
// naming its current version.
func (p precondition) check(cur *sundial.Task) error {
	if p.ifMatch != "" && !p.any {
		tag, ok := etag(cur), false
		for _, t := range p.tags {
			ok = ok || t == tag
		}
		if !ok {
			return &sundial.Error{Code: sundial.EPrecondition, Field: "If-Match", Token: p.ifMatch,
				Message: "task " + strconv.FormatInt(cur.ID, 10) + " is at version " + strconv.FormatInt(cur.Version, 10) +
					" (ETag " + tag + "), not the one If-Match names: it changed since it was read; read it again"}
		}
	}
	if p.version != 0 && p.version != cur.Version {
		return staleVersion(cur, p.version)
	}
	return nil
}

// staleVersion is the 412 of a PATCH that gives the version v of the task
// cur, which is at another now.
func staleVersion(cur *sundial.Task, v int64) error {
	return &sundial.Error{Code: sundial.EPrecondition, Field: "version", Token: strconv.FormatInt(v, 10),
		Message: "task " + strconv.FormatInt(cur.ID, 10) + " is at version " + strconv.FormatInt(cur.Version, 10) +
			", not " + strconv.FormatInt(v, 10) + ": it changed since it was read; read it again"}
}

// staleWrite reports whether err is the store's refusal of an update of a
// task that changed since it was read (sundial.Store.TaskUpdate).
func staleWrite(err error) bool {
	e, ok := errors.AsType[*sundial.Error](err)
	return ok && e.Code == sundial.EConflict && e.Field == "version"
}
