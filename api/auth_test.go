package api

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/seal"
)

// TestRoleTable: the roles the routes are registered with are those of
// the issue: read a viewer, act an operator, write an editor, tokens and
// audit an admin; health and the per-run endpoints open. Every built-in
// route is in the list below, so that a new one is given a role here too.
func TestRoleTable(t *testing.T) {
	t.Parallel()
	srv := setupStore(t).srv
	srv.Handle("GET /metrics", sundial.RoleViewer, http.NotFoundHandler()) // as serve does
	srv.mux.Handle("GET /bypass", http.NotFoundHandler())                  // no role given: closed
	cases := []struct {
		pattern string
		want    sundial.Role
	}{
		{"GET /healthz", sundial.RoleNone},
		{"GET /readyz", sundial.RoleNone},
		{"POST /api/v1/runs/{id}/progress", sundial.RoleNone},
		{"GET /api/v1/runs/{id}/callback", sundial.RoleNone},
		{"/api/v1/runs/{id}/callback", sundial.RoleNone},
		{"GET /metrics", sundial.RoleViewer},
		{"GET /api/v1/cron/next", sundial.RoleViewer},
		{"GET /api/v1/openapi.json", sundial.RoleViewer},
		{"GET /api/v1/whoami", sundial.RoleViewer},
		{"GET /api/v1/tasks", sundial.RoleViewer},
		{"GET /api/v1/tasks/{id}", sundial.RoleViewer},
		{"GET /api/v1/tasks/{id}/deps", sundial.RoleViewer},
		{"GET /api/v1/tasks/{id}/runs", sundial.RoleViewer},
		{"GET /api/v1/tasks/{id}/upcoming", sundial.RoleViewer},
		{"GET /api/v1/runs", sundial.RoleViewer},
		{"GET /api/v1/runs/{id}", sundial.RoleViewer},
		{"GET /api/v1/nodes", sundial.RoleViewer},
		{"GET /api/v1/stats", sundial.RoleViewer},
		{"GET /api/v1/events", sundial.RoleViewer},
		{"GET /api/v1/admin/compensation", sundial.RoleViewer},
		{"POST /api/v1/tasks/{id}/trigger", sundial.RoleOperator},
		{"POST /api/v1/tasks/{id}/backfill", sundial.RoleOperator},
		{"POST /api/v1/runs:replay", sundial.RoleOperator},
		{"POST /api/v1/tasks/{id}/backfill:cancel", sundial.RoleOperator},
		{"POST /api/v1/tasks/{id}/enable", sundial.RoleOperator},
		{"POST /api/v1/tasks/{id}/disable", sundial.RoleOperator},
		{"POST /api/v1/runs/{id}/cancel", sundial.RoleOperator},
		{"POST /api/v1/runs/{id}/rerun", sundial.RoleOperator},
		{"GET /api/v1/runs/{id}/request", sundial.RoleViewer},
		{"POST /api/v1/tasks:bulk", sundial.RoleOperator},
		{"POST /api/v1/admin/compensation/trigger", sundial.RoleOperator},
		{"POST /api/v1/tasks", sundial.RoleEditor},
		{"POST /api/v1/tasks:batch", sundial.RoleEditor},
		{"PUT /api/v1/tasks/{id}", sundial.RoleEditor},
		{"PATCH /api/v1/tasks/{id}", sundial.RoleEditor},
		{"DELETE /api/v1/tasks/{id}", sundial.RoleEditor},
		{"POST /api/v1/alert-channels", sundial.RoleEditor},
		{"GET /api/v1/alert-channels", sundial.RoleViewer},
		{"GET /api/v1/alert-channels/{id}", sundial.RoleViewer},
		{"PUT /api/v1/alert-channels/{id}", sundial.RoleEditor},
		{"DELETE /api/v1/alert-channels/{id}", sundial.RoleEditor},
		{"POST /api/v1/alert-channels/{id}/test", sundial.RoleOperator},
		{"POST /api/v1/alert-rules", sundial.RoleEditor},
		{"GET /api/v1/alert-rules", sundial.RoleViewer},
		{"GET /api/v1/alert-rules/{id}", sundial.RoleViewer},
		{"PUT /api/v1/alert-rules/{id}", sundial.RoleEditor},
		{"DELETE /api/v1/alert-rules/{id}", sundial.RoleEditor},
		{"GET /api/v1/incidents", sundial.RoleViewer},
		{"GET /api/v1/incidents/{id}", sundial.RoleViewer},
		{"POST /api/v1/incidents/{id}/ack", sundial.RoleOperator},
		{"GET /api/v1/calendars", sundial.RoleViewer},
		{"GET /api/v1/calendars/{name}", sundial.RoleViewer},
		{"POST /api/v1/calendars", sundial.RoleEditor},
		{"PUT /api/v1/calendars/{name}", sundial.RoleEditor},
		{"DELETE /api/v1/calendars/{name}", sundial.RoleEditor},
		{"POST /api/v1/tokens", sundial.RoleAdmin},
		{"GET /api/v1/tokens", sundial.RoleAdmin},
		{"DELETE /api/v1/tokens/{id}", sundial.RoleAdmin},
		{"GET /api/v1/audit", sundial.RoleAdmin},
		{"GET /bypass", sundial.RoleAdmin},
		{"", sundial.RoleViewer},
	}
	listed := map[string]bool{}
	for _, c := range cases {
		listed[c.pattern] = true
		if got := srv.roleOf(c.pattern); got != c.want {
			t.Errorf("roleOf(%q) = %s, want %s", c.pattern, got, c.want)
		}
	}
	for pattern := range srv.roles {
		if !listed[pattern] {
			t.Errorf("route %q is not in the test's list: add it with the role it needs", pattern)
		}
	}
	for r := sundial.RoleViewer; r <= sundial.RoleAdmin; r++ {
		if got, ok := sundial.ParseRole(r.String()); !ok || got != r {
			t.Errorf("ParseRole(%q) = %v, %v", r.String(), got, ok)
		}
		for need := sundial.RoleNone; need <= sundial.RoleAdmin; need++ {
			if r.Allows(need) != (need <= r) {
				t.Errorf("%s.Allows(%s) = %v", r, need, r.Allows(need))
			}
		}
	}
}

// authBundle is a server with authentication on, a bootstrap token and a
// token of each role.
type authBundle struct {
	*storeBundle
	secrets map[sundial.Role]string
	sealer  sundial.Sealer
}

const testBootstrap = "bootstrap-secret-for-tests-0123456789"

func setupAuth(t *testing.T, a Auth) *authBundle {
	t.Helper()
	return setupAuthOn(t, setupStore(t).store, a)
}

// setupAuthOn is setupAuth on the store given.
func setupAuthOn(t *testing.T, st sundial.Store, a Auth) *authBundle {
	t.Helper()
	sb := setupOn(t, st)
	key, err := seal.ParseKey(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	box, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	ab := &authBundle{storeBundle: sb, secrets: map[sundial.Role]string{}, sealer: box}
	sb.srv = ab.server(a)
	for r := sundial.RoleViewer; r <= sundial.RoleAdmin; r++ {
		id, secret := sundial.NewToken()
		if err := sb.store.TokenCreate(t.Context(), &sundial.Token{ID: id, Name: r.String() + "-token", Role: r,
			Hash: sundial.HashToken(secret), CreatedAt: sb.now()}); err != nil {
			t.Fatal(err)
		}
		ab.secrets[r] = secret
	}
	return ab
}

// server is another Server on the bundle's store, scheduler and secrets
// key, with the authentication a.
func (b *authBundle) server(a Auth) *Server {
	return NewServer(Config{Logger: slog.New(slog.NewTextHandler(b.log, nil)), Now: b.now,
		Store: b.store, Scheduler: b.sched, Auth: &a, Sealer: b.sealer})
}

// req serves one request with the bearer secret (none if ""), a JSON body
// if body is not "", and the headers given as name, value pairs.
func (b *authBundle) req(t *testing.T, method, target, secret, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	if secret != "" {
		r.Header.Set("Authorization", "Bearer "+secret)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			r.Host = headers[i+1]
			continue
		}
		r.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, r)
	return rec
}

func TestAuthRequired(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Required: true, Bootstrap: testBootstrap})

	// Open routes need no token: health, and the OIDC keys that targets
	// fetch to verify Sundial's tokens (added with Handle, as serve does).
	want(t, b.req(t, "GET", "/healthz", "", ""), 200, nil)
	want(t, b.req(t, "GET", "/readyz", "", ""), 200, nil)
	for _, path := range []string{"/.well-known/jwks.json", "/.well-known/openid-configuration"} {
		b.srv.Handle("GET "+path, sundial.RoleNone, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("{}")) }))
		want(t, b.req(t, "GET", path, "", ""), 200, nil)
	}

	// No token, a wrong one, another scheme: 401 with the challenge.
	for _, c := range []struct{ name, auth, challenge string }{
		{"none", "", `Bearer realm="sundial"`},
		{"wrong", "Bearer sdl_nope", `Bearer realm="sundial", error="invalid_token"`},
		{"basic", "Basic dXNlcjpwYXNz", `Bearer realm="sundial", error="invalid_token"`},
	} {
		rec := b.req(t, "GET", "/api/v1/tasks", "", "", "Authorization", c.auth)
		wantError(t, rec, 401, errorDetail{Code: sundial.EUnauthorized})
		if got := rec.Header().Get("WWW-Authenticate"); got != c.challenge {
			t.Errorf("%s: WWW-Authenticate = %q, want %q", c.name, got, c.challenge)
		}
	}
	// Unknown paths too: nothing is learnt without a token.
	wantError(t, b.req(t, "GET", "/api/v1/nothing", "", ""), 401, errorDetail{Code: sundial.EUnauthorized})

	// Each role: its own routes 2xx, the next role's 403.
	task := `{"name":"t","cron_expr":"0 0 * * * *","target_url":"http://127.0.0.1:1/"}`
	for _, c := range []struct {
		role         sundial.Role
		allowed      [3]string // method, path, body
		allowedCode  int
		forbidden    [3]string
		forbiddenMsg string
	}{
		{sundial.RoleViewer, [3]string{"GET", "/api/v1/tasks", ""}, 200,
			[3]string{"POST", "/api/v1/tasks/1/trigger", ""}, "needs the role operator"},
		{sundial.RoleOperator, [3]string{"POST", "/api/v1/runs/999/cancel", ""}, 404,
			[3]string{"POST", "/api/v1/tasks", task}, "needs the role editor"},
		{sundial.RoleEditor, [3]string{"POST", "/api/v1/tasks", task}, 201,
			[3]string{"GET", "/api/v1/tokens", ""}, "needs the role admin"},
		{sundial.RoleAdmin, [3]string{"GET", "/api/v1/audit", ""}, 200,
			[3]string{}, ""},
	} {
		secret := b.secrets[c.role]
		rec := b.req(t, c.allowed[0], c.allowed[1], secret, c.allowed[2])
		if rec.Code != c.allowedCode {
			t.Errorf("%s: %s %s = %d %s, want %d", c.role, c.allowed[0], c.allowed[1], rec.Code, rec.Body, c.allowedCode)
		}
		if c.forbidden[0] == "" {
			continue
		}
		rec = b.req(t, c.forbidden[0], c.forbidden[1], secret, c.forbidden[2])
		if rec.Code != 403 || !strings.Contains(rec.Body.String(), c.forbiddenMsg) {
			t.Errorf("%s: %s %s = %d %s, want 403 saying %q", c.role, c.forbidden[0], c.forbidden[1], rec.Code, rec.Body, c.forbiddenMsg)
		}
		if got := errorOf(t, rec); got.Code != sundial.EForbidden {
			t.Errorf("%s: code %q, want forbidden", c.role, got.Code)
		}
	}
	// The bootstrap token is an admin.
	want(t, b.req(t, "GET", "/api/v1/tokens", testBootstrap, ""), 200, nil)

	// No token ever reaches the log.
	for _, s := range append([]string{testBootstrap, "sdl_nope"}, b.secrets[sundial.RoleAdmin]) {
		if strings.Contains(b.log.String(), s) {
			t.Errorf("the log holds a token: %s", b.log)
		}
	}
}

func TestAuthExpiredToken(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Required: true})
	exp := b.now().Add(time.Hour)
	id, secret := sundial.NewToken()
	if err := b.store.TokenCreate(t.Context(), &sundial.Token{ID: id, Name: "short", Role: sundial.RoleAdmin,
		Hash: sundial.HashToken(secret), CreatedAt: b.now(), ExpiresAt: &exp}); err != nil {
		t.Fatal(err)
	}
	want(t, b.req(t, "GET", "/api/v1/tasks", secret, ""), 200, nil)
	b.setNow(exp)
	rec := b.req(t, "GET", "/api/v1/tasks", secret, "")
	body := rec.Body.String()
	wantError(t, rec, 401, errorDetail{Code: sundial.EUnauthorized})
	if !strings.Contains(body, "expired") {
		t.Errorf("body %s does not say the token expired", body)
	}
}

func TestAuthOff(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Hosts: []string{"localhost:8080", "127.0.0.1:8080", "[::1]:8080"}})
	// Anyone may do anything, as "anonymous", from a loopback name.
	rec := b.req(t, "POST", "/api/v1/tasks", "", `{"name":"t","cron_expr":"0 0 * * * *","target_url":"http://127.0.0.1:1/"}`,
		"Host", "localhost:8080")
	want(t, rec, 201, nil)
	var list listResponse[auditView]
	want(t, b.req(t, "GET", "/api/v1/audit", "", "", "Host", "127.0.0.1:8080"), 200, &list)
	if len(list.Items) != 1 || list.Items[0].Actor != sundial.ActorAnonymous {
		t.Fatalf("audit = %+v, want one entry by anonymous", list.Items)
	}
}

func TestHostCheck(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Hosts: []string{"localhost:8080", "127.0.0.1:8080", "[::1]:8080", "sundial.example.com"}})
	for host, ok := range map[string]bool{
		"localhost:8080":          true,
		"LOCALHOST:8080":          true,
		"127.0.0.1:8080":          true,
		"[::1]:8080":              true,
		"sundial.example.com":     true,
		"sundial.example.com:443": true,
		"localhost:9090":          false,
		"attacker.example:8080":   false,
		"127.0.0.1":               false,
		"":                        false,
	} {
		rec := b.req(t, "GET", "/api/v1/tasks", "", "", "Host", host)
		if ok && rec.Code != 200 {
			t.Errorf("Host %q = %d %s, want 200", host, rec.Code, rec.Body)
		}
		if !ok {
			wantError(t, rec, 403, errorDetail{Code: sundial.EForbidden, Field: "Host", Token: host})
		}
	}
	// Health stays open to any Host (load balancers probe by address).
	want(t, b.req(t, "GET", "/healthz", "", "", "Host", "10.1.2.3:8080"), 200, nil)
	// No list: any Host.
	open := setupAuth(t, Auth{})
	want(t, open.req(t, "GET", "/api/v1/tasks", "", "", "Host", "anything.example:1"), 200, nil)
}

func TestCrossSite(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Required: true})
	op := b.secrets[sundial.RoleOperator]
	b2 := setupAuth(t, Auth{})
	// Without a token, a bodyless POST needs the JSON content type.
	for _, ct := range []string{"", "application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"} {
		rec := b2.req(t, "POST", "/api/v1/admin/compensation/trigger", "", "", "Content-Type", ct)
		wantError(t, rec, 403, errorDetail{Code: sundial.EForbidden, Field: "Content-Type"})
	}
	want(t, b2.req(t, "POST", "/api/v1/admin/compensation/trigger", "", "", "Content-Type", "application/json"), 202, nil)
	wantError(t, b2.req(t, "DELETE", "/api/v1/tasks/1", "", ""), 403, errorDetail{Code: sundial.EForbidden, Field: "Content-Type"})
	// A bearer token is enough.
	want(t, b.req(t, "POST", "/api/v1/admin/compensation/trigger", op, "", "Content-Type", "text/plain"), 202, nil)
	// Reads and the per-run endpoints are not checked.
	want(t, b2.req(t, "GET", "/api/v1/tasks", "", ""), 200, nil)
	if rec := b2.req(t, "POST", "/api/v1/runs/1/progress", "", "", "Content-Type", "text/plain"); rec.Code == 403 {
		t.Errorf("progress = 403 %s; its run token decides", rec.Body)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Required: true, Bootstrap: testBootstrap, RateLimit: 2, RateBurst: 3})
	v := b.secrets[sundial.RoleViewer]
	for i := range 3 {
		if rec := b.req(t, "GET", "/api/v1/tasks", v, ""); rec.Code != 200 {
			t.Fatalf("request %d = %d, want 200 within the burst", i, rec.Code)
		}
	}
	rec := b.req(t, "GET", "/api/v1/tasks", v, "")
	wantError(t, rec, 429, errorDetail{Code: sundial.ERateLimited})
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	// Another token has a bucket of its own.
	want(t, b.req(t, "GET", "/api/v1/tasks", b.secrets[sundial.RoleEditor], ""), 200, nil)
	// Half a second later, one more request (2/s).
	b.setNow(b.now().Add(500 * time.Millisecond))
	want(t, b.req(t, "GET", "/api/v1/tasks", v, ""), 200, nil)
	wantError(t, b.req(t, "GET", "/api/v1/tasks", v, ""), 429, errorDetail{Code: sundial.ERateLimited})
	// Open routes are not limited.
	want(t, b.req(t, "GET", "/healthz", "", ""), 200, nil)
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	l := newLimiter(0.5, 1)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, ok := l.allow("a", now); !ok {
		t.Fatal("first request refused")
	}
	if wait, ok := l.allow("a", now); ok || wait != 2 {
		t.Fatalf("second = %d, %v; want refused, retry after 2 s", wait, ok)
	}
	if _, ok := l.allow("a", now.Add(2*time.Second)); !ok {
		t.Fatal("refused after 2 s")
	}
	var none *limiter
	if _, ok := none.allow("a", now); !ok {
		t.Fatal("no limiter refused")
	}
}

func TestTokenRoutes(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Required: true, Bootstrap: testBootstrap})
	var created tokenView
	want(t, b.req(t, "POST", "/api/v1/tokens", testBootstrap, `{"name":"ci","role":"editor","expires_at":"2027-01-01T00:00:00Z"}`), 201, &created)
	if !strings.HasPrefix(created.Secret, sundial.TokenPrefix) || created.Role != "editor" || created.CreatedBy != "bootstrap" ||
		created.ExpiresAt == nil || created.ID == "" {
		t.Fatalf("created = %+v", created)
	}
	want(t, b.req(t, "POST", "/api/v1/tasks", created.Secret, `{"name":"t","cron_expr":"0 0 * * * *","target_url":"http://127.0.0.1:1/"}`), 201, nil)

	var list listResponse[json.RawMessage]
	want(t, b.req(t, "GET", "/api/v1/tokens", testBootstrap, ""), 200, &list)
	all, _ := json.Marshal(list)
	if len(list.Items) != 5 || bytes.Contains(all, []byte(created.Secret)) || bytes.Contains(all, []byte("secret")) ||
		bytes.Contains(all, []byte(sundial.HashToken(created.Secret))) {
		t.Fatalf("list = %s; want 5 tokens without secrets or hashes", all)
	}

	for _, c := range []struct {
		body  string
		field string
	}{
		{`{"name":"ci","role":"viewer"}`, "name"}, // taken
		{`{"name":"","role":"viewer"}`, "name"},
		{`{"name":"has space","role":"viewer"}`, "name"},
		{`{"name":"bootstrap","role":"viewer"}`, "name"},
		{`{"name":"Bootstrap","role":"viewer"}`, "name"},
		{`{"name":"ANONYMOUS","role":"viewer"}`, "name"},
		{`{"name":"x","role":"root"}`, "role"},
		{`{"name":"x","role":"viewer","expires_at":"2020-01-01T00:00:00Z"}`, "expires_at"},
		{`{"name":"x","role":"viewer","expires_at":"soon"}`, "expires_at"}, // not a 500
		{`{"name":"x","role":"viewer","expires_at":"2027-01-01"}`, "expires_at"},
		{`{"name":"x","role":"viewer","secret":"mine"}`, "secret"},
	} {
		rec := b.req(t, "POST", "/api/v1/tokens", testBootstrap, c.body)
		if rec.Code != 400 && rec.Code != 409 {
			t.Errorf("%s = %d %s, want 400 or 409", c.body, rec.Code, rec.Body)
			continue
		}
		if got := errorOf(t, rec); got.Field != c.field {
			t.Errorf("%s: field %q, want %q", c.body, got.Field, c.field)
		}
	}

	want(t, b.req(t, "DELETE", "/api/v1/tokens/"+created.ID, testBootstrap, ""), 204, nil)
	wantError(t, b.req(t, "GET", "/api/v1/tasks", created.Secret, ""), 401, errorDetail{Code: sundial.EUnauthorized})
	wantError(t, b.req(t, "DELETE", "/api/v1/tokens/"+created.ID, testBootstrap, ""), 404, errorDetail{Code: sundial.ENotFound, Field: "id"})

	var audit listResponse[auditView]
	want(t, b.req(t, "GET", "/api/v1/audit?limit=10", testBootstrap, ""), 200, &audit)
	var actions []string
	for _, e := range audit.Items {
		actions = append(actions, e.Actor+":"+e.Action)
	}
	if got := strings.Join(actions, " "); got != "bootstrap:token.delete ci:task.create bootstrap:token.create" {
		t.Fatalf("audit = %s", got)
	}
	raw, _ := json.Marshal(audit)
	if bytes.Contains(raw, []byte(created.Secret)) {
		t.Fatalf("the audit log holds a secret: %s", raw)
	}
}

func TestAuditMasksAndPages(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Required: true, Bootstrap: testBootstrap})
	ed := b.secrets[sundial.RoleEditor]
	var tk struct {
		ID      int64 `json:"id"`
		Version int64 `json:"version"`
	}
	body := `{"name":"t","cron_expr":"0 0 * * * *","target_url":"http://user:pw@127.0.0.1:1/x",
		"headers":{"Authorization":"Bearer hidden1","X-Api-Key":"hidden2","Cookie":"hidden3","X-Plain":"shown"}}`
	want(t, b.req(t, "POST", "/api/v1/tasks", ed, body), 201, &tk)
	want(t, b.req(t, "PUT", taskPath(tk.ID), ed, strings.Replace(body, `"name":"t"`, `"version":1,"name":"t2"`, 1)), 200, nil)
	want(t, b.req(t, "POST", taskPath(tk.ID, "/disable"), ed, ""), 200, nil)
	want(t, b.req(t, "POST", taskPath(tk.ID, "/enable"), ed, ""), 200, nil)
	want(t, b.req(t, "POST", taskPath(tk.ID, "/trigger"), ed, `{"params":{"order":42}}`), 202, nil)
	want(t, b.req(t, "DELETE", taskPath(tk.ID), ed, ""), 204, nil)

	var page1, page2 listResponse[auditView]
	want(t, b.req(t, "GET", "/api/v1/audit?limit=4&actor=editor-token", testBootstrap, ""), 200, &page1)
	if page1.NextCursor == "" || len(page1.Items) != 4 {
		t.Fatalf("first page: %d items, cursor %q", len(page1.Items), page1.NextCursor)
	}
	want(t, b.req(t, "GET", "/api/v1/audit?limit=4&actor=editor-token&cursor="+page1.NextCursor, testBootstrap, ""), 200, &page2)
	if len(page2.Items) != 2 || page2.NextCursor != "" {
		t.Fatalf("second page: %d items, cursor %q", len(page2.Items), page2.NextCursor)
	}
	var actions []string
	for _, e := range append(page1.Items, page2.Items...) {
		actions = append(actions, e.Action)
		if e.TaskID != tk.ID || e.Target != taskTarget(tk.ID) {
			t.Errorf("%s: task %d target %s", e.Action, e.TaskID, e.Target)
		}
	}
	if got := strings.Join(actions, " "); got != "task.delete task.trigger task.enable task.disable task.update task.create" {
		t.Fatalf("actions = %s", got)
	}
	raw, _ := json.Marshal(append(page1.Items, page2.Items...))
	for _, secret := range []string{"hidden1", "hidden2", "hidden3", "pw@"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("audit holds %q: %s", secret, raw)
		}
	}
	if !bytes.Contains(raw, []byte("shown")) || !bytes.Contains(raw, []byte(`"Authorization":"***"`)) ||
		!bytes.Contains(raw, []byte(`***@127.0.0.1`)) {
		t.Errorf("audit does not show the masked task: %s", raw)
	}
	upd := page2.Items[0]
	if !bytes.Contains(upd.Before, []byte(`"name":"t"`)) || !bytes.Contains(upd.After, []byte(`"name":"t2"`)) ||
		!bytes.Contains(upd.After, []byte(`"changed":["name"]`)) {
		t.Errorf("update before %s after %s", upd.Before, upd.After)
	}
	if trig := page1.Items[1]; !bytes.Contains(trig.After, []byte(`"params":{"order":42}`)) {
		t.Errorf("trigger after %s, want the params it gave", trig.After)
	}
	del := page1.Items[0]
	if string(del.After) != "null" || !bytes.Contains(del.Before, []byte(`"name":"t2"`)) {
		t.Errorf("delete before %s after %s", del.Before, del.After)
	}

	// Filters.
	for q, n := range map[string]int{
		"action=task.trigger":                   1,
		"task_id=" + jsonInt(tk.ID):             6,
		"task_id=999":                           0,
		"from=2026-01-01T00:00:00Z":             6,
		"to=2026-01-01T00:00:00Z":               0,
		"actor=editor-token&action=task.create": 1,
	} {
		var l listResponse[auditView]
		want(t, b.req(t, "GET", "/api/v1/audit?"+q, testBootstrap, ""), 200, &l)
		if len(l.Items) != n {
			t.Errorf("%s: %d entries, want %d", q, len(l.Items), n)
		}
	}
	for q, field := range map[string]string{
		"task_id=x":      "task_id",
		"from=yesterday": "from",
		"cursor=abc":     "cursor",
		"limit=0":        "limit",
		"who=me":         "who",
	} {
		rec := b.req(t, "GET", "/api/v1/audit?"+q, testBootstrap, "")
		if rec.Code != 400 {
			t.Errorf("%s = %d, want 400", q, rec.Code)
			continue
		}
		if got := errorOf(t, rec); got.Field != field {
			t.Errorf("%s: field %q, want %q", q, got.Field, field)
		}
	}
}

func TestMaskURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://u:p@h/x": "http://***@h/x",
		"https://u@h":    "https://***@h",
		"http://h/x@y":   "http://h/x@y",
		"http://h/x?a=b": "http://h/x?a=b",
		"not a url %zz":  "not a url %zz",
	} {
		if got := sundial.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
