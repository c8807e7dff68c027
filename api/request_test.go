package api

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
)

// TestRunRequest: GET /runs/{id}/request shows what the run's last
// delivery sent, from a real scheduler: the body the target received, the
// task's headers with the sensitive one masked, Sundial's headers with the
// run's values, the URL's credentials masked; an ASYNC run's callback
// token is masked in its header and its body. Unknown run: 404; a deleted
// task: 409 naming task_id.
func TestRunRequest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupScheduler(t, &heldTarget{answer: func(n int) int {
			if n == 1 {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		}})
		var tk sundial.Task
		b.do(t, http.MethodPost, "/api/v1/tasks", `{"name": "req", "cron_expr": "0 0 0 1 1 *",
			"target_url": "http://user:pw@127.0.0.1:9/hook?x=1", "status": "DISABLED", "params": {"who": "task"},
			"headers": {"Authorization": "Bearer s3cret", "X-Team": "it's ours"},
			"body_template": "{\"who\": \"{{params.who}}\", \"run\": {{run_id}}, \"d\": {{delivery}}}",
			"retry_policy": {"max_attempts": 2, "initial_backoff": "1s", "jitter": "none"}}`, http.StatusCreated, &tk)
		var run sundial.Run
		b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), `{"params": {"who": "trigger"}}`, http.StatusAccepted, &run)
		time.Sleep(10 * time.Second)
		calls := b.target.snapshot()
		if len(calls) != 2 {
			t.Fatalf("%d deliveries, want 2", len(calls))
		}
		sent, err := executor.Render(calls[1].BodyTemplate, calls[1].Vars)
		if err != nil {
			t.Fatal(err)
		}

		var got runRequest
		b.do(t, http.MethodGet, runPath(run.ID, "/request"), "", http.StatusOK, &got)
		if got.RunID != run.ID || got.Delivery != 2 || got.Method != "POST" || got.Body != sent {
			t.Errorf("request: run %d delivery %d %s body %q; want run %d, delivery 2, POST, body %q",
				got.RunID, got.Delivery, got.Method, got.Body, run.ID, sent)
		}
		if got.URL != "http://***@127.0.0.1:9/hook?x=1" {
			t.Errorf("url %q, want its credentials masked", got.URL)
		}
		headers := map[string]string{}
		for _, h := range got.Headers {
			headers[h.Name] = h.Value
		}
		for name, want := range map[string]string{
			"Authorization":            "***",
			"X-Team":                   "it's ours",
			"Content-Type":             "application/json",
			"X-Sundial-Run-Id":         strconv.FormatInt(run.ID, 10),
			"X-Sundial-Task-Id":        strconv.FormatInt(tk.ID, 10),
			"X-Sundial-Delivery":       "2",
			"X-Sundial-Trigger":        "MANUAL",
			"X-Sundial-Scheduled-Time": run.ScheduledTime.UTC().Format(time.RFC3339Nano),
			"Idempotency-Key":          calls[1].Vars.IdempotencyKey,
			"X-Sundial-Node":           "node-a",
		} {
			if headers[name] != want {
				t.Errorf("header %s = %q, want %q", name, headers[name], want)
			}
		}
		if strings.Contains(got.Curl, "s3cret") || strings.Contains(got.Curl, "pw@") ||
			!strings.HasPrefix(got.Curl, "curl -X POST 'http://***@127.0.0.1:9/hook?x=1'") ||
			!strings.Contains(got.Curl, `-H 'X-Team: it'\''s ours'`) || !strings.Contains(got.Curl, "--data-binary '"+sent+"'") {
			t.Errorf("curl:\n%s", got.Curl)
		}

		// ASYNC: the callback URL shown, its token masked, in the body too.
		var async sundial.Task
		b.do(t, http.MethodPost, "/api/v1/tasks", `{"name": "req-async", "cron_expr": "0 0 0 1 1 *", "exec_type": "ASYNC",
			"target_url": "http://127.0.0.1:9/hook", "status": "DISABLED",
			"body_template": "{\"token\": \"{{callback_token}}\"}"}`, http.StatusCreated, &async)
		var arun sundial.Run
		b.do(t, http.MethodPost, taskPath(async.ID, "/trigger"), "", http.StatusAccepted, &arun)
		time.Sleep(time.Second)
		b.do(t, http.MethodGet, runPath(arun.ID, "/request"), "", http.StatusOK, &got)
		headers = map[string]string{}
		for _, h := range got.Headers {
			headers[h.Name] = h.Value
		}
		if got.Body != `{"token": "***"}` || headers["X-Sundial-Callback-Token"] != "***" ||
			!strings.HasSuffix(headers["X-Sundial-Callback-Url"], "/api/v1/runs/"+strconv.FormatInt(arun.ID, 10)+"/callback") {
			t.Errorf("ASYNC request: body %q, callback token %q, url %q", got.Body, headers["X-Sundial-Callback-Token"], headers["X-Sundial-Callback-Url"])
		}

		b.do(t, http.MethodGet, runPath(999999, "/request"), "", http.StatusNotFound, nil)
		b.do(t, http.MethodDelete, taskPath(async.ID, ""), "", http.StatusNoContent, nil)
		var e struct{ Error errorDetail }
		b.do(t, http.MethodGet, runPath(arun.ID, "/request"), "", http.StatusConflict, &e)
		if e.Error.Field != "task_id" {
			t.Errorf("deleted task: error %+v, want it to name task_id", e.Error)
		}
	})
}
