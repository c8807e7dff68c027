package executor

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/sundialhq/sundial"
)

// TestDeliverRedirectPolicy: follow_redirects decides which hops are taken; a
// hop to another origin drops the task's headers, Sundial's tokens, the
// body and the Referer Go's client would add; same origin keeps them;
// https never goes to http.
func TestDeliverRedirectPolicy(t *testing.T) {
	t.Parallel()
	rec, got := recorder()
	other := httptest.NewServer(rec) // another origin (another port)
	t.Cleanup(other.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/landed", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/landed", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/landed", rec)
	e, origin := setup(t, mux.ServeHTTP)

	request := func(path string, policy sundial.RedirectPolicy) Request {
		req := testRequest(origin.URL + path)
		req.Redirects = policy
		req.Headers = map[string]string{"X-Api-Key": "k-123", "X-Team": "ops"}
		req.Vars.CallbackToken = "cb-token"
		req.Vars.CallbackURL = "http://127.0.0.1:1/cb"
		req.SigningSecret = sundial.GenerateSigningSecret()
		req.Bearer = "id-token"
		return req
	}

	t.Run("same origin keeps everything", func(t *testing.T) {
		if out := e.Deliver(t.Context(), request("/here", sundial.RedirectSameOrigin)); out.Status != StatusSuccess {
			t.Fatalf("Deliver = {%s %q}, want SUCCESS", out.Status, out.Error)
		}
		r := receive(t, got)
		for _, h := range []string{"X-Api-Key", "X-Team", "X-Sundial-Callback-Token", "Authorization", "Webhook-Signature"} {
			if r.header.Get(h) == "" {
				t.Errorf("a same-origin hop lost %s", h)
			}
		}
		if r.method != http.MethodPost || r.body == "" {
			t.Errorf("a same-origin 307 got %s with body %q, want the POST and its body", r.method, r.body)
		}
	})
	t.Run("another origin drops the task's headers, tokens and body", func(t *testing.T) {
		if out := e.Deliver(t.Context(), request("/away?api_key=s3cret", sundial.RedirectAny)); out.Status != StatusSuccess {
			t.Fatalf("Deliver = {%s %q}, want SUCCESS", out.Status, out.Error)
		}
		r := receive(t, got)
		// Referer would carry the first URL, its query (a key) included.
		for _, h := range []string{"X-Api-Key", "X-Team", "X-Sundial-Callback-Token", "X-Sundial-Callback-Url",
			"Authorization", "Webhook-Signature", "Webhook-Id", "Content-Type", "Referer"} {
			if v := r.header.Get(h); v != "" {
				t.Errorf("a cross-origin hop carried %s: %q", h, v)
			}
		}
		if r.method != http.MethodGet || r.body != "" {
			t.Errorf("a cross-origin 307 got %s with body %q, want a GET without body", r.method, r.body)
		}
	})
	t.Run("same_origin refuses another origin", func(t *testing.T) {
		out := e.Deliver(t.Context(), request("/away", ""))
		if out.Status != StatusFailed || !strings.Contains(out.Error, "follow_redirects is same_origin") {
			t.Errorf("Deliver = {%s %q}, want FAILED naming follow_redirects", out.Status, out.Error)
		}
	})
	t.Run("none answers the 3xx", func(t *testing.T) {
		out := e.Deliver(t.Context(), request("/here", sundial.RedirectNone))
		if out.Status != StatusFailed || out.HTTPStatus != http.StatusTemporaryRedirect {
			t.Errorf("Deliver = {%s %d %q}, want FAILED with the 307", out.Status, out.HTTPStatus, out.Error)
		}
	})
	select {
	case r := <-got:
		t.Errorf("a refused redirect reached the target: %s %v", r.method, r.header)
	default:
	}

	t.Run("https to http is refused", func(t *testing.T) {
		tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/landed", http.StatusFound)
		}))
		t.Cleanup(tlsSrv.Close)
		e := New(Options{})
		t.Cleanup(e.Close)
		e.transport.TLSClientConfig = &tls.Config{RootCAs: tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
		req := testRequest(tlsSrv.URL)
		req.Redirects = sundial.RedirectAny
		out := e.Deliver(t.Context(), req)
		if out.Status != StatusFailed || !strings.Contains(out.Error, "never leaves https") {
			t.Errorf("Deliver = {%s %q}, want FAILED: https to http refused", out.Status, out.Error)
		}
	})
}

// TestDeliverSigned: a signed delivery verifies with the Standard Webhooks
// reference library, its webhook-id is the fire's Idempotency-Key.
func TestDeliverSigned(t *testing.T) {
	t.Parallel()
	rec, got := recorder()
	e, srv := setup(t, rec)
	secret := sundial.GenerateSigningSecret()
	req := testRequest(srv.URL)
	req.SigningSecret = secret
	if out := e.Deliver(t.Context(), req); out.Status != StatusSuccess {
		t.Fatalf("Deliver = {%s %q}", out.Status, out.Error)
	}
	r := receive(t, got)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify([]byte(r.body), r.header); err != nil {
		t.Errorf("the reference library refuses the signature: %v (headers %v)", err, r.header)
	}
	if id := r.header.Get("Webhook-Id"); id != req.Vars.IdempotencyKey {
		t.Errorf("webhook-id = %q, want the Idempotency-Key %q", id, req.Vars.IdempotencyKey)
	}
	other, _ := standardwebhooks.NewWebhook(sundial.GenerateSigningSecret())
	if err := other.Verify([]byte(r.body), r.header); err == nil {
		t.Error("another secret verifies the signature")
	}
}
