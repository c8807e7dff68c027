package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sundialhq/sundial"
)

// What a request's fields want, told in the client's terms: the field, the
// JSON type and an example, never a Go type.

// exampler is a request whose fields have examples of their own, where
// fieldExamples' would mislead (a callback's status is not a task's).
type exampler interface {
	examples() map[string]string
}

// fieldExamples are example values of request fields, by path.
var fieldExamples = map[string]string{
	"name":                      `"nightly-report"`,
	"description":               `"Sends the nightly report"`,
	"labels":                    `{"team": "payments"}`,
	"cron_expr":                 `"0 0 3 * * *"`,
	"run_at":                    `"2030-01-02T15:04:05Z"`,
	"delay_seconds":             `60`,
	"request_id":                `"order-7-reminder"`,
	"biz_id":                    `"order-7"`,
	"timezone":                  `"Europe/Berlin"`,
	"exec_type":                 `"SYNC"`,
	"http_method":               `"POST"`,
	"target_url":                `"https://example.com/hook"`,
	"headers":                   `{"X-Team": "ops"}`,
	"headers_json":              `"{\"X-Team\": \"ops\"}"`,
	"body_template":             `"{\"run\": \"{{run_id}}\"}"`,
	"timeout_seconds":           `30`,
	"retry_policy":              `{"max_attempts": 3}`,
	"max_concurrency":           `1`,
	"concurrency_policy":        `"QUEUE"`,
	"max_queue":                 `100`,
	"overlap_action":            `"SKIP"`,
	"failure_action":            `"RUN_NEW"`,
	"catch_up_mode":             `"NONE"`,
	"catch_up_limit":            `100`,
	"callback_method":           `"POST"`,
	"callback_timeout_sec":      `600`,
	"starting_deadline_seconds": `30`,
	"start_at":                  `"2030-03-01T00:00:00Z"`,
	"end_at":                    `"2030-03-31T23:59:59Z"`,
	"max_runs":                  `10`,
	"jitter_seconds":            `30`,
	"pause_after_failures":      `5`,
	"depends_on":                `[{"task": "extract", "on": "success"}]`,
	"join":                      `"all"`,
	"join_deadline_seconds":     `3600`,
	"dst":                       `"skip_gap"`,
	"calendars":                 `["us-holidays"]`,
	"entries":                   `["2026-12-25", "2026-12-24..2026-12-31", "0 0 0 ? 11 THU#4"]`,
	"priority":                  `10`,
	"follow_redirects":          `"same_origin"`,
	"signing_secret":            `"generate"`,
	"oidc":                      `{"audience": "https://example.com"}`,
	"oidc.audience":             `"https://example.com"`,
	"status":                    `"ENABLED"`,
	"disabled_reason":           `"waiting for the vendor's fix"`,
	"reason":                    `"waiting for the vendor's fix"`,
	"version":                   `3`,
	"tasks":                     `[{"name": "a", "cron_expr": "0 * * * * *", "target_url": "https://example.com/hook"}]`,
	"message":                   `"imported 120 rows"`,
	"retry":                     `false`,
}

// kindExamples are example values of each JSON type, for a field without
// one of its own.
var kindExamples = map[string]string{
	"a string": `"text"`, "a boolean": `true`, "an integer": `10`, "a number": `1.5`,
	"an array": `[]`, "an object": `{}`,
}

// jsonKind names, in JSON terms, what a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return "a JSON value"
	}
}

// valueKind names what encoding/json says it found ("string", "number
// 1.5", "array") as a client would.
func valueKind(v string) string {
	switch v {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "a boolean"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + n
	}
	return v
}

// jsonName is the name a struct field has in JSON, or "" for none.
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}

// structOf returns the struct type t is or points to, or nil.
func structOf(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || t == reflect.TypeFor[json.RawMessage]() {
		return nil
	}
	return t
}

// fieldAt returns the field of struct type t at the dotted JSON path, as
// far as the path goes through structs, and how much of the path that is.
func fieldAt(t reflect.Type, path string) (reflect.Type, string) {
	var walked []string
	var ft reflect.Type
	for seg := range strings.SplitSeq(path, ".") {
		st := structOf(t)
		if st == nil {
			break
		}
		found := false
		for f := range st.Fields() {
			if jsonName(f) == seg {
				ft, t, found = f.Type, f.Type, true
				break
			}
		}
		if !found {
			break
		}
		walked = append(walked, seg)
	}
	return ft, strings.Join(walked, ".")
}

// typeError is the client error of a value of the wrong JSON type in a
// body decoded into dst.
func typeError(e *json.UnmarshalTypeError, dst any) *sundial.Error {
	got := valueKind(e.Value)
	var token string // only a number carries its text
	if v, ok := strings.CutPrefix(e.Value, "number "); ok {
		token = v
	}
	if e.Field == "" {
		return &sundial.Error{Code: sundial.EInvalid, Token: token,
			Message: "request body must be a JSON object; got " + got}
	}
	field, path := fieldAt(reflect.TypeOf(dst), e.Field)
	if field == nil {
		field, path = e.Type, e.Field
	}
	kind := jsonKind(field)
	example, ok := "", false
	if ex, is := dst.(exampler); is {
		example, ok = ex.examples()[path]
	}
	if !ok {
		example, ok = fieldExamples[path]
	}
	if !ok {
		example = kindExamples[kind]
	}
	msg := "must be " + kind + ", such as " + example + "; got " + got
	if elem := jsonKind(e.Type); elem != kind {
		// The value is inside the field: an element of its array, a
		// value of its object.
		msg = "must be " + kind + " of " + strings.TrimPrefix(strings.TrimPrefix(elem, "an "), "a ") + "s, such as " +
			example + "; it holds " + got
	}
	return &sundial.Error{Code: sundial.EInvalid, Field: path, Token: token, Message: msg}
}

// checkKeys refuses a key of the JSON object raw that is not exactly the
// name of a field of dst's struct (encoding/json would take one that
// differs in case), in nested structs too, saying which known name it may
// misspell. A raw that is not an object is left to the decoder.
func checkKeys(raw []byte, dst any) error {
	return checkKeysOf(raw, structOf(reflect.TypeOf(dst)), "")
}

func checkKeysOf(raw []byte, t reflect.Type, prefix string) error {
	if t == nil {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	keys := keysOf(t)
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil // not JSON: the decoder says so
		}
		key := tok.String()
		ft, ok := keys.fields[key]
		if !ok {
			return &sundial.Error{Code: sundial.EInvalid, Field: prefix + key, Token: key,
				Message: sundial.UnknownName("field", key, keys.known)}
		}
		if st := structOf(ft); st != nil {
			value, err := dec.ReadValue()
			if err != nil {
				return nil
			}
			if err := checkKeysOf(value, st, prefix+key+"."); err != nil {
				return err
			}
		} else if err := dec.SkipValue(); err != nil {
			return nil
		}
	}
	return nil
}

// structKeys are the JSON names of a struct's fields, and their types.
type structKeys struct {
	fields map[string]reflect.Type
	known  []string // in the order of the fields
}

// keyCache holds the structKeys of each struct type checkKeys has seen:
// reflection over a type's fields once, not once per request.
var keyCache sync.Map // reflect.Type -> *structKeys

func keysOf(t reflect.Type) *structKeys {
	if k, ok := keyCache.Load(t); ok {
		return k.(*structKeys)
	}
	k := &structKeys{fields: map[string]reflect.Type{}}
	for f := range t.Fields() {
		if name := jsonName(f); name != "" {
			k.fields[name] = f.Type
			k.known = append(k.known, name)
		}
	}
	keyCache.Store(t, k)
	return k
}
