package label

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse: Parse never panics; an error is a *ParseError at a position
// within the text; a selector it reads is written by String in a form it
// reads back as the same selector, whose keys and values are valid labels.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "team=payments", "a==b,c!=d", "tier in (a,b)", "tier notin (a,)", "!canary",
		"app.kubernetes.io/name", "a in ()", "a=,b", "a=!b", "a in (b", "x>1", "in=notin", " a = b ", "ü=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sel, err := Parse(text)
		if err != nil {
			pe, ok := err.(*ParseError)
			if !ok {
				t.Fatalf("Parse(%q) error %T %v, want a *ParseError", text, err, err)
			}
			if n := utf8.RuneCountInString(text); pe.Pos < 1 || utf8.ValidString(text) && pe.Pos > n+1 {
				t.Fatalf("Parse(%q) error at %d, outside the text of %d characters", text, pe.Pos, n)
			}
			return
		}
		labels := map[string]string{}
		for _, r := range sel {
			if reason := CheckKey(r.Key); reason != "" {
				t.Fatalf("Parse(%q) took the key %q: %s", text, r.Key, reason)
			}
			for _, v := range r.Values {
				if reason := CheckValue(v); reason != "" {
					t.Fatalf("Parse(%q) took the value %q: %s", text, v, reason)
				}
				labels[r.Key] = v
			}
		}
		again, err := Parse(sel.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q, which Parse refuses: %v", text, sel.String(), err)
		}
		if !reflect.DeepEqual(again, sel) {
			t.Fatalf("Parse(%q) = %#v; String %q reads back as %#v", text, sel, sel.String(), again)
		}
		if strings.TrimSpace(text) != "" && len(sel) == 0 {
			t.Fatalf("Parse(%q) read nothing from text that is not blank", text)
		}
		// Matching agrees with the requirements one by one.
		all := true
		for _, r := range sel {
			all = all && r.Matches(labels)
		}
		if sel.Matches(labels) != all {
			t.Fatalf("Parse(%q).Matches(%v) differs from its requirements'", text, labels)
		}
	})
}
