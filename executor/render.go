package executor

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// Vars are the values a body template and the Sundial headers are rendered
// from.
type Vars struct {
	RunID, TaskID  int64
	TaskName       string
	ScheduledTime  time.Time         // the fire's scheduled instant
	Attempt        int               // the attempt number across fires
	Delivery       int               // 1 for the first delivery of this run, 2 for a redelivery, ...
	Trigger        string            // "SCHEDULE" or "MANUAL"
	IdempotencyKey string            // the same for every delivery of one fire
	TraceID        string            // 32 lowercase hex characters (NewTraceID); Deliver replaces a malformed one
	NodeID         string            // the node making the call, sent as X-Sundial-Node when set
	Params         json.RawMessage   // the run's params (its own, or its task's), any JSON; nil renders as null
	CallbackURL    string            // an ASYNC run's callback endpoint; sent as X-Sundial-Callback-Url when set
	CallbackToken  string            // its token; sent as X-Sundial-Callback-Token when set
	Checkpoint     json.RawMessage   // the run's last checkpoint; sent as X-Sundial-Checkpoint when set, nil renders as null
	Extra          map[string]string // more variables
}

// builtins are the variable names every template may use, besides
// params.<path> and the extra names.
var builtins = []string{
	"run_id", "task_id", "task_name", "scheduled_time", "attempt", "delivery",
	"trigger", "idempotency_key", "trace_id", "params", "callback_url", "callback_token", "checkpoint",
}

// templateField is the input field template errors concern.
const templateField = "body_template"

// DefaultMaxBodyBytes is the largest body a template may render to when
// Options do not say (executor.max_body_bytes).
const DefaultMaxBodyBytes = 1 << 20

// Render replaces each {{name}} tag of tmpl with the value of the variable
// name in v and copies the rest verbatim. An unknown name, a params path
// that is not in v.Params, a malformed tag, or a body larger than
// DefaultMaxBodyBytes is an error.
func Render(tmpl string, v Vars) (string, error) { return RenderMax(tmpl, v, DefaultMaxBodyBytes) }

// RenderMax is Render with a limit on the body of limit bytes (0: none).
// A body that would be larger is an error before it is: it is never
// allocated past the limit.
func RenderMax(tmpl string, v Vars, limit int) (string, error) {
	t, err := nextTag(tmpl, 0)
	if err != nil {
		return "", err
	}
	if t.start < 0 {
		if limit > 0 && len(tmpl) > limit {
			return "", tooLargeError(tmpl, 0, limit)
		}
		return tmpl, nil
	}
	var b strings.Builder
	grow := len(tmpl) + 64
	if limit > 0 {
		grow = min(grow, limit)
	}
	b.Grow(grow)
	var num [64]byte
	var params paramLookup
	paramsValid := false
	pos := 0
	// put writes p and s, unless the body would grow past the limit.
	put := func(p []byte, s string, at tag) error {
		n := len(p) + len(s)
		if limit > 0 && b.Len()+n > limit {
			return tooLargeError(tmpl[at.start:at.end], at.start, limit)
		}
		if b.Cap()-b.Len() < n {
			b.Grow(n) // doubles; append would grow a large buffer by a quarter, copying it over and over
		}
		b.Write(p)
		b.WriteString(s)
		return nil
	}
	for t.start >= 0 {
		if err := put(nil, tmpl[pos:t.start], t); err != nil {
			return "", err
		}
		var p []byte
		var s string
		switch t.name {
		case "run_id":
			p = strconv.AppendInt(num[:0], v.RunID, 10)
		case "task_id":
			p = strconv.AppendInt(num[:0], v.TaskID, 10)
		case "task_name":
			s = v.TaskName
		case "scheduled_time":
			p = v.ScheduledTime.UTC().AppendFormat(num[:0], time.RFC3339)
		case "attempt":
			p = strconv.AppendInt(num[:0], int64(v.Attempt), 10)
		case "delivery":
			p = strconv.AppendInt(num[:0], int64(v.Delivery), 10)
		case "trigger":
			s = v.Trigger
		case "idempotency_key":
			s = v.IdempotencyKey
		case "trace_id":
			s = v.TraceID
		case "callback_url":
			s = v.CallbackURL
		case "callback_token":
			s = v.CallbackToken
		case "checkpoint":
			if len(v.Checkpoint) == 0 {
				s = "null"
			} else {
				p = v.Checkpoint
			}
		case "params":
			if len(v.Params) == 0 {
				s = "null"
			} else {
				p = v.Params
			}
		default:
			if path, ok := strings.CutPrefix(t.name, "params."); ok {
				if !paramsValid {
					if len(v.Params) == 0 {
						return "", tagError(t.name, "variable %q: the task has no params", t.name)
					}
					if !json.Valid(v.Params) {
						return "", tagError(t.name, "variable %q: the params are not valid JSON", t.name)
					}
					paramsValid = true
				}
				if params.doc == nil {
					params.doc = v.Params
				}
				raw, err := params.lookup(path)
				if err != nil {
					return "", tagError(t.name, "variable %q: %s", t.name, err.Error())
				}
				p, s = paramText(raw)
			} else if x, ok := v.Extra[t.name]; ok {
				s = x
			} else {
				return "", unknownError(t.name)
			}
		}
		if err := put(p, s, t); err != nil {
			return "", err
		}
		pos = t.end
		if t, err = nextTag(tmpl, pos); err != nil {
			return "", err
		}
	}
	if err := put(nil, tmpl[pos:], tag{start: pos, end: len(tmpl)}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// tooLargeError says that the body passes limit bytes at the part of the
// template that starts at offset at: a tag, or the text after the last.
func tooLargeError(part string, at, limit int) error {
	if len(part) > 32 {
		part = part[:32] + "..."
	}
	e := sundial.Errorf(sundial.EInvalid, templateField,
		"the rendered body would be larger than %d bytes (executor.max_body_bytes): it passes the limit at %q, offset %d of body_template; nothing was sent",
		limit, part, at)
	e.Token = part
	return e
}

// Upper bounds, in bytes, of the variables whose values a task does not
// write itself.
const (
	intLen           = 20 // an int64 in decimal, sign included
	timeLen          = 32 // RFC 3339 in UTC, any year time.Time holds
	triggerLen       = 16
	idempotencyLen   = 128 // sundial-{task_id}-{fire_key}
	traceIDLen       = 32
	callbackURLLen   = sundial.MaxURLLen + 64 // callback.base_url (at most MaxURLLen) and the run's path
	callbackTokenLen = 128
)

// BodyBound returns the most bytes tmpl can render to for a task named
// name whose params are params (nil: none), with the tag that contributes
// most to it: {{params}} counts len(params), {{params.path}} the size of
// that value in params (0 when params has none: the render fails), and
// every other variable the largest value it can have (a checkpoint
// MaxCheckpointLen). An extra variable counts 0. tmpl must pass
// ValidateTemplate; a malformed one is its error.
func BodyBound(tmpl, name string, params json.RawMessage) (bound int64, biggest string, err error) {
	paramsOK := len(params) > 0 && json.Valid(params)
	lookup := paramLookup{doc: params}
	var most int64 = -1
	pos := 0
	for {
		t, err := nextTag(tmpl, pos)
		if err != nil {
			return 0, "", err
		}
		if t.start < 0 {
			bound += int64(len(tmpl) - pos)
			return bound, biggest, nil
		}
		bound += int64(t.start - pos)
		var n int
		switch t.name {
		case "run_id", "task_id", "attempt", "delivery":
			n = intLen
		case "task_name":
			n = len(name)
		case "scheduled_time":
			n = timeLen
		case "trigger":
			n = triggerLen
		case "idempotency_key":
			n = idempotencyLen
		case "trace_id":
			n = traceIDLen
		case "callback_url":
			n = callbackURLLen
		case "callback_token":
			n = callbackTokenLen
		case "checkpoint":
			n = sundial.MaxCheckpointLen
		case "params":
			n = max(len(params), len("null"))
		default:
			if path, ok := strings.CutPrefix(t.name, "params."); ok && paramsOK {
				if raw, err := lookup.lookup(path); err == nil {
					n = len(raw)
				}
			}
		}
		if int64(n) > most {
			most, biggest = int64(n), tmpl[t.start:t.end]
		}
		bound += int64(n)
		pos = t.end
	}
}

// CheckBodyBound refuses a task whose body template can render to more
// than limit bytes with its own params (BodyBound); 0 means no limit.
// The error names body_template and the bound.
func CheckBodyBound(tmpl, name string, params json.RawMessage, limit int) error {
	if limit <= 0 {
		return nil
	}
	bound, biggest, err := BodyBound(tmpl, name, params)
	if err != nil {
		return err
	}
	if bound <= int64(limit) {
		return nil
	}
	e := sundial.Errorf(sundial.EInvalid, templateField,
		"body_template can render a body of up to %d bytes with the task's params, more than the server's limit of %d bytes (executor.max_body_bytes); its largest tag is %s",
		bound, limit, biggest)
	e.Token = biggest
	return e
}

// ValidateTemplate checks tmpl without rendering it. It reports the first
// malformed tag, or the first variable that is neither built in, nor a
// well-formed params.<path>, nor one of allowed (e.g. "callback_url").
// Whether a params path exists is known only when rendering.
func ValidateTemplate(tmpl string, allowed ...string) error {
	for pos := 0; ; {
		t, err := nextTag(tmpl, pos)
		if err != nil {
			return err
		}
		if t.start < 0 {
			return nil
		}
		pos = t.end
		if slices.Contains(builtins, t.name) || slices.Contains(allowed, t.name) {
			continue
		}
		if path, ok := strings.CutPrefix(t.name, "params."); ok {
			if err := checkParamPath(path); err != nil {
				return tagError(t.name, "variable %q: %s", t.name, err.Error())
			}
			continue
		}
		return unknownError(t.name)
	}
}

// tag is one {{name}} in a template: tmpl[start:end] is the whole tag.
// start is -1 when there are no more tags.
type tag struct {
	start, end int
	name       string
}

// nextTag finds the first tag of tmpl at or after pos. In a run of three
// or more '{' the tag opens at the last two, so "{{{x}}}" is "{", x, "}".
func nextTag(tmpl string, pos int) (tag, error) {
	i := strings.Index(tmpl[pos:], "{{")
	if i < 0 {
		return tag{start: -1}, nil
	}
	start := pos + i
	for start+2 < len(tmpl) && tmpl[start+2] == '{' {
		start++
	}
	open := start + 2
	j := strings.Index(tmpl[open:], "}}")
	if j < 0 {
		return tag{}, tagError("{{", "unclosed \"{{\" at offset %d", start)
	}
	end := open + j + 2
	name := strings.Trim(tmpl[open:open+j], " \t")
	if name == "" {
		return tag{}, tagError(tmpl[start:end], "empty tag %q at offset %d", tmpl[start:end], start)
	}
	for k := 0; k < len(name); k++ {
		if !isNameByte(name[k]) {
			return tag{}, tagError(tmpl[start:end],
				"malformed tag %q at offset %d: a name is made of letters, digits, '_', '.' and '-'",
				tmpl[start:end], start)
		}
	}
	return tag{start: start, end: end, name: name}, nil
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '-'
}

func unknownError(name string) error {
	return tagError(name, "unknown variable %q", name)
}

func tagError(token, format string, args ...any) error {
	e := sundial.Errorf(sundial.EInvalid, templateField, format, args...)
	e.Token = token
	return e
}
