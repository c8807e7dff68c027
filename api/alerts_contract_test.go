package api

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// alertStory is the contract test's part of the alert routes: channels of
// each kind, rules of several conditions, their conflicts and bad input,
// and incidents with notifications.
func (f *contractFixture) alertStory(t *testing.T, nightly *sundial.Task) {
	ctx := t.Context()
	invalid := func(method, path, body, field string) call {
		return call{method: method, path: path, body: body, status: 400, code: "invalid", field: field, doc: docInvalid}
	}
	silent := func(method, path, body, field, why string) call {
		return call{method: method, path: path, body: body, status: 400, code: "invalid", field: field, doc: docSilent, why: why}
	}
	var hook, mail, slack sundial.AlertChannel
	into(t, f.do(t, call{method: "POST", path: "/api/v1/alert-channels", token: f.secrets[sundial.RoleEditor], status: 201,
		body: `{"name":"ops-hook","kind":"webhook","url":"https://example.com/alerts","signing_secret":"generate"}`}), &hook)
	// A generated signing secret is answered once, for the receiver to
	// verify with, and masked from then on.
	if !strings.HasPrefix(hook.SigningSecret, "whsec_") {
		t.Errorf("a generated signing secret answered %q, want the whsec_ secret once", hook.SigningSecret)
	}
	into(t, f.do(t, call{method: "POST", path: "/api/v1/alert-channels", status: 201,
		body: `{"name":"ops-mail","kind":"email","smtp":{"host":"smtp.example.com","port":587,"username":"sundial","password":"pw",
		"from":"sundial@example.com","to":["ops@example.com"],"tls":"starttls"}}`}), &mail)
	into(t, f.do(t, call{method: "POST", path: "/api/v1/alert-channels", status: 201,
		body: `{"name":"ops-slack","kind":"slack","url":"https://hooks.slack.example.com/services/T/B/X"}`}), &slack)
	f.do(t, call{method: "POST", path: "/api/v1/alert-channels", body: `{"name":"ops-hook","kind":"slack","url":"https://x.example"}`,
		status: 409, code: "conflict", field: "name"})
	for _, k := range []call{
		invalid("POST", "/api/v1/alert-channels", `{"name":"x","kind":"pager","url":"https://x.example"}`, "kind"),
		invalid("POST", "/api/v1/alert-channels", `{"name":"x","kind":"webhook","url":"https://x.example","headers":{}}`, "headers"),
		invalid("POST", "/api/v1/alert-channels", `{"name":"a b","kind":"webhook","url":"https://x.example"}`, "name"),
		silent("POST", "/api/v1/alert-channels", `{"name":"x","kind":"email"}`, "smtp", "which settings a kind needs is a rule of the server's"),
		silent("POST", "/api/v1/alert-channels", `{"name":"x","kind":"email","smtp":{"host":"h","port":25,"from":"a@b.c","to":["nope"]}}`,
			"smtp.to[0]", "a mail address is RFC 5322's"),
		silent("POST", "/api/v1/alert-channels", `{"name":"x","kind":"webhook","url":"ftp://x"}`, "url", "an http or https URL"),
	} {
		f.do(t, k)
	}
	f.do(t, call{method: "GET", path: "/api/v1/alert-channels", token: f.secrets[sundial.RoleViewer], status: 200})
	f.do(t, call{method: "GET", path: fmt.Sprintf("/api/v1/alert-channels/%d", mail.ID), status: 200})
	var read sundial.AlertChannel
	into(t, f.do(t, call{method: "GET", path: fmt.Sprintf("/api/v1/alert-channels/%d", hook.ID), status: 200}), &read)
	if read.SigningSecret != sundial.Masked {
		t.Errorf("a channel's signing secret read %q", read.SigningSecret)
	}
	put := fmt.Sprintf(`{"name":"ops-hook","kind":"webhook","url":"https://example.com/alerts2","signing_secret":"***","version":%d}`, hook.Version)
	f.do(t, call{method: "PUT", path: fmt.Sprintf("/api/v1/alert-channels/%d", hook.ID), body: put, status: 200})
	f.do(t, call{method: "PUT", path: fmt.Sprintf("/api/v1/alert-channels/%d", hook.ID), body: put, status: 409, code: "conflict", field: "version"})
	f.do(t, silent("PUT", fmt.Sprintf("/api/v1/alert-channels/%d", hook.ID), `{"name":"ops-hook","kind":"webhook","url":"https://x.example"}`,
		"version", "PUT needs the version it replaces"))
	f.do(t, call{method: "POST", path: fmt.Sprintf("/api/v1/alert-channels/%d/test", hook.ID), token: f.secrets[sundial.RoleOperator], status: 200})

	var consecutive, rate sundial.AlertRule
	into(t, f.do(t, call{method: "POST", path: "/api/v1/alert-rules", token: f.secrets[sundial.RoleEditor], status: 201,
		body: `{"name":"nightly-3","task":"nightly-report","condition":{"kind":"consecutive_failures","count":3},"repeat_every":"30m",
		"silences":[{"start":"22:00","end":"06:00","days":["sat","sun"],"timezone":"Europe/Berlin"},
		{"from":"2030-01-01T00:00:00Z","to":"2030-01-02T00:00:00Z"}],"channels":["ops-hook","ops-mail"]}`}), &consecutive)
	into(t, f.do(t, call{method: "POST", path: "/api/v1/alert-rules", status: 201,
		body: fmt.Sprintf(`{"name":"nightly-rate","task_id":%d,"condition":{"kind":"failure_rate","rate":0.5,"window":"1h","min_runs":4},
		"channels":["ops-slack"]}`, nightly.ID)}), &rate)
	f.do(t, call{method: "POST", path: "/api/v1/alert-rules", status: 201,
		body: `{"name":"team-skips","selector":"team=reports","condition":{"kind":"skipped","reasons":["QUEUE_FULL"]},"channels":["ops-hook"]}`})
	f.do(t, call{method: "POST", path: "/api/v1/alert-rules", status: 201,
		body: `{"name":"team-late","selector":"team in (reports)","condition":{"kind":"late_start","threshold":"30s"},"channels":["ops-hook"]}`})
	f.do(t, call{method: "POST", path: "/api/v1/alert-rules", body: `{"name":"nightly-3","selector":"a=b","condition":{"kind":"run_failed"},
		"channels":["ops-hook"]}`, status: 409, code: "conflict", field: "name"})
	for _, k := range []call{
		invalid("POST", "/api/v1/alert-rules", `{"name":"x","task":"nightly-report","condition":{"kind":"sometimes"},"channels":["ops-hook"]}`, "condition.kind"),
		invalid("POST", "/api/v1/alert-rules", `{"name":"x","task":"nightly-report","condition":{"kind":"consecutive_failures","count":0},"channels":["ops-hook"]}`,
			"condition.count"),
		invalid("POST", "/api/v1/alert-rules", `{"name":"x","task":"nightly-report","condition":{"kind":"run_failed"},"channels":[]}`, "channels"),
		invalid("POST", "/api/v1/alert-rules", `{"name":"x","task":"nightly-report","condition":{"kind":"run_failed"},"channels":["ops-hook"],
			"silences":[{"start":"25:00","end":"06:00"}]}`, "silences[0].start"),
		invalid("POST", "/api/v1/alert-rules", `{"name":"x","task":"nightly-report","condition":{"kind":"run_failed"},"channels":["ops-hook"],
			"repeat_every":"soon"}`, "repeat_every"),
		silent("POST", "/api/v1/alert-rules", `{"name":"x","task":"nightly-report","condition":{"kind":"run_failed","count":2},"channels":["ops-hook"]}`,
			"condition.count", "which settings a condition takes is a rule of the server's"),
		silent("POST", "/api/v1/alert-rules", `{"name":"x","task":"nope","condition":{"kind":"run_failed"},"channels":["ops-hook"]}`,
			"task", "the tasks are the server's"),
		silent("POST", "/api/v1/alert-rules", `{"name":"x","task":"nightly-report","condition":{"kind":"run_failed"},"channels":["nope"]}`,
			"channels[0]", "the channels are the server's"),
		silent("POST", "/api/v1/alert-rules", `{"name":"x","condition":{"kind":"run_failed"},"channels":["ops-hook"]}`,
			"task", "a task or a selector"),
	} {
		f.do(t, k)
	}
	f.do(t, call{method: "GET", path: "/api/v1/alert-rules", token: f.secrets[sundial.RoleViewer], status: 200})
	// The rules that watch one task: by its id, or by a selector its
	// labels match.
	var watching struct{ Items []sundial.AlertRule }
	into(t, f.do(t, call{method: "GET", path: fmt.Sprintf("/api/v1/alert-rules?task_id=%d", nightly.ID), status: 200}), &watching)
	var names []string
	for _, r := range watching.Items {
		names = append(names, r.Name)
	}
	wantNames := []string{"nightly-3", "nightly-rate", "team-late", "team-skips"} // its labels hold team=reports
	if strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Errorf("rules watching task %d (labels %v): %v, want %v", nightly.ID, nightly.Labels, names, wantNames)
	}
	f.do(t, call{method: "GET", path: "/api/v1/alert-rules?task_id=987654", status: 404, code: "not_found", field: "task_id"})
	f.do(t, invalid("GET", "/api/v1/alert-rules?task_id=x", "", "task_id"))
	f.do(t, call{method: "GET", path: fmt.Sprintf("/api/v1/alert-rules/%d", consecutive.ID), status: 200})
	rput := fmt.Sprintf(`{"name":"nightly-3","task":"nightly-report","condition":{"kind":"consecutive_failures","count":5},
		"channels":["ops-hook"],"version":%d}`, consecutive.Version)
	f.do(t, call{method: "PUT", path: fmt.Sprintf("/api/v1/alert-rules/%d", consecutive.ID), body: rput, status: 200})
	f.do(t, call{method: "PUT", path: fmt.Sprintf("/api/v1/alert-rules/%d", consecutive.ID), body: rput, status: 409, code: "conflict", field: "version"})
	f.do(t, call{method: "DELETE", path: fmt.Sprintf("/api/v1/alert-channels/%d", slack.ID), status: 409, code: "conflict", field: "id"})
	f.do(t, call{method: "DELETE", path: fmt.Sprintf("/api/v1/alert-rules/%d", rate.ID), status: 204})
	f.do(t, call{method: "DELETE", path: fmt.Sprintf("/api/v1/alert-channels/%d", slack.ID), status: 204})

	// Incidents, as the alerter writes them: one resolved, its
	// notifications sent and failed, one open.
	inc := &sundial.Incident{RuleID: consecutive.ID, RuleName: consecutive.Name, TaskID: nightly.ID, TaskName: nightly.Name,
		Condition: sundial.CondConsecutiveFailures, Reason: "3 consecutive failures, the last: HTTP 500", OpenedAt: f.now(), NotifiedAt: f.now()}
	notes := sundial.Notifications(&consecutive, []*sundial.AlertChannel{&hook, &mail}, sundial.EventOpened, f.now())
	if ok, err := f.store.IncidentOpen(ctx, inc, notes); err != nil || !ok {
		t.Fatal(ok, err)
	}
	claimed, err := f.store.NotificationClaim(ctx, "node-1", f.now().Add(time.Second), f.now().Add(time.Minute), 10)
	if err != nil || len(claimed) != 2 {
		t.Fatal(len(claimed), err)
	}
	claimed[0].Attempted(f.now(), "node-1", nil)
	claimed[1].Attempted(f.now(), "node-1", errors.New("smtp: connection refused"))
	for _, n := range claimed {
		if _, err := f.store.NotificationFinish(ctx, "node-1", n); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := f.store.IncidentResolve(ctx, inc.ID, f.now().Add(time.Minute), nil); err != nil || !ok {
		t.Fatal(ok, err)
	}
	again := &sundial.Incident{RuleID: consecutive.ID, RuleName: consecutive.Name, TaskID: nightly.ID,
		TaskName: nightly.Name, Condition: sundial.CondConsecutiveFailures, Reason: "again", OpenedAt: f.now(), NotifiedAt: f.now(),
		RunID: 42}
	if ok, err := f.store.IncidentOpen(ctx, again, nil); err != nil || !ok {
		t.Fatal(ok, err)
	}
	var page struct {
		NextCursor string `json:"next_cursor"`
	}
	into(t, f.do(t, call{method: "GET", path: "/api/v1/incidents?limit=1", token: f.secrets[sundial.RoleViewer], status: 200}), &page)
	f.do(t, call{method: "GET", path: "/api/v1/incidents?limit=1&cursor=" + page.NextCursor, status: 200})
	f.do(t, call{method: "GET", path: fmt.Sprintf("/api/v1/incidents?status=OPEN&task_id=%d&rule_id=%d", nightly.ID, consecutive.ID), status: 200})
	f.do(t, call{method: "GET", path: fmt.Sprintf("/api/v1/incidents/%d", inc.ID), status: 200})
	// Acknowledging: an operator, once, an open incident.
	ack := fmt.Sprintf("/api/v1/incidents/%d/ack", again.ID)
	f.do(t, call{method: "POST", path: ack, token: f.secrets[sundial.RoleViewer], body: `{}`, status: 403, code: "forbidden"})
	f.do(t, invalid("POST", ack, fmt.Sprintf(`{"note":%q}`, strings.Repeat("x", sundial.MaxAckNote+1)), "note"))
	var acked sundial.Incident
	into(t, f.do(t, call{method: "POST", path: ack, token: f.secrets[sundial.RoleOperator], body: `{"note":"looking into it"}`,
		status: 200}), &acked)
	if acked.AckedAt == nil || acked.AckNote != "looking into it" || acked.AckedBy == "" || acked.AckedBy == sundial.ActorAnonymous {
		t.Errorf("the acknowledged incident: %+v", acked)
	}
	f.do(t, call{method: "POST", path: ack, status: 409, code: "conflict"})
	f.do(t, call{method: "POST", path: fmt.Sprintf("/api/v1/incidents/%d/ack", inc.ID), status: 409, code: "conflict"})
	f.do(t, call{method: "POST", path: "/api/v1/incidents/987654/ack", status: 404, code: "not_found"})
	f.do(t, invalid("GET", "/api/v1/incidents?status=FIRING", "", "status"))
	f.do(t, invalid("GET", "/api/v1/incidents?task_id=x", "", "task_id"))
}
