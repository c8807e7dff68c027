package label

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	eq := func(k, v string) Requirement { return Requirement{Key: k, Op: Equals, Values: []string{v}} }
	for _, tc := range []struct {
		text   string
		want   Selector
		string string // String of the selector; "" for text itself
	}{
		{"", nil, ""},
		{"   ", nil, ""},
		{"team=payments", Selector{eq("team", "payments")}, ""},
		{"team==payments", Selector{eq("team", "payments")}, "team=payments"},
		{"team = payments", Selector{eq("team", "payments")}, "team=payments"},
		{"env!=prod", Selector{{Key: "env", Op: NotEquals, Values: []string{"prod"}}}, ""},
		{"team=", Selector{eq("team", "")}, ""},
		{"team=,env", Selector{eq("team", ""), {Key: "env", Op: Exists}}, ""},
		{"tier in (b,a)", Selector{{Key: "tier", Op: In, Values: []string{"a", "b"}}}, "tier in (a,b)"},
		{"tier in(a, a ,b)", Selector{{Key: "tier", Op: In, Values: []string{"a", "b"}}}, "tier in (a,b)"},
		{"tier notin (a)", Selector{{Key: "tier", Op: NotIn, Values: []string{"a"}}}, ""},
		{"tier in ()", Selector{{Key: "tier", Op: In, Values: []string{""}}}, ""},
		{"tier in (a,)", Selector{{Key: "tier", Op: In, Values: []string{"", "a"}}}, "tier in (,a)"},
		{"canary", Selector{{Key: "canary", Op: Exists}}, ""},
		{"!canary", Selector{{Key: "canary", Op: DoesNotExist}}, ""},
		{"! canary", Selector{{Key: "canary", Op: DoesNotExist}}, "!canary"},
		{"app.kubernetes.io/name=web", Selector{eq("app.kubernetes.io/name", "web")}, ""},
		// Keywords are words where a key or a value goes.
		{"in=notin", Selector{eq("in", "notin")}, ""},
		{"x in (in,notin)", Selector{{Key: "x", Op: In, Values: []string{"in", "notin"}}}, ""},
		{"team=payments,env!=prod,tier in (a,b),!canary,owner",
			Selector{eq("team", "payments"), {Key: "env", Op: NotEquals, Values: []string{"prod"}},
				{Key: "tier", Op: In, Values: []string{"a", "b"}}, {Key: "canary", Op: DoesNotExist}, {Key: "owner", Op: Exists}}, ""},
		{" a = b , c != d ", Selector{eq("a", "b"), {Key: "c", Op: NotEquals, Values: []string{"d"}}}, "a=b,c!=d"},
	} {
		got, err := Parse(tc.text)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.text, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %#v, want %#v", tc.text, got, tc.want)
		}
		want := tc.string
		if want == "" && len(tc.want) > 0 {
			want = tc.text
		}
		if s := got.String(); s != want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.text, s, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text   string
		pos    int
		token  string
		reason string // a part of it
	}{
		{",", 1, ",", "want a label key"},
		{"a,", 2, ",", "followed by another requirement"},
		{"a,,b", 3, ",", "want a label key"},
		{"a b", 3, "b", "want an operator"},
		{"a=b c", 5, "c", "want a comma between requirements"},
		{"a=!b", 2, "=!", "want an operator"},
		{"a===b", 2, "===", "want an operator"},
		{"a==(b)", 4, "(", "want a value"},
		{"a>1", 2, ">", "< and > are not operators"},
		{"a in b", 6, "b", "want ( after in"},
		{"a notin", 8, "", "want ( after notin"},
		{"a in (b", 8, "", "want ) to end"},
		{"a in (b c)", 9, "c", "want a value, a comma or )"},
		{"a in (b))", 9, ")", "want a comma between requirements"},
		{"!", 2, "", "want a label key after !"},
		{"!a=b", 3, "=", "!key stands alone"},
		{"!a in (b)", 4, "in", "!key stands alone"},
		{"-a=b", 1, "-a", "not a label key: a key's name must begin and end"},
		{"a=b-", 3, "b-", "not a label value"},
		{"Team/a=b", 1, "Team/a", "DNS subdomain"},
		{"a in (x,-y)", 9, "-y", "not a label value"},
		{"ünï=b", 1, "ünï", "not a label key"},
		{"a=b,ç=d", 5, "ç", "not a label key"},
		{"a=" + strings.Repeat("v", 64), 3, strings.Repeat("v", 64), "at most 63 characters"},
		{strings.Repeat("a", MaxSelectorLen+1), 1, "", "at most 4096 bytes"},
		{"a=\xff", 1, "", "valid UTF-8"},
	} {
		_, err := Parse(tc.text)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a *ParseError", tc.text, err)
			continue
		}
		if pe.Pos != tc.pos || pe.Token != tc.token || !strings.Contains(pe.Reason, tc.reason) {
			t.Errorf("Parse(%q) = %+v, want position %d token %q reason %q", tc.text, pe, tc.pos, tc.token, tc.reason)
		}
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"team": "payments", "env": "prod", "tier": "b", "empty": ""}
	for _, tc := range []struct {
		sel  string
		want bool
	}{
		{"", true},
		{"team=payments", true},
		{"team==payments", true},
		{"team=Payments", false}, // values are case-sensitive
		{"owner=x", false},
		{"env!=prod", false},
		{"env!=dev", true},
		{"owner!=x", true}, // != matches a task without the label
		{"tier in (a,b)", true},
		{"tier in (a,c)", false},
		{"owner in (a)", false},
		{"tier notin (a,b)", false},
		{"tier notin (a,c)", true},
		{"owner notin (a)", true}, // notin matches a task without the label
		{"team", true},
		{"owner", false},
		{"!owner", true},
		{"!team", false},
		{"empty=", true},
		{"empty", true},
		{"team=", false},
		{"empty in ()", true},
		{"team=payments,env!=prod", false},
		{"team=payments,env=prod,tier in (a,b),!owner", true},
	} {
		s, err := Parse(tc.sel)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.sel, err)
		}
		if got := s.Matches(labels); got != tc.want {
			t.Errorf("%q matches %v = %v, want %v", tc.sel, labels, got, tc.want)
		}
	}
	// No labels at all: only what asks for an absence matches.
	for sel, want := range map[string]bool{"": true, "a": false, "!a": true, "a!=b": true, "a notin (b)": true, "a=b": false} {
		s, _ := Parse(sel)
		if got := s.Matches(nil); got != want {
			t.Errorf("%q matches no labels = %v, want %v", sel, got, want)
		}
	}
}
