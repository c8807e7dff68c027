package sundial

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// A task's secrets are write-only: the values of its sensitive headers
// (SensitiveHeader), the userinfo of its target_url and its signing_secret
// are sealed before they are stored (SealTask), opened only for a delivery
// (OpenTask), and answered as Masked (MaskTask). A client that sends
// Masked back in their place keeps the stored value (KeepMasked).

// Masked is how an answer shows a secret, and what a client sends back to
// keep one.
const Masked = "***"

// SealedPrefix starts every sealed value: the format's name and version,
// so that a later format (or key scheme) can be told apart.
const SealedPrefix = "sealed:v1:"

// Sealer seals and opens secret values. Seal returns a value that starts
// with SealedPrefix; Open takes one and returns the plaintext.
type Sealer interface {
	Seal(plain string) (string, error)
	Open(sealed string) (string, error)
}

// Resealer is a Sealer that can move a stored value onto its current key
// (seal.Box): Reseal returns v itself when the current key sealed it, else
// v sealed with the current key.
type Resealer interface {
	Reseal(v string) (out string, changed bool, err error)
}

// Sealed reports whether v is a sealed value.
func Sealed(v string) bool { return strings.HasPrefix(v, SealedPrefix) }

// sensitiveParts are the words that make a header name sensitive, in any
// case, besides the names of sensitiveNames.
var sensitiveParts = []string{"token", "secret", "key", "password", "auth"}

var sensitiveNames = map[string]bool{"authorization": true, "proxy-authorization": true, "cookie": true}

// SensitiveHeader reports whether the value of the header name is a
// secret: Authorization, Proxy-Authorization, Cookie, or a name that
// holds token, secret, key, password or auth, in any case.
func SensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	if sensitiveNames[n] {
		return true
	}
	for _, p := range sensitiveParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// SplitUserinfo splits an absolute URL into what comes before its
// userinfo ("https://"), the userinfo as written (without the "@"), and
// the rest (host, path, query); ok is false when it has no userinfo.
func SplitUserinfo(raw string) (scheme, userinfo, rest string, ok bool) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return "", "", raw, false
	}
	scheme, after := raw[:i+3], raw[i+3:]
	end := strings.IndexAny(after, "/?#")
	if end < 0 {
		end = len(after)
	}
	at := strings.LastIndex(after[:end], "@")
	if at < 0 {
		return "", "", raw, false
	}
	return scheme, after[:at], after[at+1:], true
}

// RedactURL is raw with its userinfo, if any, replaced by Masked: what an
// answer, a log line or an error message may show of a target_url.
func RedactURL(raw string) string {
	scheme, _, rest, ok := SplitUserinfo(raw)
	if !ok {
		return raw
	}
	return scheme + Masked + "@" + rest
}

// MaskTask hides t's secrets for an answer: the values of its sensitive
// headers, the userinfo of its target_url and its signing_secret become
// Masked. It changes t.
func MaskTask(t *Task) {
	if len(t.Headers) > 0 {
		h := make(map[string]string, len(t.Headers))
		for k, v := range t.Headers {
			if SensitiveHeader(k) {
				v = Masked
			}
			h[k] = v
		}
		t.Headers = h
	}
	t.TargetURL = RedactURL(t.TargetURL)
	if t.SigningSecret != "" {
		t.SigningSecret = Masked
	}
}

// KeepMasked puts back, in a task a client sent to replace cur, the
// secrets it sent as Masked: each is cur's value, opened. A Masked value
// with nothing stored in its place is a 400 naming the field; cur is nil
// for a create, where every Masked value is such. It changes t.
//
// Two requests are refused as well. A value that looks sealed (it starts
// with "sealed:") is a 400: only the server seals, and a client that could
// plant a sealed value would have the node open it. And a Masked value
// when target_url now points to another origin (scheme, host or port) is a
// 400 asking for the value again: a stored credential goes only where its
// author sent it, so an editor cannot re-point a task to read them.
func KeepMasked(t, cur *Task, s Sealer) error {
	if err := refuseSealedInput(t); err != nil {
		return err
	}
	moved := cur != nil && originOf(t.TargetURL) != originOf(cur.TargetURL)
	keep := func(field, token string) error {
		if !moved {
			return nil
		}
		what := "the value of header " + token
		switch field {
		case "target_url":
			what = "the userinfo of target_url"
		case "signing_secret":
			what = "signing_secret"
		}
		return &Error{Code: EInvalid, Field: field, Token: token, Message: fmt.Sprintf(
			"%s is %q, which keeps the stored secret, but target_url now points to another origin (%s, was %s): "+
				"give the secret again, so that a stored secret never goes where its author did not send it",
			what, Masked, originOf(t.TargetURL), originOf(cur.TargetURL))}
	}
	open := func(field, token, v string) (string, error) {
		if !Sealed(v) {
			return v, nil // stored before sealing existed
		}
		if s == nil {
			return "", noKey(field, token)
		}
		plain, err := s.Open(v)
		if err != nil {
			return "", &Error{Code: EInternal, Field: field, Token: token,
				Message: "the stored secret cannot be opened with this node's secrets key", Err: err}
		}
		return plain, nil
	}
	for k, v := range t.Headers {
		if v != Masked || !SensitiveHeader(k) {
			continue // only a sensitive value is masked; another "***" is a value
		}
		var stored string
		found := false
		if cur != nil {
			for ck, cv := range cur.Headers {
				if strings.EqualFold(ck, k) {
					stored, found = cv, true
				}
			}
		}
		if !found {
			return &Error{Code: EInvalid, Field: "headers", Token: k, Message: fmt.Sprintf(
				"the value of header %s is %q, which keeps a stored value, but the task has none: give the value", k, Masked)}
		}
		if err := keep("headers", k); err != nil {
			return err
		}
		plain, err := open("headers", k, stored)
		if err != nil {
			return err
		}
		t.Headers[k] = plain
	}
	scheme, ui, rest, hasUI := SplitUserinfo(t.TargetURL)
	if hasUI && ui != Masked {
		user, pass, _ := strings.Cut(ui, ":")
		user, _ = url.PathUnescape(user)
		pass, _ = url.PathUnescape(pass)
		switch {
		case user == Masked && !strings.Contains(ui, ":"):
			ui = Masked // "%2A%2A%2A", as an encoder writes it
		case user == Masked || pass == Masked:
			return Errorf(EInvalid, "target_url", "the userinfo of target_url has %q for a part of it: "+
				"give the whole userinfo as %q (https://%s@host/) to keep the stored credentials, or give them all", Masked, Masked, Masked)
		}
	}
	if hasUI && ui == Masked {
		var stored string
		found := false
		if cur != nil {
			_, stored, _, found = SplitUserinfo(cur.TargetURL)
		}
		if !found {
			return Errorf(EInvalid, "target_url", "the userinfo of target_url is %q, which keeps the stored credentials, but the task has none: give them", Masked)
		}
		if err := keep("target_url", ""); err != nil {
			return err
		}
		plain, err := open("target_url", "", stored)
		if err != nil {
			return err
		}
		t.TargetURL = scheme + plain + "@" + rest
	}
	if t.SigningSecret == Masked {
		if cur == nil || cur.SigningSecret == "" {
			return Errorf(EInvalid, "signing_secret", "signing_secret is %q, which keeps the stored secret, but the task has none: give one, or \"generate\"", Masked)
		}
		if err := keep("signing_secret", ""); err != nil {
			return err
		}
		plain, err := open("signing_secret", "", cur.SigningSecret)
		if err != nil {
			return err
		}
		t.SigningSecret = plain
	}
	return nil
}

// sealedInputPrefix starts every sealed value, of this format or a later
// one (SealedPrefix).
const sealedInputPrefix = "sealed:"

// refuseSealedInput refuses a task a client sent that holds a value that
// looks sealed, in any header, in target_url's userinfo or as its
// signing_secret.
func refuseSealedInput(t *Task) error {
	refused := func(field, token, what string) error {
		return &Error{Code: EInvalid, Field: field, Token: token, Message: fmt.Sprintf(
			"%s starts with %q, which only the server writes (a sealed secret): give the value itself", what, sealedInputPrefix)}
	}
	for k, v := range t.Headers {
		if strings.HasPrefix(v, sealedInputPrefix) {
			return refused("headers", k, "the value of header "+k)
		}
	}
	if _, ui, _, ok := SplitUserinfo(t.TargetURL); ok && strings.HasPrefix(ui, sealedInputPrefix) {
		return refused("target_url", "", "the userinfo of target_url")
	}
	if strings.HasPrefix(t.SigningSecret, sealedInputPrefix) {
		return refused("signing_secret", "", "signing_secret")
	}
	return nil
}

// originOf is raw's origin (URLOrigin), or "" when it has none (it is not
// an absolute URL).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return URLOrigin(u)
}

// URLOrigin is u's scheme, host and port, "https://example.com:443": the
// port written even when it is the scheme's default, never the userinfo,
// and the host as Go's HTTP client dials it: in lower case, and a name
// that is not ASCII mapped through IDNA ("İ" is not "i" there, though
// strings.ToLower makes it one), so that two URLs have one origin only
// when they reach the same host.
func URLOrigin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(dialedHost(u.Hostname()), port)
}

// dialedHost is host as Go's HTTP client resolves it, in lower case: an
// ASCII name as it is, another through IDNA's lookup profile; one that
// IDNA refuses, which the client cannot dial, as it is.
func dialedHost(host string) string {
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			if a, err := idna.Lookup.ToASCII(host); err == nil {
				return strings.ToLower(a)
			}
			return host
		}
	}
	return strings.ToLower(host)
}

// SealTask seals t's secrets, given in plaintext, before it is stored. A
// value equal to cur's (the task t replaces; nil for a create) keeps cur's
// sealed form, so that a task sent back unchanged is unchanged (unless an
// old key sealed it: a Resealer moves it onto the current key). With no
// Sealer, a task with a secret is refused with an error that says how to
// configure a key. It changes t.
func SealTask(t, cur *Task, s Sealer) error {
	seal := func(field, token, plain, stored string) (string, error) {
		if s == nil {
			return "", noKey(field, token)
		}
		if Sealed(stored) {
			if open, err := s.Open(stored); err == nil && open == plain {
				// Kept; moved onto the current key if an old one sealed it,
				// so that a write during a key rotation does not undo it.
				if r, ok := s.(Resealer); ok {
					if out, _, err := r.Reseal(stored); err == nil {
						return out, nil
					}
				}
				return stored, nil
			}
		}
		v, err := s.Seal(plain)
		if err != nil {
			return "", &Error{Code: EInternal, Field: field, Token: token, Message: "sealing a secret failed", Err: err}
		}
		return v, nil
	}
	var err error
	for k, v := range t.Headers {
		if !SensitiveHeader(k) {
			continue
		}
		var stored string
		if cur != nil {
			stored = cur.Headers[k]
		}
		if t.Headers[k], err = seal("headers", k, v, stored); err != nil {
			return err
		}
	}
	if scheme, ui, rest, ok := SplitUserinfo(t.TargetURL); ok {
		var stored string
		if cur != nil {
			_, stored, _, _ = SplitUserinfo(cur.TargetURL)
		}
		sealed, err := seal("target_url", "", ui, stored)
		if err != nil {
			return err
		}
		t.TargetURL = scheme + sealed + "@" + rest
	}
	if t.SigningSecret != "" {
		var stored string
		if cur != nil {
			stored = cur.SigningSecret
		}
		if t.SigningSecret, err = seal("signing_secret", "", t.SigningSecret, stored); err != nil {
			return err
		}
	}
	return nil
}

// OpenTask returns t, as stored, with its secrets opened for a delivery:
// a copy when it has a sealed value, else t itself (not to be changed).
// It opens only where SealTask seals: a sealed-looking value anywhere else
// is sent as it is, so that no value a client wrote is ever decrypted
// (KeepMasked refuses such values too). Values stored before sealing
// existed pass as they are. The error says which field could not be
// opened, never its value.
func OpenTask(t *Task, s Sealer) (*Task, error) {
	if !hasSealed(t) {
		return t, nil // the common case: nothing to open, nothing copied
	}
	c := *t
	open := func(field, v string) (string, error) {
		if !Sealed(v) {
			return v, nil
		}
		if s == nil {
			return "", fmt.Errorf("%s is sealed and this node has no secrets key: set secrets.key, secrets.key_file or SUNDIAL_SECRETS_KEY to the cluster's key", field)
		}
		plain, err := s.Open(v)
		if err != nil {
			return "", fmt.Errorf("%s is sealed with a key this node does not have: set secrets.key to the key it was sealed with, or the old key in secrets.previous_keys", field)
		}
		return plain, nil
	}
	var err error
	if len(t.Headers) > 0 {
		c.Headers = make(map[string]string, len(t.Headers))
		for k, v := range t.Headers {
			if !SensitiveHeader(k) {
				c.Headers[k] = v // never sealed, so never opened (SealTask)
				continue
			}
			if c.Headers[k], err = open("the value of header "+k, v); err != nil {
				return nil, err
			}
		}
	}
	if scheme, ui, rest, ok := SplitUserinfo(t.TargetURL); ok && Sealed(ui) {
		plain, err := open("the userinfo of target_url", ui)
		if err != nil {
			return nil, err
		}
		c.TargetURL = scheme + plain + "@" + rest
	}
	if c.SigningSecret, err = open("signing_secret", t.SigningSecret); err != nil {
		return nil, err
	}
	return &c, nil
}

// hasSealed reports whether t holds a sealed value.
func hasSealed(t *Task) bool {
	if Sealed(t.SigningSecret) {
		return true
	}
	for k, v := range t.Headers {
		if Sealed(v) && SensitiveHeader(k) {
			return true
		}
	}
	_, ui, _, ok := SplitUserinfo(t.TargetURL)
	return ok && Sealed(ui)
}

func noKey(field, token string) error {
	return &Error{Code: EInvalid, Field: field, Token: token, Message: "this value is a secret, sealed at rest, and this server has no secrets key: " +
		"its operator sets secrets.key, secrets.key_file or SUNDIAL_SECRETS_KEY (32 bytes in base64, the same on every node)"}
}

// SigningSecretPrefix starts a Standard Webhooks signing secret.
const SigningSecretPrefix = "whsec_"

// GenerateSigningSecret returns a new signing secret: "whsec_" and 32
// random bytes in base64.
func GenerateSigningSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return SigningSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// SigningKey is the HMAC key of a signing secret: the bytes its base64
// after "whsec_" encodes.
func SigningKey(secret string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SigningSecretPrefix))
}

// CheckSigningSecret refuses a signing secret that is not "whsec_" and
// base64 of 24 to 64 bytes (Standard Webhooks' range). "" (none) passes.
func CheckSigningSecret(s string) error {
	if s == "" {
		return nil
	}
	key, err := SigningKey(s)
	if !strings.HasPrefix(s, SigningSecretPrefix) || err != nil || len(key) < 24 || len(key) > 64 {
		return Errorf(EInvalid, "signing_secret",
			`signing_secret must be "whsec_" followed by 24 to 64 bytes in base64, or "generate" for the server to make one`)
	}
	return nil
}
