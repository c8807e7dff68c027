package executor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

func TestBodyBound(t *testing.T) {
	t.Parallel()
	params := json.RawMessage(`{"id":"abc","items":[1,2,3]}`) // 28 bytes
	tests := []struct {
		name        string
		tmpl        string
		params      json.RawMessage
		want        int64
		wantBiggest string
	}{
		{"empty", "", nil, 0, ""},
		{"text", "hello", nil, 5, ""},
		{"ints", "{{run_id}}-{{ task_id }}", nil, 41, "{{run_id}}"},
		{"name", "{{task_name}}", nil, int64(len("nightly")), "{{task_name}}"},
		{"params", "[{{params}},{{params}}]", params, 3 + 2*28, "{{params}}"},
		{"no params renders null", "{{params}}", nil, 4, "{{params}}"},
		{"params path is the value's size", "{{params.id}}{{params.items}}", params, 5 + 7, "{{params.items}}"},
		{"missing path", "{{params.nope}}", params, 0, "{{params.nope}}"},
		{"checkpoint", "{{checkpoint}}", nil, sundial.MaxCheckpointLen, "{{checkpoint}}"},
		{"callback", "{{callback_url}}?t={{callback_token}}", nil, callbackURLLen + 3 + callbackTokenLen, "{{callback_url}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, biggest, err := BodyBound(tt.tmpl, "nightly", tt.params)
			if err != nil || got != tt.want || biggest != tt.wantBiggest {
				t.Errorf("BodyBound(%q) = %d, %q, %v; want %d, %q", tt.tmpl, got, biggest, err, tt.want, tt.wantBiggest)
			}
		})
	}
	if _, _, err := BodyBound("{{run_id", "", nil); err == nil {
		t.Error("BodyBound of a malformed template: no error")
	}
}

// bomb is the template bomb: 64 KiB of params and 6,553 {{params}}
// (a 131 KB template that rendered to 429 MB).
func bomb() (string, json.RawMessage) {
	params := json.RawMessage(`"` + strings.Repeat("x", 64<<10-2) + `"`)
	return strings.Repeat("{{params}}", 6553), params
}

func TestCheckBodyBound(t *testing.T) {
	t.Parallel()
	tmpl, params := bomb()
	err := CheckBodyBound(tmpl, "bomb", params, DefaultMaxBodyBytes)
	checkTemplateError(t, err, "body_template can render a body of up to 429457408 bytes with the task's params, "+
		"more than the server's limit of 1048576 bytes (executor.max_body_bytes)", "{{params}}")

	// 16 copies of 64 KiB fit in 1 MiB exactly; a 17th does not.
	fits := strings.Repeat("{{params}}", 16)
	if err := CheckBodyBound(fits, "t", params, DefaultMaxBodyBytes); err != nil {
		t.Errorf("16 x 64 KiB: %v, want it accepted", err)
	}
	if err := CheckBodyBound(fits+"!", "t", params, DefaultMaxBodyBytes); err == nil {
		t.Error("16 x 64 KiB + 1 byte: accepted")
	}
	if err := CheckBodyBound(tmpl, "bomb", params, 0); err != nil {
		t.Errorf("no limit: %v", err)
	}
}

func TestRenderMax(t *testing.T) {
	t.Parallel()
	v := testVars()
	tmpl := `{"run_id":{{run_id}},"name":"{{task_name}}"}`
	want, err := RenderMax(tmpl, v, 0)
	if err != nil || want != `{"run_id":42,"name":"nightly-report"}` {
		t.Fatalf("RenderMax(no limit) = %q, %v", want, err)
	}
	if got, err := RenderMax(tmpl, v, 37); err != nil || got != want {
		t.Errorf("RenderMax(limit 37) = %q, %v; want %q", got, err, want)
	}
	for limit, part := range map[int]string{36: `"}`, 20: "{{task_name}}", 5: "{{run_id}}"} {
		_, err := RenderMax(tmpl, v, limit)
		checkTemplateError(t, err, "the rendered body would be larger than", part)
	}
	_, err = RenderMax("no tags at all", v, 5)
	checkTemplateError(t, err, "larger than 5 bytes", "no tags at all")
}

// TestRenderBombAllocatesLittle: a render that would pass the limit fails
// having allocated about the limit, not the body. Not parallel, so that the
// allocations counted are its own.
func TestRenderBombAllocatesLittle(t *testing.T) {
	tmpl, params := bomb()
	v := testVars()
	v.Params = params
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := RenderMax(tmpl, v, DefaultMaxBodyBytes)
	runtime.ReadMemStats(&after)
	checkTemplateError(t, err, "the rendered body would be larger than 1048576 bytes", "{{params}}")
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*DefaultMaxBodyBytes {
		t.Errorf("the refused render allocated %d bytes, want at most %d", got, 4*DefaultMaxBodyBytes)
	}
}

// FuzzRender: Render never panics; what it renders is no longer than
// BodyBound says for the task's params; and RenderMax with the body's own
// length as the limit renders the same, one byte less fails.
func FuzzRender(f *testing.F) {
	f.Add(`{"run_id":"{{run_id}}"}`, `{"a":{"b":[1,"x\"y"]}}`)
	f.Add("{{params}}{{params.a.b.1}}{{ task_name }}", `{"a":{"b":[1,"x\u0041"]}}`)
	f.Add("{{{run_id}}}} {{", "null")
	f.Add("{{params.0}}", `[true]`)
	f.Add("{{checkpoint}}{{scheduled_time}}{{trace_id}}", "")
	f.Fuzz(func(t *testing.T, tmpl, params string) {
		v := testVars()
		v.Params = sundial.NormParams(json.RawMessage(params))
		v.Checkpoint = nil
		out, err := Render(tmpl, v)
		if err != nil {
			if _, ok := err.(*sundial.Error); !ok {
				t.Fatalf("Render error %v is %T, want *sundial.Error", err, err)
			}
			return
		}
		if err := ValidateTemplate(tmpl, "region"); err != nil {
			t.Fatalf("Render accepted %q, ValidateTemplate refuses it: %v", tmpl, err)
		}
		if json.Valid(v.Params) || v.Params == nil {
			bound, _, err := BodyBound(tmpl, v.TaskName, v.Params)
			if err != nil || int64(len(out)) > bound {
				t.Fatalf("%q rendered %d bytes, BodyBound says at most %d (%v)", tmpl, len(out), bound, err)
			}
		}
		if len(out) == 0 {
			return
		}
		if got, err := RenderMax(tmpl, v, len(out)); err != nil || got != out {
			t.Fatalf("RenderMax(limit %d) = %q, %v; want %q", len(out), got, err, out)
		}
		if len(out) == 1 {
			return // a limit of 0 is none
		}
		if _, err := RenderMax(tmpl, v, len(out)-1); err == nil {
			t.Fatalf("RenderMax(limit %d) of a %d-byte body: no error", len(out)-1, len(out))
		}
	})
}

// TestDeliverBodyTooLarge: a body that would pass the executor's limit
// fails the delivery, saying so, and nothing is sent.
func TestDeliverBodyTooLarge(t *testing.T) {
	t.Parallel()
	handler, got := recorder()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	e := New(Options{MaxBodyBytes: 1000})
	t.Cleanup(e.Close)
	req := testRequest(srv.URL)
	req.BodyTemplate = "{{params}}"
	req.Vars.Params = json.RawMessage(`"` + strings.Repeat("x", 1000) + `"`)
	out := e.Deliver(t.Context(), req)
	want := `render body: the rendered body would be larger than 1000 bytes (executor.max_body_bytes): ` +
		`it passes the limit at "{{params}}", offset 0 of body_template; nothing was sent`
	if out.Status != StatusFailed || out.Error != want {
		t.Errorf("Deliver = {%s %q}, want {FAILED %q}", out.Status, out.Error, want)
	}
	select {
	case r := <-got:
		t.Errorf("the target got a request: %s %q", r.method, r.body)
	default:
	}
}

// TestDeliverResponseHeaderLimit: a target's answer with more than 64 KiB
// of header fails the delivery.
func TestDeliverResponseHeaderLimit(t *testing.T) {
	t.Parallel()
	e, srv := setup(t, func(w http.ResponseWriter, r *http.Request) {
		for i := range 100 {
			w.Header().Set(fmt.Sprintf("X-Big-%d", i), strings.Repeat("v", 1000))
		}
	})
	out := e.Deliver(t.Context(), testRequest(srv.URL))
	if out.Status != StatusFailed || !strings.Contains(out.Error, "server response headers exceeded 65536 bytes") {
		t.Errorf("Deliver = {%s %q}, want FAILED: response headers exceeded 65536 bytes", out.Status, out.Error)
	}
}
