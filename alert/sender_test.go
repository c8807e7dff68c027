package alert_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/alert"
	"github.com/sundialhq/sundial/alert/alerttest"
	"github.com/sundialhq/sundial/executor"
)

func message() sundial.AlertMessage {
	return sundial.AlertMessage{Event: sundial.EventOpened, Incident: 3, Rule: "three-in-a-row", Condition: sundial.CondConsecutiveFailures,
		TaskID: 9, Task: "nightly", Status: sundial.IncidentOpen, Reason: "3 consecutive failures, the last: HTTP 500",
		OpenedAt: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Key: "ntf_12"}
}

// TestWebhookSigned: a webhook channel POSTs the message as JSON, signed
// as deliveries are (Standard Webhooks), with its Idempotency-Key.
func TestWebhookSigned(t *testing.T) {
	t.Parallel()
	secret := sundial.GenerateSigningSecret()
	type got struct {
		h    http.Header
		body []byte
	}
	ch := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- got{r.Header.Clone(), b}
	}))
	defer srv.Close()
	s := alert.New(nil)
	if err := s.Send(t.Context(), &sundial.AlertChannel{Kind: sundial.ChannelWebhook, URL: srv.URL, SigningSecret: secret}, message()); err != nil {
		t.Fatal(err)
	}
	g := <-ch
	var m sundial.AlertMessage
	if err := json.Unmarshal(g.body, &m); err != nil || m.Task != "nightly" || m.Event != sundial.EventOpened || m.Key != "ntf_12" {
		t.Fatalf("body %s: %v", g.body, err)
	}
	key, _ := sundial.SigningKey(secret)
	want := executor.Sign(key, "ntf_12", g.h.Get("Webhook-Timestamp"), string(g.body))
	if g.h.Get("Webhook-Signature") != want || g.h.Get("Webhook-Id") != "ntf_12" || g.h.Get("Idempotency-Key") != "ntf_12" {
		t.Fatalf("headers %v, want signature %s", g.h, want)
	}
}

// TestSlackAndFailure: a Slack channel POSTs {"text": ...}; an answer
// other than 2xx is an error that names the status.
func TestSlackAndFailure(t *testing.T) {
	t.Parallel()
	status := http.StatusOK
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	s := alert.New(nil)
	ch := &sundial.AlertChannel{Kind: sundial.ChannelSlack, URL: srv.URL}
	if err := s.Send(t.Context(), ch, message()); err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(body, &m); err != nil || !strings.HasPrefix(m["text"], "[Sundial] FIRING three-in-a-row: task nightly") ||
		len(m) != 1 {
		t.Fatalf("slack body %s", body)
	}
	status = http.StatusServiceUnavailable
	if err := s.Send(t.Context(), ch, message()); err == nil || err.Error() != "HTTP 503" {
		t.Fatalf("a 503: %v", err)
	}
}

func smtpChannel(sink *alerttest.SMTPSink, mode string) *sundial.AlertChannel {
	port, _ := strconv.Atoi(sink.Port())
	return &sundial.AlertChannel{Kind: sundial.ChannelEmail, SMTP: &sundial.SMTPSettings{Host: "127.0.0.1", Port: port,
		Username: "sundial", Password: "pw", From: "sundial@example.com", To: []string{"ops@example.com", "oncall@example.com"}, TLS: mode}}
}

// TestEmailPlainAuth: a mail to a loopback server without TLS, with AUTH
// PLAIN, to every address.
func TestEmailPlainAuth(t *testing.T) {
	t.Parallel()
	sink := alerttest.NewSMTPSink(t, nil)
	sink.User, sink.Password = "sundial", "pw"
	if err := alert.New(nil).Send(t.Context(), smtpChannel(sink, sundial.SMTPNoTLS), message()); err != nil {
		t.Fatal(err)
	}
	mails := sink.Mails()
	if len(mails) != 1 || mails[0].User != "sundial" || mails[0].From != "sundial@example.com" || len(mails[0].To) != 2 ||
		!strings.Contains(mails[0].Data, "Subject: [Sundial] FIRING three-in-a-row: task nightly\r\n") ||
		!strings.Contains(mails[0].Data, "Reason: 3 consecutive failures") {
		t.Fatalf("mails %+v", mails)
	}
	// A wrong password is an error, no mail.
	ch := smtpChannel(sink, sundial.SMTPNoTLS)
	ch.SMTP.Password = "wrong"
	if err := alert.New(nil).Send(t.Context(), ch, message()); err == nil || !strings.Contains(err.Error(), "AUTH") {
		t.Fatalf("a wrong password: %v", err)
	}
	// STARTTLS required, and not offered: refused before AUTH.
	if err := alert.New(nil).Send(t.Context(), smtpChannel(sink, ""), message()); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("no STARTTLS: %v", err)
	}
	if n := len(sink.Mails()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
}

// TestEmailStartTLS: with STARTTLS (the default) the mail and the AUTH go
// over TLS, the server's certificate verified.
func TestEmailStartTLS(t *testing.T) {
	t.Parallel()
	cert, pool := selfSigned(t)
	sink := alerttest.NewSMTPSink(t, &tls.Config{Certificates: []tls.Certificate{cert}})
	s := alert.New(nil)
	if err := s.Send(t.Context(), smtpChannel(sink, ""), message()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an unknown certificate: %v", err)
	}
	s.RootCAs = pool
	if err := s.Send(t.Context(), smtpChannel(sink, ""), message()); err != nil {
		t.Fatal(err)
	}
	if m := sink.Mails(); len(m) != 1 || !m[0].TLS || m[0].User != "sundial" {
		t.Fatalf("mails %+v", m)
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sink"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}
