package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// tlsConfig is the TLS of the API: off unless a certificate and its key are
// given.
type tlsConfig struct {
	CertFile     string `yaml:"cert_file"`
	KeyFile      string `yaml:"key_file"`
	ClientCAFile string `yaml:"client_ca_file"`
}

func (c tlsConfig) on() bool { return c.CertFile != "" }

func (c tlsConfig) validate() error {
	switch {
	case c.CertFile != "" && c.KeyFile == "":
		return errors.New("tls.key_file: needed with tls.cert_file")
	case c.KeyFile != "" && c.CertFile == "":
		return errors.New("tls.cert_file: needed with tls.key_file")
	case c.ClientCAFile != "" && c.CertFile == "":
		return errors.New("tls.client_ca_file: needs tls.cert_file and tls.key_file (client certificates are a part of TLS)")
	}
	return nil
}

// tlsCheckEvery is how often a handshake looks at the files' modification
// times, at most.
const tlsCheckEvery = 5 * time.Second

// certReloader serves the API's current certificate and client CAs. It
// rereads the files on SIGHUP (watch) and, during a handshake, when their
// modification time has changed (looked at every tlsCheckEvery at most).
// A bad new set of files keeps the old one in service and logs an error.
type certReloader struct {
	files tlsConfig
	log   *slog.Logger
	now   func() time.Time

	mu      sync.Mutex
	cur     *tls.Config  // what handshakes get
	loaded  [3]time.Time // modification times of cert, key, CA when cur was read
	failed  [3]time.Time // those of the last set that failed, logged once
	checked time.Time    // when the modification times were last looked at
}

// newCertReloader reads the files; an error says which is wrong.
func newCertReloader(files tlsConfig, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{files: files, log: log.With("component", "tls"), now: time.Now}
	mod := files.modTimes() // before reading: a change while it reads is seen later
	cfg, err := files.load()
	if err != nil {
		return nil, err
	}
	r.cur, r.loaded, r.checked = cfg, mod, r.now()
	return r, nil
}

// serverConfig is the configuration of the API's TLS listener: every
// handshake asks the reloader for the current one.
func (r *certReloader) serverConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: r.configForClient}
}

func (r *certReloader) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= tlsCheckEvery || now.Before(r.checked) {
		r.checked = now
		if mod := r.files.modTimes(); mod != r.loaded && mod != r.failed {
			_ = r.reloadLocked(mod)
		}
	}
	return r.cur, nil
}

// reload rereads the files (SIGHUP); on error the current ones stay.
func (r *certReloader) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloadLocked(r.files.modTimes())
}

func (r *certReloader) reloadLocked(mod [3]time.Time) error {
	cfg, err := r.files.load()
	if err != nil {
		r.failed = mod
		r.log.Error("TLS files not reloaded; still serving the previous certificate", "err", err)
		return err
	}
	r.cur, r.loaded, r.failed = cfg, mod, [3]time.Time{}
	r.log.Info("TLS files reloaded", "cert_file", r.files.CertFile, "not_after", cfg.Certificates[0].Leaf.NotAfter)
	return nil
}

// watch rereads the files on every SIGHUP until ctx is done.
func (r *certReloader) watch(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_ = r.reload()
		}
	}
}

// load reads the certificate, its key and the client CAs into the
// configuration of a handshake.
func (c tlsConfig) load() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls.cert_file %s, tls.key_file %s: %w", c.CertFile, c.KeyFile, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	if c.ClientCAFile != "" {
		pem, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.client_ca_file %s: no PEM certificate in it", c.ClientCAFile)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// modTimes are the modification times of the files (zero for one that
// cannot be read).
func (c tlsConfig) modTimes() [3]time.Time {
	var out [3]time.Time
	for i, name := range []string{c.CertFile, c.KeyFile, c.ClientCAFile} {
		if name == "" {
			continue
		}
		if fi, err := os.Stat(name); err == nil {
			out[i] = fi.ModTime()
		}
	}
	return out
}

// apiTLS reads the API's TLS files when TLS is configured; nil when it is
// not. A file that cannot be used is a start-up error.
func apiTLS(c tlsConfig, log *slog.Logger) (*certReloader, error) {
	if !c.on() {
		return nil, nil
	}
	r, err := newCertReloader(c, log)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return r, nil
}

// apiScheme is the scheme the API is served with.
func apiScheme(r *certReloader) string {
	if r == nil {
		return "http"
	}
	return "https"
}

// tlsListener returns ln serving TLS when r is not nil, and rereads the
// files on SIGHUP until stop is called. The caller wraps the TLS connections
// in api.Listener, which turns net/http's own plain-text answers into JSON
// before they are encrypted (net/http then sees a plain connection, so a
// request's TLS field is nil).
func tlsListener(ln net.Listener, r *certReloader) (_ net.Listener, stop func()) {
	if r == nil {
		return ln, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.watch(ctx) }()
	return &tlsLogListener{Listener: ln, cfg: r.serverConfig(), log: r.log}, func() { cancel(); <-done }
}

// tlsLogListener is tls.NewListener whose connections log a failed
// handshake (a client without a good certificate, plain HTTP), which
// net/http does not see: it is handed the connections wrapped.
type tlsLogListener struct {
	net.Listener
	cfg *tls.Config
	log *slog.Logger
}

func (l *tlsLogListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &tlsLogConn{Conn: tls.Server(c, l.cfg), log: l.log}, nil
}

// tlsLogConn makes its handshake on its first Read, within the deadline
// net/http has set, and logs its failure; a connection closed before a
// handshake began (a port probe) is not logged.
type tlsLogConn struct {
	*tls.Conn
	log  *slog.Logger
	once sync.Once
}

func (c *tlsLogConn) Read(p []byte) (int, error) {
	c.once.Do(func() {
		if err := c.Handshake(); err != nil && !errors.Is(err, io.EOF) {
			c.log.Warn("TLS handshake failed", "remote_addr", c.RemoteAddr().String(), "err", err)
		}
	})
	return c.Conn.Read(p)
}
