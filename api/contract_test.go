package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestOpenAPIContract sends requests through every handler of a Server
// with authentication on, on each backend, and validates every request and
// every answer against the document (see openapi_test.go): the successes,
// and each error a route can answer, among them those the API's checks
// make of any route (401, 403, 429, 503, an unknown query parameter, a body
// over the limit or of another type, a bad id) for every operation the
// document has. Then every (operation, status) the document lists must
// have been answered, but those notExercised names, and every property of
// the schemas of the answers must have been in one.
func TestOpenAPIContract(t *testing.T) {
	t.Parallel()
	c := newContract(t)
	t.Run("backends", func(t *testing.T) {
		for _, be := range backends {
			t.Run(be.name, func(t *testing.T) {
				t.Parallel()
				st, _ := be.open(t)
				f := newContractFixture(t, c, st)
				f.story(t)
				f.everyOperation(t)
				down, cut := be.open(t)
				f.unavailable(t, down, cut)
			})
		}
	})
	if t.Failed() {
		return
	}
	// Every property of the schemas of the answers the test validates has
	// been in one, so that each is checked against a real value.
	for _, name := range []string{"Task", "TaskState", "LastRun", "RunFields", "RunDetail", "Attempt", "RetryPolicy", "OIDC", "Node",
		"CompensationStatus", "TokenFields", "TokenCreated", "AuditEntry", "CronNext", "Upcoming", "Health", "Error",
		"ErrorDetail", "BatchError", "BatchItem", "BatchItemError", "TaskBatchResult", "TaskPage", "RunPage", "AuditPage",
		"BulkItem", "BulkResult", "BulkError", "Backfill", "BackfillItem", "BackfillCancel", "Replay",
		"TokenList", "NodeList", "Stats", "StatsCounts", "StatsStep", "StatsNode", "Event", "EventTask", "EventRun", "EventReset",
		"AlertChannel", "SMTPSettings", "AlertRule", "AlertCondition", "Silence", "Incident", "Notification", "NotificationAttempt"} {
		for _, p := range c.ownProperties(c.schema(t, name)) {
			if !c.fields[name+"."+p] {
				t.Errorf("no answer of the test had %s.%s", name, p)
			}
		}
	}
	for _, o := range c.ops() {
		for _, status := range o.statuses() {
			key := o.key() + " " + status
			why, skipped := notExercised(o, status)
			switch {
			case c.seen[key] && skipped:
				t.Errorf("%s was answered; it is listed as not exercised (%s)", key, why)
			case !c.seen[key] && !skipped:
				t.Errorf("%s is in the document but no request of the test was answered so", key)
			}
		}
	}
}

// notExercised says why the contract test makes no request answered with
// status by o, when it makes none.
func notExercised(o docOp, status string) (string, bool) {
	switch {
	case status == "500":
		return "an unexpected fault: no request makes one", true
	case o.path == "/metrics" && status == "200", strings.HasPrefix(o.path, "/.well-known/"):
		return "served by cmd/sundial, whose test validates the answers of its own handlers", true
	}
	return "", false
}

// contractFixture is a Server with authentication on, a token of each
// role and the bootstrap token, on a store, and the contract to check it
// against.
type contractFixture struct {
	*authBundle
	c   *contract
	seq int // for unique names
}

func newContractFixture(t *testing.T, c *contract, st sundial.Store) *contractFixture {
	t.Helper()
	f := &contractFixture{authBundle: setupAuthOn(t, st, Auth{Required: true, Bootstrap: testBootstrap}), c: c}
	serveRoutes(f.srv)
	return f
}

// do checks k against the fixture's server, with the admin token when k
// has none and does not say it has none (token "-").
func (f *contractFixture) do(t *testing.T, k call) *httptest.ResponseRecorder {
	t.Helper()
	switch k.token {
	case "":
		k.token = f.secrets[sundial.RoleAdmin]
	case "-":
		k.token = ""
	}
	return f.c.check(t, f.srv, k)
}

// into decodes the JSON answer rec into out.
func into(t *testing.T, rec *httptest.ResponseRecorder, out any) {
	t.Helper()
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		t.Fatalf("decode %.200s: %v", rec.Body, err)
	}
}

func (f *contractFixture) name(prefix string) string {
	f.seq++
	return fmt.Sprintf("%s-%d", prefix, f.seq)
}

// cronTask is the body of a plain recurring task.
func (f *contractFixture) cronTask(name string, extra string) string {
	return fmt.Sprintf(`{"name":%q,"cron_expr":"0 0 3 * * *","target_url":"https://example.com/hook"%s}`, name, extra)
}

// createTask creates a task through the API (checked) and returns it.
func (f *contractFixture) createTask(t *testing.T, body string) *sundial.Task {
	t.Helper()
	var tk sundial.Task
	into(t, f.do(t, call{method: "POST", path: "/api/v1/tasks", body: body, status: 201}), &tk)
	return &tk
}

// waiting makes a WAITING_CALLBACK run of a new ASYNC task that calls
// back with method, and returns it and its callback token.
func (f *contractFixture) waiting(t *testing.T, method string) (*sundial.Run, string) {
	t.Helper()
	tk := f.createTask(t, f.cronTask(f.name("async-"+strings.ToLower(method)),
		fmt.Sprintf(`,"exec_type":"ASYNC","callback_method":%q,"status":"DISABLED"`, method)))
	ctx := context.Background()
	now := f.now()
	r := &sundial.Run{TaskID: tk.ID, FireKey: "s:1", Trigger: sundial.TriggerSchedule, ScheduledTime: now, NodeID: "node-a"}
	if err := f.store.RunInsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: now,
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunWaitingCallback,
		StartedAt: now, FinishedAt: now, HTTPStatus: 202, DueAt: now.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	return r, sundial.CallbackToken(f.sched.CallbackSecret(), r.ID, r.Fence)
}

// story exercises each route's successes and the errors of its own rules.
func (f *contractFixture) story(t *testing.T) {
	ctx := context.Background()
	now := f.now()
	invalid := func(method, path, body, field string) call {
		return call{method: method, path: path, body: body, status: 400, code: "invalid", field: field, doc: docInvalid}
	}
	silent := func(method, path, body, field, why string) call {
		return call{method: method, path: path, body: body, status: 400, code: "invalid", field: field, doc: docSilent, why: why}
	}

	// Health, the document, cron.
	f.do(t, call{method: "GET", path: "/healthz", token: "-", status: 200})
	f.do(t, call{method: "GET", path: "/readyz", token: "-", status: 200})
	f.sched.ready.Store(false)
	f.do(t, call{method: "GET", path: "/readyz", token: "-", status: 503})
	f.do(t, call{method: "POST", path: "/api/v1/tasks:bulk", body: `{"action":"trigger","ids":[1]}`, status: 503, code: "unavailable"})
	f.sched.ready.Store(true)
	f.do(t, call{method: "GET", path: "/api/v1/openapi.json", token: f.secrets[sundial.RoleViewer], status: 200})
	f.do(t, call{method: "GET", path: "/api/v1/cron/next?expr=0+30+9+*+*+MON-FRI&tz=Europe/Berlin&from=2026-01-01T00:00:00Z&count=3",
		token: f.secrets[sundial.RoleViewer], status: 200})
	f.do(t, call{method: "GET", path: "/api/v1/cron/next?expr=@every+90s", status: 200})
	for _, k := range []call{
		invalid("GET", "/api/v1/cron/next?tz=UTC", "", "expr"),
		invalid("GET", "/api/v1/cron/next?expr=@daily&count=0", "", "count"),
		invalid("GET", "/api/v1/cron/next?expr=@daily&from=tomorrow", "", "from"),
		silent("GET", "/api/v1/cron/next?expr=61+*+*+*+*", "", "expr", "the cron syntax is docs/cron.md's, not a schema's"),
		silent("GET", "/api/v1/cron/next?expr=@daily&tz=Mars/Olympus", "", "tz", "the zones are the IANA database's"),
	} {
		f.do(t, k)
	}

	// Tasks: a task with every field, its repeats and conflicts.
	full := `{"name":"nightly-report","description":"Sends the nightly report","cron_expr":"0 0 3 * * *",
		"labels":{"team":"reports","app.kubernetes.io/name":"nightly","tier":""},
		"request_id":"req-full","biz_id":"order-7","params":{"order_id":7,"items":[{"sku":"a"}]},
		"timezone":"Europe/Berlin","exec_type":"ASYNC","http_method":"PUT",
		"target_url":"https://user:pw@example.com/hook?x=1","headers":{"X-Team":"ops","X-Api-Key":"k-123"},
		"body_template":"{\"run\": \"{{run_id}}\", \"p\": {{params}}}","timeout_seconds":30,
		"retry_policy":{"max_attempts":3,"initial_backoff":"500ms","max_backoff":"1m","multiplier":1.5,"jitter":"equal","retry_on":["5xx","timeout","429"]},
		"max_concurrency":2,"concurrency_policy":"SKIP","max_queue":10,"overlap_action":"CANCEL_PREV","failure_action":"RETRY",
		"catch_up_mode":"FULL","catch_up_limit":5,"callback_method":"PATCH","callback_timeout_sec":600,
		"starting_deadline_seconds":30,"priority":10,"follow_redirects":"any","signing_secret":"generate",
		"oidc":{"audience":"https://api.example.com"},"status":"ENABLED"}`
	rec := f.do(t, call{method: "POST", path: "/api/v1/tasks", body: full, token: f.secrets[sundial.RoleEditor], status: 201})
	var nightly sundial.Task
	into(t, rec, &nightly)
	f.do(t, call{method: "POST", path: "/api/v1/tasks", body: full, status: 200}) // the same request_id and body
	f.do(t, call{method: "POST", path: "/api/v1/tasks", body: strings.Replace(full, `"priority":10`, `"priority":11`, 1),
		status: 409, code: "conflict", field: "request_id"})
	f.do(t, call{method: "POST", path: "/api/v1/tasks", body: f.cronTask("nightly-report", ""), status: 409, code: "conflict", field: "name"})
	seed := `{"name":"sync_stats","description":"统计同步","cron_expr":"*/15 * * * * *","exec_type":"SYNC","http_method":"POST",
		"target_url":"http://svc.internal/api/sync","headers_json":"{\"Content-Type\":\"application/json\"}",
		"body_template":"{\"run_id\":\"{{run_id}}\"}","timeout_seconds":10,"max_concurrency":1,
		"concurrency_policy":"QUEUE","overlap_action":"SKIP","failure_action":"RUN_NEW"}`
	var syncStats sundial.Task
	into(t, f.do(t, call{method: "POST", path: "/api/v1/tasks", body: seed, status: 201}), &syncStats)
	once := f.createTask(t, `{"name":"once","run_at":"2026-01-01T00:10:00Z","target_url":"https://example.com/once",
		"signing_secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","oidc":{},"follow_redirects":"none"}`)
	f.createTask(t, `{"delay_seconds":60,"target_url":"https://example.com/later","params":null,"run_at":null}`)
	for _, k := range []call{
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"timezon":"UTC"`), "timezon"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"id":5`), "id"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"version":1`), "version"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"priority":5000`), "priority"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"max_queue":-1`), "max_queue"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"timeout_seconds":1.5`), "timeout_seconds"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"exec_type":"LATER"`), "exec_type"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"status":"COMPLETED"`), "status"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"follow_redirects":"always"`), "follow_redirects"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"retry_policy":{"max_attempts":0}`), "retry_policy.max_attempts"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"retry_policy":{"initial_backoff":5}`), "retry_policy.initial_backoff"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"retry_policy":{"retry_on":["3xx"]}`), "retry_policy.retry_on"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"retry_policy":{"max_attempt":2}`), "retry_policy.max_attempt"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"oidc":{"audiance":"a"}`), "oidc.audiance"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"headers":{"X-A":1}`), "headers"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"headers":{"Bad Name":"v"}`), "headers"),
		invalid("POST", "/api/v1/tasks", `{"name":"x","cron_expr":"@daily"}`, "target_url"),
		invalid("POST", "/api/v1/tasks", `{"name":"x","cron_expr":"@daily","target_url":"ftp://example.com/"}`, "target_url"),
		invalid("POST", "/api/v1/tasks", `{"name":"x","target_url":"https://example.com/"}`, "cron_expr"),
		invalid("POST", "/api/v1/tasks", `{"cron_expr":"@daily","target_url":"https://example.com/"}`, "name"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"run_at":"2030-01-01T00:00:00Z"`), "run_at"),
		invalid("POST", "/api/v1/tasks", `{"run_at":"2030-01-01T00:00:00Z","delay_seconds":5,"target_url":"https://example.com/"}`, "delay_seconds"),
		invalid("POST", "/api/v1/tasks", `{"run_at":"soon","target_url":"https://example.com/"}`, "run_at"),
		invalid("POST", "/api/v1/tasks", `["not an object"]`, ""),
		invalid("POST", "/api/v1/tasks", `{"name":`, ""),
		silent("POST", "/api/v1/tasks", f.cronTask("x", `,"name":"y"`), "name",
			"a key given twice: JSON Schema sees one value per key"),
		silent("POST", "/api/v1/tasks", `{"name":"x","cron_expr":"61 * * * *","target_url":"https://example.com/"}`, "cron_expr",
			"the cron syntax is docs/cron.md's, not a schema's"),
		silent("POST", "/api/v1/tasks", f.cronTask("x", `,"timezone":"Mars/Olympus"`), "timezone",
			"the zones are the IANA database's"),
		silent("POST", "/api/v1/tasks", f.cronTask("x", `,"headers":{"Host":"a"}`), "headers",
			"the reserved header names are listed in prose"),
		silent("POST", "/api/v1/tasks", f.cronTask("x", `,"body_template":"{{nope}}"`), "body_template",
			"the template's variables are listed in prose"),
		silent("POST", "/api/v1/tasks", f.cronTask("x", `,"signing_secret":"whsec_c2hvcnQ="`), "signing_secret",
			"the secret's length is of the bytes it decodes to"),
		silent("POST", "/api/v1/tasks", f.cronTask("x", `,"oidc":{},"headers":{"Authorization":"Bearer x"}`), "oidc",
			"oidc and an Authorization header exclude each other, a rule between two fields' values"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"labels":{"team":"a b"}`), "labels.team"),
		invalid("POST", "/api/v1/tasks", f.cronTask("x", `,"labels":{"Example.com/team":"a"}`), "labels.Example.com/team"),
		silent("POST", "/api/v1/tasks", f.cronTask("x", `,"labels":{"`+strings.Repeat("n", 64)+`":"a"}`), "labels."+strings.Repeat("n", 64),
			"a key's name and its prefix each have a length limit, which the key's pattern does not count"),
	} {
		f.do(t, k)
	}

	// Lists of tasks, one, a replace.
	var page struct {
		Items      []sundial.Task `json:"items"`
		NextCursor string         `json:"next_cursor"`
	}
	into(t, f.do(t, call{method: "GET", path: "/api/v1/tasks?status=ENABLED,DISABLED&limit=1", token: f.secrets[sundial.RoleViewer], status: 200}), &page)
	if page.NextCursor == "" {
		t.Fatal("a page of one task of several has no next_cursor")
	}
	f.do(t, call{method: "GET", path: "/api/v1/tasks?limit=1&cursor=" + page.NextCursor, status: 200})
	f.do(t, call{method: "GET", path: "/api/v1/tasks?name=nightly-report&name_prefix=night&request_id=req-full&biz_id=order-7", status: 200})
	var selected struct {
		Items []sundial.Task `json:"items"`
	}
	into(t, f.do(t, call{method: "GET", path: "/api/v1/tasks?status=ENABLED&selector=" +
		url.QueryEscape("team=reports,app.kubernetes.io/name in (nightly,daily),tier=,!canary"), status: 200}), &selected)
	if len(selected.Items) != 1 || selected.Items[0].ID != nightly.ID {
		t.Fatalf("the selector of nightly-report selected %+v", selected.Items)
	}
	f.do(t, call{method: "GET", path: "/api/v1/tasks?status=", status: 200, doc: docSilent,
		why: "an empty value is the same as none (info.description); the validator reads one empty item"})
	for _, k := range []call{
		invalid("GET", "/api/v1/tasks?status=PAUSED", "", "status"),
		invalid("GET", "/api/v1/tasks?limit=0", "", "limit"),
		invalid("GET", "/api/v1/tasks?limit=1001", "", "limit"),
		invalid("GET", "/api/v1/tasks?task_id=1", "", "task_id"),
		silent("GET", "/api/v1/tasks?limit=5&limit=6", "", "limit", "a parameter given twice: the document has no way to say once"),
		silent("GET", "/api/v1/tasks?cursor=bm9wZQ", "", "cursor", "a cursor is opaque"),
		silent("GET", "/api/v1/tasks?selector="+url.QueryEscape("tier in a"), "", "selector", "a selector's syntax is Kubernetes', told in prose"),
	} {
		f.do(t, k)
	}
	var got map[string]any
	into(t, f.do(t, call{method: "GET", path: taskPath(nightly.ID), token: f.secrets[sundial.RoleViewer], status: 200}), &got)
	got["description"] = "changed"
	body, _ := json.Marshal(got)
	var replaced sundial.Task
	into(t, f.do(t, call{method: "PUT", path: taskPath(nightly.ID), body: string(body), token: f.secrets[sundial.RoleEditor], status: 200}), &replaced)
	got["version"] = replaced.Version
	body, _ = json.Marshal(got)
	f.do(t, call{method: "PUT", path: taskPath(nightly.ID), body: string(body), status: 200}) // unchanged: writes nothing
	got["version"] = 1
	body, _ = json.Marshal(got)
	f.do(t, call{method: "PUT", path: taskPath(nightly.ID), body: string(body), status: 409, code: "conflict", field: "version"})
	f.do(t, call{method: "PUT", path: taskPath(syncStats.ID), body: f.cronTask("sync_stats", ""), status: 400, code: "invalid",
		field: "version", doc: docSilent, why: "version may be left out for If-Match, a header the body's schema cannot see"})
	f.do(t, call{method: "PUT", path: taskPath(syncStats.ID), body: f.cronTask("sync_stats", `,"version":1,"id":12345`),
		status: 400, code: "invalid", field: "id", doc: docSilent, why: "the id of the body must be the path's"})
	f.do(t, call{method: "PUT", path: taskPath(syncStats.ID), body: f.cronTask("sync_stats", `,"version":1,"status":"FAILED"`),
		status: 400, code: "invalid", field: "status", doc: docSilent, why: "FAILED is taken only as the task's current status"})
	f.do(t, call{method: "PUT", path: taskPath(syncStats.ID), body: f.cronTask("sync_stats", `,"version":1,"status":"DISABLED","headers":{"Cookie":"***"}`),
		status: 400, code: "invalid", field: "headers", doc: docSilent, why: "*** keeps a stored secret, and the task has none"})
	f.do(t, call{method: "PUT", path: taskPath(syncStats.ID), body: f.cronTask("sync_stats", `,"version":1,"status":"DISABLED","headers_json":"{\"X-A\":\"b\"}"`), status: 200})

	// If-Match: the ETag of the task as read, in place of the version.
	rec = f.do(t, call{method: "GET", path: taskPath(nightly.ID), status: 200})
	tag := rec.Header().Get("ETag")
	delete(got, "version")
	got["description"] = "changed again"
	body, _ = json.Marshal(got)
	rec = f.do(t, call{method: "PUT", path: taskPath(nightly.ID), body: string(body), header: []string{"If-Match", tag}, status: 200})
	f.do(t, call{method: "PUT", path: taskPath(nightly.ID), body: string(body), header: []string{"If-Match", tag}, status: 412,
		code: "precondition_failed", field: "If-Match"})
	f.do(t, call{method: "PUT", path: taskPath(nightly.ID), body: string(body), header: []string{"If-Match", "7-3"}, status: 400,
		code: "invalid", field: "If-Match", doc: docSilent, why: "the syntax of an entity tag is RFC 9110's"})

	// A merge patch: only the fields it gives change, null removes one.
	tag = rec.Header().Get("ETag")
	rec = f.do(t, call{method: "PATCH", path: taskPath(nightly.ID), contentType: "application/merge-patch+json",
		body:   `{"description":null,"headers":{"X-Team":"sre","X-Api-Key":null},"retry_policy":{"max_attempts":5}}`,
		header: []string{"If-Match", tag}, token: f.secrets[sundial.RoleEditor], status: 200})
	var patched sundial.Task
	into(t, rec, &patched)
	f.do(t, call{method: "PATCH", path: taskPath(nightly.ID), body: fmt.Sprintf(`{"priority":12,"version":%d}`, patched.Version), status: 200})
	f.do(t, call{method: "PATCH", path: taskPath(nightly.ID), body: `{"priority":13}`, header: []string{"If-Match", tag},
		status: 412, code: "precondition_failed", field: "If-Match"})
	f.do(t, call{method: "PATCH", path: taskPath(nightly.ID), body: fmt.Sprintf(`{"priority":13,"version":%d}`, patched.Version),
		status: 412, code: "precondition_failed", field: "version"})
	f.do(t, call{method: "PATCH", path: taskPath(nightly.ID), body: `{"name":"sync_stats"}`, status: 409, code: "conflict", field: "name"})
	for _, k := range []call{
		invalid("PATCH", taskPath(nightly.ID), `{"id":5}`, "id"),
		invalid("PATCH", taskPath(nightly.ID), `{"created_at":"2026-01-01T00:00:00Z"}`, "created_at"),
		invalid("PATCH", taskPath(nightly.ID), `{"timezon":"UTC"}`, "timezon"),
		invalid("PATCH", taskPath(nightly.ID), `{"version":0}`, "version"),
		invalid("PATCH", taskPath(nightly.ID), `[1]`, ""),
		silent("PATCH", taskPath(nightly.ID), `{"status":null}`, "status", "a patch's values are checked once merged into the task"),
		silent("PATCH", taskPath(nightly.ID), `{"max_queue":-1}`, "max_queue", "a patch's values are checked once merged into the task"),
	} {
		f.do(t, k)
	}

	// The export, as apply reads it.
	f.do(t, call{method: "GET", path: "/api/v1/tasks?format=yaml", token: f.secrets[sundial.RoleViewer], status: 200})
	f.do(t, call{method: "GET", path: "/api/v1/tasks?format=json&status=ENABLED,DISABLED", status: 200})
	f.do(t, invalid("GET", "/api/v1/tasks?format=xml", "", "format"))
	f.do(t, silent("GET", "/api/v1/tasks?format=yaml&limit=5", "", "limit", "an export is not paged: a rule between two parameters"))

	// Enable, disable, and a one-off task that has ended.
	f.do(t, call{method: "POST", path: taskPath(syncStats.ID, "/enable"), token: f.secrets[sundial.RoleOperator], status: 200})
	f.do(t, call{method: "POST", path: taskPath(syncStats.ID, "/disable"), token: f.secrets[sundial.RoleOperator], status: 200})
	f.do(t, call{method: "POST", path: taskPath(syncStats.ID, "/disable"), body: `{"reason":"waiting for the vendor's fix"}`,
		token: f.secrets[sundial.RoleOperator], status: 200})
	f.do(t, invalid("POST", taskPath(syncStats.ID, "/disable"), fmt.Sprintf(`{"reason":%q}`, strings.Repeat("r", sundial.MaxDisabledReasonLen+1)), "reason"))
	f.do(t, invalid("POST", taskPath(syncStats.ID, "/disable"), `{"reasons":"x"}`, "reasons"))
	ended := &sundial.Run{TaskID: once.ID, FireKey: "o:1", Trigger: sundial.TriggerSchedule, ScheduledTime: now, NodeID: "node-a"}
	if err := f.store.RunInsert(ctx, ended); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.RunStart(ctx, []sundial.RunStartParams{{ID: ended.ID, Fence: ended.Fence, Attempt: 1, StartedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: ended.ID, Fence: ended.Fence, Status: sundial.RunFailed,
		StartedAt: now, FinishedAt: now.Add(time.Second), HTTPStatus: 503, ResponseBody: `{"busy":true}`,
		Error: "HTTP 503 Service Unavailable", CompleteTask: sundial.TaskFailed}}); err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{"/enable", "/disable"} {
		f.do(t, call{method: "POST", path: taskPath(once.ID, action), status: 409, code: "conflict", field: "status"})
	}

	// Triggers.
	var manual sundial.Run
	into(t, f.do(t, call{method: "POST", path: taskPath(syncStats.ID, "/trigger"), token: f.secrets[sundial.RoleOperator], status: 202}), &manual)
	f.do(t, call{method: "POST", path: taskPath(syncStats.ID, "/trigger"), body: `{"params":{"who":"trigger"}}`, status: 202})
	f.do(t, call{method: "POST", path: taskPath(syncStats.ID, "/trigger"), body: `{"params":null}`, status: 202})
	f.do(t, invalid("POST", taskPath(syncStats.ID, "/trigger"), `{"param":1}`, "param"))
	f.do(t, invalid("POST", taskPath(syncStats.ID, "/trigger"), `[1]`, ""))
	var rerun sundial.Run
	into(t, f.do(t, call{method: "POST", path: runPath(manual.ID, "/rerun"), token: f.secrets[sundial.RoleOperator], status: 202}), &rerun)
	if rerun.RerunOf != manual.ID || rerun.Trigger != sundial.TriggerManual || rerun.ID == manual.ID {
		t.Fatalf("rerun of run %d = %+v", manual.ID, rerun)
	}
	f.do(t, call{method: "GET", path: runPath(rerun.ID, "/request"), status: 200})

	// Backfills: a dry run, a backfill, one of a one-off task, a cancel.
	filled := f.createTask(t, f.cronTask("backfilled", ""))
	span := func(dry bool) string {
		return fmt.Sprintf(`{"from":%q,"to":%q,"dry_run":%t}`, now.Add(-48*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339), dry)
	}
	f.do(t, call{method: "POST", path: taskPath(filled.ID, "/backfill"), body: span(true), token: f.secrets[sundial.RoleOperator], status: 200})
	f.do(t, call{method: "POST", path: taskPath(filled.ID, "/backfill"), body: span(false), status: 202})
	f.do(t, call{method: "POST", path: taskPath(filled.ID, "/backfill"), body: span(true), status: 200})
	f.do(t, call{method: "POST", path: taskPath(once.ID, "/backfill"), body: span(false), status: 409, code: "conflict", field: "cron_expr"})
	f.do(t, invalid("POST", taskPath(filled.ID, "/backfill"), `{"from":"yesterday","to":"2026-01-01T00:00:00Z"}`, "from"))
	f.do(t, call{method: "POST", path: taskPath(filled.ID, "/backfill:cancel"), token: f.secrets[sundial.RoleOperator], status: 200})

	// Dependencies: a child fired by its parent alone; its deps; a cycle
	// and the delete of a parent refused.
	parent := f.createTask(t, f.cronTask("parent", ""))
	child := f.createTask(t, `{"name":"child","target_url":"https://example.com/hook","depends_on":[{"task":"parent","on":"completion"}],`+
		`"join":"any","join_deadline_seconds":600,"body_template":"{{parents.parent.status}}"}`)
	f.do(t, call{method: "GET", path: taskPath(child.ID, "/deps"), token: f.secrets[sundial.RoleViewer], status: 200})
	f.do(t, call{method: "GET", path: taskPath(child.ID), status: 200})
	f.do(t, call{method: "PATCH", path: taskPath(parent.ID), body: `{"depends_on":[{"task":"child"}]}`,
		status: 400, code: "invalid", field: "depends_on"})
	f.do(t, call{method: "DELETE", path: taskPath(parent.ID), status: 409, code: "conflict", field: "depends_on"})

	// Dead letters: listed, replayed by id and by filter; refused.
	dead := func(tk *sundial.Task, key string) *sundial.Run {
		d := &sundial.Run{TaskID: tk.ID, FireKey: key, Trigger: sundial.TriggerSchedule, ScheduledTime: now.Add(-time.Hour), NodeID: "node-a"}
		if err := f.store.RunInsert(ctx, d); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.RunStart(ctx, []sundial.RunStartParams{{ID: d.ID, Fence: d.Fence, Attempt: 1, StartedAt: now}}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: d.ID, Fence: d.Fence, Status: sundial.RunFailed,
			StartedAt: now, FinishedAt: now, HTTPStatus: 500, Error: "HTTP 500 Internal Server Error"}}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	letter := dead(filled, "s:dead")
	f.do(t, call{method: "GET", path: "/api/v1/runs?dead_letter=true&task_id=" + strconv.FormatInt(filled.ID, 10), status: 200})
	f.do(t, silent("GET", "/api/v1/runs?dead_letter=true&status=FAILED", "", "dead_letter", "a rule across two parameters"))
	f.do(t, call{method: "POST", path: "/api/v1/runs:replay", body: fmt.Sprintf(`{"ids":[%d]}`, letter.ID),
		token: f.secrets[sundial.RoleOperator], status: 202})
	f.do(t, call{method: "POST", path: "/api/v1/runs:replay", body: fmt.Sprintf(`{"filter":{"task_id":%d}}`, filled.ID), status: 202})
	f.do(t, silent("POST", "/api/v1/runs:replay", fmt.Sprintf(`{"ids":[%d,%d]}`, letter.ID, letter.ID), "ids[1]",
		"the document does not know which runs exist"))
	gone := f.createTask(t, f.cronTask("gone", ""))
	goneLetter := dead(gone, "s:gone")
	if err := f.store.TaskDelete(ctx, gone.ID, now); err != nil {
		t.Fatal(err)
	}
	f.do(t, call{method: "POST", path: "/api/v1/runs:replay", body: fmt.Sprintf(`{"ids":[%d]}`, goneLetter.ID),
		status: 409, code: "conflict", field: "ids[0]"})

	// Runs: one of each shape, lists, one, cancels.
	planned := &sundial.Run{TaskID: nightly.ID, FireKey: "s:planned", Trigger: sundial.TriggerSchedule,
		ScheduledTime: now.Add(time.Hour), Priority: 10}
	missedAt := now.Add(-time.Hour)
	misfire := &sundial.Run{TaskID: nightly.ID, FireKey: "m:1", Trigger: sundial.TriggerCatchUp, ScheduledTime: now.Add(-time.Hour),
		Status: sundial.RunSkipped, SkipReason: sundial.SkipMisfire, MissedCount: 3, Attempt: 1, FinishedAt: &missedAt}
	running := &sundial.Run{TaskID: nightly.ID, FireKey: "s:running", Trigger: sundial.TriggerSchedule,
		ScheduledTime: now.Add(-time.Minute), NodeID: "node-a"}
	for _, r := range []*sundial.Run{planned, misfire, running} {
		if err := f.store.RunInsert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.store.RunStart(ctx, []sundial.RunStartParams{{ID: running.ID, Fence: running.Fence, Attempt: 1, StartedAt: now}}); err != nil {
		t.Fatal(err)
	}
	// A task's state block with every field set: its saved health (a
	// success, then a failure, and lags) and its latest run that ended,
	// the MISFIRE record.
	saved := &sundial.TaskState{TaskID: nightly.ID}
	saved.Record(sundial.RunSuccess, now.Add(-3*time.Hour))
	saved.Record(sundial.RunFailed, now.Add(-2*time.Hour))
	saved.AddLag(now.Add(-3*time.Hour), 12*time.Millisecond)
	if err := f.store.TaskStateSave(ctx, []*sundial.TaskState{saved}, now); err != nil {
		t.Fatal(err)
	}
	var withState sundial.Task
	into(t, f.do(t, call{method: "GET", path: taskPath(nightly.ID), token: f.secrets[sundial.RoleViewer], status: 200}), &withState)
	if st := withState.State; st == nil || st.LastRun == nil || st.LastRun.ID != misfire.ID || st.LastRun.SkipReason != sundial.SkipMisfire ||
		st.LastSuccessAt == nil || st.LastFailureAt == nil || st.ConsecutiveFailures != 1 || st.LagP50MS == nil || *st.LagP95MS != 12 {
		t.Errorf("the state of a task with a history: %+v", st)
	}
	f.do(t, call{method: "GET", path: taskPath(nightly.ID, "/upcoming?limit=3"), token: f.secrets[sundial.RoleViewer], status: 200})
	f.do(t, call{method: "GET", path: taskPath(once.ID, "/upcoming"), status: 200})
	f.do(t, invalid("GET", taskPath(nightly.ID, "/upcoming?limit=0"), "", "limit"))
	var runs struct {
		Items      []sundial.Run `json:"items"`
		NextCursor string        `json:"next_cursor"`
	}
	from, to := url.QueryEscape(now.Add(-2*time.Hour).Format(time.RFC3339)), url.QueryEscape(now.Add(2*time.Hour).Format(time.RFC3339))
	into(t, f.do(t, call{method: "GET", path: "/api/v1/runs?planned=true&limit=2&from=" + from + "&to=" + to,
		token: f.secrets[sundial.RoleViewer], status: 200}), &runs)
	if runs.NextCursor == "" {
		t.Fatal("a page of two runs of several has no next_cursor")
	}
	f.do(t, call{method: "GET", path: "/api/v1/runs?planned=true&limit=2&cursor=" + runs.NextCursor, status: 200})
	f.do(t, call{method: "GET", path: fmt.Sprintf("/api/v1/runs?task_id=%d&status=SKIPPED,RUNNING,SCHEDULED&planned=false", nightly.ID), status: 200})
	f.do(t, call{method: "GET", path: taskPath(nightly.ID, "/runs?status=SKIPPED&planned=true&limit=10&from="+from+"&to="+to),
		token: f.secrets[sundial.RoleViewer], status: 200})
	var filtered struct {
		Items []sundial.Run `json:"items"`
	}
	into(t, f.do(t, call{method: "GET", path: "/api/v1/runs?status=SKIPPED,FAILED&trigger=CATCH_UP,MANUAL&selector=" +
		url.QueryEscape("team=reports") + "&finished_after=" + from + "&finished_before=" + to, status: 200}), &filtered)
	if len(filtered.Items) != 1 || filtered.Items[0].ID != misfire.ID {
		t.Fatalf("the filters of the misfire selected %+v", filtered.Items)
	}
	f.do(t, call{method: "GET", path: taskPath(nightly.ID, "/runs?trigger=SCHEDULE&selector=tier&finished_after="+from), status: 200})
	// A page of tasks with their latest outcomes: the misfire is nightly's.
	var recent struct {
		Items []sundial.Task `json:"items"`
	}
	into(t, f.do(t, call{method: "GET", path: "/api/v1/tasks?recent=20&limit=200&name=nightly-report", token: f.secrets[sundial.RoleViewer], status: 200}), &recent)
	if len(recent.Items) != 1 || recent.Items[0].State.Recent == nil || len(*recent.Items[0].State.Recent) == 0 ||
		(*recent.Items[0].State.Recent)[0].ID != misfire.ID {
		t.Fatalf("recent=20 of nightly-report = %+v", recent.Items)
	}
	f.do(t, invalid("GET", "/api/v1/tasks?recent=21", "", "recent"))
	f.do(t, call{method: "GET", path: "/api/v1/tasks?recent=1&limit=201", status: 400, code: "invalid", field: "recent", doc: docSilent,
		why: "a rule between two parameters"})
	f.do(t, call{method: "GET", path: "/api/v1/whoami", token: f.secrets[sundial.RoleOperator], status: 200})
	for _, k := range []call{
		invalid("GET", "/api/v1/runs?status=DONE", "", "status"),
		invalid("GET", "/api/v1/runs?from=yesterday", "", "from"),
		invalid("GET", "/api/v1/runs?planned=maybe", "", "planned"),
		invalid("GET", "/api/v1/runs?task_id=0", "", "task_id"),
		invalid("GET", "/api/v1/runs?biz_id=order-7", "", "biz_id"),
		invalid("GET", taskPath(nightly.ID, "/runs?task_id=1"), "", "task_id"),
		silent("GET", "/api/v1/runs?from="+to+"&to="+from, "", "to", "to after from: a rule between two parameters"),
		silent("GET", "/api/v1/runs?cursor="+page.NextCursor, "", "cursor", "a cursor is opaque"),
		silent("GET", "/api/v1/runs?status=A;planned=true", "", "status", "a ; between parameters is a matter of the query's syntax"),
		invalid("GET", "/api/v1/runs?trigger=CRON", "", "trigger"),
		invalid("GET", "/api/v1/runs?finished_after=yesterday", "", "finished_after"),
		silent("GET", "/api/v1/runs?selector="+url.QueryEscape("team=a,"), "", "selector", "a selector's syntax is Kubernetes', told in prose"),
		silent("GET", "/api/v1/runs?finished_after="+to+"&finished_before="+from, "", "finished_before",
			"finished_before after finished_after: a rule between two parameters"),
	} {
		f.do(t, k)
	}
	f.do(t, call{method: "GET", path: runPath(ended.ID, ""), token: f.secrets[sundial.RoleViewer], status: 200})
	f.do(t, call{method: "GET", path: runPath(misfire.ID, ""), status: 200})
	f.do(t, call{method: "GET", path: runPath(manual.ID, ""), status: 200})
	f.do(t, call{method: "POST", path: runPath(planned.ID, "/cancel"), token: f.secrets[sundial.RoleOperator], status: 200})
	f.do(t, call{method: "POST", path: runPath(running.ID, "/cancel"), status: 200})
	f.do(t, call{method: "GET", path: runPath(running.ID, ""), status: 200})
	f.do(t, call{method: "POST", path: runPath(ended.ID, "/cancel"), status: 409, code: "conflict", field: "status"})

	// Callbacks and progress, with each callback method.
	methods := []string{"GET", "POST", "PUT", "PATCH"}
	for i, m := range methods {
		r, tok := f.waiting(t, m)
		other := methods[(i+1)%len(methods)] // each method is once the wrong one
		path := runPath(r.ID, "/callback")
		hdr := []string{"X-Sundial-Callback-Token", tok}
		report := func(method, body string) call {
			k := call{method: method, path: path, body: body, token: "-", header: hdr}
			if method == "GET" {
				k.path, k.body = path+"?status=SUCCESS&message=imported", ""
			}
			return k
		}
		k := report(other, `{"status":"SUCCESS"}`)
		k.status, k.code = 405, "method_not_allowed"
		f.do(t, k)
		if m == "GET" {
			f.do(t, call{method: "GET", path: path + "?status=DONE", token: "-", header: hdr, status: 400, code: "invalid",
				field: "status", doc: docInvalid})
			f.do(t, call{method: "GET", path: path + "?message=x", token: "-", header: hdr, status: 400, code: "invalid",
				field: "status", doc: docInvalid})
		} else {
			for _, bad := range []call{
				{body: `{"status":"DONE"}`, field: "status"},
				{body: `{"status":"SUCCESS","extra":1}`, field: "extra"},
				{body: `{"result":1}`, field: "status"},
				{body: fmt.Sprintf(`{"status":"FAILED","message":%q}`, strings.Repeat("m", sundial.MaxResponseBody+1)), field: "message"},
			} {
				k := report(m, bad.body)
				k.status, k.code, k.field, k.doc = 400, "invalid", bad.field, docInvalid
				f.do(t, k)
			}
		}
		if m == "POST" {
			// Progress first, with the token as a bearer token.
			p := call{method: "POST", path: runPath(r.ID, "/progress"), token: tok, body: `{"progress":{"pct":50},"checkpoint":{"cursor":7}}`, status: 200}
			f.do(t, p)
			p.body, p.status, p.code, p.doc = `{}`, 400, "invalid", docInvalid
			f.do(t, p)
			p.body, p.field = `{"progres":1}`, "progres"
			f.do(t, p)
			p.body, p.field, p.doc, p.why = fmt.Sprintf(`{"progress":%q}`, strings.Repeat("p", sundial.MaxProgressLen)), "progress",
				docSilent, "the limit is of the bytes of any JSON value"
			f.do(t, p)
		}
		k = report(m, `{"status":"FAILED","result":{"rows":3},"message":"partly imported","retry":false}`)
		k.status = 200
		f.do(t, k)
		f.do(t, call{method: "GET", path: runPath(r.ID, ""), status: 200})
		k.status, k.code, k.field = 409, "conflict", "status"
		f.do(t, k) // the run has finished
		if m == "POST" {
			f.do(t, call{method: "POST", path: runPath(r.ID, "/progress"), token: tok, body: `{"checkpoint":1}`, status: 409, code: "conflict", field: "status"})
		}
	}
	r, _ := f.waiting(t, "POST")
	f.do(t, call{method: "POST", path: runPath(r.ID, "/callback"), body: `{"status":"SUCCESS"}`, token: "-",
		header: []string{"X-Sundial-Callback-Token", sundial.CallbackToken(f.sched.CallbackSecret(), r.ID, r.Fence+1)},
		status: 409, code: "conflict", field: "fence"}) // a superseded delivery's token
	f.do(t, call{method: "POST", path: runPath(r.ID, "/callback"), body: `{"status":"SUCCESS"}`, token: "-",
		header: []string{"X-Sundial-Callback-Token", "v1.1.AAAA"}, status: 401, code: "unauthorized",
		doc: docSilent, why: "the token is checked by its MAC"})

	// Nodes, the compensator.
	if err := f.store.NodeRegister(ctx, &sundial.Node{ID: "node-a", Host: "host-a", PID: 42, Address: "127.0.0.1:8080",
		State: sundial.NodeAlive, StartedAt: now, HeartbeatAt: now}); err != nil {
		t.Fatal(err)
	}
	f.do(t, call{method: "GET", path: "/api/v1/nodes", token: f.secrets[sundial.RoleViewer], status: 200})
	f.do(t, call{method: "GET", path: "/api/v1/admin/compensation", token: f.secrets[sundial.RoleViewer], status: 200})
	minute := &sundial.StatsMinute{NodeID: "node-a", Minute: time.Now().Add(-2 * time.Minute), Fires: 5, ScheduledFires: 4,
		Succeeded: 3, Failed: 1, Skipped: 1, UpdatedAt: now}
	minute.AddLag(4 * time.Millisecond)
	if err := f.store.StatsSave(ctx, []*sundial.StatsMinute{minute}); err != nil {
		t.Fatal(err)
	}
	f.do(t, call{method: "GET", path: "/api/v1/stats?since=2h&step=5m", token: f.secrets[sundial.RoleViewer], status: 200})
	f.do(t, call{method: "GET", path: "/api/v1/stats?since=abc", status: 400, code: "invalid", field: "since"})
	f.do(t, call{method: "POST", path: "/api/v1/admin/compensation/trigger", token: f.secrets[sundial.RoleOperator], status: 202})

	// Alerts.
	f.alertStory(t, &nightly)

	// Tokens and the audit log.
	var tok struct {
		ID string `json:"id"`
	}
	into(t, f.do(t, call{method: "POST", path: "/api/v1/tokens", body: `{"name":"ci","role":"editor","expires_at":"2027-01-01T00:00:00Z"}`,
		status: 201}), &tok)
	f.do(t, call{method: "POST", path: "/api/v1/tokens", body: `{"name":"deployer","role":"viewer","expires_at":null}`, status: 201})
	f.do(t, call{method: "POST", path: "/api/v1/tokens", body: `{"name":"ci","role":"viewer"}`, status: 409, code: "conflict", field: "name"})
	for _, k := range []call{
		invalid("POST", "/api/v1/tokens", `{"name":"ci2","role":"root"}`, "role"),
		invalid("POST", "/api/v1/tokens", `{"name":"a b","role":"viewer"}`, "name"),
		invalid("POST", "/api/v1/tokens", `{"role":"viewer"}`, "name"),
		invalid("POST", "/api/v1/tokens", `{"name":"x","role":"viewer","scope":"all"}`, "scope"),
		silent("POST", "/api/v1/tokens", `{"name":"Bootstrap","role":"viewer"}`, "name", "bootstrap and anonymous, in any case, are the audit log's"),
		silent("POST", "/api/v1/tokens", `{"name":"old","role":"viewer","expires_at":"2020-01-01T00:00:00Z"}`, "expires_at",
			"in the future: a rule of the server's clock"),
	} {
		f.do(t, k)
	}
	f.do(t, call{method: "GET", path: "/api/v1/tokens", status: 200})
	f.do(t, call{method: "DELETE", path: "/api/v1/tokens/" + tok.ID, status: 204})

	// Calendars, and a task that references one.
	f.do(t, call{method: "POST", path: "/api/v1/calendars", status: 201,
		body: `{"name":"holidays","timezone":"America/New_York","entries":["2026-12-25","2026-12-24..2026-12-31","0 0 0 ? 11 thu#4"]}`})
	f.do(t, call{method: "POST", path: "/api/v1/calendars", body: `{"name":"holidays"}`, status: 409, code: "conflict", field: "name"})
	for _, k := range []call{
		invalid("POST", "/api/v1/calendars", `{"name":"a b"}`, "name"),
		invalid("POST", "/api/v1/calendars", `{"name":"x","entries":"2026-12-25"}`, "entries"),
		silent("POST", "/api/v1/calendars", `{"name":"x","version":1}`, "version", "a create takes no version: one schema serves POST and PUT"),
		silent("POST", "/api/v1/calendars", `{"name":"x","entries":["2026-13-01"]}`, "entries[0]", "a date is checked by the server"),
		silent("POST", "/api/v1/calendars", `{"name":"x","entries":["2026-01-01","0 0 0 31 2 *"]}`, "entries[1]", "a cron expression is parsed by the server"),
		silent("POST", "/api/v1/calendars", `{"name":"x","timezone":"Mars/Olympus"}`, "timezone", "zones are the server's"),
	} {
		f.do(t, k)
	}
	f.do(t, call{method: "GET", path: "/api/v1/calendars", status: 200})
	f.do(t, call{method: "GET", path: "/api/v1/calendars/holidays", status: 200})
	f.do(t, call{method: "GET", path: "/api/v1/calendars/nope", status: 404, code: "not_found"})
	f.do(t, call{method: "PUT", path: "/api/v1/calendars/nope", body: `{"entries":[]}`, status: 404, code: "not_found"})
	f.do(t, call{method: "PUT", path: "/api/v1/calendars/holidays", body: `{"entries":["2026-12-25"],"version":1}`, status: 200})
	f.do(t, call{method: "PUT", path: "/api/v1/calendars/holidays", body: `{"entries":[],"version":1}`, status: 409, code: "conflict", field: "version"})
	f.do(t, call{method: "PUT", path: "/api/v1/calendars/holidays", body: `{"name":"other"}`, status: 400, code: "invalid", field: "name",
		doc: docSilent, why: "a name other than the path's"})
	cal := f.createTask(t, f.cronTask(f.name("cal"), `,"calendars":["holidays"],"dst":"skip_gap"`))
	for _, k := range []call{
		silent("POST", "/api/v1/tasks", f.cronTask(f.name("cal"), `,"calendars":["nope"]`), "calendars[0]", "a calendar must exist"),
		invalid("POST", "/api/v1/tasks", f.cronTask(f.name("cal"), `,"dst":"sometimes"`), "dst"),
		invalid("POST", "/api/v1/tasks", f.cronTask(f.name("cal"), `,"calendars":["holidays","holidays"]`), "calendars[1]"),
	} {
		f.do(t, k)
	}
	f.do(t, call{method: "DELETE", path: "/api/v1/calendars/holidays", status: 409, code: "conflict", field: "name"})
	f.do(t, call{method: "DELETE", path: fmt.Sprintf("/api/v1/tasks/%d", cal.ID), status: 204})
	f.do(t, call{method: "DELETE", path: "/api/v1/calendars/holidays", status: 204})
	f.do(t, call{method: "DELETE", path: "/api/v1/calendars/holidays", status: 404, code: "not_found"})
	f.do(t, call{method: "DELETE", path: "/api/v1/tokens/" + tok.ID, status: 404, code: "not_found", field: "id"})
	var audit struct {
		NextCursor string `json:"next_cursor"`
	}
	into(t, f.do(t, call{method: "GET", path: "/api/v1/audit?limit=2", status: 200}), &audit)
	f.do(t, call{method: "GET", path: "/api/v1/audit?limit=2&cursor=" + audit.NextCursor, status: 200})
	f.do(t, call{method: "GET", path: fmt.Sprintf("/api/v1/audit?actor=editor-token&action=task.update&task_id=%d&from=%s&to=%s",
		nightly.ID, from, to), status: 200})
	f.do(t, invalid("GET", "/api/v1/audit?task_id=x", "", "task_id"))
	f.do(t, invalid("GET", "/api/v1/audit?to=now", "", "to"))
	f.do(t, silent("GET", "/api/v1/audit?cursor="+runs.NextCursor, "", "cursor", "a cursor is opaque"))

	// Batches.
	one := func(name, extra string) string { return f.cronTask(name, extra) }
	f.do(t, call{method: "POST", path: "/api/v1/tasks:batch", body: `{"tasks":[` + one("batch-a", `,"request_id":"b-a"`) + `,` +
		one("batch-b", `,"signing_secret":"generate"`) + `]}`, token: f.secrets[sundial.RoleEditor], status: 200})
	f.do(t, call{method: "POST", path: "/api/v1/tasks:batch", body: `{"tasks":[` + one("batch-a", `,"request_id":"b-a"`) + `,` +
		one("batch-c", "") + `]}`, status: 200}) // the first found by its request_id
	f.do(t, call{method: "POST", path: "/api/v1/tasks:batch", body: `{"tasks":[` + one("batch-d", "") + `,` + one("batch-a", "") + `]}`,
		status: 409, code: "conflict", field: "tasks[1].name"})
	for _, k := range []call{
		invalid("POST", "/api/v1/tasks:batch", `{"tasks":[`+one("batch-e", "")+`,{"name":"no-fire","target_url":"https://example.com/"}]}`, "tasks[1].cron_expr"),
		invalid("POST", "/api/v1/tasks:batch", `{"tasks":[]}`, "tasks"),
		invalid("POST", "/api/v1/tasks:batch", `{}`, "tasks"),
		invalid("POST", "/api/v1/tasks:batch", `{"task":[]}`, "task"),
		silent("POST", "/api/v1/tasks:batch", `{"tasks":[`+one("batch-f", `,"cron_expr":"61 * * * *"`)+`]}`, "tasks[0].cron_expr",
			"the cron syntax is docs/cron.md's, not a schema's"),
	} {
		f.do(t, k)
	}

	// Bulk actions, by selector and by ids.
	var bulk []*sundial.Task
	for range 3 {
		bulk = append(bulk, f.createTask(t, f.cronTask(f.name("bulk"), `,"labels":{"group":"bulk"}`)))
	}
	ids := func(ts ...*sundial.Task) string {
		var b []string
		for _, tk := range ts {
			b = append(b, strconv.FormatInt(tk.ID, 10))
		}
		return "[" + strings.Join(b, ",") + "]"
	}
	operator := f.secrets[sundial.RoleOperator]
	f.do(t, call{method: "POST", path: "/api/v1/tasks:bulk", body: `{"action":"disable","selector":"group=bulk"}`, token: operator, status: 200})
	f.do(t, call{method: "POST", path: "/api/v1/tasks:bulk", body: `{"action":"enable","ids":` + ids(bulk[0], bulk[1]) + `}`,
		token: operator, status: 200})
	var triggered bulkResponse
	into(t, f.do(t, call{method: "POST", path: "/api/v1/tasks:bulk", body: `{"action":"trigger","selector":"group in (bulk)"}`,
		token: operator, status: 200}), &triggered)
	if len(triggered.Items) != 3 || triggered.Items[0].RunID == 0 || !triggered.Items[2].OK {
		t.Fatalf("bulk trigger = %+v", triggered)
	}
	f.do(t, call{method: "POST", path: "/api/v1/tasks:bulk", body: `{"action":"enable","ids":[` + strconv.FormatInt(bulk[2].ID, 10) + `,987654]}`,
		status: 404, code: "not_found", field: "ids[1]"})
	f.do(t, call{method: "POST", path: "/api/v1/tasks:bulk", body: `{"action":"disable","ids":` + ids(bulk[2], once) + `}`,
		status: 409, code: "conflict", field: "ids[1]"})
	f.do(t, call{method: "POST", path: "/api/v1/tasks:bulk", body: `{"action":"delete","selector":"group=bulk"}`, token: operator,
		status: 403, code: "forbidden", doc: docSilent, why: "the role of an action is told in prose"})
	for _, k := range []call{
		invalid("POST", "/api/v1/tasks:bulk", `{"action":"pause","ids":[1]}`, "action"),
		invalid("POST", "/api/v1/tasks:bulk", `{"ids":[1]}`, "action"),
		invalid("POST", "/api/v1/tasks:bulk", `{"action":"enable","ids":[1],"selector":"a"}`, "selector"),
		invalid("POST", "/api/v1/tasks:bulk", `{"action":"enable"}`, "ids"),
		invalid("POST", "/api/v1/tasks:bulk", `{"action":"enable","ids":[]}`, "ids"),
		invalid("POST", "/api/v1/tasks:bulk", `{"action":"enable","ids":[0]}`, "ids[0]"),
		invalid("POST", "/api/v1/tasks:bulk", `{"action":"enable","ids":[3,3]}`, "ids[1]"),
		invalid("POST", "/api/v1/tasks:bulk", `{"action":"enable","selector":""}`, "selector"),
		invalid("POST", "/api/v1/tasks:bulk", `{"action":"enable","selector":"a","reason":"x"}`, "reason"),
		silent("POST", "/api/v1/tasks:bulk", `{"action":"enable","selector":"a in b"}`, "selector", "a selector's syntax is Kubernetes', told in prose"),
	} {
		f.do(t, k)
	}
	f.do(t, call{method: "POST", path: "/api/v1/tasks:bulk", body: `{"action":"DELETE","ids":` + ids(bulk...) + `}`,
		token: f.secrets[sundial.RoleEditor], status: 200, doc: docSilent, why: "an action is taken in any case, as told in info.description"})

	// A delete: the task is gone, its runs stay (those that ended), and
	// cannot be run again.
	f.do(t, call{method: "POST", path: runPath(rerun.ID, "/cancel"), status: 200})
	f.do(t, call{method: "DELETE", path: taskPath(syncStats.ID), token: f.secrets[sundial.RoleEditor], status: 204})
	f.do(t, call{method: "GET", path: taskPath(syncStats.ID), status: 404, code: "not_found"})
	f.do(t, call{method: "GET", path: taskPath(syncStats.ID, "/runs"), status: 200})
	f.do(t, call{method: "POST", path: runPath(rerun.ID, "/rerun"), status: 409, code: "conflict", field: "task_id"})
	f.do(t, call{method: "GET", path: runPath(rerun.ID, "/request"), status: 409, code: "conflict", field: "task_id"})

	// Live events: those of the changes of tasks above, read again from
	// an id too old (a reset first); run events, as the scheduler
	// publishes them (its own are checked by cmd/sundial's test of a node
	// against the document); the filters' errors.
	started, finished, due := now.Add(-time.Minute), now.Add(-time.Minute+time.Second), now.Add(time.Minute)
	f.srv.events.Publish(sundial.Event{Kind: sundial.EventRunRetrying, At: now, NodeID: "node-a",
		Task: sundial.EventTask{ID: nightly.ID, Name: "nightly-report"},
		Run: &sundial.EventRun{ID: 41, Status: sundial.RunScheduled, Trigger: sundial.TriggerSchedule, ScheduledTime: started,
			Attempt: 1, Delivery: 1, StartedAt: &started, FinishedAt: &finished, DueAt: &due, HTTPStatus: 503,
			Error: "HTTP 503 Service Unavailable"}},
		sundial.Event{Kind: sundial.EventRunFinished, At: now, NodeID: "node-a", Task: sundial.EventTask{ID: nightly.ID},
			Run: &sundial.EventRun{ID: 42, Status: sundial.RunSkipped, SkipReason: sundial.SkipMisfire, Trigger: sundial.TriggerCatchUp,
				ScheduledTime: started, Attempt: 1, FinishedAt: &finished, MissedCount: 3}})
	viewer := f.secrets[sundial.RoleViewer]
	f.do(t, call{method: "GET", path: "/api/v1/events?kinds=run&since=" + now.UTC().Format(time.RFC3339), token: viewer,
		status: 200, stream: 2})
	f.do(t, call{method: "GET", path: "/api/v1/events?task=nightly-report&kinds=task.created,task.updated&since=1-x.1", token: viewer,
		status: 200, stream: 3})
	f.do(t, call{method: "GET", path: "/api/v1/events?task=" + strconv.FormatInt(nightly.ID, 10) + "&task=sync_stats&kinds=TASK",
		header: []string{"Last-Event-ID", sundial.NewEventID(now, "x.1")}, status: 200, stream: 1})
	for _, k := range []call{
		silent("GET", "/api/v1/events?kinds=run.done", "", "kinds", "a list of kinds is a string to the document; the kinds are its prose's"),
		silent("GET", "/api/v1/events?task=", "", "task", "an empty value is the same as none (info.description); the validator reads one empty item"),
		silent("GET", "/api/v1/events?since=yesterday", "", "since", "an event's id or a time: a string to the document"),
		silent("GET", "/api/v1/events?selector=tier+in+(a", "", "selector", "a selector is a string to the document; its syntax is its prose's"),
	} {
		f.do(t, k)
	}
	f.do(t, call{method: "GET", path: "/api/v1/events", header: []string{"Last-Event-ID", "42"}, status: 400, code: "invalid",
		field: "Last-Event-ID", doc: docSilent, why: "an event's id: a string to the document"})

	// No operation: a path no route serves, a path not in clean form,
	// and an unknown path without a token.
	f.do(t, call{method: "GET", path: "/api/v1/nope", token: f.secrets[sundial.RoleViewer], status: 404, code: "not_found", doc: docInvalid})
	f.do(t, call{method: "GET", path: "//api/v1/tasks", status: 404, code: "not_found", doc: docSilent,
		why: "the validator cleans the path; the server does not"})
	f.do(t, call{method: "GET", path: "/api/v1/nope", token: "-", status: 401, code: "unauthorized", doc: docInvalid})
}

// sample is a request of operation o that its route takes, on the
// fixture's objects: the path with its id, a body, and headers.
type sample struct {
	path, body string
	header     []string
	token      string // the callback's, for the callback routes
}

// samples makes a sample of each operation, with ids that exist: a task,
// a run, a waiting run of a task of each callback method.
func (f *contractFixture) samples(t *testing.T) map[string]sample {
	t.Helper()
	tk := f.createTask(t, f.cronTask(f.name("sample"), `,"status":"DISABLED"`))
	r := &sundial.Run{TaskID: tk.ID, FireKey: "s:sample", Trigger: sundial.TriggerSchedule, ScheduledTime: f.now()}
	if err := f.store.RunInsert(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	out := map[string]sample{}
	for _, o := range f.c.ops() {
		s := sample{path: fill(o.path, tk.ID)}
		if strings.HasPrefix(o.path, "/api/v1/runs/{id}") {
			s.path = fill(o.path, r.ID)
		}
		switch o.id() {
		case "cronNext":
			s.path += "?expr=@daily"
		case "createTask":
			s.body = f.cronTask(f.name("sample"), "")
		case "createTasks":
			s.body = `{"tasks":[` + f.cronTask(f.name("sample"), "") + `]}`
		case "replaceTask":
			s.body = f.cronTask(tk.Name, `,"version":1`)
		case "patchTask":
			s.body = `{"description":"patched"}`
		case "disableTask":
			s.body = `{"reason":"sampled"}`
		case "triggerTask":
			s.body = `{"params":{"a":1}}`
		case "ackIncident":
			s.body = `{"note":"sampled"}`
		case "replayRuns":
			s.body = fmt.Sprintf(`{"ids":[%d]}`, r.ID)
		case "backfillTask":
			s.body = fmt.Sprintf(`{"from":%q,"to":%q,"dry_run":true}`, f.now().Add(-time.Hour).Format(time.RFC3339),
				f.now().Format(time.RFC3339))
		case "bulkTasks":
			s.body = fmt.Sprintf(`{"action":"trigger","ids":[%d]}`, tk.ID)
		case "createToken":
			s.body = `{"name":"sample","role":"viewer"}`
		case "createAlertChannel", "replaceAlertChannel":
			s.body = `{"name":"` + f.name("sample") + `","kind":"webhook","url":"https://example.com/alerts","version":1}`
			if o.id() == "createAlertChannel" {
				s.body = `{"name":"` + f.name("sample") + `","kind":"webhook","url":"https://example.com/alerts"}`
			}
		case "createAlertRule", "replaceAlertRule":
			s.body = `{"name":"` + f.name("sample") + `","selector":"team=x","condition":{"kind":"run_failed"},"channels":["ops-hook"],"version":1}`
			if o.id() == "createAlertRule" {
				s.body = `{"name":"` + f.name("sample") + `","selector":"team=x","condition":{"kind":"run_failed"},"channels":["ops-hook"]}`
			}
		case "revokeToken":
			s.path = "/api/v1/tokens/0123456789abcdef"
		case "createCalendar":
			s.body = `{"name":"sample","entries":["2026-12-25"]}`
		case "replaceCalendar":
			s.path, s.body = "/api/v1/calendars/sample", `{"entries":[]}`
		case "getCalendar", "deleteCalendar":
			s.path = "/api/v1/calendars/sample"
		case "callbackGet", "callbackPost", "callbackPut", "callbackPatch", "reportProgress":
			method := o.method
			if o.id() == "reportProgress" {
				method = "POST"
			}
			w, tok := f.waiting(t, method)
			s.path, s.token = fill(o.path, w.ID), tok
			s.header = []string{"X-Sundial-Callback-Token", tok}
			switch o.id() {
			case "callbackGet":
				s.path += "?status=SUCCESS"
			case "reportProgress":
				s.body = `{"progress":1}`
			default:
				s.body = `{"status":"SUCCESS"}`
			}
		}
		out[o.id()] = s
	}
	return out
}

// withQuery adds the query parameter kv to path.
func withQuery(path, kv string) string {
	if strings.Contains(path, "?") {
		return path + "&" + kv
	}
	return path + "?" + kv
}

// everyOperation makes, for every operation of the document, each error
// that the API's own checks make of any route.
func (f *contractFixture) everyOperation(t *testing.T) {
	samples := f.samples(t)
	roleOf := map[string]sundial.Role{"viewer": sundial.RoleViewer, "operator": sundial.RoleOperator,
		"editor": sundial.RoleEditor, "admin": sundial.RoleAdmin}
	hosts := f.server(Auth{Required: true, Bootstrap: testBootstrap, Hosts: []string{"sundial.example.com"}})
	serveRoutes(hosts)
	limited := f.server(Auth{Required: true, Bootstrap: testBootstrap, RateLimit: 0.001, RateBurst: 1})
	serveRoutes(limited)
	// The bootstrap token's one request of the burst.
	f.c.check(t, limited, call{method: "GET", path: "/api/v1/tasks", token: testBootstrap, status: 200})

	for _, o := range f.c.ops() {
		s := samples[o.id()]
		k := call{method: o.method, path: s.path, body: s.body, header: s.header}
		callback := slices.Contains(o.security(), "callbackToken")
		apiToken := slices.Contains(o.security(), "apiToken")
		if callback {
			k.token = "-"
		}

		// An unknown query parameter.
		if o.refusesUnknownQuery() {
			q := k
			q.path, q.status, q.code, q.field, q.doc = withQuery(s.path, "zzz=1"), 400, "invalid", "zzz", docInvalid
			f.do(t, q)
		}
		// A body over the limit, one of another type.
		if n := o.maxBody(); n > 0 {
			big := k
			big.body = `{"params":"` + strings.Repeat("x", n) + `"}`
			big.status, big.code, big.doc, big.why = 413, "too_large", docSilent, "the document states the limit as x-sundial-max-body-bytes"
			f.do(t, big)
		}
		if o.hasBody() {
			text := k
			text.contentType, text.status, text.code, text.doc = "text/plain", 415, "unsupported", docInvalid
			f.do(t, text)
		}
		// A bad id, an id of nothing.
		if id, ok := o.params("path")["id"]; ok {
			bad := k
			bad.path = strings.Replace(s.path, pathIDOf(o, s.path), "/x", 1)
			bad.status, bad.code, bad.field, bad.doc = 400, "invalid", "id", docInvalid
			if mapOf(f.c.resolve(id)["schema"])["type"] == "integer" {
				f.do(t, bad)
			}
			missing := k
			missing.path = strings.Replace(s.path, pathIDOf(o, s.path), "/987654", 1)
			if o.id() == "revokeToken" {
				missing.path, missing.field = "/api/v1/tokens/fedcba9876543210", "id"
			}
			if callback {
				missing.header = []string{"X-Sundial-Callback-Token", sundial.CallbackToken(f.sched.CallbackSecret(), 987654, 1)}
			}
			missing.status, missing.code = 404, "not_found"
			f.do(t, missing)
		}
		// No token, a role too low, another Host, a cross-site request,
		// a rate over the limit.
		switch {
		case callback:
			none := k
			none.header, none.status, none.code, none.doc = nil, 401, "unauthorized", docInvalid
			f.do(t, none)
		case apiToken:
			none := k
			none.token, none.status, none.code, none.doc = "-", 401, "unauthorized", docInvalid
			f.do(t, none)
			wrong := k
			wrong.token, wrong.status, wrong.code, wrong.doc, wrong.why = "sdl_unknown", 401, "unauthorized", docSilent, "the token is the server's to know"
			f.do(t, wrong)
			if need := roleOf[o.role()]; need > sundial.RoleViewer {
				low := k
				low.token, low.status, low.code, low.doc, low.why = f.secrets[need-1], 403, "forbidden", docSilent,
					"the document states the role as x-sundial-role"
				f.do(t, low)
			}
			host := k
			host.token, host.header = testBootstrap, append(slices.Clone(k.header), "Host", "evil.example")
			host.status, host.code, host.field, host.doc, host.why = 403, "forbidden", "Host", docSilent, "the node's names are its configuration"
			f.c.check(t, hosts, host)
			if o.method != "GET" {
				site := k
				site.token, site.contentType, site.body = "", "-", ""
				site.status, site.code, site.field, site.doc = 403, "forbidden", "Content-Type", docInvalid
				f.c.check(t, f.srv, site)
			}
			rate := k
			rate.token, rate.status, rate.code, rate.doc = testBootstrap, 429, "rate_limited", docValid
			f.c.check(t, limited, rate)
		}
	}

	// A wrong method on each path: 405 with Allow (the callback's path
	// takes any method; its handler answers 405, above).
	for path, item := range f.c.doc["paths"].(map[string]any) {
		if strings.HasSuffix(path, "/callback") {
			continue
		}
		var allowed []string
		for _, m := range httpMethods {
			if _, ok := item.(map[string]any)[strings.ToLower(m)]; ok {
				allowed = append(allowed, m)
			}
		}
		wrong := "PATCH"
		for _, m := range []string{"PATCH", "PUT", "POST"} {
			if !slices.Contains(allowed, m) {
				wrong = m
				break
			}
		}
		rec := f.do(t, call{method: wrong, path: fill(path, 1), status: 405, code: "method_not_allowed", doc: docInvalid})
		if slices.Contains(allowed, "GET") {
			allowed = append(allowed, "HEAD")
		}
		slices.Sort(allowed)
		got := strings.Split(rec.Header().Get("Allow"), ", ")
		slices.Sort(got)
		if !slices.Equal(got, allowed) {
			t.Errorf("%s %s: Allow %v, want the document's methods %v", wrong, path, got, allowed)
		}
	}
}

// pathIDOf is the id the sample path of o has where o's path has {id}.
func pathIDOf(o docOp, path string) string {
	ts, ps := strings.Split(o.path, "/"), strings.Split(strings.SplitN(path, "?", 2)[0], "/")
	for i := range ts {
		if ts[i] == "{id}" {
			return "/" + ps[i]
		}
	}
	return ""
}

// unavailable: with the database cut off, every operation that needs it
// answers 503 with Retry-After (checked by the document's Unavailable),
// readyz 503 with its checks.
func (f *contractFixture) unavailable(t *testing.T, st sundial.Store, cut func()) {
	down := setupAuthOn(t, st, Auth{Required: true, Bootstrap: testBootstrap})
	serveRoutes(down.srv)
	g := &contractFixture{authBundle: down, c: f.c}
	samples := g.samples(t)
	cut()
	for _, o := range f.c.ops() {
		if !slices.Contains(o.statuses(), "503") || o.id() == "readyz" {
			continue
		}
		s := samples[o.id()]
		k := call{method: o.method, path: s.path, body: s.body, header: s.header, status: 503, code: "unavailable",
			token: down.secrets[sundial.RoleAdmin]}
		if slices.Contains(o.security(), "callbackToken") {
			k.token = "-"
		}
		f.c.check(t, down.srv, k)
	}
	f.c.check(t, down.srv, call{method: "GET", path: "/readyz", status: 503})
}
