package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

func TestFindJSONFault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		field string // "-" for no fault
		dup   bool
	}{
		{"valid", `{"a":{"b":[1,"x",{"c":"é😀"}]},"d":"\ud83d\ude00"}`, "-", false},
		{"not JSON", `{"a":`, "-", false},
		{"not JSON with bad bytes", "{\"a\":\"\xff\" x}", "-", false},
		{"empty", ``, "-", false},
		{"duplicate at the top", `{"name":"a","name":"b"}`, "name", true},
		{"duplicate inside", `{"params":{"a":1,"b":{"c":1,"c":2}}}`, "params.b.c", true},
		{"duplicate in an array", `{"tasks":[{},{"headers":{"X-A":"1","X-A":"2"}}]}`, "tasks[1].headers.X-A", true},
		{"duplicate under a numeric key", `{"params":{"3":{"a":1,"a":2}}}`, "params.3.a", true},
		{"same key in two objects", `{"a":{"k":1},"b":{"k":1}}`, "-", false},
		{"keys differing in case", `{"k":1,"K":2}`, "-", false},
		{"raw invalid byte", "{\"params\":{\"note\":\"\xff\"}}", "params.note", false},
		{"cut UTF-8 sequence", "{\"name\":\"caf\xc3\"}", "name", false},
		{"overlong encoding", "{\"name\":\"\xc0\xaf\"}", "name", false},
		{"encoded surrogate", "{\"name\":\"\xed\xa0\x80\"}", "name", false},
		{"escaped lone high surrogate", `{"params":{"note":"\ud800"}}`, "params.note", false},
		{"escaped lone low surrogate", `{"params":{"note":"x\udc00y"}}`, "params.note", false},
		{"escaped high surrogate then a letter", `{"params":{"note":"\ud800\u0041"}}`, "params.note", false},
		{"in a header value", "{\"headers\":{\"X-A\":\"\xfe\"}}", "headers.X-A", false},
		{"in an array", "{\"params\":[\"ok\",\"\xff\"]}", "params[1]", false},
		{"in a key", "{\"params\":{\"k\xff\":1}}", "params", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := findJSONFault([]byte(tt.in))
			if tt.field == "-" {
				if f != nil {
					t.Fatalf("fault at %q (duplicate %v), want none", f.field(), f.duplicate)
				}
				return
			}
			if f == nil {
				t.Fatalf("no fault, want one at %q", tt.field)
			}
			if f.field() != tt.field || f.duplicate != tt.dup {
				t.Errorf("fault at %q, duplicate %v; want %q, %v", f.field(), f.duplicate, tt.field, tt.dup)
			}
		})
	}
}

// TestBodyUTF8AndDuplicates: every backend answers 400 for text that is
// not UTF-8 and for a key given twice, anywhere in a body, naming where;
// nothing is stored. Valid text, astral characters included, round-trips.
func TestBodyUTF8AndDuplicates(t *testing.T) {
	t.Parallel()
	onEveryBackend(t, func(t *testing.T, b *storeBundle) {
		valid := `"target_url":"https://example.com/hook","cron_expr":"0 * * * * *"`
		for _, c := range []struct {
			name, body, field, token string
		}{
			{"params, raw byte", "{\"name\":\"a\"," + valid + ",\"params\":{\"note\":\"\xff\"}}", "params.note", ""},
			{"params, lone surrogate", `{"name":"a",` + valid + `,"params":{"note":"\ud800"}}`, "params.note", ""},
			{"name", "{\"name\":\"caf\xc3\"," + valid + "}", "name", ""},
			{"name, lone surrogate", `{"name":"\udfff",` + valid + `}`, "name", ""},
			{"header value", "{\"name\":\"a\"," + valid + ",\"headers\":{\"X-A\":\"\xfe\"}}", "headers.X-A", ""},
			{"description", "{\"name\":\"a\"," + valid + ",\"description\":\"\xff\"}", "description", ""},
			{"headers_json", `{"name":"a",` + valid + `,"headers_json":"{\"X-A\":\"\\ud800\"}"}`, "headers_json", ""},
			{"retry_policy", "{\"name\":\"a\"," + valid + ",\"retry_policy\":{\"jitter\":\"\xff\"}}", "retry_policy.jitter", ""},
			{"duplicate name", `{"name":"a","name":"b",` + valid + `}`, "name", "name"},
			{"duplicate in params", `{"name":"a",` + valid + `,"params":{"n":1,"n":2}}`, "params.n", "n"},
			{"duplicate header", `{"name":"a",` + valid + `,"headers":{"X-A":"1","X-A":"2"}}`, "headers.X-A", "X-A"},
			{"duplicate in headers_json", `{"name":"a",` + valid + `,"headers_json":"{\"X-A\":\"1\",\"X-A\":\"2\"}"}`, "headers_json", "X-A"},
			{"duplicate in retry_policy", `{"name":"a",` + valid + `,"retry_policy":{"max_attempts":2,"max_attempts":3}}`, "retry_policy.max_attempts", "max_attempts"},
		} {
			rec := b.do(t, http.MethodPost, "/api/v1/tasks", c.body)
			wantError(t, rec, http.StatusBadRequest, errorDetail{Code: sundial.EInvalid, Field: c.field, Token: c.token})
		}

		// A batch names the item and the path in it, and lists every
		// refused item; a fault outside the items is the batch's.
		rec := b.do(t, http.MethodPost, "/api/v1/tasks:batch", "{\"tasks\":[{\"name\":\"b0\","+valid+
			"},{\"name\":\"b1\","+valid+",\"params\":{\"x\":\"\xff\"}},{\"name\":\"b2\","+valid+`,"headers":{"A":"1","A":"2"}}]}`)
		var batch struct {
			Error errorDetail `json:"error"`
			Items []batchItem `json:"items"`
		}
		want(t, rec, http.StatusBadRequest, &batch)
		if len(batch.Items) != 3 || batch.Items[0].Error != nil || batch.Items[1].Error == nil || batch.Items[2].Error == nil ||
			batch.Items[1].Error.Field != "tasks[1].params.x" || batch.Items[2].Error.Field != "tasks[2].headers.A" {
			t.Errorf("batch answer %s", rec.Body)
		}
		wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks:batch", `{"tasks":[],"tasks":[{"name":"x",`+valid+`}]}`),
			http.StatusBadRequest, errorDetail{Code: sundial.EInvalid, Field: "tasks", Token: "tasks"})

		var list listResponse[*sundial.Task]
		want(t, b.do(t, http.MethodGet, "/api/v1/tasks", nil), http.StatusOK, &list)
		if len(list.Items) != 0 {
			t.Fatalf("%d tasks stored after refused requests, want none", len(list.Items))
		}

		// PUT is checked as POST is.
		tk := b.create(t, task("ok", nil))
		wantError(t, b.do(t, http.MethodPut, taskPath(tk.ID), "{\"name\":\"ok\",\"version\":1,"+valid+",\"params\":[\"\xff\"]}"),
			http.StatusBadRequest, errorDetail{Code: sundial.EInvalid, Field: "params[0]"})
		wantError(t, b.do(t, http.MethodPut, taskPath(tk.ID), `{"name":"ok","version":1,"version":1,`+valid+`}`),
			http.StatusBadRequest, errorDetail{Code: sundial.EInvalid, Field: "version", Token: "version"})

		// A trigger's body too.
		wantError(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), `{"params":{"a":1,"a":2}}`),
			http.StatusBadRequest, errorDetail{Code: sundial.EInvalid, Field: "params.a", Token: "a"})
		wantError(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), "{\"params\":{\"a\":\"\xff\"}}"),
			http.StatusBadRequest, errorDetail{Code: sundial.EInvalid, Field: "params.a"})

		// Valid text of every plane is stored and returned as it was.
		created := b.create(t, `{"name":"名前 😀","description":"\ud83d\ude00 ok",`+valid+`,"params":{"note":"é😀"},"headers":{"X-A":"ü"}}`)
		rec = b.do(t, http.MethodGet, taskPath(created.ID), nil)
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("GET answered invalid JSON: %q", rec.Body)
		}
		got := b.get(t, created.ID)
		if got.Name != "名前 😀" || got.Description != "😀 ok" || string(got.Params) != `{"note":"é😀"}` || got.Headers["X-A"] != "ü" {
			t.Errorf("stored %q %q %s %q", got.Name, got.Description, got.Params, got.Headers["X-A"])
		}

		// Callback and progress bodies too, and a GET callback's message.
		for _, method := range []string{"POST", "GET"} {
			r, tok := waitingRun(t, b, method)
			path := fmt.Sprintf("/api/v1/runs/%d", r.ID)
			hdr := map[string]string{"X-Sundial-Callback-Token": tok}
			if method == "GET" {
				resp := b.callback(t, "GET", path+"/callback?status=SUCCESS&message="+url.QueryEscape("\xff"), hdr, "")
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("GET callback with a message not UTF-8: %d, want 400", resp.StatusCode)
				}
				continue
			}
			for _, c := range []struct{ path, body, field string }{
				{"/callback", `{"status":"SUCCESS","status":"FAILED"}`, "status"},
				{"/callback", "{\"status\":\"SUCCESS\",\"message\":\"\xff\"}", "message"},
				{"/callback", `{"status":"SUCCESS","result":{"a":"\udbff"}}`, "result.a"},
				{"/progress", `{"progress":{"done":1,"done":2}}`, "progress.done"},
				{"/progress", "{\"checkpoint\":{\"at\":\"\xff\"}}", "checkpoint.at"},
			} {
				resp := b.callback(t, "POST", path+c.path, hdr, c.body)
				var body errorBody
				_ = json.NewDecoder(resp.Body).Decode(&body)
				if resp.StatusCode != http.StatusBadRequest || body.Error.Field != c.field {
					t.Errorf("%s %s: %d, field %q; want 400 on %q", c.path, strings.ToValidUTF8(c.body, "?"), resp.StatusCode, body.Error.Field, c.field)
				}
			}
			if got, _ := b.store.RunGet(t.Context(), r.ID); got.Status != sundial.RunWaitingCallback || got.Progress != nil {
				t.Errorf("run after refused reports: %s, progress %s", got.Status, got.Progress)
			}
		}
	})
}
