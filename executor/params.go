package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
)

// This file resolves params.<path> variables. It walks the raw JSON of the
// params instead of decoding them, so a lookup allocates nothing and a
// nested value comes out exactly as the task wrote it.

// lookupParam returns the raw JSON of the value at the dot path in doc.
// doc must be valid JSON. A segment names an object key, or an array index.
func lookupParam(doc []byte, path string) ([]byte, error) {
	if err := checkParamPath(path); err != nil {
		return nil, err
	}
	v := bytes.TrimLeft(doc, " \t\r\n")
	rest := path
	for {
		seg, next, more := strings.Cut(rest, ".")
		var ok bool
		switch v[0] {
		case '{':
			v, ok = objectField(v, seg)
			if !ok {
				return nil, fmt.Errorf("%s has no key %q", paramsPrefix(path, rest), seg)
			}
		case '[':
			n, err := strconv.Atoi(seg)
			if err != nil || seg[0] < '0' || seg[0] > '9' {
				return nil, fmt.Errorf("%s is an array and %q is not an index", paramsPrefix(path, rest), seg)
			}
			v, ok = arrayElem(v, n)
			if !ok {
				return nil, fmt.Errorf("%s has no element %d", paramsPrefix(path, rest), n)
			}
		default:
			return nil, fmt.Errorf("%s is %s, not an object or array", paramsPrefix(path, rest), jsonKind(v[0]))
		}
		if !more {
			return v, nil
		}
		rest = next
	}
}

// paramLookup looks params paths up in one params document, for one
// render. It walks the raw JSON as lookupParam does, with no allocation,
// until the walks have read walkBudget bytes of params (budget, when set,
// in its place); then it indexes each object or array a path looks into
// the first time, so that a template of thousands of tags over large
// params reads them about once, not once a tag, while a template of a few
// tags over small params never pays for an index.
type paramLookup struct {
	doc    []byte
	budget int                       // 0: walkBudget
	walked int                       // bytes of params the plain walks have been given
	objs   map[int]map[string][]byte // an object's keys, by its offset in doc
	arrs   map[int][][]byte          // an array's elements, by its offset in doc
}

// walkBudget is how many bytes of params a render's plain walks read
// before it indexes them: 64 tags over 1 KiB of params.
const walkBudget = 64 << 10

// lookup returns the raw JSON of the value at the dot path, as lookupParam.
func (l *paramLookup) lookup(path string) ([]byte, error) {
	budget := l.budget
	if budget == 0 {
		budget = walkBudget
	}
	if l.walked < budget {
		l.walked += len(l.doc)
		return lookupParam(l.doc, path)
	}
	if err := checkParamPath(path); err != nil {
		return nil, err
	}
	v := bytes.TrimLeft(l.doc, " \t\r\n")
	rest := path
	for {
		seg, next, more := strings.Cut(rest, ".")
		var ok bool
		switch v[0] {
		case '{':
			v, ok = l.object(v)[seg]
			if !ok {
				return nil, fmt.Errorf("%s has no key %q", paramsPrefix(path, rest), seg)
			}
		case '[':
			n, err := strconv.Atoi(seg)
			if err != nil || seg[0] < '0' || seg[0] > '9' {
				return nil, fmt.Errorf("%s is an array and %q is not an index", paramsPrefix(path, rest), seg)
			}
			elems := l.array(v)
			if n >= len(elems) {
				return nil, fmt.Errorf("%s has no element %d", paramsPrefix(path, rest), n)
			}
			v = elems[n]
		default:
			return nil, fmt.Errorf("%s is %s, not an object or array", paramsPrefix(path, rest), jsonKind(v[0]))
		}
		if !more {
			return v, nil
		}
		rest = next
	}
}

// offset is where v, a slice of l.doc, starts in it.
func (l *paramLookup) offset(v []byte) int { return cap(l.doc) - cap(v) }

// object returns the index of the object v: its keys, decoded, to their
// values; the last one wins where a key repeats, as in objectField.
func (l *paramLookup) object(v []byte) map[string][]byte {
	off := l.offset(v)
	if m, ok := l.objs[off]; ok {
		return m
	}
	m := map[string][]byte{}
	for k, val := range fields(v) {
		if key, ok := indexKey(k); ok {
			m[key] = val
		}
	}
	if l.objs == nil {
		l.objs = map[int]map[string][]byte{}
	}
	l.objs[off] = m
	return m
}

// indexKey is the key the quoted JSON string k matches in keyEqual: its
// text, with the escapes of ASCII characters decoded; ok is false when it
// has an escape of anything else, which no name matches.
func indexKey(k []byte) (key string, ok bool) {
	inner := k[1 : len(k)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true
	}
	b := make([]byte, 0, len(inner))
	for len(inner) > 0 {
		c, n := inner[0], 1
		if c == '\\' {
			if c, n = unescapeASCII(inner); n == 0 {
				return "", false
			}
		}
		b = append(b, c)
		inner = inner[n:]
	}
	return string(b), true
}

// array returns the elements of the array v.
func (l *paramLookup) array(v []byte) [][]byte {
	off := l.offset(v)
	if a, ok := l.arrs[off]; ok {
		return a
	}
	var a [][]byte
	for e := range elems(v) {
		a = append(a, e)
	}
	if l.arrs == nil {
		l.arrs = map[int][][]byte{}
	}
	l.arrs[off] = a
	return a
}

// checkParamPath reports an empty segment in a params path.
func checkParamPath(path string) error {
	for seg := range strings.SplitSeq(path, ".") {
		if seg == "" {
			return errors.New("the path has an empty segment")
		}
	}
	return nil
}

// paramsPrefix names the value being looked into when rest is what remains
// of path: "params" or "params.a.b".
func paramsPrefix(path, rest string) string {
	done := len(path) - len(rest)
	if done == 0 {
		return "params"
	}
	return "params." + path[:done-1]
}

func jsonKind(c byte) string {
	switch c {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// paramText is how a params value renders, in p or s: a string without
// its quotes, anything else as its JSON.
func paramText(raw []byte) (p []byte, s string) {
	if raw[0] != '"' {
		return raw, ""
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner, ""
	}
	_ = json.Unmarshal(raw, &s) // raw is a valid JSON string
	return nil, s
}

// objectField returns the value of key in the object v, the last one if the
// key repeats, as encoding/json does.
func objectField(v []byte, key string) ([]byte, bool) {
	var found []byte
	for k, val := range fields(v) {
		if keyEqual(k, key) {
			found = val
		}
	}
	return found, found != nil
}

// fields yields the members of the object v in order: each key as its
// quoted JSON string, and its value's raw JSON.
func fields(v []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		i := 1
		for {
			i = skipSpace(v, i)
			if v[i] == '}' {
				return
			}
			ks := i
			i = skipString(v, i)
			k := v[ks:i]
			i = skipSpace(v, i) + 1 // ':'
			i = skipSpace(v, i)
			vs := i
			i = skipValue(v, i)
			if !yield(k, v[vs:i]) {
				return
			}
			i = skipSpace(v, i)
			if v[i] != ',' {
				return
			}
			i++
		}
	}
}

// keyEqual reports whether the quoted JSON string k is key. A template
// name is ASCII, so an escape that stands for anything else cannot match.
func keyEqual(k []byte, key string) bool {
	inner := k[1 : len(k)-1]
	for len(inner) > 0 {
		c, n := inner[0], 1
		if c == '\\' {
			c, n = unescapeASCII(inner)
			if n == 0 {
				return false
			}
		}
		if len(key) == 0 || key[0] != c {
			return false
		}
		inner, key = inner[n:], key[1:]
	}
	return len(key) == 0
}

// unescapeASCII decodes the escape at the start of s into an ASCII byte and
// its length, or returns n == 0 if it stands for something else.
func unescapeASCII(s []byte) (c byte, n int) {
	switch s[1] {
	case '"', '\\', '/':
		return s[1], 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, err := strconv.ParseUint(string(s[2:6]), 16, 16)
		if err != nil || r >= 0x80 {
			return 0, 0
		}
		return byte(r), 6
	}
	return 0, 0
}

// arrayElem returns element n of the array v.
func arrayElem(v []byte, n int) ([]byte, bool) {
	idx := 0
	for e := range elems(v) {
		if idx == n {
			return e, true
		}
		idx++
	}
	return nil, false
}

// elems yields the raw JSON of the elements of the array v, in order.
func elems(v []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		i := 1
		for {
			i = skipSpace(v, i)
			if v[i] == ']' {
				return
			}
			vs := i
			i = skipValue(v, i)
			if !yield(v[vs:i]) {
				return
			}
			i = skipSpace(v, i)
			if v[i] != ',' {
				return
			}
			i++
		}
	}
}

func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string starting at v[i].
func skipString(v []byte, i int) int {
	for i++; ; i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// skipValue returns the index just past the JSON value starting at v[i].
func skipValue(v []byte, i int) int {
	switch v[i] {
	case '"':
		return skipString(v, i)
	case '{', '[':
		depth := 0
		for {
			switch v[i] {
			case '"':
				i = skipString(v, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	default: // number, true, false, null
		for i < len(v) {
			switch v[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
			i++
		}
		return i
	}
}
