package label

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		want string // a part of the reason; "" for a valid key
	}{
		{"team", ""},
		{"a", ""},
		{"A1", ""},
		{"app.kubernetes.io/name", ""},
		{"example.com/tier", ""},
		{"my-app_v1.2", ""},
		{"x/y", ""},
		{strings.Repeat("n", 63), ""},
		{strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "/n", ""},
		{"", "name must not be empty"},
		{strings.Repeat("n", 64), "at most 63 characters, not 64"},
		{"-team", "begin and end with a letter or digit"},
		{"team_", "begin and end with a letter or digit"},
		{"te am", `not " "`},
		{"tëam", `not "ë"`},
		{"team=x", `not "="`},
		{"a/b/c", `at most one "/"`},
		{"/name", "prefix (before \"/\") must not be empty"},
		{"example.com/", "name must not be empty"},
		{"Example.com/name", `not "E"`},
		{"exa_mple.com/name", `not "_"`},
		{"example..com/name", "no empty part between dots"},
		{"-example.com/name", "begins and ends with a letter or digit"},
		{strings.Repeat("a", 64) + ".com/name", "each part between dots at most 63 characters"},
		{strings.Repeat("a.", 127) + "/name", "at most 253 characters, not 254"},
	} {
		got := CheckKey(tc.key)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("CheckKey(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestCheckValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  string
	}{
		{"", ""},
		{"prod", ""},
		{"v1.2.3", ""},
		{"a-b_c.d", ""},
		{"0", ""},
		{strings.Repeat("v", 63), ""},
		{strings.Repeat("v", 64), "at most 63 characters, not 64"},
		{".prod", "begin and end with a letter or digit"},
		{"prod-", "begin and end with a letter or digit"},
		{"a/b", `not "/"`},
		{"a b", `not " "`},
		{"naïve", `not "ï"`},
	} {
		got := CheckValue(tc.value)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("CheckValue(%q) = %q, want %q", tc.value, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	if err := Check(nil); err != nil {
		t.Errorf("Check(nil) = %v", err)
	}
	if err := Check(map[string]string{"team": "payments", "example.com/tier": "", "env": "prod"}); err != nil {
		t.Errorf("Check(valid) = %v", err)
	}
	// The first fault in key order.
	err := Check(map[string]string{"z": "bad value", "a": "ok", "m-": "x"})
	var le *Error
	if !errors.As(err, &le) || le.Key != "m-" || le.OnValue {
		t.Fatalf("Check = %#v, want the key m- refused", err)
	}
	err = Check(map[string]string{"z": "bad value", "a": "ok"})
	if !errors.As(err, &le) || le.Key != "z" || !le.OnValue || le.Value != "bad value" {
		t.Fatalf("Check = %#v, want the value of z refused", err)
	}
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	if err := Check(many); err == nil || !strings.Contains(err.Error(), "at most 64 labels") {
		t.Errorf("Check(65 labels) = %v", err)
	}
	delete(many, "k0")
	if err := Check(many); err != nil {
		t.Errorf("Check(64 labels) = %v", err)
	}
}
