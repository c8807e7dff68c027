package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwt"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/alert/alerttest"
	"github.com/sundialhq/sundial/idtoken"
	"github.com/sundialhq/sundial/seal"
	"github.com/sundialhq/sundial/store/sqlite"
)

// newBox returns a Box sealing with key, opening also with previous.
func newBox(t *testing.T, key string, previous ...string) *seal.Box {
	t.Helper()
	k, err := seal.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	var prev [][]byte
	for _, p := range previous {
		pk, err := seal.ParseKey(p)
		if err != nil {
			t.Fatal(err)
		}
		prev = append(prev, pk)
	}
	b, err := seal.New(k, prev...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storedSecrets returns every secret value stored in the SQLite database
// db, named: the secret columns of every task (sensitive header values,
// the userinfo of target_url, signing_secret), the OIDC signing keys and
// the secrets of the alert channels.
func storedSecrets(t *testing.T, db string) map[string]string {
	t.Helper()
	st, err := sqlite.Open(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string]string{}
	tasks, err := st.TaskSecretsList(t.Context(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range tasks {
		for k, v := range ts.Headers {
			if sundial.SensitiveHeader(k) {
				out[fmt.Sprintf("task %d header %s", ts.TaskID, k)] = v
			}
		}
		if _, ui, _, ok := sundial.SplitUserinfo(ts.TargetURL); ok {
			out[fmt.Sprintf("task %d userinfo", ts.TaskID)] = ui
		}
		if ts.SigningSecret != "" {
			out[fmt.Sprintf("task %d signing_secret", ts.TaskID)] = ts.SigningSecret
		}
	}
	settings, err := st.SettingList(t.Context(), idtoken.SettingName)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range settings {
		out["setting "+s.Name] = s.Value
	}
	channels, err := st.AlertChannelList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range channels {
		if c.SigningSecret != "" {
			out["channel "+c.Name+" signing_secret"] = c.SigningSecret
		}
		if c.Kind == sundial.ChannelSlack {
			out["channel "+c.Name+" url"] = c.URL
		}
		if c.SMTP != nil && c.SMTP.Password != "" {
			out["channel "+c.Name+" smtp.password"] = c.SMTP.Password
		}
	}
	return out
}

// plant stores value as header of task id in the SQLite database db, as
// it is, bypassing sealing: what a database from elsewhere, or from before
// sealing existed, may hold.
func plant(t *testing.T, db string, id int64, header, value string) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all, err := st.TaskSecretsList(t.Context(), id-1, 1)
	if err != nil || len(all) != 1 || all[0].TaskID != id {
		t.Fatalf("read task %d: %v %v", id, all, err)
	}
	next := *all[0]
	next.Headers = maps.Clone(next.Headers)
	next.Headers[header] = value
	if ok, err := st.TaskSecretsSwap(t.Context(), all[0], &next); err != nil || !ok {
		t.Fatalf("plant into task %d: %v %v", id, ok, err)
	}
}

// sealWith seals plain with key (base64).
func sealWith(t *testing.T, key, plain string) string {
	t.Helper()
	v, err := newBox(t, key).Seal(plain)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// taskState is what a GET of a task says of its version.
func taskState(t *testing.T, n *node, id int64) string {
	t.Helper()
	var tk map[string]any
	n.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", id), "", http.StatusOK, &tk)
	return fmt.Sprintf("version %v, updated_at %v", tk["version"], tk["updated_at"])
}

// TestSecretsReseal: tasks with secret headers, credentials in target_url
// (one stored in clear, as before sealing existed), a signing secret,
// oidc, a deleted task's secret, and alert channels of each kind with a
// secret, all sealed under key A; after "sundial secrets reseal" with key
// B and A as a previous key, every stored secret and the OIDC signing
// keys open with B alone and not with A, the tasks' and channels'
// versions are unchanged, a second run has nothing to do, and a node with
// B alone (no previous key) starts and delivers the right header values,
// credentials, a signature that verifies and an OIDC token, and sends
// through each channel (the SMTP password accepted).
func TestSecretsReseal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	keyA, keyB := seal.NewKey(), seal.NewKey()
	target := newCapture(t, false, nil)
	hostURL := strings.TrimPrefix(target.srv.URL, "http://")
	db := filepath.Join(t.TempDir(), "sundial.db")
	const (
		issuer = "https://sundial.example.com"
		bearer = "Bearer s3cr3t-AAAA"
		apiKey = "k-BBBB-9"
		pass   = "pw-CCCC-7"
	)
	// With a rotation period, the OIDC signing keys are one row per
	// period besides the first: four rows, all to be sealed again.
	n := startNode(t, db, "--secrets.key="+keyA, "--oidc.issuer", issuer, "--oidc.key_rotation", "1h")
	var signing string // the one the API generates, shown once
	create := func(body string) int64 {
		t.Helper()
		var tk map[string]any
		n.do(t, "POST", "/api/v1/tasks", body, http.StatusCreated, &tk)
		if s, _ := tk["signing_secret"].(string); strings.HasPrefix(s, "whsec_") {
			signing = s
		}
		return int64(tk["id"].(float64))
	}
	headers := create(fmt.Sprintf(`{"name":"headers","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":"http://%s/headers","headers":{"Authorization":%q,"X-Api-Key":%q,"X-Team":"ops"},
		"body_template":"{\"run\":\"{{run_id}}\"}","signing_secret":"generate"}`, hostURL, bearer, apiKey))
	basic := create(fmt.Sprintf(`{"name":"basic","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":"http://robot:%s@%s/basic"}`, pass, hostURL))
	oidc := create(fmt.Sprintf(`{"name":"oidc","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":"http://%s/oidc","oidc":{"audience":"https://api.example.com"}}`, hostURL))
	gone := create(fmt.Sprintf(`{"name":"gone","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":"http://%s/gone","headers":{"X-Api-Key":"k-gone"}}`, hostURL))
	n.do(t, "DELETE", fmt.Sprintf("/api/v1/tasks/%d", gone), "", http.StatusNoContent, nil)
	before := map[int64]string{}
	for _, id := range []int64{headers, basic, oidc} {
		before[id] = taskState(t, n, id)
	}
	// Alert channels with a secret of each kind: a webhook's signing
	// secret, a Slack channel's url, an SMTP password.
	sink := alerttest.NewSMTPSink(t, nil)
	sink.User, sink.Password = "sundial", "smtp-DDDD-5"
	receiver := newHook(t)
	var channels []sundial.AlertChannel
	for _, body := range []string{
		fmt.Sprintf(`{"name":"mail","kind":"email","smtp":{"host":"127.0.0.1","port":%s,"username":"sundial","password":%q,
			"tls":"none","from":"sundial@example.com","to":["ops@example.com"]}}`, sink.Port(), sink.Password),
		fmt.Sprintf(`{"name":"chat","kind":"slack","url":"%s/services/T/B/slack-EEEE"}`, receiver.srv.URL),
		fmt.Sprintf(`{"name":"hook","kind":"webhook","url":"%s/alerts","signing_secret":"generate"}`, receiver.srv.URL),
	} {
		var c sundial.AlertChannel
		n.do(t, "POST", "/api/v1/alert-channels", body, http.StatusCreated, &c)
		channels = append(channels, c)
	}
	n.stop(t)

	// basic's credentials as stored before sealing existed: in clear.
	st, err := sqlite.Open(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := st.TaskSecretsList(t.Context(), 0, 100)
	if err != nil || len(all) != 4 {
		t.Fatalf("TaskSecretsList = %d tasks, %v; want 4", len(all), err)
	}
	clear := *all[1]
	clear.TargetURL = fmt.Sprintf("http://robot:%s@%s/basic", pass, hostURL)
	if ok, err := st.TaskSecretsSwap(t.Context(), all[1], &clear); err != nil || !ok || all[1].TaskID != basic {
		t.Fatalf("storing task %d's credentials in clear: %v, %v", all[1].TaskID, ok, err)
	}
	st.Close()

	onlyA, onlyB := newBox(t, keyA), newBox(t, keyB)
	sealedA := storedSecrets(t, db)
	if len(sealedA) != 12 {
		t.Fatalf("stored secrets %v, want 12: 5 of tasks, 4 OIDC signing keys and 3 of channels", sealedA)
	}

	res := runArgs(t, "secrets", "reseal", "--db", "sqlite:"+db, "--secrets.key="+keyB, "--secrets.previous_keys="+keyA)
	if res.err != nil {
		t.Fatalf("reseal: %v\n%s%s", res.err, res.stdout, res.stderr)
	}
	if want := "re-sealed 12 values (1 of them stored in clear) in 3 tasks, 3 alert channels and 4 signing keys; " +
		"0 values were already sealed with the current key\n"; res.stdout != want {
		t.Errorf("reseal printed %q, want %q", res.stdout, want)
	}
	after := storedSecrets(t, db)
	if len(after) != len(sealedA) {
		t.Fatalf("after reseal, stored secrets %v, want the %d of before", after, len(sealedA))
	}
	for what, v := range after {
		if !sundial.Sealed(v) {
			t.Errorf("%s is not sealed after reseal", what)
			continue
		}
		if _, err := onlyB.Open(v); err != nil {
			t.Errorf("%s does not open with the new key alone: %v", what, err)
		}
		if _, err := onlyA.Open(v); err == nil {
			t.Errorf("%s still opens with the old key", what)
		}
	}
	for _, s := range []string{"s3cr3t-AAAA", apiKey, pass, "k-gone", strings.TrimPrefix(signing, "whsec_"), sink.Password, "slack-EEEE"} {
		for what, v := range after {
			if strings.Contains(v, s) {
				t.Errorf("%s holds the secret %q in clear", what, s)
			}
		}
	}

	// Again, with the keys from the environment: nothing to do.
	var out, errOut bytes.Buffer
	env := map[string]string{"SUNDIAL_DB": "sqlite:" + db, "SUNDIAL_SECRETS_KEY": keyB, "SUNDIAL_SECRETS_PREVIOUS_KEYS": keyA}
	if err := run(t.Context(), []string{"secrets", "reseal"}, func(k string) string { return env[k] },
		strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("reseal again: %v\n%s", err, errOut.String())
	}
	if want := "nothing to re-seal; 12 values were already sealed with the current key\n"; out.String() != want {
		t.Errorf("reseal again printed %q, want %q", out.String(), want)
	}
	if again := storedSecrets(t, db); fmt.Sprint(again) != fmt.Sprint(after) {
		t.Errorf("the second reseal changed stored values")
	}

	// A node with the new key alone starts (the OIDC signing key opens)
	// and delivers every secret as it was given.
	n2 := startNode(t, db, "--secrets.key="+keyB, "--oidc.issuer", issuer, "--oidc.key_rotation", "1h")
	for id, state := range before {
		if got := taskState(t, n2, id); got != state {
			t.Errorf("task %d: %s after reseal, want %s as before: re-sealing is not a change", id, got, state)
		}
	}
	for _, c := range channels {
		var now sundial.AlertChannel
		n2.do(t, "GET", fmt.Sprintf("/api/v1/alert-channels/%d", c.ID), "", http.StatusOK, &now)
		if now.Version != c.Version || !now.UpdatedAt.Equal(c.UpdatedAt) {
			t.Errorf("channel %s: version %d, updated_at %s after reseal, want %d, %s as before", c.Name, now.Version,
				now.UpdatedAt, c.Version, c.UpdatedAt)
		}
		var res struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		n2.do(t, "POST", fmt.Sprintf("/api/v1/alert-channels/%d/test", c.ID), "{}", http.StatusOK, &res)
		if !res.OK {
			t.Errorf("channel %s does not send after reseal: %s", c.Name, res.Error)
		}
	}
	if mails := sink.Mails(); len(mails) != 1 {
		t.Errorf("the SMTP sink got %d mails, want the test", len(mails))
	}
	receiver.wait(t, 2, 10*time.Second) // the Slack and the webhook tests
	if run := n2.finished(t, headers, ""); run.Status != "SUCCESS" {
		t.Fatalf("headers: run %s %q", run.Status, run.Error)
	}
	d := target.next(t)
	if d.header.Get("Authorization") != bearer || d.header.Get("X-Api-Key") != apiKey || d.header.Get("X-Team") != "ops" {
		t.Errorf("the target got Authorization %q, X-Api-Key %q, X-Team %q", d.header.Get("Authorization"),
			d.header.Get("X-Api-Key"), d.header.Get("X-Team"))
	}
	wh, err := standardwebhooks.NewWebhook(signing)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify([]byte(d.body), d.header); err != nil {
		t.Errorf("the Standard Webhooks library refuses the signature: %v", err)
	}
	if run := n2.finished(t, basic, ""); run.Status != "SUCCESS" {
		t.Fatalf("basic: run %s %q", run.Status, run.Error)
	}
	if d := target.next(t); d.user != "robot" || d.pass != pass {
		t.Errorf("the target got basic auth %q:%q, want robot and the password", d.user, d.pass)
	}

	keys := servedKeys(t, n2.url)
	if run := n2.finished(t, oidc, ""); run.Status != "SUCCESS" {
		t.Fatalf("oidc: run %s %q", run.Status, run.Error)
	}
	d = target.next(t)
	raw, ok := strings.CutPrefix(d.header.Get("Authorization"), "Bearer ")
	if !ok {
		t.Fatalf("Authorization = %q, want a bearer token", d.header.Get("Authorization"))
	}
	if _, err := jwt.Parse([]byte(raw), jwt.WithKeySet(keys), jwt.WithValidate(true), jwt.WithIssuer(issuer),
		jwt.WithAudience("https://api.example.com"), jwt.WithSubject("oidc")); err != nil {
		t.Errorf("the token does not verify against the served JWKS: %v", err)
	}
}

// TestSecretsResealUnopened: keys that do not open the cluster's OIDC
// signing key are refused (status 2) before anything is written, even a
// value stored in clear; with the cluster's keys, a value sealed with a key
// the command is not given is listed, one line (by task and field, never
// the value), left as it is, and the command exits with status 1; without
// a key, it refuses.
func TestSecretsResealUnopened(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	keyA, keyB, keyC := seal.NewKey(), seal.NewKey(), seal.NewKey()
	db := filepath.Join(t.TempDir(), "sundial.db")
	n := startNode(t, db, "--secrets.key="+keyA)
	var tk, clear taskJSON
	n.do(t, "POST", "/api/v1/tasks", `{"name":"k","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":"http://example.com/","headers":{"X-Api-Key":"k-1","X-Team":"ops"}}`, http.StatusCreated, &tk)
	n.do(t, "POST", "/api/v1/tasks", `{"name":"c","cron_expr":"0 0 0 1 1 *","status":"DISABLED",
		"target_url":"http://example.com/","headers":{"X-Api-Key":"c-1"}}`, http.StatusCreated, &clear)
	n.stop(t)
	// Task k's key sealed with a key no one is given (a value copied from
	// another cluster), task c's stored in clear (as before sealing).
	plant(t, db, tk.ID, "X-Api-Key", sealWith(t, keyC, "k-1"))
	plant(t, db, clear.ID, "X-Api-Key", "c-1")
	before := storedSecrets(t, db)
	noValues := func(res runResult) {
		t.Helper()
		for what, v := range before {
			if strings.Contains(res.stdout+res.stderr+fmt.Sprint(res.err), strings.TrimPrefix(v, sundial.SealedPrefix)) {
				t.Errorf("the output holds the value of %s", what)
			}
		}
	}

	res := runArgs(t, "secrets", "reseal", "--db", "sqlite:"+db, "--secrets.key="+keyB)
	if res.err == nil || exitCode(res.err) != 2 || !strings.Contains(res.err.Error(), "do not open the cluster's OIDC signing key") {
		t.Fatalf("reseal with keys that are not the cluster's: %v (status %d), want status 2 naming the cluster's key", res.err, exitCode(res.err))
	}
	noValues(res)
	if after := storedSecrets(t, db); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("keys that are not the cluster's changed the database: %v, want %v", after, before)
	}

	res = runArgs(t, "secrets", "reseal", "--db", "sqlite:"+db, "--secrets.key="+keyB, "--secrets.previous_keys="+keyA)
	if res.err == nil || exitCode(res.err) != 1 {
		t.Fatalf("reseal with a value no key opens: %v (status %d), want status 1", res.err, exitCode(res.err))
	}
	want := fmt.Sprintf("task %d, the value of header X-Api-Key: %v; left as it is\n"+
		"re-sealed 2 values (1 of them stored in clear) in 1 task, 0 alert channels and 1 signing key; 0 values were already sealed with the current key\n",
		tk.ID, seal.ErrOpen)
	if res.stdout != want {
		t.Errorf("reseal printed %q, want %q", res.stdout, want)
	}
	if !strings.Contains(res.err.Error(), "1 value opens with none of the keys given") {
		t.Errorf("reseal error %q, want it to count the value", res.err)
	}
	noValues(res)
	if after := storedSecrets(t, db); after[fmt.Sprintf("task %d header X-Api-Key", tk.ID)] != before[fmt.Sprintf("task %d header X-Api-Key", tk.ID)] {
		t.Error("the value no key opens changed")
	}

	// Without a key, or without a Sundial database: refused, and nothing
	// is opened, made or migrated.
	empty := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
			t.Errorf("the empty file was written: %v %v", fi, err)
		}
	}()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"PostgreSQL without a key", []string{"--db", "postgres://sundial@127.0.0.1:1/none"},
			"no secrets key to seal with: set secrets.key, secrets.key_file or SUNDIAL_SECRETS_KEY"},
		{"SQLite without a key or a key file", []string{"--db", "sqlite:" + db},
			"no secrets key to seal with: there is no key file " + db + ".key"},
		{"a SQLite database that does not exist", []string{"--db", "sqlite:" + db + "-none", "--secrets.key=" + keyB},
			"no such file"},
		{"an empty file", []string{"--db", "sqlite:" + empty, "--secrets.key=" + keyB},
			"holds no schema of this version of Sundial"},
	} {
		res := runArgs(t, append([]string{"secrets", "reseal"}, tc.args...)...)
		if res.err == nil || exitCode(res.err) != 2 || !strings.Contains(res.err.Error(), tc.want) {
			t.Errorf("%s: %v (status %d), want status 2 and %q", tc.name, res.err, exitCode(res.err), tc.want)
		}
	}
	if _, err := os.Stat(db + "-none"); !os.IsNotExist(err) {
		t.Errorf("reseal made a database where there was none: %v", err)
	}
	if _, err := os.Stat(db + ".key"); !os.IsNotExist(err) {
		t.Errorf("reseal made a key file: %v", err)
	}
}

// racing is a store on which a node writes a task between reseal's read
// of it and its swap: before each of the first swaps of the task, it
// changes a header of the task that is no secret, as a PUT would.
type racing struct {
	sundial.Store
	t     *testing.T
	box   sundial.Sealer
	task  int64
	races int // writes still to make
}

func (r *racing) TaskSecretsSwap(ctx context.Context, old, next *sundial.TaskSecrets) (bool, error) {
	if old.TaskID == r.task && r.races > 0 {
		r.races--
		cur, err := r.TaskGet(ctx, r.task)
		if err != nil {
			r.t.Fatal(err)
		}
		up, err := sundial.OpenTask(cur, r.box)
		if err != nil {
			r.t.Fatal(err)
		}
		c := *up
		c.Headers = maps.Clone(up.Headers)
		c.Headers["X-Team"] = fmt.Sprintf("team-%d", r.races)
		if err := sundial.SealTask(&c, cur, r.box); err != nil {
			r.t.Fatal(err)
		}
		if err := r.TaskUpdate(ctx, &c, time.Now()); err != nil {
			r.t.Fatal(err)
		}
	}
	return r.Store.TaskSecretsSwap(ctx, old, next)
}

// TestResealRaces: on each database, a node's write of a task between
// reseal's read and its swap is kept: the swap does nothing, reseal reads
// the task again and seals it then; a task written before every swap is
// reported, left as it is, and the run fails.
func TestResealRaces(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "sundial.db") }},
		{"postgres", func(t *testing.T) string { return freshPostgres(t) }},
		{"mysql", func(t *testing.T) string { return freshMySQL(t) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, err := openStore(ctx, b.dsn(t), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			keyA, keyB := seal.NewKey(), seal.NewKey()
			onlyA, rotated, onlyB := newBox(t, keyA), newBox(t, keyB, keyA), newBox(t, keyB)
			create := func(name string) *sundial.Task {
				t.Helper()
				tk := &sundial.Task{Name: name, CronExpr: "0 0 0 1 1 *", TargetURL: "https://example.com/hook",
					Status: sundial.TaskDisabled, Headers: map[string]string{"X-Api-Key": "k-" + name, "X-Team": "ops"}}
				if err := tk.Normalize(time.Now()); err != nil {
					t.Fatal(err)
				}
				if err := sundial.SealTask(tk, nil, onlyA); err != nil {
					t.Fatal(err)
				}
				if _, err := st.TaskCreateMany(ctx, []*sundial.Task{tk}, time.Now()); err != nil {
					t.Fatal(err)
				}
				return tk
			}
			raced := create("raced")

			// Two writes of a node still on the old key race the first two
			// swaps of raced; the third applies.
			rep, err := reseal(ctx, &racing{Store: st, t: t, box: onlyA, task: raced.ID, races: 2}, rotated)
			if err != nil {
				t.Fatal(err)
			}
			if rep.err() != nil || rep.resealed != 1 || rep.tasks != 1 {
				t.Fatalf("reseal: %s, %v; want 1 value in 1 task re-sealed", rep, rep.err())
			}
			got, err := st.TaskGet(ctx, raced.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != raced.Version+2 || got.Headers["X-Team"] != "team-0" {
				t.Errorf("raced: version %d, X-Team %q; want the two writes' (version %d, team-0) kept",
					got.Version, got.Headers["X-Team"], raced.Version+2)
			}
			if v, err := onlyB.Open(got.Headers["X-Api-Key"]); err != nil || v != "k-raced" {
				t.Errorf("raced: X-Api-Key opens with the new key alone as %q, %v", v, err)
			}

			// Written before every swap: left sealed with the old key.
			busy := create("busy")
			rep, err = reseal(ctx, &racing{Store: st, t: t, box: onlyA, task: busy.ID, races: resealAttempts}, rotated)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.busy) != 1 || rep.busy[0] != busy.ID || rep.err() == nil ||
				!strings.Contains(rep.String(), fmt.Sprintf("task %d changed on each of %d attempts", busy.ID, resealAttempts)) {
				t.Fatalf("reseal of a task written before every swap: %s, %v; want it reported", rep, rep.err())
			}
			got, err = st.TaskGet(ctx, busy.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := onlyA.Open(got.Headers["X-Api-Key"]); err != nil {
				t.Errorf("busy: X-Api-Key no longer opens with the old key: %v", err)
			}
		})
	}
}

// TestResealHelp: "secrets reseal" takes the database, the log, the
// secrets keys and the config file, and nothing else; "secrets" wants a
// subcommand it knows.
func TestResealHelp(t *testing.T) {
	t.Parallel()
	res := runArgs(t, "secrets", "reseal", "-h")
	if res.err != nil {
		t.Fatal(res.err)
	}
	help := res.stderr
	for _, flag := range []string{"Usage: sundial secrets reseal [flags]", "--config string", "--db string", "--log.level string",
		"--secrets.key string", "--secrets.key_file string", "--secrets.previous_keys value,..."} {
		if !strings.Contains(help, flag) {
			t.Errorf("reseal help lacks %s:\n%s", flag, help)
		}
	}
	for _, other := range []string{"--listen", "scheduler.", "callback.", "executor.", "oidc.", "tls."} {
		if strings.Contains(help, other) {
			t.Errorf("reseal help lists %s, which reseal does not use:\n%s", other, help)
		}
	}
	for _, args := range [][]string{{"secrets"}, {"secrets", "rotate"}, {"secrets", "reseal", "--listen", "127.0.0.1:0"}} {
		if res := runArgs(t, args...); res.err == nil || exitCode(res.err) != 2 {
			t.Errorf("%q: %v (status %d), want a usage error", args, res.err, exitCode(res.err))
		}
	}
}
