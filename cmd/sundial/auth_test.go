package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bootstrapSecret is the auth.bootstrap_token of the tests.
const bootstrapSecret = "test-bootstrap-0123456789abcdef"

// call sends one request to n with the bearer token (none if "") and a
// JSON body (none if ""), and the headers given as name, value pairs (Host
// sets the request's Host). It returns the status, the headers and the
// body.
func (n *node) call(t *testing.T, method, path, token, body string, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, n.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

// must is call, failing unless the answer has the status want; it decodes
// the body into into, if not nil.
func (n *node) must(t *testing.T, want int, into any, method, path, token, body string, headers ...string) {
	t.Helper()
	status, _, data := n.call(t, method, path, token, body, headers...)
	if status != want {
		t.Fatalf("%s %s = %d %s, want %d", method, path, status, data, want)
	}
	if into != nil {
		if err := json.Unmarshal(data, into); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}

// errCode is the code of a JSON error body.
func errCode(t *testing.T, data []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not the JSON error shape: %s", data)
	}
	return e.Error.Code
}

type createdToken struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// newToken creates a token of role with the admin token admin.
func (n *node) newToken(t *testing.T, admin, name, role string) createdToken {
	t.Helper()
	var tk createdToken
	n.must(t, 201, &tk, "POST", "/api/v1/tokens", admin, fmt.Sprintf(`{"name":%q,"role":%q}`, name, role))
	return tk
}

// TestAuthRoles: with authentication on, a request without a token, or
// with a wrong one, is a 401 with the Bearer challenge; each role may do
// its own things (2xx) and not the next role's (403); the bootstrap token
// is an admin; health and readiness stay open and /metrics needs a viewer.
// No token reaches the log.
func TestAuthRoles(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"),
		"--auth.required", "true", "--auth.bootstrap_token", bootstrapSecret, "--log.level", "info")
	if !strings.Contains(n.out.String(), "authentication is required") {
		t.Errorf("the start-up log does not say that authentication is required:\n%s", n.out)
	}

	for _, tok := range []string{"", "sdl_wrong"} {
		status, h, data := n.call(t, "GET", "/api/v1/tasks", tok, "")
		if status != 401 || errCode(t, data) != "unauthorized" || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("token %q: %d %s %q; want 401 unauthorized with a Bearer challenge", tok, status, data, h.Get("WWW-Authenticate"))
		}
	}
	n.must(t, 200, nil, "GET", "/healthz", "", "")
	n.must(t, 200, nil, "GET", "/readyz", "", "")
	if status, _, _ := n.call(t, "GET", "/metrics", "", ""); status != 401 {
		t.Errorf("GET /metrics without a token = %d, want 401", status)
	}

	tokens := map[string]string{}
	for _, role := range []string{"viewer", "operator", "editor", "admin"} {
		tokens[role] = n.newToken(t, bootstrapSecret, role+"-1", role).Secret
	}
	var task taskJSON
	n.must(t, 201, &task, "POST", "/api/v1/tasks", tokens["editor"],
		fmt.Sprintf(`{"name":"roles","cron_expr":"0 0 0 1 1 *","target_url":%q}`, target.srv.URL))
	trigger := fmt.Sprintf("/api/v1/tasks/%d/trigger", task.ID)
	newTask := fmt.Sprintf(`{"name":"roles-2","cron_expr":"0 0 0 1 1 *","target_url":%q}`, target.srv.URL)

	type step struct {
		method, path, body string
		want               int
	}
	for _, c := range []struct {
		role    string
		allowed []step
		denied  step
	}{
		{"viewer", []step{{"GET", "/api/v1/tasks", "", 200}, {"GET", "/metrics", "", 200}, {"GET", "/api/v1/nodes", "", 200},
			{"GET", "/api/v1/cron/next?expr=0+0+*+*+*+*", "", 200}}, step{"POST", trigger, "", 0}},
		{"operator", []step{{"POST", trigger, "", 202}, {"POST", fmt.Sprintf("/api/v1/tasks/%d/disable", task.ID), "", 200}},
			step{"POST", "/api/v1/tasks", newTask, 0}},
		{"editor", []step{{"POST", "/api/v1/tasks", newTask, 201}}, step{"GET", "/api/v1/tokens", "", 0}},
		{"admin", []step{{"GET", "/api/v1/tokens", "", 200}, {"GET", "/api/v1/audit", "", 200}}, step{}},
	} {
		for _, s := range c.allowed {
			n.must(t, s.want, nil, s.method, s.path, tokens[c.role], s.body)
		}
		if c.denied.method == "" {
			continue
		}
		status, _, data := n.call(t, c.denied.method, c.denied.path, tokens[c.role], c.denied.body)
		if status != 403 || errCode(t, data) != "forbidden" {
			t.Errorf("%s: %s %s = %d %s, want 403 forbidden", c.role, c.denied.method, c.denied.path, status, data)
		}
	}
	// The bootstrap token is an admin token.
	n.must(t, 200, nil, "GET", "/api/v1/audit", bootstrapSecret, "")

	for _, s := range append([]string{bootstrapSecret}, tokens["admin"], tokens["viewer"]) {
		if strings.Contains(n.out.String(), s) {
			t.Fatalf("the node's log holds a token:\n%s", n.out)
		}
	}
}

// TestAuthRefusesToStart: a node whose API listens beyond loopback, or
// with auth.required, and that could authenticate no one (no bootstrap
// token, no token stored) does not start, and says how to set a bootstrap
// token. With a bootstrap token it starts, and requires it.
func TestAuthRefusesToStart(t *testing.T) {
	t.Parallel()
	for _, listen := range [][]string{{"--listen", "0.0.0.0:0"}, {"--auth.required", "true"}} {
		db := "sqlite:" + filepath.Join(t.TempDir(), "sundial.db")
		var out bytes.Buffer
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--db", db}, listen...)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := run(ctx, args, func(string) string { return "" }, strings.NewReader(""), &out, &out)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "SUNDIAL_AUTH_BOOTSTRAP_TOKEN") ||
			!strings.Contains(err.Error(), "authentication is required") {
			t.Fatalf("%v: serve = %v, want a refusal that says how to set a bootstrap token\n%s", listen, err, &out)
		}
		if exitCode(err) != 2 {
			t.Errorf("exit code %d, want 2", exitCode(err))
		}
	}

	path := filepath.Join(t.TempDir(), "sundial.db")
	n := startNode(t, path, "--listen", "0.0.0.0:0", "--auth.bootstrap_token", bootstrapSecret)
	if status, _, _ := n.call(t, "GET", "/api/v1/tasks", "", ""); status != 401 {
		t.Fatalf("a node on 0.0.0.0 answered %d without a token, want 401", status)
	}
	n.must(t, 200, nil, "GET", "/api/v1/tasks", bootstrapSecret, "")
	// Any Host, when no api.allowed_hosts is set.
	n.must(t, 200, nil, "GET", "/api/v1/tasks", bootstrapSecret, "", "Host", "sundial.example.com")
	// Once a token is stored, the node starts without the bootstrap token.
	tk := n.newToken(t, bootstrapSecret, "first", "admin")
	n.stop(t)
	again := startNode(t, path, "--listen", "0.0.0.0:0")
	again.must(t, 200, nil, "GET", "/api/v1/tokens", tk.Secret, "")
	if status, _, _ := again.call(t, "GET", "/api/v1/tokens", bootstrapSecret, ""); status != 401 {
		t.Errorf("the bootstrap token still works after it was unset: %d", status)
	}
}

// TestAuthOffOnLoopback: on loopback without auth.required, the node says
// at start that authentication is off, and anyone may call it, as long as
// the request names the node by a loopback name (no DNS rebinding) and a
// bodyless write says it is JSON (no cross-site form).
func TestAuthOffOnLoopback(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	if !strings.Contains(n.out.String(), "authentication is off") {
		t.Errorf("the start-up log does not say that authentication is off:\n%s", n.out)
	}
	port := n.url[strings.LastIndex(n.url, ":")+1:]
	var task taskJSON
	n.must(t, 201, &task, "POST", "/api/v1/tasks", "",
		fmt.Sprintf(`{"name":"open","cron_expr":"0 0 0 1 1 *","target_url":%q}`, target.srv.URL))
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
		n.must(t, 200, nil, "GET", "/api/v1/tasks", "", "", "Host", host)
	}
	for _, host := range []string{"rebound.example:" + port, "localhost:1", "localhost"} {
		status, _, data := n.call(t, "GET", "/api/v1/tasks", "", "", "Host", host)
		if status != 403 || errCode(t, data) != "forbidden" {
			t.Errorf("Host %q = %d %s, want 403", host, status, data)
		}
	}
	// Health answers whatever the Host.
	n.must(t, 200, nil, "GET", "/healthz", "", "", "Host", "rebound.example:"+port)

	trigger := fmt.Sprintf("/api/v1/tasks/%d/trigger", task.ID)
	for _, ct := range []string{"", "application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=b"} {
		status, _, data := n.call(t, "POST", trigger, "", "", "Content-Type", ct)
		if status != 403 || errCode(t, data) != "forbidden" {
			t.Errorf("bodyless trigger with Content-Type %q = %d %s, want 403", ct, status, data)
		}
	}
	if status, _, _ := n.call(t, "DELETE", fmt.Sprintf("/api/v1/tasks/%d", task.ID), "", ""); status != 403 {
		t.Errorf("DELETE without a content type = %d, want 403", status)
	}
	n.must(t, 202, nil, "POST", trigger, "", "", "Content-Type", "application/json")
	var audit struct {
		Items []struct {
			Actor  string `json:"actor"`
			Action string `json:"action"`
		} `json:"items"`
	}
	n.must(t, 200, &audit, "GET", "/api/v1/audit", "", "")
	if len(audit.Items) != 2 || audit.Items[0].Actor != "anonymous" || audit.Items[0].Action != "task.trigger" {
		t.Errorf("audit = %+v, want the trigger and the create, by anonymous", audit.Items)
	}
}

// TestAuthRevocationClusterPostgres: a token revoked through one node is
// refused by another at once: two nodes on one PostgreSQL database.
func TestAuthRevocationClusterPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test on PostgreSQL")
	}
	dsn := freshPostgres(t)
	args := []string{"--auth.required", "true", "--auth.bootstrap_token", bootstrapSecret}
	a := startNodeDB(t, dsn, args...)
	b := startNodeDB(t, dsn, args...)
	tk := a.newToken(t, bootstrapSecret, "ci", "viewer")
	b.must(t, 200, nil, "GET", "/api/v1/tasks", tk.Secret, "")
	a.must(t, 204, nil, "DELETE", "/api/v1/tokens/"+tk.ID, bootstrapSecret, "")
	status, _, data := b.call(t, "GET", "/api/v1/tasks", tk.Secret, "")
	if status != 401 || errCode(t, data) != "unauthorized" {
		t.Fatalf("node b after the revocation on node a: %d %s, want 401", status, data)
	}
	var list struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	b.must(t, 200, &list, "GET", "/api/v1/tokens", bootstrapSecret, "")
	if len(list.Items) != 0 {
		t.Errorf("node b lists %+v, want no token", list.Items)
	}
}

// TestAuthRateLimit: a token over auth.rate_limit gets 429 with
// Retry-After; another token is not held back.
func TestAuthRateLimit(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--auth.required", "true",
		"--auth.bootstrap_token", bootstrapSecret, "--auth.rate_limit", "1", "--auth.rate_burst", "3")
	a := n.newToken(t, bootstrapSecret, "a", "viewer") // the bootstrap's 1st request
	var limited bool
	for range 10 { // at 1/s, 10 requests in much less than 7 s pass a burst of 3
		status, h, data := n.call(t, "GET", "/api/v1/tasks", a.Secret, "")
		if status == 429 {
			if errCode(t, data) != "rate_limited" || h.Get("Retry-After") == "" {
				t.Fatalf("429 %s with Retry-After %q", data, h.Get("Retry-After"))
			}
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("10 requests at once never got a 429 with a rate of 1/s and a burst of 3")
	}
	n.must(t, 200, nil, "GET", "/api/v1/tokens", bootstrapSecret, "")
}

// TestAuditThroughAPI: every kind of change through the API is in the
// audit log, with its actor, target and the task before and after, the
// values of sensitive headers and the userinfo of target_url masked; the
// log holds no secret either.
func TestAuditThroughAPI(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--auth.required", "true",
		"--auth.bootstrap_token", bootstrapSecret, "--log.level", "info")
	ed := n.newToken(t, bootstrapSecret, "deployer", "editor")

	u := strings.Replace(target.srv.URL, "http://", "http://svc:pa55word@", 1)
	body := fmt.Sprintf(`{"name":"audited","cron_expr":"0 0 0 1 1 *","target_url":%q,
		"headers":{"Authorization":"Bearer s3cret-a","X-Api-Key":"s3cret-b","Cookie":"s3cret-c","X-Session-Token":"s3cret-d","X-Trace":"visible"}}`, u)
	var task taskJSON
	n.must(t, 201, &task, "POST", "/api/v1/tasks", ed.Secret, body)
	id := task.ID
	n.must(t, 200, nil, "PUT", fmt.Sprintf("/api/v1/tasks/%d", id), ed.Secret,
		strings.Replace(body, `"name":"audited"`, `"version":1,"name":"audited-2"`, 1))
	n.must(t, 200, nil, "POST", fmt.Sprintf("/api/v1/tasks/%d/disable", id), ed.Secret, "")
	n.must(t, 200, nil, "POST", fmt.Sprintf("/api/v1/tasks/%d/enable", id), ed.Secret, "")
	var run struct {
		ID int64 `json:"id"`
	}
	n.must(t, 202, &run, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", id), ed.Secret, "")
	// The run may have ended already: a cancel is then a 409, which
	// changes nothing and is not audited.
	if status, _, _ := n.call(t, "POST", fmt.Sprintf("/api/v1/runs/%d/cancel", run.ID), ed.Secret, ""); status != 200 && status != 409 {
		t.Fatalf("cancel = %d", status)
	}
	n.must(t, 202, nil, "POST", "/api/v1/admin/compensation/trigger", ed.Secret, "")
	var batch struct {
		Items []struct {
			Task taskJSON `json:"task"`
		} `json:"items"`
	}
	n.must(t, 200, &batch, "POST", "/api/v1/tasks:batch", ed.Secret,
		fmt.Sprintf(`{"tasks":[{"name":"b1","cron_expr":"0 0 0 1 1 *","target_url":%q},{"name":"b2","cron_expr":"0 0 0 1 1 *","target_url":%q}]}`,
			target.srv.URL, target.srv.URL))
	n.must(t, 204, nil, "DELETE", fmt.Sprintf("/api/v1/tasks/%d", id), ed.Secret, "")
	other := n.newToken(t, bootstrapSecret, "temp", "viewer")
	n.must(t, 204, nil, "DELETE", "/api/v1/tokens/"+other.ID, bootstrapSecret, "")

	type entry struct {
		ID     int64           `json:"id"`
		At     time.Time       `json:"at"`
		Actor  string          `json:"actor"`
		Action string          `json:"action"`
		Target string          `json:"target"`
		TaskID int64           `json:"task_id"`
		Before json.RawMessage `json:"before"`
		After  json.RawMessage `json:"after"`
	}
	var all []entry
	cursor := ""
	for {
		var page struct {
			Items      []entry `json:"items"`
			NextCursor string  `json:"next_cursor"`
		}
		n.must(t, 200, &page, "GET", "/api/v1/audit?limit=3&cursor="+cursor, bootstrapSecret, "")
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	byAction := map[string]entry{}
	var actions []string
	for _, e := range all {
		actions = append(actions, e.Actor+":"+e.Action)
		if _, ok := byAction[e.Action]; !ok {
			byAction[e.Action] = e
		}
		if e.At.IsZero() || e.Target == "" {
			t.Errorf("entry %+v has no time or target", e)
		}
	}
	for _, want := range []string{"bootstrap:token.create", "deployer:task.create", "deployer:task.update",
		"deployer:task.disable", "deployer:task.enable", "deployer:task.trigger", "deployer:compensation.trigger",
		"deployer:task.delete", "bootstrap:token.delete"} {
		found := false
		for _, a := range actions {
			found = found || a == want
		}
		if !found {
			t.Errorf("no audit entry %s in %v", want, actions)
		}
	}
	up := byAction["task.update"]
	if up.TaskID != id || up.Target != fmt.Sprintf("task/%d", id) ||
		!strings.Contains(string(up.Before), `"name":"audited"`) || !strings.Contains(string(up.After), `"name":"audited-2"`) {
		t.Errorf("task.update entry = %+v", up)
	}
	if del := byAction["task.delete"]; string(del.After) != "null" || !strings.Contains(string(del.Before), `"audited-2"`) {
		t.Errorf("task.delete entry: before %s after %s", del.Before, del.After)
	}
	raw, _ := json.Marshal(all)
	for _, secret := range []string{"s3cret-a", "s3cret-b", "s3cret-c", "s3cret-d", "pa55word", ed.Secret, other.Secret, bootstrapSecret} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the audit log holds the secret %q", secret)
		}
		if strings.Contains(n.out.String(), secret) && !strings.HasPrefix(secret, "s3cret") && secret != "pa55word" {
			t.Errorf("the node's log holds the token %q", secret)
		}
	}
	for _, want := range []string{`"Authorization":"***"`, `"X-Api-Key":"***"`, `"Cookie":"***"`, `"X-Session-Token":"***"`,
		`"X-Trace":"visible"`, `http://***@127.0.0.1`} {
		if !bytes.Contains([]byte(up.After), []byte(want)) {
			t.Errorf("task.update after does not show %s: %s", want, up.After)
		}
	}
	// Filters.
	var byTask struct {
		Items []entry `json:"items"`
	}
	n.must(t, 200, &byTask, "GET", fmt.Sprintf("/api/v1/audit?task_id=%d&actor=deployer&action=task.enable", id), bootstrapSecret, "")
	if len(byTask.Items) != 1 {
		t.Errorf("filtered audit = %+v, want the one enable", byTask.Items)
	}
	from := rfc3339(all[len(all)-1].At.Add(time.Hour))
	n.must(t, 200, &byTask, "GET", "/api/v1/audit?from="+from, bootstrapSecret, "")
	if len(byTask.Items) != 0 {
		t.Errorf("audit from an hour after the first entry = %d entries, want 0", len(byTask.Items))
	}
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
