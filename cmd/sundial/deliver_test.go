package main

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/sundialhq/sundial/seal"
)

// TestMain has the nodes trust httptest's TLS certificate (the same for
// every TLS test server), so that an end-to-end test can give a task an
// https target on loopback. SSL_CERT_FILE replaces the system's roots for
// this test process only.
func TestMain(m *testing.M) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	srv.Close()
	dir, err := os.MkdirTemp("", "sundial-roots")
	if err != nil {
		panic(err)
	}
	path := filepath.Join(dir, "roots.pem")
	if err := os.WriteFile(path, cert, 0o600); err != nil {
		panic(err)
	}
	os.Setenv("SSL_CERT_FILE", path)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// capture is a target that keeps every request it gets.
type capture struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*captured
	ch  chan *captured
}

type captured struct {
	method, path, body string
	header             http.Header
	user, pass         string
}

func newCapture(t *testing.T, tls bool, routes func(*http.ServeMux, *capture)) *capture {
	c := &capture{ch: make(chan *captured, 100)}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		user, pass, _ := r.BasicAuth()
		got := &captured{method: r.Method, path: r.URL.Path, body: string(body), header: r.Header.Clone(), user: user, pass: pass}
		c.mu.Lock()
		c.got = append(c.got, got)
		c.mu.Unlock()
		c.ch <- got
		io.WriteString(w, `{"ok":true}`)
	})
	if routes != nil {
		routes(mux, c)
	}
	if tls {
		c.srv = httptest.NewTLSServer(mux)
	} else {
		c.srv = httptest.NewServer(mux)
	}
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capture) next(t *testing.T) *captured {
	t.Helper()
	select {
	case g := <-c.ch:
		return g
	case <-time.After(20 * time.Second):
		t.Fatal("the target got no request in 20s")
		return nil
	}
}

// TestServeRedirectPolicy: through the binary, a redirect within the
// target's origin keeps the task's headers and Sundial's tokens; one to
// another origin (follow_redirects any) drops them and the body; the
// default, same_origin, refuses it; https never goes to http.
func TestServeRedirectPolicy(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	other := newCapture(t, false, nil)
	origin := newCapture(t, false, func(mux *http.ServeMux, _ *capture) {
		mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.srv.URL+"/landed", http.StatusTemporaryRedirect)
		})
		mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/landed", http.StatusTemporaryRedirect)
		})
	})
	secure := newCapture(t, true, func(mux *http.ServeMux, _ *capture) {
		mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.srv.URL+"/plain", http.StatusFound)
		})
	})
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	create := func(url, redirects string) int64 {
		var tk taskJSON
		body := fmt.Sprintf(`{"name":"r-%d","cron_expr":"0 0 0 1 1 *","status":"DISABLED","exec_type":"ASYNC",`+
			`"target_url":%q,"headers":{"X-Api-Key":"k-123","X-Team":"ops"},"body_template":"{\"run\":\"{{run_id}}\"}",`+
			`"signing_secret":"generate"%s}`, time.Now().UnixNano(), url, redirects)
		n.do(t, "POST", "/api/v1/tasks", body, http.StatusCreated, &tk)
		return tk.ID
	}

	// Same origin: everything goes along.
	n.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", create(origin.srv.URL+"/here", "")), "", http.StatusAccepted, nil)
	got := origin.next(t)
	for _, h := range []string{"X-Api-Key", "X-Team", "X-Sundial-Callback-Token", "Webhook-Signature"} {
		if got.header.Get(h) == "" {
			t.Errorf("a same-origin redirect lost %s", h)
		}
	}
	if got.path != "/landed" || got.method != "POST" || got.body == "" {
		t.Errorf("same origin: %s %s body %q, want the POST with its body at /landed", got.method, got.path, got.body)
	}

	// Another origin with follow_redirects any: headers, tokens and body dropped.
	n.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", create(origin.srv.URL+"/away", `,"follow_redirects":"any"`)),
		"", http.StatusAccepted, nil)
	got = other.next(t)
	for _, h := range []string{"X-Api-Key", "X-Team", "X-Sundial-Callback-Token", "X-Sundial-Callback-Url",
		"Webhook-Signature", "Webhook-Id", "Authorization"} {
		if v := got.header.Get(h); v != "" {
			t.Errorf("a cross-origin redirect carried %s: %q", h, v)
		}
	}
	if got.method != "GET" || got.body != "" {
		t.Errorf("cross origin: %s with body %q, want a GET without body", got.method, got.body)
	}

	// The default refuses another origin; https never goes to http.
	for _, tt := range []struct{ url, want string }{
		{origin.srv.URL + "/away", "follow_redirects is same_origin"},
		{secure.srv.URL + "/down", "never leaves https"},
	} {
		id := create(tt.url, `,"follow_redirects":"any"`)
		if !strings.Contains(tt.url, "/down") {
			// Reset to the default by a PUT without follow_redirects.
			var full map[string]any
			n.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", id), "", http.StatusOK, &full)
			delete(full, "follow_redirects")
			b, _ := json.Marshal(full)
			var put map[string]any
			n.do(t, "PUT", fmt.Sprintf("/api/v1/tasks/%d", id), string(b), http.StatusOK, &put)
			if put["follow_redirects"] != "same_origin" {
				t.Fatalf("follow_redirects after a PUT without it = %v, want same_origin", put["follow_redirects"])
			}
		}
		run := n.finished(t, id, "")
		if run.Status != "FAILED" || !strings.Contains(run.Error, tt.want) {
			t.Errorf("%s: run %s %q, want FAILED with %q", tt.url, run.Status, run.Error, tt.want)
		}
	}
	select {
	case g := <-other.ch:
		t.Errorf("a refused redirect reached the other origin: %s %s", g.method, g.path)
	default:
	}
}

// TestServeSecrets: through the binary, sensitive header values, the
// credentials of target_url and the signing secret are answered as "***"
// by create, GET, list and batch; the generated signing secret is shown
// once; a PUT that sends "***" back keeps them, unless it moves the task
// to another origin; the target gets them in
// clear and a signature the Standard Webhooks library verifies; the
// database files (mode 0600) and the logs never hold them.
func TestServeSecrets(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	target := newCapture(t, false, nil)
	dir := t.TempDir()
	db := filepath.Join(dir, "sundial.db")
	n := startNode(t, db, "--log.level", "debug")
	const (
		bearer = "Bearer s3cr3t-AAAA"
		apiKey = "k-BBBB-9"
		pass   = "pw-CCCC-7"
	)
	hostURL := strings.TrimPrefix(target.srv.URL, "http://")
	body := fmt.Sprintf(`{"name":"secretive","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":"http://robot:%s@%s/hook","headers":{"Authorization":%q,"X-Api-Key":%q,"X-Team":"ops"},
		"body_template":"{\"run\":\"{{run_id}}\"}","signing_secret":"generate"}`, pass, hostURL, bearer, apiKey)
	var created map[string]any
	n.do(t, "POST", "/api/v1/tasks", body, http.StatusCreated, &created)
	id := int64(created["id"].(float64))
	signing, _ := created["signing_secret"].(string)
	if !strings.HasPrefix(signing, "whsec_") {
		t.Fatalf("create answered signing_secret %q, want the generated whsec_ secret, once", signing)
	}
	masked := func(where string, tk map[string]any) {
		t.Helper()
		h, _ := tk["headers"].(map[string]any)
		if h["Authorization"] != "***" || h["X-Api-Key"] != "***" || h["X-Team"] != "ops" {
			t.Errorf("%s: headers %v, want the secret ones ***", where, h)
		}
		if tk["target_url"] != "http://***@"+hostURL+"/hook" {
			t.Errorf("%s: target_url %v, want its credentials ***", where, tk["target_url"])
		}
		if where != "create" && tk["signing_secret"] != "***" {
			t.Errorf("%s: signing_secret %v, want ***", where, tk["signing_secret"])
		}
	}
	masked("create", created)
	var got map[string]any
	n.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", id), "", http.StatusOK, &got)
	masked("GET", got)
	var list struct{ Items []map[string]any }
	n.do(t, "GET", "/api/v1/tasks", "", http.StatusOK, &list)
	masked("list", list.Items[0])
	var batch struct {
		Items []struct{ Task map[string]any }
	}
	n.do(t, "POST", "/api/v1/tasks:batch", fmt.Sprintf(`{"tasks":[{"name":"b1","cron_expr":"0 0 0 1 1 *",
		"target_url":"http://robot:%s@%s/hook","headers":{"Authorization":%q,"X-Api-Key":%q,"X-Team":"ops"},
		"signing_secret":%q}]}`, pass, hostURL, bearer, apiKey, signing), http.StatusOK, &batch)
	masked("batch", batch.Items[0].Task)

	// The target gets them in clear, and a verifiable signature.
	check := func(when string) {
		t.Helper()
		run := n.finished(t, id, "")
		if run.Status != "SUCCESS" {
			t.Fatalf("%s: run %s %q", when, run.Status, run.Error)
		}
		d := target.next(t)
		if d.header.Get("Authorization") != bearer || d.header.Get("X-Api-Key") != apiKey {
			t.Errorf("%s: the target got Authorization %q, X-Api-Key %q", when, d.header.Get("Authorization"), d.header.Get("X-Api-Key"))
		}
		if d.user != "" {
			t.Errorf("%s: basic auth %q:%q sent besides Authorization", when, d.user, d.pass)
		}
		wh, err := standardwebhooks.NewWebhook(signing)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify([]byte(d.body), d.header); err != nil {
			t.Errorf("%s: the Standard Webhooks library refuses the signature: %v", when, err)
		}
	}
	check("after create")

	// A PUT of the task as GET returned it, "***" and all, keeps every secret.
	got["description"] = "changed"
	b, _ := json.Marshal(got)
	var put map[string]any
	n.do(t, "PUT", fmt.Sprintf("/api/v1/tasks/%d", id), string(b), http.StatusOK, &put)
	masked("PUT", put)
	check("after a PUT of ***")

	// The same PUT pointed at another host is a 400 naming the first
	// secret it would carry there, and changes nothing.
	put["target_url"] = "http://***@elsewhere.test/steal"
	put["headers"] = map[string]any{"X-Api-Key": "***"}
	delete(put, "signing_secret")
	b, _ = json.Marshal(put)
	var moved apiError
	n.do(t, "PUT", fmt.Sprintf("/api/v1/tasks/%d", id), string(b), http.StatusBadRequest, &moved)
	if moved.Error.Field != "headers" || moved.Error.Token != "X-Api-Key" || !strings.Contains(moved.Error.Message, "another origin") {
		t.Errorf("*** sent to another origin: %+v, want a 400 naming X-Api-Key", moved.Error)
	}
	check("after the refused PUT")

	// Credentials in the URL reach the target when no Authorization is set.
	var basic map[string]any
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"basic","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":"http://robot:%s@%s/basic"}`, pass, hostURL), http.StatusCreated, &basic)
	if run := n.finished(t, int64(basic["id"].(float64)), ""); run.Status != "SUCCESS" {
		t.Fatalf("basic: run %s %q", run.Status, run.Error)
	}
	if d := target.next(t); d.user != "robot" || d.pass != pass {
		t.Errorf("the target got basic auth %q:%q, want robot and the password", d.user, d.pass)
	}

	// "***" for a secret the task does not have is a 400 that changes nothing.
	var e apiError
	n.do(t, "POST", "/api/v1/tasks", `{"name":"nokey","cron_expr":"0 0 0 1 1 *","target_url":"http://x.test/","headers":{"X-Api-Key":"***"}}`,
		http.StatusBadRequest, &e)
	if e.Error.Field != "headers" || e.Error.Token != "X-Api-Key" {
		t.Errorf("*** with nothing stored: %+v", e.Error)
	}

	// At rest: sealed, in files only their owner reads, while the node
	// runs (the WAL) and after it stopped.
	secrets := []string{"s3cr3t-AAAA", apiKey, pass, strings.TrimPrefix(signing, "whsec_")}
	atRest(t, db, secrets)
	n.stop(t)
	atRest(t, db, secrets)
	logs := n.out.String()
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the logs hold the secret %q", s)
		}
	}
}

// atRest checks that the SQLite database db, its -wal and -shm files and
// its key file have mode 0600, and that the database files hold none of
// secrets.
func atRest(t *testing.T, db string, secrets []string) {
	t.Helper()
	for _, f := range []string{db, db + "-wal", db + "-shm", db + ".key"} {
		st, err := os.Stat(f)
		if os.IsNotExist(err) && f != db && f != db+".key" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(f), st.Mode().Perm())
		}
		if f == db+".key" {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if strings.Contains(string(raw), s) {
				t.Errorf("%s holds the secret %q in clear", filepath.Base(f), s)
			}
		}
	}
}

// TestServeOIDC: a task with oidc carries an ID token that verifies
// against the keys the node serves at /.well-known/jwks.json (found
// through /.well-known/openid-configuration), with iss, aud, sub and a
// five-minute expiry.
func TestServeOIDC(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	target := newCapture(t, false, nil)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--oidc.issuer", "https://sundial.example.com")
	var tk taskJSON
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"oidc-task","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":%q,"oidc":{"audience":"https://api.example.com"}}`, target.srv.URL+"/hook?x=1"), http.StatusCreated, &tk)
	var dflt taskJSON
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"oidc-default","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":%q,"oidc":{}}`, target.srv.URL+"/hook?x=1"), http.StatusCreated, &dflt)

	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	n.do(t, "GET", "/.well-known/openid-configuration", "", http.StatusOK, &disc)
	if disc.Issuer != "https://sundial.example.com" || disc.JWKSURI != "https://sundial.example.com/.well-known/jwks.json" {
		t.Errorf("discovery = %+v", disc)
	}
	keys := servedKeys(t, n.url)
	if keys.Len() == 0 {
		t.Fatal("the JWKS has no key")
	}
	for i := range keys.Len() {
		k, _ := keys.Key(i)
		if _, ok := k.KeyID(); !ok {
			t.Errorf("key %d has no kid", i)
		}
		if private, err := jwk.IsPrivateKey(k); err != nil || private {
			t.Fatalf("key %d: private %v (%v), want a public key", i, private, err)
		}
	}

	for _, tt := range []struct {
		id       int64
		aud, sub string
	}{
		{tk.ID, "https://api.example.com", "oidc-task"},
		{dflt.ID, target.srv.URL + "/hook", "oidc-default"},
	} {
		if run := n.finished(t, tt.id, ""); run.Status != "SUCCESS" {
			t.Fatalf("run %s %q", run.Status, run.Error)
		}
		d := target.next(t)
		raw, ok := strings.CutPrefix(d.header.Get("Authorization"), "Bearer ")
		if !ok {
			t.Fatalf("Authorization = %q, want a bearer token", d.header.Get("Authorization"))
		}
		// WithKeySet requires the token's kid to name a key of the set.
		tok, err := jwt.Parse([]byte(raw), jwt.WithKeySet(keys), jwt.WithValidate(true),
			jwt.WithIssuer("https://sundial.example.com"), jwt.WithAudience(tt.aud), jwt.WithSubject(tt.sub))
		if err != nil {
			t.Fatalf("the token does not verify against the served JWKS: %v", err)
		}
		iat, _ := tok.IssuedAt()
		exp, _ := tok.Expiration()
		if life := exp.Sub(iat); life != 5*time.Minute {
			t.Errorf("the token lives %s, want 5m", life)
		}
		// The same token presented for another audience is refused.
		if _, err := jwt.Parse([]byte(raw), jwt.WithKeySet(keys), jwt.WithValidate(true),
			jwt.WithAudience("https://elsewhere.example.com")); err == nil {
			t.Error("the token verifies for another audience")
		}
	}
}

// servedKeys fetches the key set the node at url serves, parsed with
// lestrrat-go/jwx: the tests check Sundial's tokens with a library
// independent of go-jose, which signs them.
func servedKeys(t *testing.T, url string) jwk.Set {
	t.Helper()
	resp, err := http.Get(url + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := jwk.Parse(raw)
	if err != nil {
		t.Fatalf("the JWKS does not parse: %v\n%s", err, raw)
	}
	return keys
}

// TestServeSecretsKeyCluster: on PostgreSQL a node needs the cluster's
// secrets key. Without one, a task with a secret is a 400 saying how to
// set it; once a node with a key has run on the database, a node without
// one refuses to start, saying the same; nodes sharing the key serve the
// same task, its secrets opened by either.
func TestServeSecretsKeyCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dsn := freshPostgres(t)
	target := newCapture(t, false, nil)
	task := fmt.Sprintf(`{"name":"k","cron_expr":"0 0 0 1 1 *","status":"DISABLED","target_url":%q,"headers":{"X-Api-Key":"k-1"}}`,
		target.srv.URL)

	keyless := startNodeDB(t, dsn)
	var e apiError
	keyless.do(t, "POST", "/api/v1/tasks", task, http.StatusBadRequest, &e)
	if e.Error.Field != "headers" || !strings.Contains(e.Error.Message, "secrets.key") {
		t.Errorf("a secret without a key: %+v, want a 400 naming secrets.key", e.Error)
	}
	keyless.stop(t)

	key := "--secrets.key=" + seal.NewKey()
	a := startNodeDB(t, dsn, key)
	b := startNodeDB(t, dsn, key)
	var tk taskJSON
	a.do(t, "POST", "/api/v1/tasks", task, http.StatusCreated, &tk)
	if run := b.finished(t, tk.ID, ""); run.Status != "SUCCESS" {
		t.Fatalf("the other node's delivery: %s %q", run.Status, run.Error)
	}
	if got := target.next(t); got.header.Get("X-Api-Key") != "k-1" {
		t.Errorf("X-Api-Key = %q, want it opened by the other node", got.header.Get("X-Api-Key"))
	}

	res := runArgs(t, "serve", "--listen", "127.0.0.1:0", "--db", dsn)
	if res.err == nil || !strings.Contains(res.err.Error(), "set secrets.key") {
		t.Errorf("a node without the key on a database with sealed secrets: %v, want a refusal naming secrets.key", res.err)
	}
	res = runArgs(t, "serve", "--listen", "127.0.0.1:0", "--db", dsn, "--secrets.key="+seal.NewKey())
	if res.err == nil || !strings.Contains(res.err.Error(), "every node needs the same secrets.key") {
		t.Errorf("a node with another key: %v, want a refusal saying every node needs the same key", res.err)
	}
}
