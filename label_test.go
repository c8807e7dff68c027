package sundial

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestNormalizeLabels: labels are checked with the task, a fault named
// labels.<key>, and none become an empty set.
func TestNormalizeLabels(t *testing.T) {
	tk := oneOff(nil)
	if err := tk.Normalize(now0); err != nil || tk.Labels == nil || len(tk.Labels) != 0 {
		t.Fatalf("Normalize without labels: %v, labels %#v; want an empty set", err, tk.Labels)
	}
	many := map[string]string{}
	for i := range 65 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for _, c := range []struct {
		labels map[string]string
		field  string
		token  string
		msg    string
	}{
		{map[string]string{"team": "payments", "app.kubernetes.io/name": "web", "empty": ""}, "", "", ""},
		{map[string]string{"team": "pay ments"}, "labels.team", "pay ments", `label "team": not a label value`},
		{map[string]string{"-team": "x"}, "labels.-team", "-team", `label "-team": not a label key`},
		{map[string]string{"Example.com/team": "x"}, "labels.Example.com/team", "Example.com/team", "DNS subdomain"},
		{map[string]string{"": "x"}, "labels", "", "must not be empty"},
		{map[string]string{"v": strings.Repeat("x", 64)}, "labels.v", strings.Repeat("x", 64), "at most 63 characters"},
		{many, "labels", "", "at most 64 labels"},
	} {
		tk := oneOff(func(t *Task) { t.Labels = c.labels })
		err := tk.Normalize(now0)
		if c.field == "" {
			if err != nil {
				t.Errorf("labels %v: %v", c.labels, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != EInvalid || e.Field != c.field || e.Token != c.token || !strings.Contains(e.Message, c.msg) {
			t.Errorf("labels %v: error %#v, want field %q token %q message with %q", c.labels, err, c.field, c.token, c.msg)
		}
	}
}

func TestParseSelector(t *testing.T) {
	sel, err := ParseSelector("selector", "team=payments,env!=prod")
	if err != nil || len(sel) != 2 {
		t.Fatalf("ParseSelector = %v, %v", sel, err)
	}
	_, err = ParseSelector("selector", "team=payments,tier in a")
	var e *Error
	if !errors.As(err, &e) || e.Code != EInvalid || e.Field != "selector" || e.Token != "a" ||
		!strings.Contains(e.Message, "at character 23: want ( after in") {
		t.Fatalf("ParseSelector = %#v", err)
	}
}

// TestInputHashLabels: a task without labels hashes as it did before
// tasks had labels (the hash below is that version's), so that a create
// repeated with its request_id across an upgrade is the same request;
// labels change the hash.
func TestInputHashLabels(t *testing.T) {
	mk := func(labels map[string]string) *Task {
		return &Task{Name: "nightly", CronExpr: "0 0 3 * * *", TargetURL: "https://example.com/hook", RequestID: "req-1",
			Headers: map[string]string{"X-Team": "ops"}, Params: json.RawMessage(`{"a": 1}`), Timezone: "Europe/Berlin",
			Labels: labels}
	}
	const before = "499cfe82e358ac8422c75c154d387f4923950e1cca162fe955f4e71216b45ca6"
	if got := mk(nil).InputHash(); got != before {
		t.Errorf("InputHash without labels = %s, want %s (as before labels)", got, before)
	}
	if got := mk(map[string]string{}).InputHash(); got != before {
		t.Errorf("InputHash with empty labels = %s, want %s", got, before)
	}
	a, b := mk(map[string]string{"team": "a"}).InputHash(), mk(map[string]string{"team": "b"}).InputHash()
	if a == before || b == before || a == b {
		t.Errorf("InputHash with labels: %s, %s; want each its own", a, b)
	}
}
