package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/alert/alerttest"
	"github.com/sundialhq/sundial/seal"
)

// callAPI makes a request of node url's API (loopback: no token) and
// decodes its answer into out (nil: none), failing unless it is want.
func callAPI(t *testing.T, url, method, path, body string, want int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method != "GET" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// alertWorld is a node (or two) with an email channel to an SMTP sink
// and a target whose answer the test sets.
type alertWorld struct {
	sink   *alerttest.SMTPSink
	target *hook
	urls   []string
	mail   sundial.AlertChannel
}

func (w *alertWorld) setStatus(code int) {
	w.target.mu.Lock()
	w.target.status = code
	w.target.mu.Unlock()
}

// incidents lists the incidents of task id.
func (w *alertWorld) incidents(t *testing.T, id int64) []sundial.Incident {
	t.Helper()
	var page struct {
		Items []sundial.Incident `json:"items"`
	}
	callAPI(t, w.urls[0], "GET", fmt.Sprintf("/api/v1/incidents?task_id=%d", id), "", 200, &page)
	return page.Items
}

// waitMails waits, up to 20 s, until the sink holds n mails.
func (w *alertWorld) waitMails(t *testing.T, n int) []alerttest.Mail {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for len(w.sink.Mails()) < n {
		select {
		case <-w.sink.Got():
		case <-deadline:
			t.Fatalf("%d mails in 20s, want %d", len(w.sink.Mails()), n)
		}
	}
	return w.sink.Mails()
}

func newAlertWorld(t *testing.T, dsn string, nodes int) *alertWorld {
	t.Helper()
	w := &alertWorld{sink: alerttest.NewSMTPSink(t, nil), target: newHook(t)}
	w.sink.User, w.sink.Password = "sundial", "smtp-pw"
	key := "--secrets.key=" + seal.NewKey()
	for range nodes {
		w.urls = append(w.urls, startNodeDB(t, dsn, key, "--scheduler.alert_sweep", "200ms").url)
	}
	ch := &w.mail
	callAPI(t, w.urls[0], "POST", "/api/v1/alert-channels", fmt.Sprintf(`{"name":"ops-mail","kind":"email",
		"smtp":{"host":"127.0.0.1","port":%s,"username":"sundial","password":"smtp-pw","tls":"none",
		"from":"sundial@example.com","to":["ops@example.com"]}}`, w.sink.Port()), 201, ch)
	if ch.SMTP.Password != sundial.Masked {
		t.Fatalf("the channel's password answered %q", ch.SMTP.Password)
	}
	return w
}

// TestAlertsEndToEnd, through the binary against a loopback target and
// an SMTP sink: a task failing three times in a row under a rule of
// consecutive_failures 3 opens one incident and sends one mail; a fourth
// failure sends nothing; the next success sends one resolve. Then, under
// a silence window, the incident's mail is held until the window ends.
func TestAlertsEndToEnd(t *testing.T) {
	t.Parallel()
	w := newAlertWorld(t, "sqlite:"+filepath.Join(t.TempDir(), "sundial.db"), 1)
	url := w.urls[0]
	var tk sundial.Task
	callAPI(t, url, "POST", "/api/v1/tasks", `{"name":"fragile","cron_expr":"0 0 0 1 1 * 2099","target_url":"`+w.target.srv.URL+`/f"}`, 201, &tk)
	var rule sundial.AlertRule
	callAPI(t, url, "POST", "/api/v1/alert-rules", `{"name":"fragile-3","task":"fragile",
		"condition":{"kind":"consecutive_failures","count":3},"channels":["ops-mail"]}`, 201, &rule)
	var test struct {
		OK bool `json:"ok"`
	}
	callAPI(t, url, "POST", fmt.Sprintf("/api/v1/alert-channels/%d/test", w.mail.ID), "", 200, &test)
	if mails := w.waitMails(t, 1); !test.OK || !strings.Contains(mails[0].Data, "Subject: [Sundial] test notification") {
		t.Fatalf("the channel test: %v, %+v", test.OK, mails)
	}

	trigger := func() {
		t.Helper()
		callAPI(t, url, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", tk.ID), "", 202, nil)
		w.target.wait(t, 1, 10*time.Second)
	}
	// waitRuns waits until n runs of the task have ended.
	waitRuns := func(n int) {
		t.Helper()
		waitFor(t, func() bool {
			var page struct {
				Items []sundial.Run `json:"items"`
			}
			callAPI(t, url, "GET", fmt.Sprintf("/api/v1/tasks/%d/runs?limit=100", tk.ID), "", 200, &page)
			ended := 0
			for _, r := range page.Items {
				if r.FinishedAt != nil {
					ended++
				}
			}
			return ended >= n
		})
	}
	w.setStatus(500)
	trigger()
	trigger()
	waitRuns(2)
	if incs := w.incidents(t, tk.ID); len(incs) != 0 {
		t.Fatalf("after 2 failures: %+v", incs)
	}
	trigger()
	mails := w.waitMails(t, 2)
	m := mails[1]
	if m.User != "sundial" || m.From != "sundial@example.com" || len(m.To) != 1 || m.To[0] != "ops@example.com" ||
		!strings.Contains(m.Data, "Subject: [Sundial] FIRING fragile-3: task fragile") ||
		!strings.Contains(m.Data, "3 consecutive failures, the last: HTTP 500") {
		t.Fatalf("the incident's mail: %+v", m)
	}
	trigger() // a fourth failure: the incident is open, nothing is sent
	waitRuns(4)
	incs := w.incidents(t, tk.ID)
	if len(incs) != 1 || incs[0].Status != sundial.IncidentOpen || len(incs[0].Notifications) != 1 {
		t.Fatalf("after 4 failures: %+v", incs)
	}
	w.setStatus(200)
	trigger()
	mails = w.waitMails(t, 3)
	if !strings.Contains(mails[2].Data, "Subject: [Sundial] RESOLVED fragile-3: task fragile") {
		t.Fatalf("the resolve mail: %+v", mails[2])
	}
	// The sink has the mail a moment before the node records it sent.
	waitFor(t, func() bool {
		incs := w.incidents(t, tk.ID)
		return len(incs) == 1 && len(incs[0].Notifications) == 2 && incs[0].Notifications[1].Status == sundial.NotifySent
	})
	incs = w.incidents(t, tk.ID)
	if len(incs) != 1 || incs[0].Status != sundial.IncidentResolved || len(incs[0].Notifications) != 2 ||
		incs[0].Notifications[0].Status != sundial.NotifySent || incs[0].Notifications[1].Status != sundial.NotifySent ||
		incs[0].Notifications[1].Event != sundial.EventResolved || len(incs[0].Notifications[0].Attempts) != 1 {
		t.Fatalf("after the success: %+v", incs)
	}

	// A silence from now for 4 s: the next incident's mail waits for its end.
	from := time.Now().UTC()
	to := from.Add(4 * time.Second)
	var silenced sundial.AlertRule
	callAPI(t, url, "PUT", fmt.Sprintf("/api/v1/alert-rules/%d", rule.ID), fmt.Sprintf(`{"name":"fragile-3","task":"fragile",
		"condition":{"kind":"consecutive_failures","count":3},"channels":["ops-mail"],"version":%d,
		"silences":[{"from":%q,"to":%q}]}`, rule.Version, from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano)), 200, &silenced)
	w.setStatus(503)
	trigger()
	trigger()
	trigger()
	waitFor(t, func() bool {
		incs := w.incidents(t, tk.ID)
		return len(incs) == 2 && incs[0].Status == sundial.IncidentOpen
	})
	incs = w.incidents(t, tk.ID)
	if n := incs[0].Notifications; len(n) != 1 || !n[0].Held || n[0].Status != sundial.NotifyPending || time.Now().After(to) {
		t.Fatalf("the incident in the silence (ends %s): %+v", to, n)
	}
	if got := len(w.sink.Mails()); got != 3 {
		t.Fatalf("%d mails in the silence, want none new", got-3)
	}
	mails = w.waitMails(t, 4)
	if time.Now().Before(to) || !strings.Contains(mails[3].Data, "FIRING fragile-3") {
		t.Fatalf("the held mail came before the silence ended (%s): %+v", to, mails[3])
	}
}

// TestAlertsTwoNodesPostgres: two nodes on one PostgreSQL database run a
// task that fails every second, its fires shared between them; the
// incident's mail is sent once, and its resolve once.
func TestAlertsTwoNodesPostgres(t *testing.T) {
	t.Parallel()
	w := newAlertWorld(t, freshPostgres(t), 2)
	var tk sundial.Task
	callAPI(t, w.urls[0], "POST", "/api/v1/tasks", `{"name":"flaky","cron_expr":"* * * * * *","target_url":"`+w.target.srv.URL+`/f"}`, 201, &tk)
	w.setStatus(500)
	callAPI(t, w.urls[1], "POST", "/api/v1/alert-rules", `{"name":"flaky-3","task":"flaky",
		"condition":{"kind":"consecutive_failures","count":3},"channels":["ops-mail"]}`, 201, nil)
	mails := w.waitMails(t, 1)
	if !strings.Contains(mails[0].Data, "FIRING flaky-3") {
		t.Fatalf("mail %+v", mails[0])
	}
	// Six more failing fires, on both nodes: no second mail.
	w.target.wait(t, 6, 20*time.Second)
	w.setStatus(200)
	mails = w.waitMails(t, 2)
	if !strings.Contains(mails[1].Data, "RESOLVED flaky-3") {
		t.Fatalf("mail %+v", mails[1])
	}
	// Successes on both nodes: no second resolve; then the task is
	// disabled and every notification is recorded, each sent once.
	w.target.wait(t, 4, 20*time.Second)
	callAPI(t, w.urls[0], "POST", fmt.Sprintf("/api/v1/tasks/%d/disable", tk.ID), `{"reason":"done"}`, 200, nil)
	waitFor(t, func() bool {
		incs := w.incidents(t, tk.ID)
		return len(incs) == 1 && len(incs[0].Notifications) == 2 && incs[0].Notifications[1].Status == sundial.NotifySent
	})
	incs := w.incidents(t, tk.ID)
	if len(incs) != 1 || incs[0].Status != sundial.IncidentResolved || len(incs[0].Notifications) != 2 {
		t.Fatalf("incidents %+v", incs)
	}
	for _, n := range incs[0].Notifications {
		if n.Status != sundial.NotifySent || n.Tries != 1 {
			t.Errorf("notification %+v", n)
		}
	}
	if got := len(w.sink.Mails()); got != 2 {
		t.Fatalf("%d mails, want 2 (opened, resolved)", got)
	}
	// The fires were shared: both nodes recorded outcomes.
	var page struct {
		Items []sundial.Run `json:"items"`
	}
	callAPI(t, w.urls[0], "GET", fmt.Sprintf("/api/v1/tasks/%d/runs?limit=1000", tk.ID), "", 200, &page)
	byNode := map[string]int{}
	for _, r := range page.Items {
		if r.FinishedAt != nil {
			byNode[r.NodeID]++
		}
	}
	if len(byNode) < 2 {
		t.Errorf("the runs were recorded by %v, want both nodes", byNode)
	}
}

// TestCLIAlerts: the alert commands add, list, test and remove channels
// and rules, and list, show and acknowledge incidents.
func TestCLIAlerts(t *testing.T) {
	t.Parallel()
	sink := alerttest.NewSMTPSink(t, nil)
	target := newHook(t)
	target.status = 500
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--secrets.key="+seal.NewKey(), "--scheduler.alert_sweep", "200ms")
	env := clientEnv(t, n.url)
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, "mail.yaml"), "name: ops-mail\nkind: email\nsmtp: {host: 127.0.0.1, port: "+sink.Port()+
		", tls: none, from: sundial@example.com, to: [ops@example.com]}\n")
	writeText(t, filepath.Join(dir, "task.yaml"), "name: fragile\ncron_expr: \"0 0 0 1 1 * 2099\"\ntarget_url: "+target.srv.URL+"/f\n")
	writeText(t, filepath.Join(dir, "rule.yaml"), "name: fragile-1\ntask: fragile\ncondition: {kind: run_failed}\nchannels: [ops-mail]\n")
	if out := mustCLI(t, env, "alert", "channel", "add", "-f", filepath.Join(dir, "mail.yaml")); !strings.Contains(out, "channel/ops-mail created") {
		t.Fatalf("channel add: %s", out)
	}
	mustCLI(t, env, "task", "create", "-f", filepath.Join(dir, "task.yaml"))
	mustCLI(t, env, "alert", "rule", "add", "-f", filepath.Join(dir, "rule.yaml"))
	if out := mustCLI(t, env, "alert", "channel", "ls"); !strings.Contains(out, "ops-mail") || !strings.Contains(out, "smtp://127.0.0.1:"+sink.Port()) {
		t.Fatalf("channel ls:\n%s", out)
	}
	if out := mustCLI(t, env, "alert", "rule", "ls"); !strings.Contains(out, "fragile-1") || !strings.Contains(out, "run_failed") {
		t.Fatalf("rule ls:\n%s", out)
	}
	writeText(t, filepath.Join(dir, "other.yaml"), "name: other\ncron_expr: \"0 0 0 1 1 * 2099\"\ntarget_url: "+target.srv.URL+"/o\n")
	mustCLI(t, env, "task", "create", "-f", filepath.Join(dir, "other.yaml"))
	if out := mustCLI(t, env, "alert", "rule", "ls", "--task", "fragile"); !strings.Contains(out, "fragile-1") {
		t.Errorf("rule ls --task fragile:\n%s", out)
	}
	if out := mustCLI(t, env, "alert", "rule", "ls", "--task", "other"); strings.Contains(out, "fragile-1") {
		t.Errorf("rule ls --task other:\n%s", out)
	}
	if out := mustCLI(t, env, "alert", "channel", "test", "ops-mail"); !strings.Contains(out, "test message sent") {
		t.Fatalf("channel test: %s", out)
	}
	_ = runCLI(t, env, "", "task", "trigger", "fragile", "--wait")
	waitFor(t, func() bool { return len(sink.Mails()) == 2 })
	out := mustCLI(t, env, "incident", "ls", "--task", "fragile", "--open")
	if !strings.Contains(out, "OPEN") || !strings.Contains(out, "fragile-1") {
		t.Fatalf("incident ls:\n%s", out)
	}
	waitFor(t, func() bool { return strings.Contains(mustCLI(t, env, "incident", "show", "1"), "SENT") })
	if out := mustCLI(t, env, "incident", "show", "1"); !strings.Contains(out, "opened") || !strings.Contains(out, "ops-mail") {
		t.Fatalf("incident show:\n%s", out)
	}
	if out := mustCLI(t, env, "incident", "ack", "1", "--note", "on it"); !strings.Contains(out, "incident 1 acknowledged by") {
		t.Fatalf("incident ack: %s", out)
	}
	if out := mustCLI(t, env, "incident", "show", "1"); !strings.Contains(out, "acked:") || !strings.Contains(out, "on it") {
		t.Fatalf("incident show after the ack:\n%s", out)
	}
	failCLI(t, env, 1, []string{"acknowledged already"}, "incident", "ack", "1")
	failCLI(t, env, 1, []string{"rule", "fragile-1"}, "alert", "channel", "rm", "ops-mail")
	mustCLI(t, env, "alert", "rule", "rm", "fragile-1")
	mustCLI(t, env, "alert", "channel", "rm", "ops-mail")
	failCLI(t, env, 1, []string{"not found"}, "alert", "channel", "test", "ops-mail")
}

// TestAlertsLongRunEndToEnd, through the binary: a rule of long_run mails
// while the run is still in its call (not when it ends), the incident
// names the run and is acknowledged through the API; the long run's end
// sends nothing more, and the next short run sends the resolve.
func TestAlertsLongRunEndToEnd(t *testing.T) {
	t.Parallel()
	w := newAlertWorld(t, "sqlite:"+filepath.Join(t.TempDir(), "sundial.db"), 1)
	url := w.urls[0]
	release := make(chan struct{})
	var slow atomic.Bool
	slow.Store(true)
	target := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(target.Close)
	t.Cleanup(func() { slow.Store(false) })
	var tk sundial.Task
	callAPI(t, url, "POST", "/api/v1/tasks", `{"name":"slow","cron_expr":"0 0 0 1 1 * 2099","timeout_seconds":60,
		"target_url":"`+target.URL+`/slow"}`, 201, &tk)
	callAPI(t, url, "POST", "/api/v1/alert-rules", `{"name":"slow-1s","task":"slow",
		"condition":{"kind":"long_run","threshold":"1s"},"channels":["ops-mail"]}`, 201, nil)
	var run sundial.Run
	callAPI(t, url, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", tk.ID), "", 202, &run)
	mails := w.waitMails(t, 1)
	if !strings.Contains(mails[0].Data, "FIRING slow-1s: task slow") ||
		!strings.Contains(mails[0].Data, fmt.Sprintf("run %d has been running for", run.ID)) {
		t.Fatalf("the mail: %+v", mails[0])
	}
	var now sundial.Run
	callAPI(t, url, "GET", fmt.Sprintf("/api/v1/runs/%d", run.ID), "", 200, &now)
	if now.Status != sundial.RunRunning {
		t.Fatalf("the run is %s when the mail comes, want RUNNING", now.Status)
	}
	incs := w.incidents(t, tk.ID)
	if len(incs) != 1 || incs[0].RunID != run.ID || incs[0].Status != sundial.IncidentOpen {
		t.Fatalf("incidents %+v", incs)
	}
	var acked sundial.Incident
	callAPI(t, url, "POST", fmt.Sprintf("/api/v1/incidents/%d/ack", incs[0].ID), `{"note":"known slow day"}`, 200, &acked)
	if acked.AckedAt == nil || acked.AckNote != "known slow day" || acked.AckedBy != sundial.ActorAnonymous {
		t.Fatalf("acknowledged: %+v", acked)
	}
	callAPI(t, url, "POST", fmt.Sprintf("/api/v1/incidents/%d/ack", incs[0].ID), "", 409, nil)

	// The long run ends, long: nothing new. Then a short one resolves.
	slow.Store(false)
	close(release)
	waitFor(t, func() bool {
		callAPI(t, url, "GET", fmt.Sprintf("/api/v1/runs/%d", run.ID), "", 200, &now)
		return now.FinishedAt != nil
	})
	callAPI(t, url, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", tk.ID), "", 202, nil)
	mails = w.waitMails(t, 2)
	if !strings.Contains(mails[1].Data, "RESOLVED slow-1s: task slow") {
		t.Fatalf("the second mail: %+v", mails[1])
	}
	waitFor(t, func() bool {
		incs := w.incidents(t, tk.ID)
		return len(incs) == 1 && incs[0].Status == sundial.IncidentResolved
	})
	if got := len(w.sink.Mails()); got != 2 {
		t.Fatalf("%d mails, want 2 (opened, resolved)", got)
	}
}
