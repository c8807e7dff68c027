package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sundialhq/sundial"
)

// A request body is checked with jsontext before it is decoded, for what
// encoding/json lets through: text that is not valid UTF-8 (raw bytes, or
// an escaped lone surrogate such as "\ud800"), which it replaces by U+FFFD
// or, inside a json.RawMessage such as params, keeps as it is; and an
// object key given twice, of which it keeps the last. Either is a 400 that
// names where it is, the same on every backend, before anything is stored.

// jsonFault is the first such fault of a JSON text: where it is and what.
type jsonFault struct {
	path      []pathStep
	duplicate bool // a key given twice (its path ends with the key); else invalid UTF-8
}

// pathStep is one step of a path into a JSON value: an object's key, or an
// array's index.
type pathStep struct {
	name  string
	index int64 // when isIndex
	// isIndex marks an array element.
	isIndex bool
}

// findJSONFault returns the first key given twice or text that is not valid
// UTF-8 in raw, or nil if there is none. A text that is not JSON at all has
// no fault here: decoding it reports what is wrong.
func findJSONFault(raw []byte) *jsonFault {
	if jsontext.Value(raw).IsValid() {
		return nil // valid, no duplicate name, all UTF-8 (RFC 7493): the common case, fast
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	for {
		_, err := dec.ReadToken()
		if err == nil {
			continue
		}
		se, ok := errors.AsType[*jsontext.SyntacticError](err)
		if !ok {
			return nil // the end (io.EOF), or a text cut short
		}
		dup := errors.Is(se.Err, jsontext.ErrDuplicateName)
		if !dup && !json.Valid(raw) {
			// Not JSON: encoding/json reports the syntax error. What it
			// does take and jsontext does not is text that is not UTF-8.
			return nil
		}
		f := &jsonFault{duplicate: dup}
		i := 0
		for tok := range se.JSONPointer.Tokens() {
			i++
			step := pathStep{name: tok}
			if i <= dec.StackDepth() {
				if kind, _ := dec.StackIndex(i); kind == '[' {
					if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
						step = pathStep{index: n, isIndex: true}
					}
				}
			}
			f.path = append(f.path, step)
		}
		return f
	}
}

// field renders the fault's path as the API names fields: params.note,
// headers.X-A, tasks[3].name; "" for the body itself.
func (f *jsonFault) field() string {
	return renderPath(f.path)
}

func renderPath(path []pathStep) string {
	var b strings.Builder
	for _, s := range path {
		switch {
		case s.isIndex:
			b.WriteString("[" + strconv.FormatInt(s.index, 10) + "]")
		case b.Len() > 0:
			b.WriteString("." + s.name)
		default:
			b.WriteString(s.name)
		}
	}
	return b.String()
}

// error is the client error for the fault.
func (f *jsonFault) error() *sundial.Error {
	if f.duplicate {
		key := f.path[len(f.path)-1].name
		return &sundial.Error{Code: sundial.EInvalid, Field: f.field(), Token: key,
			Message: "the key " + strconv.Quote(key) + " is given twice in the same object; give each key once"}
	}
	return &sundial.Error{Code: sundial.EInvalid, Field: f.field(),
		Message: "text must be valid UTF-8: this holds bytes that are not, or an escaped surrogate " +
			`(\ud800 to \udfff) that is not half of a pair`}
}

// checkJSON returns the client error of raw's first fault, or nil.
func checkJSON(raw []byte) error {
	if f := findJSONFault(raw); f != nil {
		return f.error()
	}
	return nil
}
