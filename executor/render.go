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

// Render replaces each {{name}} tag of tmpl with the value of the variable
// name in v and copies the rest verbatim. An unknown name, a params path
// that is not in v.Params or a malformed tag is an error.
func Render(tmpl string, v Vars) (string, error) {
	t, err := nextTag(tmpl, 0)
	if err != nil {
		return "", err
	}
	if t.start < 0 {
		return tmpl, nil
	}
	var b strings.Builder
	b.Grow(len(tmpl) + 64)
	var num [64]byte
	paramsValid := false
	pos := 0
	for t.start >= 0 {
		b.WriteString(tmpl[pos:t.start])
		switch t.name {
		case "run_id":
			b.Write(strconv.AppendInt(num[:0], v.RunID, 10))
		case "task_id":
			b.Write(strconv.AppendInt(num[:0], v.TaskID, 10))
		case "task_name":
			b.WriteString(v.TaskName)
		case "scheduled_time":
			b.Write(v.ScheduledTime.UTC().AppendFormat(num[:0], time.RFC3339))
		case "attempt":
			b.Write(strconv.AppendInt(num[:0], int64(v.Attempt), 10))
		case "delivery":
			b.Write(strconv.AppendInt(num[:0], int64(v.Delivery), 10))
		case "trigger":
			b.WriteString(v.Trigger)
		case "idempotency_key":
			b.WriteString(v.IdempotencyKey)
		case "trace_id":
			b.WriteString(v.TraceID)
		case "callback_url":
			b.WriteString(v.CallbackURL)
		case "callback_token":
			b.WriteString(v.CallbackToken)
		case "checkpoint":
			if len(v.Checkpoint) == 0 {
				b.WriteString("null")
			} else {
				b.Write(v.Checkpoint)
			}
		case "params":
			if len(v.Params) == 0 {
				b.WriteString("null")
			} else {
				b.Write(v.Params)
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
				raw, err := lookupParam(v.Params, path)
				if err != nil {
					return "", tagError(t.name, "variable %q: %s", t.name, err.Error())
				}
				writeParam(&b, raw)
			} else if x, ok := v.Extra[t.name]; ok {
				b.WriteString(x)
			} else {
				return "", unknownError(t.name)
			}
		}
		pos = t.end
		if t, err = nextTag(tmpl, pos); err != nil {
			return "", err
		}
	}
	b.WriteString(tmpl[pos:])
	return b.String(), nil
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
