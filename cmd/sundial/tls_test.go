package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	pool *x509.CertPool
}

// nextSerial is a random serial number, so that each certificate a test
// makes is told apart by it.
func nextSerial() *big.Int {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		panic(err)
	}
	return n
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pool: pool}
}

// issue returns a certificate for 127.0.0.1 (a server's, or a client's)
// and its key, in PEM, and the certificate's serial number.
func (ca *testCA) issue(t *testing.T, cn string, client bool) (certPEM, keyPEM []byte, serial *big.Int) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), tmpl.SerialNumber
}

// writeFile writes data to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tlsClient trusts roots and presents cert, if any; it opens a new
// connection for every request, so each one sees the certificate served
// at the time.
func tlsClient(roots *x509.CertPool, cert ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: cert}}}
}

// startTLSNode runs serve with TLS on a free port and waits until it is
// ready, as client sees it.
func startTLSNode(t *testing.T, client *http.Client, extra ...string) *node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{cancel: cancel, done: make(chan error, 1), out: &lockedBuffer{}}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--db", "sqlite:" + filepath.Join(t.TempDir(), "sundial.db"),
		"--log.level", "warn"}, extra...)
	go func() {
		n.done <- run(ctx, args, func(string) string { return "" }, strings.NewReader(""), n.out, n.out)
	}()
	t.Cleanup(func() { n.stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n.url == "" {
			if m := listenLine.FindStringSubmatch(n.out.String()); m != nil {
				n.url = m[1]
			}
		}
		if n.url != "" {
			if resp, err := client.Get(n.url + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return n
				}
			}
		}
		select {
		case err := <-n.done:
			n.cancel = nil
			t.Fatalf("serve exited: %v\n%s", err, n.out)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not become ready:\n%s", n.out)
		}
	}
}

// servedSerial is the serial number of the certificate the node serves to
// client, after a GET of the task list that must answer 200.
func servedSerial(t *testing.T, client *http.Client, url string) *big.Int {
	t.Helper()
	resp, err := client.Get(url + "/api/v1/tasks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET /api/v1/tasks = %d %s (TLS %v), want 200 over TLS", resp.StatusCode, body, resp.TLS != nil)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber
}

// TestServeTLS: with tls.cert_file and tls.key_file the API answers over
// TLS with that certificate and a plain-HTTP request gets no answer from
// it; net/http's own answers (431) are JSON as on plain HTTP; an ASYNC
// run's callback URL is https and its callback is taken over
// TLS; after the files are replaced, SIGHUP makes new connections get the
// new certificate; a bad new pair keeps the current one and logs an error.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir := t.TempDir()
	ca := newTestCA(t, "first CA")
	certPEM, keyPEM, first := ca.issue(t, "sundial", false)
	certFile, keyFile := writeFile(t, dir, "cert.pem", certPEM), writeFile(t, dir, "key.pem", keyPEM)
	ca2 := newTestCA(t, "second CA")
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	roots.AddCert(ca2.cert)
	client := tlsClient(roots)
	n := startTLSNode(t, client, "--tls.cert_file", certFile, "--tls.key_file", keyFile)

	if !strings.HasPrefix(n.url, "https://") {
		t.Fatalf("serve printed %s, want an https:// URL", n.url)
	}
	if got := servedSerial(t, client, n.url); got.Cmp(first) != 0 {
		t.Fatalf("served certificate %v, want the configured one %v", got, first)
	}
	plain := "http://" + strings.TrimPrefix(n.url, "https://")
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(plain + "/api/v1/tasks"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("plain HTTP GET = %d %s, want no answer", resp.StatusCode, body)
	}
	if _, err := tlsClient(x509.NewCertPool()).Get(n.url + "/readyz"); err == nil {
		t.Fatal("a client that does not trust the CA got through")
	}

	// net/http's own answers are JSON over TLS too.
	big, _ := http.NewRequest("GET", n.url+"/api/v1/tasks", nil)
	big.Header.Set("X-Big", strings.Repeat("a", 80<<10))
	resp, err := client.Do(big)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("a too-large header over TLS = %d %s %s, want 431 in JSON", resp.StatusCode, resp.Header.Get("Content-Type"), msg)
	}

	// An ASYNC run's callback URL is https by default, and the target's
	// callback over TLS is taken.
	callbacks := make(chan *http.Request, 1)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		callbacks <- r
	}))
	defer target.Close()
	body := fmt.Sprintf(`{"name":"async","exec_type":"ASYNC","delay_seconds":0,"target_url":%q}`, target.URL)
	resp, err = client.Post(n.url+"/api/v1/tasks", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /api/v1/tasks = %d, want 201", resp.StatusCode)
	}
	select {
	case r := <-callbacks:
		cb := r.Header.Get("X-Sundial-Callback-Url")
		if !strings.HasPrefix(cb, n.url+"/") {
			t.Fatalf("callback URL %q, want one under %s", cb, n.url)
		}
		req, _ := http.NewRequest("POST", cb, strings.NewReader(`{"status":"SUCCESS"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Sundial-Callback-Token", r.Header.Get("X-Sundial-Callback-Token"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("callback over TLS = %d %s, want 200", resp.StatusCode, msg)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the ASYNC task was not delivered")
	}

	// New files, then SIGHUP: new connections get the new certificate.
	certPEM, keyPEM, second := ca2.issue(t, "sundial", false)
	writeFile(t, dir, "key.pem", keyPEM)
	writeFile(t, dir, "cert.pem", certPEM)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitSerial(t, client, n.url, second)

	// A certificate without its key: the second one stays.
	otherCert, _, _ := ca.issue(t, "sundial", false)
	writeFile(t, dir, "cert.pem", otherCert)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(n.out.String(), "TLS files not reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no error logged for a bad pair:\n%s", n.out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := servedSerial(t, client, n.url); got.Cmp(second) != 0 {
		t.Fatalf("after a bad pair the node serves %v, want the previous certificate %v", got, second)
	}
}

// waitSerial waits until the node serves the certificate numbered want.
func waitSerial(t *testing.T, client *http.Client, url string, want *big.Int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := servedSerial(t, client, url)
		if got.Cmp(want) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("serves certificate %v, want %v after the reload", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeTLSClientCA: with tls.client_ca_file, a client without a
// certificate, or with one from another CA, is refused; one with a
// certificate from the CA gets through. The refusals are logged.
func TestServeTLSClientCA(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir := t.TempDir()
	serverCA, clientCA, otherCA := newTestCA(t, "server CA"), newTestCA(t, "client CA"), newTestCA(t, "other CA")
	certPEM, keyPEM, _ := serverCA.issue(t, "sundial", false)
	pair := func(ca *testCA) tls.Certificate {
		c, k, _ := ca.issue(t, "client", true)
		kp, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	good := tlsClient(serverCA.pool, pair(clientCA))
	n := startTLSNode(t, good, "--tls.cert_file", writeFile(t, dir, "cert.pem", certPEM),
		"--tls.key_file", writeFile(t, dir, "key.pem", keyPEM),
		"--tls.client_ca_file", writeFile(t, dir, "clients.pem", clientCA.pem))

	servedSerial(t, good, n.url)
	for name, c := range map[string]*http.Client{
		"no certificate":                    tlsClient(serverCA.pool),
		"a certificate from another CA":     tlsClient(serverCA.pool, pair(otherCA)),
		"the server's own CA's client cert": tlsClient(serverCA.pool, pair(serverCA)),
	} {
		resp, err := c.Get(n.url + "/api/v1/tasks")
		if err == nil {
			resp.Body.Close()
			t.Errorf("a client with %s got %d, want the handshake refused", name, resp.StatusCode)
		}
	}
	if !strings.Contains(n.out.String(), "TLS handshake failed") {
		t.Errorf("no refused handshake logged:\n%s", n.out)
	}
}

// TestServeTLSStartErrors: TLS files that cannot be used stop the start,
// with an error that names the setting, before anything is created.
func TestServeTLSStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newTestCA(t, "CA")
	certPEM, keyPEM, _ := ca.issue(t, "sundial", false)
	_, otherKey, _ := ca.issue(t, "sundial", false)
	certFile, keyFile := writeFile(t, dir, "cert.pem", certPEM), writeFile(t, dir, "key.pem", keyPEM)
	otherKeyFile := writeFile(t, dir, "other.pem", otherKey)
	db := filepath.Join(dir, "sundial.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls.cert_file", certFile, "--tls.key_file", otherKeyFile}, "tls.cert_file " + certFile + ", tls.key_file " + otherKeyFile + ": tls: private key does not match public key"},
		{[]string{"--tls.cert_file", certFile, "--tls.key_file", filepath.Join(dir, "missing.pem")}, "no such file"},
		{[]string{"--tls.cert_file", certFile}, "tls.key_file: needed with tls.cert_file"},
		{[]string{"--tls.key_file", keyFile}, "tls.cert_file: needed with tls.key_file"},
		{[]string{"--tls.client_ca_file", certFile}, "tls.client_ca_file: needs tls.cert_file and tls.key_file"},
		{[]string{"--tls.cert_file", certFile, "--tls.key_file", keyFile, "--tls.client_ca_file", keyFile}, "tls.client_ca_file " + keyFile + ": no PEM certificate in it"},
	} {
		var out strings.Builder
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--db", "sqlite:" + db}, tc.args...)
		err := run(context.Background(), args, func(string) string { return "" }, strings.NewReader(""), &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != 2 {
			t.Errorf("serve %v: %v (exit %d), want an error with %q, exit 2", tc.args, err, exitCode(err), tc.want)
		}
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("serve %v created the database", tc.args)
		}
	}
}

// TestCertReloaderModTime: a handshake rereads the files once their
// modification time has changed, looking at most every tlsCheckEvery; a
// bad new pair keeps the current one and is logged once.
func TestCertReloaderModTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newTestCA(t, "CA")
	certPEM, keyPEM, first := ca.issue(t, "sundial", false)
	files := tlsConfig{CertFile: writeFile(t, dir, "cert.pem", certPEM), KeyFile: writeFile(t, dir, "key.pem", keyPEM)}
	var logs strings.Builder
	r, err := newCertReloader(files, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.now = func() time.Time { return now }
	serving := func() *big.Int {
		cfg, err := r.configForClient(nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Certificates[0].Leaf.SerialNumber
	}
	later := time.Now().Add(time.Minute) // a modification time that differs from the first files'
	replace := func(cert, key []byte) {
		writeFile(t, dir, "cert.pem", cert)
		writeFile(t, dir, "key.pem", key)
		later = later.Add(time.Second)
		for _, f := range []string{files.CertFile, files.KeyFile} {
			if err := os.Chtimes(f, later, later); err != nil {
				t.Fatal(err)
			}
		}
	}

	certPEM, keyPEM, second := ca.issue(t, "sundial", false)
	replace(certPEM, keyPEM)
	if got := serving(); got.Cmp(first) != 0 {
		t.Fatalf("reread before tlsCheckEvery: serving %v, want %v", got, first)
	}
	now = now.Add(tlsCheckEvery)
	if got := serving(); got.Cmp(second) != 0 {
		t.Fatalf("after tlsCheckEvery: serving %v, want the new %v", got, second)
	}

	_, badKey, _ := ca.issue(t, "sundial", false)
	replace(certPEM, badKey)
	for range 3 {
		now = now.Add(tlsCheckEvery)
		if got := serving(); got.Cmp(second) != 0 {
			t.Fatalf("after a bad pair: serving %v, want the previous %v", got, second)
		}
	}
	if c := strings.Count(logs.String(), "TLS files not reloaded"); c != 1 {
		t.Fatalf("bad pair logged %d times, want once:\n%s", c, logs.String())
	}

	certPEM, keyPEM, third := ca.issue(t, "sundial", false)
	replace(certPEM, keyPEM)
	now = now.Add(tlsCheckEvery)
	if got := serving(); got.Cmp(third) != 0 {
		t.Fatalf("after a good pair again: serving %v, want %v", got, third)
	}
}
