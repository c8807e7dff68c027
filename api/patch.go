package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sundialhq/sundial"
)

// PATCH /api/v1/tasks/{id} takes a JSON merge patch (RFC 7396) of the
// task: the fields to change, null for a field to remove (it then takes
// its default, as a PUT that leaves it out). The patch is applied to the
// task as GET answers it (secrets masked, so a secret not sent is kept as
// PUT keeps "***"), less the fields the server sets, and the result goes
// the way of a PUT: the same checks, the same normalisation, the same
// update, audit entry and answer.

// mergePatchType is the media type of a JSON merge patch.
const mergePatchType = "application/merge-patch+json"

// handleTaskPatch serves PATCH /api/v1/tasks/{id}. With a precondition
// (If-Match, or version in the patch) a task that is at another version is
// 412; without one, a task another writer changed meanwhile is read again
// and patched again.
func (s *Server) handleTaskPatch(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	pre, err := readIfMatch(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	patch, err := readPatch(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if pre.version, err = checkPatch(patch); err != nil {
		s.writeError(w, r, err)
		return
	}
	for attempt := 1; ; attempt++ {
		cur, err := s.store.TaskGet(r.Context(), id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := pre.check(cur); err != nil {
			s.writeError(w, r, err)
			return
		}
		now := s.now()
		req := taskRequest{actor: actorOf(r)}
		if err := decodeStrict(patchedTask(cur, patch, now), &req); err != nil {
			s.writeError(w, r, err)
			return
		}
		t, err := s.writable(r.Context(), &req, cur, now)
		if err == nil {
			err = s.checkDeps(r.Context(), t, cur, nil)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		switch err := s.tryUpdate(r, cur, t, now); {
		case err == nil:
			s.answerStates(r, now, t)
			writeTask(w, http.StatusOK, answerTask(t, now, req.generated))
			return
		case errors.Is(err, errUnchanged):
			s.answerStates(r, now, cur)
			writeTask(w, http.StatusOK, taskView(cur, now))
			return
		case staleWrite(err) && pre.given():
			s.writeError(w, r, s.stale(r, cur, pre))
			return
		case staleWrite(err) && attempt < setStatusAttempts:
			continue
		default:
			s.writeError(w, r, err)
			return
		}
	}
}

// readPatch reads a PATCH's body, a JSON object of at most maxTaskBody
// bytes, sent as application/merge-patch+json or application/json, with
// the checks every body has (checkJSON).
func readPatch(w http.ResponseWriter, r *http.Request) (*object, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != mergePatchType && mt != "application/json") {
		return nil, &sundial.Error{Code: sundial.EUnsupported, Token: r.Header.Get("Content-Type"),
			Message: "Content-Type must be " + mergePatchType + " (a JSON merge patch, RFC 7396) or application/json"}
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return nil, &sundial.Error{Code: sundial.EUnsupported, Token: r.Header.Get("Content-Type"),
			Message: "a JSON body is UTF-8: give no charset, or charset=utf-8"}
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTaskBody))
	if err != nil {
		return nil, readError(r, err, maxTaskBody)
	}
	if err := checkJSON(raw); err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if err := decodeStrict(raw, &probe); err != nil {
		return nil, err
	}
	o, ok := parseObject(raw)
	if !ok || probe == nil {
		return nil, sundial.Errorf(sundial.EInvalid, "",
			"a patch of a task is a JSON object of the fields to change, such as {\"cron_expr\": \"0 0 4 * * *\"}; got null")
	}
	return o, nil
}

// checkPatch refuses in a patch the fields the server sets, and a status
// removed; it returns the version the patch gives, 0 for none.
func checkPatch(p *object) (version int64, _ error) {
	for _, k := range p.keys {
		v := p.vals[k]
		switch {
		case k == "version":
			if err := json.Unmarshal(v, &version); err != nil || version < 1 {
				return 0, &sundial.Error{Code: sundial.EInvalid, Field: "version", Token: string(v),
					Message: "version must be a positive integer: the version the task was read at"}
			}
		case slices.Contains(serverSet, k):
			return 0, sundial.Errorf(sundial.EInvalid, k, "%s is set by the server and cannot be patched", k)
		case k == "status" && isNull(v):
			return 0, sundial.Errorf(sundial.EInvalid, "status",
				"status cannot be removed: give ENABLED or DISABLED (or leave it out to keep it)")
		}
	}
	return version, nil
}

// patchedTask is the body of the PUT a patch of cur stands for: cur as
// GET answers it at now, less the fields the server sets, with the patch
// merged in (RFC 7396) and the version cur is at. Where a PUT reads a field
// left out as "keep" rather than "default", the patch's null is made the
// field's empty value (disabled_reason); and where a patch gives one
// spelling of a field, the task's other spelling goes (delay_seconds
// replaces run_at, headers_json headers).
func patchedTask(cur *sundial.Task, patch *object, now time.Time) []byte {
	view := *cur
	base, _ := json.Marshal(taskView(&view, now))
	doc, _ := parseObject(base)
	for _, k := range serverSet {
		doc.del(k)
	}
	merged, _ := parseObject(mergePatch(doc.encode(), patch.encode()))
	if v, ok := patch.get("disabled_reason"); ok && isNull(v) {
		merged.set("disabled_reason", jsontext.Value(`""`))
	}
	if v, ok := patch.get("delay_seconds"); ok && !isNull(v) {
		if _, ok := patch.get("run_at"); !ok {
			merged.del("run_at")
		}
	}
	if v, ok := patch.get("headers_json"); ok && !isNull(v) {
		if _, ok := patch.get("headers"); !ok {
			merged.del("headers")
		}
	}
	merged.set("version", jsontext.Value(strconv.FormatInt(cur.Version, 10)))
	return merged.encode()
}

// mergePatch applies the JSON merge patch patch to the JSON value target
// (RFC 7396, section 2): an object patch sets its members in the target
// object (null removes one), recursively; any other patch replaces the
// target. Members keep their place, and values the patch does not touch
// their text.
func mergePatch(target, patch jsontext.Value) jsontext.Value {
	p, ok := parseObject(patch)
	if !ok {
		return patch
	}
	t, ok := parseObject(target)
	if !ok {
		t = &object{vals: map[string]jsontext.Value{}}
	}
	for _, k := range p.keys {
		v := p.vals[k]
		if isNull(v) {
			t.del(k)
			continue
		}
		cur, _ := t.get(k)
		t.set(k, mergePatch(cur, v))
	}
	return t.encode()
}

// object is a JSON object as written: its member names in order, and
// their values' text.
type object struct {
	keys []string
	vals map[string]jsontext.Value
}

// parseObject reads the JSON text raw as an object; false when it is not
// one (or not JSON, or it names a member twice).
func parseObject(raw jsontext.Value) (*object, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	o := &object{vals: map[string]jsontext.Value{}}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		o.set(name, v.Clone())
	}
	return o, true
}

func (o *object) get(k string) (jsontext.Value, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// set sets the member k, in its place if the object has it, else last.
func (o *object) set(k string, v jsontext.Value) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; ok {
		delete(o.vals, k)
		o.keys = slices.DeleteFunc(o.keys, func(x string) bool { return x == k })
	}
}

// encode writes the object as JSON text, its members in order.
func (o *object) encode() jsontext.Value {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := jsontext.AppendQuote(nil, k)
		b.Write(name)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// isNull reports whether v is the JSON null.
func isNull(v jsontext.Value) bool { return string(bytes.TrimSpace(v)) == "null" }
