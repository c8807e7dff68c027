package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/storetest"
)

// TestAnswerRetryPolicyFilled: retry_policy is answered with every key,
// also for a task that was stored with "{}" and for an empty retry_on.
func TestAnswerRetryPolicyFilled(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	const defaults = `{"max_attempts":1,"initial_backoff":"1s","max_backoff":"5m0s","multiplier":2,` +
		`"jitter":"full","retry_on":["connection_error","timeout","429","5xx","callback_failed"]}`

	// A task stored with "{}", as every task without a policy once was.
	old := &sundial.Task{Name: "stored-empty", CronExpr: "0 0 * * * *", Timezone: "UTC", ExecType: sundial.ExecSync,
		HTTPMethod: "POST", TargetURL: "https://example.com/hook", Headers: map[string]string{},
		RetryPolicy: json.RawMessage(`{}`), ConcurrencyPolicy: sundial.ConcurrencyQueue, MaxQueue: 100,
		OverlapAction: sundial.OverlapAllow, FailureAction: sundial.FailureRunNew, CatchUpMode: sundial.CatchUpNone,
		CatchUpLimit: 100, CallbackMethod: "POST", Status: sundial.TaskEnabled}
	if err := storetest.CreateTask(t.Context(), b.store, old, b.now()); err != nil {
		t.Fatal(err)
	}
	created := b.create(t, task("no-policy", nil))
	none := b.create(t, task("retry-nothing", map[string]any{"retry_policy": map[string]any{"max_attempts": 3, "retry_on": []string{}}}))
	for _, c := range []struct {
		id   int64
		want string
	}{
		{old.ID, defaults},
		{created.ID, defaults},
		{none.ID, `{"max_attempts":3,"initial_backoff":"1s","max_backoff":"5m0s","multiplier":2,"jitter":"full","retry_on":[]}`},
	} {
		var raw map[string]json.RawMessage
		want(t, b.do(t, http.MethodGet, taskPath(c.id), nil), http.StatusOK, &raw)
		if got := string(raw["retry_policy"]); got != c.want {
			t.Errorf("task %d: retry_policy = %s, want %s", c.id, got, c.want)
		}
	}
	var list struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	want(t, b.do(t, http.MethodGet, "/api/v1/tasks", nil), http.StatusOK, &list)
	if len(list.Items) != 3 || string(list.Items[0]["retry_policy"]) != defaults {
		t.Errorf("list: %d items, the first's retry_policy %s; want 3, %s", len(list.Items), list.Items[0]["retry_policy"], defaults)
	}
}

// TestAnswerEmptyLists: a list with nothing in it is [], never null.
func TestAnswerEmptyLists(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("disabled", map[string]any{"status": "DISABLED"}))
	rec := b.do(t, http.MethodGet, taskPath(tk.ID, "/upcoming"), nil)
	if got := strings.TrimSpace(rec.Body.String()); got != `{"runs":[],"next":[]}` {
		t.Errorf("upcoming of a disabled task = %s, want {\"runs\":[],\"next\":[]}", got)
	}
	r := &sundial.Run{TaskID: tk.ID, FireKey: "m:1", Trigger: sundial.TriggerManual, ScheduledTime: b.now().Add(time.Hour)}
	if err := b.store.RunInsert(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	var detail map[string]json.RawMessage
	want(t, b.do(t, http.MethodGet, "/api/v1/runs/"+jsonInt(r.ID), nil), http.StatusOK, &detail)
	if got := string(detail["attempts"]); got != "[]" {
		t.Errorf("attempts of a run never delivered = %s, want []", got)
	}
	for _, path := range []string{"/api/v1/tasks?status=COMPLETED", "/api/v1/runs?status=SUCCESS", "/api/v1/nodes"} {
		var body map[string]json.RawMessage
		want(t, b.do(t, http.MethodGet, path, nil), http.StatusOK, &body)
		if got := string(body["items"]); got != "[]" {
			t.Errorf("%s: items = %s, want []", path, got)
		}
	}
}

// TestAnswerNotHTMLEscaped: answers are JSON, not HTML: &, < and > are
// written as they are.
func TestAnswerNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	rec := b.do(t, http.MethodPost, "/api/v1/tasks", task("a&b", map[string]any{
		"target_url": "https://example.com/hook?a=1&b=2", "body_template": "<p>{{run_id}}</p>"}))
	want(t, rec, http.StatusCreated, nil)
	body := rec.Body.String()
	for _, s := range []string{`"name":"a&b"`, `"target_url":"https://example.com/hook?a=1&b=2"`, `"body_template":"<p>{{run_id}}</p>"`} {
		if !strings.Contains(body, s) {
			t.Errorf("answer lacks %s: %s", s, body)
		}
	}
	if strings.Contains(body, `\u0026`) || strings.Contains(body, `\u003c`) {
		t.Errorf("answer is HTML-escaped: %s", body)
	}
	// Errors too.
	rec = b.do(t, http.MethodGet, "/api/v1/cron/next?expr=<b>&tz=UTC", nil)
	if strings.Contains(rec.Body.String(), `\u003c`) {
		t.Errorf("error answer is HTML-escaped: %s", rec.Body)
	}
}

func jsonInt(n int64) string { return strconv.FormatInt(n, 10) }
