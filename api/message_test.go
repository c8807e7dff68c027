package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

// goInternals are words of Go's own error texts that a client must never
// see.
var goInternals = []string{"Go ", "struct", "unmarshal", "json: cannot", "json: unknown", "of type ", "retryPolicy", "taskRequest",
	"sundial.", "reflect", "map[", "[]string", "int64", "float64", "RawMessage"}

func noGoInternals(t *testing.T, what, message string) {
	t.Helper()
	for _, w := range goInternals {
		if strings.Contains(message, w) {
			t.Errorf("%s: message %q mentions %q", what, message, w)
		}
	}
}

// TestErrorMessagesInClientTerms: a value of the wrong type, an unknown
// field and a bad retry policy are told by field path, expected type and an
// example, never in Go's terms; an unknown field names the nearest known.
func TestErrorMessagesInClientTerms(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	for _, c := range []struct {
		name   string
		change map[string]any
		want   errorDetail
	}{
		{"retry_policy.initial_backoff a number", map[string]any{"retry_policy": map[string]any{"initial_backoff": 5}},
			errorDetail{Code: sundial.EInvalid, Field: "retry_policy.initial_backoff", Token: "5",
				Message: `must be a string holding a duration, such as "1s"; got the number 5`}},
		{"retry_policy not an object", map[string]any{"retry_policy": "3 tries"},
			errorDetail{Code: sundial.EInvalid, Field: "retry_policy",
				Message: `retry_policy must be an object, such as {"max_attempts": 3, "initial_backoff": "1s"}; got a string`}},
		{"retry_policy misspelt key", map[string]any{"retry_policy": map[string]any{"max_attempt": 3}},
			errorDetail{Code: sundial.EInvalid, Field: "retry_policy.max_attempt", Token: "max_attempt",
				Message: `unknown key "max_attempt"; did you mean "max_attempts"? (retry_policy has max_attempts, initial_backoff, max_backoff, multiplier, jitter, retry_on)`}},
		{"misspelt field", map[string]any{"timezon": "UTC"},
			errorDetail{Code: sundial.EInvalid, Field: "timezon", Token: "timezon",
				Message: `unknown field "timezon"; did you mean "timezone"?`}},
		{"field in capitals", map[string]any{"TIMEZONE": "UTC"},
			errorDetail{Code: sundial.EInvalid, Field: "TIMEZONE", Token: "TIMEZONE",
				Message: `unknown field "TIMEZONE"; did you mean "timezone"?`}},
		{"unknown field, nothing near", map[string]any{"schedule": "daily"},
			errorDetail{Code: sundial.EInvalid, Field: "schedule", Token: "schedule", Message: `unknown field "schedule"`}},
		{"integer as a string", map[string]any{"max_queue": "10"},
			errorDetail{Code: sundial.EInvalid, Field: "max_queue", Message: "must be an integer, such as 100; got a string"}},
		{"integer with a fraction", map[string]any{"priority": 1.5},
			errorDetail{Code: sundial.EInvalid, Field: "priority", Token: "1.5", Message: "must be an integer, such as 10; got the number 1.5"}},
		{"string as a number", map[string]any{"cron_expr": 5},
			errorDetail{Code: sundial.EInvalid, Field: "cron_expr", Message: `must be a string, such as "0 0 3 * * *"; got a number`}},
		{"header value a number", map[string]any{"headers": map[string]any{"X-A": 1}},
			errorDetail{Code: sundial.EInvalid, Field: "headers", Message: `must be an object of strings, such as {"X-Team": "ops"}; it holds a number`}},
		{"headers an array", map[string]any{"headers": []string{"X-A"}},
			errorDetail{Code: sundial.EInvalid, Field: "headers", Message: `must be an object, such as {"X-Team": "ops"}; got an array`}},
		{"delay_seconds a string", map[string]any{"cron_expr": nil, "delay_seconds": "60"},
			errorDetail{Code: sundial.EInvalid, Field: "delay_seconds", Message: "must be an integer, such as 60; got a string"}},
	} {
		rec := b.do(t, http.MethodPost, "/api/v1/tasks", task("a", c.change))
		wantError(t, rec, http.StatusBadRequest, c.want)
	}

	// A batch item says the same, under its path.
	var batch struct {
		Items []batchItem `json:"items"`
	}
	want(t, b.do(t, http.MethodPost, "/api/v1/tasks:batch", map[string]any{"tasks": []any{
		task("b", map[string]any{"retry_policy": map[string]any{"initial_backoff": 5}}),
		task("c", map[string]any{"timezon": "UTC"}),
	}}), http.StatusBadRequest, &batch)
	if e := batch.Items[0].Error; e == nil || e.Field != "tasks[0].retry_policy.initial_backoff" {
		t.Errorf("batch item 0: %+v", e)
	}
	if e := batch.Items[1].Error; e == nil || e.Field != "tasks[1].timezon" || !strings.Contains(e.Message, `did you mean "timezone"?`) {
		t.Errorf("batch item 1: %+v", e)
	}

	// Callback and progress bodies too.
	r, tok := waitingRun(t, b, "POST")
	hdr := map[string]string{"X-Sundial-Callback-Token": tok}
	for _, c := range []struct{ path, body, field, message string }{
		{"/callback", `{"stauts":"SUCCESS"}`, "stauts", `unknown field "stauts"; did you mean "status"?`},
		{"/callback", `{"status":"SUCCESS","retry":"no"}`, "retry", "must be a boolean, such as false; got a string"},
		{"/callback", `{"status":1}`, "status", `must be a string, such as "SUCCESS"; got a number`},
		{"/progress", `{"checkpoin":{"at":3}}`, "checkpoin", `unknown field "checkpoin"; did you mean "checkpoint"?`},
	} {
		resp := b.callback(t, "POST", fmt.Sprintf("/api/v1/runs/%d%s", r.ID, c.path), hdr, c.body)
		var body errorBody
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusBadRequest || body.Error.Field != c.field || body.Error.Message != c.message {
			t.Errorf("%s %s: %d %+v; want 400 on %s: %s", c.path, c.body, resp.StatusCode, body.Error, c.field, c.message)
		}
	}
}

// TestErrorMessagesNoGoInternals sends many malformed bodies and checks
// that no answer speaks of Go types.
func TestErrorMessagesNoGoInternals(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("target", nil))
	bodies := []string{`[]`, `"x"`, `5`, `null`, `{"name":{}}`, `{"headers":[1]}`, `{"headers":{"a":{}}}`,
		`{"timeout_seconds":1e99}`, `{"timeout_seconds":-1e99}`, `{"status":[]}`, `{"exec_type":{}}`, `{"priority":true}`,
		`{"retry_policy":{"multiplier":"2"}}`, `{"retry_policy":{"retry_on":[1]}}`, `{"retry_policy":{"retry_on":"x"}}`,
		`{"retry_policy":{"max_attempts":true}}`, `{"retry_policy":[]}`, `{"headers_json":5}`, `{"headers_json":"[1]"}`,
		`{"run_at":5}`, `{"delay_seconds":1.5}`, `{"version":"x"}`, `{"max_queue":{}}`, `{"catch_up_limit":[]}`,
		`{"name":"a"} x`, `{"name":`, `{"name":"a",}`}
	for _, body := range bodies {
		for _, target := range []struct{ method, path string }{
			{http.MethodPost, "/api/v1/tasks"}, {http.MethodPut, taskPath(tk.ID)},
		} {
			rec := b.do(t, target.method, target.path, body)
			if rec.Code != http.StatusBadRequest {
				t.Errorf("%s %s: %d, want 400; %s", target.method, body, rec.Code, rec.Body)
				continue
			}
			noGoInternals(t, target.method+" "+body, errorOf(t, rec).Message)
		}
		rec := b.do(t, http.MethodPost, "/api/v1/tasks:batch", `{"tasks":[`+body+`]}`)
		if rec.Code/100 != 4 {
			t.Errorf("batch of %s: %d, want 4xx", body, rec.Code)
		}
		noGoInternals(t, "batch "+body, rec.Body.String())
	}
}

// TestEnumsInAnyCase: enum values are taken in any case and answered as
// documented.
func TestEnumsInAnyCase(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	rec := b.do(t, http.MethodPost, "/api/v1/tasks", task("cases", map[string]any{
		"exec_type": "async", "http_method": "get", "concurrency_policy": "Parallel", "overlap_action": "skip",
		"failure_action": "retry", "catch_up_mode": "full", "status": "disabled", "callback_method": "put",
		"retry_policy": map[string]any{"jitter": "NONE", "retry_on": []string{"5XX", "Timeout"}},
	}))
	var got map[string]any
	want(t, rec, http.StatusCreated, &got)
	for k, v := range map[string]string{
		"exec_type": "ASYNC", "http_method": "GET", "concurrency_policy": "PARALLEL", "overlap_action": "SKIP",
		"failure_action": "RETRY", "catch_up_mode": "FULL", "status": "DISABLED", "callback_method": "PUT",
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %s", k, got[k], v)
		}
	}
	rp := got["retry_policy"].(map[string]any)
	if rp["jitter"] != "none" || fmt.Sprint(rp["retry_on"]) != "[timeout 5xx]" {
		t.Errorf("retry_policy = %v, want jitter none, retry_on [timeout 5xx]", rp)
	}
	// A letter of another script that only folds to ASCII is no match.
	wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks", task("kelvin", map[string]any{"overlap_action": "\u017fkip"})),
		http.StatusBadRequest, errorDetail{Code: sundial.EInvalid, Field: "overlap_action", Token: "\u017fKIP"})

	// PUT too, and a callback's status.
	id := int64(got["id"].(float64))
	var put sundial.Task
	want(t, b.do(t, http.MethodPut, taskPath(id), task("cases", map[string]any{"version": 1, "status": "Enabled",
		"overlap_action": "cancel_prev"})), http.StatusOK, &put)
	if put.Status != sundial.TaskEnabled || put.OverlapAction != sundial.OverlapCancelPrev {
		t.Errorf("PUT: status %s, overlap_action %s", put.Status, put.OverlapAction)
	}
	r, tok := waitingRun(t, b, "POST")
	resp := b.callback(t, "POST", fmt.Sprintf("/api/v1/runs/%d/callback", r.ID),
		map[string]string{"X-Sundial-Callback-Token": tok}, `{"status":"success"}`)
	var run sundial.Run
	if err := json.NewDecoder(resp.Body).Decode(&run); err != nil || resp.StatusCode != http.StatusOK || run.Status != sundial.RunSuccess {
		t.Errorf("callback with status success: %d, %s (%v)", resp.StatusCode, run.Status, err)
	}
}
