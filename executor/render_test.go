package executor

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

func testVars() Vars {
	return Vars{
		RunID:          42,
		TaskID:         7,
		TaskName:       "nightly-report",
		ScheduledTime:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Attempt:        3,
		Delivery:       2,
		Trigger:        "SCHEDULE",
		IdempotencyKey: "7-1767323045",
		TraceID:        "4bf92f3577b34da6a3ce929d0e0e4736",
		Params: json.RawMessage(`{"name":"ada","n":12345678901234567890,"ok":true,"nil":null,
			"items":[{"id":"a1","qty":2},{"id":"b2","qty":5}],"m":[[1,2],[3,{"x":"y"}]],
			"obj":{"k": [1, 2]},"esc":"say \"hi\"\u00e9","k\u0065y":"escaped-key","0":"zero","dup":1,"dup":2}`),
		CallbackURL:   "http://cb.test/runs/42",
		CallbackToken: "v1.2.mac",
		Checkpoint:    json.RawMessage(`{"page":3}`),
		Extra:         map[string]string{"region": "eu-1"},
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	tests := []struct {
		name string
		tmpl string
		vars func(*Vars)
		want string
	}{
		{"empty", "", nil, ""},
		{"no tags", `{"a":1}`, nil, `{"a":1}`},
		{"seed example", `{"run_id":"{{run_id}}"}`, nil, `{"run_id":"42"}`},
		{"spaces", `{{ run_id }}/{{  task_id}}/{{attempt  }}/{{	delivery	}}`, nil, "42/7/3/2"},
		{"strings", "{{task_name}} {{trigger}} {{idempotency_key}} {{trace_id}}", nil,
			"nightly-report SCHEDULE 7-1767323045 4bf92f3577b34da6a3ce929d0e0e4736"},
		{"scheduled time", "{{scheduled_time}}", nil, "2026-01-02T03:04:05Z"},
		{"scheduled time to UTC", "{{scheduled_time}}", func(v *Vars) {
			v.ScheduledTime = time.Date(2026, 7, 1, 12, 0, 0, 500, paris)
		}, "2026-07-01T10:00:00Z"},
		{"negative ids", "{{run_id}} {{task_id}}", func(v *Vars) { v.RunID, v.TaskID = -1, 0 }, "-1 0"},
		{"params raw", "{{params}}", func(v *Vars) { v.Params = json.RawMessage(`{"a": [1, 2]}`) }, `{"a": [1, 2]}`},
		{"params nil", "{{params}}", func(v *Vars) { v.Params = nil }, "null"},
		{"params string", "{{params.name}}", nil, "ada"},
		{"params big number", "{{params.n}}", nil, "12345678901234567890"},
		{"params bool", "{{params.ok}}", nil, "true"},
		{"params null", "{{params.nil}}", nil, "null"},
		{"params object", "{{params.obj}}", nil, `{"k": [1, 2]}`},
		{"params array index", "{{params.items.0.id}},{{params.items.1.qty}}", nil, "a1,5"},
		{"params array element", "{{params.items.1}}", nil, `{"id":"b2","qty":5}`},
		{"params nested arrays", "{{params.m.1.0}} {{params.m.1.1.x}} {{params.m.0}}", nil, "3 y [1,2]"},
		{"params escaped string", "{{params.esc}}", nil, `say "hi"é`},
		{"params escaped key", "{{params.key}}", nil, "escaped-key"},
		{"params numeric key", "{{params.0}}", nil, "zero"},
		{"params duplicate key", "{{params.dup}}", nil, "2"},
		{"params top-level array", "{{params.1}}", func(v *Vars) { v.Params = json.RawMessage(` ["a", "b"] `) }, "b"},
		{"callback", "{{callback_url}} {{ callback_token }} {{ checkpoint }}", nil, `http://cb.test/runs/42 v1.2.mac {"page":3}`},
		{"no checkpoint", "{{checkpoint}}", func(v *Vars) { v.Checkpoint = nil }, "null"},
		{"extra", "{{region}}", nil, "eu-1"},
		{"builtin beats extra", "{{run_id}}", func(v *Vars) { v.Extra["run_id"] = "spoof" }, "42"},
		{"lone braces", `{ "a": {"b": 1} } } {`, nil, `{ "a": {"b": 1} } } {`},
		{"single brace around name", "{run_id}", nil, "{run_id}"},
		{"closing braces alone", "}} {{run_id}} }}", nil, "}} 42 }}"},
		{"triple braces", "{{{run_id}}}", nil, "{42}"},
		{"brace run", "{{{{run_id}}", nil, "{{42"},
		{"adjacent tags", "{{run_id}}{{task_id}}", nil, "427"},
		{"unicode text", "héllo {{task_name}} ✓", nil, "héllo nightly-report ✓"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := testVars()
			if tt.vars != nil {
				tt.vars(&v)
			}
			got, err := Render(tt.tmpl, v)
			if err != nil {
				t.Fatalf("Render(%q): %v", tt.tmpl, err)
			}
			if got != tt.want {
				t.Errorf("Render(%q) = %q, want %q", tt.tmpl, got, tt.want)
			}
		})
	}
}

func TestRenderError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tmpl      string
		vars      func(*Vars)
		wantErr   string
		wantToken string
	}{
		{"unknown", `{"x":"{{nope}}"}`, nil, `unknown variable "nope"`, "nope"},
		{"extra not set", "{{zone}}", nil, `unknown variable "zone"`, "zone"},
		{"unclosed", `{"run_id":"{{run_id"}`, nil, `unclosed "{{" at offset 11`, "{{"},
		{"unclosed after a tag", "{{run_id}} {{", nil, `unclosed "{{" at offset 11`, "{{"},
		{"empty", "a {{ }} b", nil, `empty tag "{{ }}" at offset 2`, "{{ }}"},
		{"space in name", "{{run id}}", nil, `malformed tag "{{run id}}"`, "{{run id}}"},
		{"brace in name", "{{ a } }}", nil, `malformed tag "{{ a } }}"`, "{{ a } }}"},
		{"missing key", "{{params.nope}}", nil, `variable "params.nope": params has no key "nope"`, "params.nope"},
		{"missing nested key", "{{params.items.0.name}}", nil, `params.items.0 has no key "name"`, "params.items.0.name"},
		{"index out of range", "{{params.items.5.id}}", nil, `params.items has no element 5`, "params.items.5.id"},
		{"not an index", "{{params.items.first}}", nil, `params.items is an array and "first" is not an index`, "params.items.first"},
		{"negative index", "{{params.items.-1}}", nil, `"-1" is not an index`, "params.items.-1"},
		{"into a string", "{{params.name.x}}", nil, `params.name is a string, not an object or array`, "params.name.x"},
		{"into a number", "{{params.items.0.qty.x}}", nil, `params.items.0.qty is a number`, "params.items.0.qty.x"},
		{"into null", "{{params.nil.x}}", nil, `params.nil is null`, "params.nil.x"},
		{"empty segment", "{{params.items..id}}", nil, `empty segment`, "params.items..id"},
		{"trailing dot", "{{params.}}", nil, `empty segment`, "params."},
		{"no params", "{{params.a}}", func(v *Vars) { v.Params = nil }, "the task has no params", "params.a"},
		{"invalid params", "{{params.a}}", func(v *Vars) { v.Params = json.RawMessage(`{"a":`) }, "not valid JSON", "params.a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := testVars()
			if tt.vars != nil {
				tt.vars(&v)
			}
			got, err := Render(tt.tmpl, v)
			if err == nil {
				t.Fatalf("Render(%q) = %q, want an error", tt.tmpl, got)
			}
			checkTemplateError(t, err, tt.wantErr, tt.wantToken)
		})
	}
}

func checkTemplateError(t *testing.T, err error, wantErr, wantToken string) {
	t.Helper()
	if !strings.Contains(err.Error(), wantErr) {
		t.Errorf("error %q does not contain %q", err, wantErr)
	}
	se, ok := errors.AsType[*sundial.Error](err)
	if !ok {
		t.Fatalf("error %v is %T, want *sundial.Error", err, err)
	}
	if se.Code != sundial.EInvalid || se.Field != "body_template" || se.Token != wantToken {
		t.Errorf("error = {Code:%q Field:%q Token:%q}, want {invalid body_template %q}", se.Code, se.Field, se.Token, wantToken)
	}
}

func TestValidateTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tmpl      string
		allowed   []string
		wantErr   string // empty: valid
		wantToken string
	}{
		{"empty", "", nil, "", ""},
		{"seed example", `{"run_id":"{{run_id}}"}`, nil, "", ""},
		{"all builtins", "{{run_id}}{{task_id}}{{task_name}}{{scheduled_time}}{{attempt}}{{delivery}}" +
			"{{trigger}}{{idempotency_key}}{{trace_id}}{{params}}", nil, "", ""},
		{"params paths", "{{ params.a }} {{params.items.0.id}}", nil, "", ""},
		{"callback variables", "{{callback_url}} {{ callback_token }} {{checkpoint}}", nil, "", ""},
		{"allowed extras", "{{region}} {{ zone }}", []string{"region", "zone"}, "", ""},
		{"lone braces", "{ } }} {x}", nil, "", ""},
		{"extra not allowed", "{{region}}", nil, `unknown variable "region"`, "region"},
		{"first unknown", "{{run_id}} {{foo}} {{bar}}", []string{"bar"}, `unknown variable "foo"`, "foo"},
		{"typo", "{{runid}}", nil, `unknown variable "runid"`, "runid"},
		{"unclosed", "{{run_id", nil, `unclosed "{{" at offset 0`, "{{"},
		{"empty tag", "{{}}", nil, `empty tag "{{}}" at offset 0`, "{{}}"},
		{"malformed", `{{ "x" }}`, nil, `malformed tag "{{ \"x\" }}"`, `{{ "x" }}`},
		{"bad params path", "{{params..a}}", nil, "empty segment", "params..a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateTemplate(tt.tmpl, tt.allowed...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateTemplate(%q): %v", tt.tmpl, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateTemplate(%q) = nil, want an error", tt.tmpl)
			}
			checkTemplateError(t, err, tt.wantErr, tt.wantToken)
		})
	}
}

func BenchmarkRender(b *testing.B) {
	v := testVars()
	benchmarks := []struct{ name, tmpl string }{
		{"no-tags", `{"report":"daily","format":"csv"}`},
		{"seed", `{"run_id":"{{run_id}}"}`},
		{"typical", `{"run_id":{{run_id}},"task":"{{task_name}}","at":"{{scheduled_time}}",` +
			`"attempt":{{attempt}},"key":"{{idempotency_key}}","callback":"{{callback_url}}"}`},
		{"params", `{"first":"{{params.items.0.id}}","qty":{{params.items.1.qty}},"params":{{params}}}`},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Render(bm.tmpl, v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
