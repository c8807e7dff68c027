// Package alert delivers the notifications of incidents to their
// channels: a webhook's JSON body, signed like a delivery (Standard
// Webhooks) when the channel has a signing secret; a Slack-compatible
// incoming webhook's {"text": ...}; a mail over SMTP, with STARTTLS (or
// TLS) and AUTH PLAIN. What is sent and when is decided elsewhere
// (sundial.AlertMessage, scheduler/alerter.go); this package only sends,
// and reports how it went.
package alert

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/smtp"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
)

// DefaultTimeout bounds one notification's delivery.
const DefaultTimeout = 15 * time.Second

// Sender sends notifications. Its zero value is usable: no guard but what
// executor.Guard always refuses, the system's roots for TLS.
type Sender struct {
	// Guard checks every address dialled, as deliveries are checked.
	Guard *executor.Guard
	// RootCAs verifies SMTP servers' certificates; nil: the system's.
	RootCAs *x509.CertPool
	// Timeout bounds a send [DefaultTimeout].
	Timeout time.Duration
	// UserAgent of the HTTP requests ["Sundial/1"].
	UserAgent string
	// Now is the clock of a signature's timestamp [time.Now].
	Now func() time.Time

	client *http.Client
}

// New returns a Sender that dials through guard.
func New(guard *executor.Guard) *Sender {
	s := &Sender{Guard: guard}
	s.client = s.httpClient()
	return s
}

func (s *Sender) httpClient() *http.Client {
	t := &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: s.Guard.Dialer().DialContext,
		TLSHandshakeTimeout: 10 * time.Second, MaxResponseHeaderBytes: 64 << 10, ForceAttemptHTTP2: true}
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // a notification is not redirected
	}}
}

// Send delivers m to ch, whose secrets are open (sundial.OpenChannel).
func (s *Sender) Send(ctx context.Context, ch *sundial.AlertChannel, m sundial.AlertMessage) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch ch.Kind {
	case sundial.ChannelWebhook:
		body, err := json.Marshal(m)
		if err != nil {
			return err
		}
		return s.post(ctx, ch, m, body)
	case sundial.ChannelSlack:
		body, err := json.Marshal(map[string]string{"text": m.Text()})
		if err != nil {
			return err
		}
		return s.post(ctx, ch, m, body)
	case sundial.ChannelEmail:
		return s.mail(ctx, ch.SMTP, m)
	}
	return fmt.Errorf("unknown channel kind %q", ch.Kind)
}

func (s *Sender) post(ctx context.Context, ch *sundial.AlertChannel, m sundial.AlertMessage, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ch.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the channel's url: %w", err)
	}
	ua := s.UserAgent
	if ua == "" {
		ua = "Sundial/1"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", ua)
	req.Header.Set("Idempotency-Key", m.Key)
	if ch.SigningSecret != "" {
		key, err := sundial.SigningKey(ch.SigningSecret)
		if err != nil {
			return errors.New("the channel's signing_secret is not valid base64")
		}
		now := time.Now
		if s.Now != nil {
			now = s.Now
		}
		ts := strconv.FormatInt(now().Unix(), 10)
		req.Header.Set("Webhook-Id", m.Key)
		req.Header.Set("Webhook-Timestamp", ts)
		req.Header.Set("Webhook-Signature", executor.Sign(key, m.Key, ts, string(body)))
	}
	client := s.client
	if client == nil {
		client = s.httpClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		return redact(err, ch)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// redact keeps a Slack URL (a secret) out of an error.
func redact(err error, ch *sundial.AlertChannel) error {
	var ue interface{ Unwrap() error }
	if ch.Kind == sundial.ChannelSlack && errors.As(err, &ue) {
		return fmt.Errorf("POST to the channel's url: %w", ue.Unwrap())
	}
	return err
}

// mail sends m over SMTP: TLS from the start (tls), or STARTTLS, which
// the server must offer (starttls, the default), or neither (none); AUTH
// PLAIN when the channel has a username (net/smtp refuses it over
// plaintext but to a loopback server).
func (s *Sender) mail(ctx context.Context, cfg *sundial.SMTPSettings, m sundial.AlertMessage) error {
	if cfg == nil {
		return errors.New("the channel has no smtp settings")
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	conn, err := s.Guard.Dialer().DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	tlsCfg := &tls.Config{ServerName: cfg.Host, RootCAs: s.RootCAs, MinVersion: tls.VersionTLS12}
	mode := cfg.TLS
	if mode == "" {
		mode = sundial.SMTPStartTLS
	}
	if mode == sundial.SMTPTLS {
		conn = tls.Client(conn, tlsCfg)
	}
	c, err := smtp.NewClient(conn, cfg.Host)
	if err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	defer c.Close()
	if err := c.Hello("sundial"); err != nil {
		return fmt.Errorf("smtp EHLO: %w", err)
	}
	if mode == sundial.SMTPStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return errors.New("smtp: the server does not offer STARTTLS (set smtp.tls to none to send in plaintext)")
		}
		if err := c.StartTLS(tlsCfg); err != nil {
			return fmt.Errorf("smtp STARTTLS: %w", err)
		}
	}
	if cfg.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", cfg.Username, cfg.Password, cfg.Host)); err != nil {
			return fmt.Errorf("smtp AUTH: %w", err)
		}
	}
	if err := c.Mail(cfg.From); err != nil {
		return fmt.Errorf("smtp MAIL FROM: %w", err)
	}
	for _, to := range cfg.To {
		if err := c.Rcpt(to); err != nil {
			return fmt.Errorf("smtp RCPT TO %s: %w", to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	if _, err := w.Write(message(cfg, m)); err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	return c.Quit()
}

// message is the mail of m: headers, a blank line, the text, in CRLF
// lines.
func message(cfg *sundial.SMTPSettings, m sundial.AlertMessage) []byte {
	var b strings.Builder
	h := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	h("From", cfg.From)
	h("To", strings.Join(cfg.To, ", "))
	h("Subject", mime.QEncoding.Encode("utf-8", m.Subject()))
	h("Date", time.Now().UTC().Format(time.RFC1123Z))
	h("Message-Id", "<"+m.Key+"."+strconv.FormatInt(m.Incident, 10)+"@sundial>")
	h("MIME-Version", "1.0")
	h("Content-Type", "text/plain; charset=utf-8")
	h("X-Sundial-Event", string(m.Event))
	b.WriteString("\r\n")
	for line := range strings.SplitSeq(m.Text(), "\n") {
		b.WriteString(line + "\r\n")
	}
	return []byte(b.String())
}
