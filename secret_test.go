package sundial_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/seal"
)

func TestSensitiveHeader(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "Cookie": true, "X-Api-Key": true,
		"X-Auth-User": true, "x-session-TOKEN": true, "X-Client-Secret": true, "X-Db-Password": true,
		"Content-Type": false, "X-Team": false, "Accept": false,
	} {
		if got := sundial.SensitiveHeader(name); got != want {
			t.Errorf("SensitiveHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestSealTaskRoundTrip: secrets are sealed, masked in answers, kept by
// "***", opened for a delivery; a value sent back unchanged keeps its
// sealed form.
func TestSealTaskRoundTrip(t *testing.T) {
	t.Parallel()
	box, err := seal.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	in := &sundial.Task{
		TargetURL:     "https://user:p%40ss@example.com/hook?x=1",
		Headers:       map[string]string{"Authorization": "Bearer abc", "X-Team": "ops"},
		SigningSecret: sundial.GenerateSigningSecret(),
	}
	plainSecret := in.SigningSecret
	stored := *in
	stored.Headers = map[string]string{"Authorization": "Bearer abc", "X-Team": "ops"}
	if err := sundial.SealTask(&stored, nil, box); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{stored.TargetURL, stored.Headers["Authorization"], stored.SigningSecret} {
		if strings.Contains(v, "abc") || strings.Contains(v, "p%40ss") || strings.Contains(v, plainSecret[6:]) {
			t.Errorf("a sealed value holds its plaintext: %q", v)
		}
	}
	if stored.Headers["X-Team"] != "ops" {
		t.Errorf("X-Team = %q, want it as given", stored.Headers["X-Team"])
	}
	masked := stored
	sundial.MaskTask(&masked)
	if masked.TargetURL != "https://***@example.com/hook?x=1" || masked.Headers["Authorization"] != "***" ||
		masked.SigningSecret != "***" || masked.Headers["X-Team"] != "ops" {
		t.Errorf("masked = %q %v %q", masked.TargetURL, masked.Headers, masked.SigningSecret)
	}
	// The masked task sent back keeps every secret, in its sealed form.
	back := masked
	back.Headers = map[string]string{"Authorization": "***", "X-Team": "ops"}
	if err := sundial.KeepMasked(&back, &stored, box); err != nil {
		t.Fatal(err)
	}
	if err := sundial.SealTask(&back, &stored, box); err != nil {
		t.Fatal(err)
	}
	if back.TargetURL != stored.TargetURL || back.Headers["Authorization"] != stored.Headers["Authorization"] ||
		back.SigningSecret != stored.SigningSecret {
		t.Errorf("a task sent back masked changed its sealed values")
	}
	open, err := sundial.OpenTask(&stored, box)
	if err != nil {
		t.Fatal(err)
	}
	if open.TargetURL != in.TargetURL || open.Headers["Authorization"] != "Bearer abc" || open.SigningSecret != plainSecret {
		t.Errorf("OpenTask = %q %v %q", open.TargetURL, open.Headers, open.SigningSecret)
	}
	// "***" with nothing stored is a 400; without a key, a secret is refused.
	fresh := &sundial.Task{Headers: map[string]string{"X-Api-Key": "***"}}
	if err := sundial.KeepMasked(fresh, nil, box); sundial.ErrorCode(err) != sundial.EInvalid {
		t.Errorf("KeepMasked of *** with nothing stored: %v", err)
	}
	if err := sundial.SealTask(&sundial.Task{Headers: map[string]string{"Cookie": "a"}}, nil, nil); err == nil ||
		!strings.Contains(err.Error(), "secrets.key") {
		t.Errorf("SealTask without a key: %v, want an error naming secrets.key", err)
	}
	if _, err := sundial.OpenTask(&stored, nil); err == nil || strings.Contains(err.Error(), "abc") {
		t.Errorf("OpenTask without a key: %v", err)
	}
}

// TestSecretsStayWhereSealed: a value that looks sealed is refused from a
// client, in any header, the userinfo or signing_secret; one stored in a
// header that is not a secret (a task from before) is sent as it is,
// never opened; "***" keeps a stored secret only while target_url keeps
// its origin.
func TestSecretsStayWhereSealed(t *testing.T) {
	t.Parallel()
	box, err := seal.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := box.Seal("the-cluster-secret")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		task         sundial.Task
		field, token string
	}{
		{sundial.Task{Headers: map[string]string{"X-Data": sealed}}, "headers", "X-Data"},
		{sundial.Task{Headers: map[string]string{"X-Api-Key": "sealed:v2:x"}}, "headers", "X-Api-Key"},
		{sundial.Task{TargetURL: "https://" + sealed + "@example.com/"}, "target_url", ""},
		{sundial.Task{SigningSecret: sealed}, "signing_secret", ""},
	} {
		err := sundial.KeepMasked(&tt.task, nil, box)
		var e *sundial.Error
		if !errors.As(err, &e) || e.Code != sundial.EInvalid || e.Field != tt.field || e.Token != tt.token ||
			strings.Contains(e.Message, "the-cluster-secret") {
			t.Errorf("KeepMasked(%+v) = %v, want a 400 naming %s %s", tt.task, err, tt.field, tt.token)
		}
	}

	stored := &sundial.Task{TargetURL: "https://example.com/", Headers: map[string]string{"X-Data": sealed}}
	open, err := sundial.OpenTask(stored, box)
	if err != nil {
		t.Fatal(err)
	}
	if open.Headers["X-Data"] != sealed {
		t.Errorf("a sealed-looking value in X-Data, not a secret header, was opened to %q", open.Headers["X-Data"])
	}

	cur := &sundial.Task{TargetURL: "https://" + sealed + "@api.example.com/v1", SigningSecret: sealed,
		Headers: map[string]string{"X-Api-Key": sealed}}
	for _, tt := range []struct {
		name, url string
		moved     bool
	}{
		{"same origin, another path", "https://***@API.example.com:443/v2?x=1", false},
		{"another host", "https://***@evil.example/steal", true},
		{"another port", "https://***@api.example.com:8443/v1", true},
		{"another scheme", "http://***@api.example.com/v1", true},
		// strings.ToLower makes İ an i; the client dials xn--ap-....
		{"a look-alike by case mapping", "https://***@apİ.example.com/v1", true},
		{"a trailing dot", "https://***@API.EXAMPLE.COM./v1", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, field := range []string{"headers", "target_url", "signing_secret"} {
				next := &sundial.Task{TargetURL: strings.Replace(tt.url, "***@", "", 1)}
				switch field {
				case "headers":
					next.Headers = map[string]string{"X-Api-Key": "***"}
				case "target_url":
					next.TargetURL = tt.url
				case "signing_secret":
					next.SigningSecret = "***"
				}
				err := sundial.KeepMasked(next, cur, box)
				var e *sundial.Error
				switch {
				case !tt.moved && err != nil:
					t.Errorf("%s: %v, want the stored secret kept", field, err)
				case tt.moved && (!errors.As(err, &e) || e.Field != field || !strings.Contains(e.Message, "another origin")):
					t.Errorf("%s: %v, want a 400 naming %s and the other origin", field, err, field)
				}
			}
		})
	}
}

// TestInputHashMasksSecrets: the stored hash of a create request does not
// depend on its secret values, so it tells nothing about them.
func TestInputHashMasksSecrets(t *testing.T) {
	t.Parallel()
	task := func(secret string) *sundial.Task {
		return &sundial.Task{Name: "n", TargetURL: "https://u:" + secret + "@example.com/",
			Headers: map[string]string{"Authorization": secret, "X-Team": "ops"}, SigningSecret: secret}
	}
	if a, b := task("pw-1").InputHash(), task("pw-2").InputHash(); a != b {
		t.Errorf("InputHash depends on the secrets: %s, %s", a, b)
	}
	other := task("pw-1")
	other.Headers["X-Team"] = "dev"
	if task("pw-1").InputHash() == other.InputHash() {
		t.Error("InputHash does not depend on a header that is not a secret")
	}
}

// TestKeepMaskedUserinfo: "***" keeps stored credentials only as the whole
// userinfo (also percent-encoded); as a part of it, it is a 400, not a
// password of three stars.
func TestKeepMaskedUserinfo(t *testing.T) {
	t.Parallel()
	box, err := seal.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	cur := &sundial.Task{TargetURL: "http://alice:realpw@example.com/x"}
	if err := sundial.SealTask(cur, nil, box); err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{
		"http://***@example.com/x":         "http://alice:realpw@example.com/x",
		"http://%2A%2A%2A@example.com/x":   "http://alice:realpw@example.com/x",
		"http://alice:***@example.com/x":   "",
		"http://***:pw@example.com/x":      "",
		"http://alice:%2a**@example.com/x": "",
		"http://bob:new@example.com/x":     "http://bob:new@example.com/x",
	} {
		next := &sundial.Task{TargetURL: url}
		err := sundial.KeepMasked(next, cur, box)
		if want == "" {
			if e, ok := err.(*sundial.Error); !ok || e.Field != "target_url" || !strings.Contains(e.Message, "for a part of it") {
				t.Errorf("%s: %v, want a 400 about *** as a part of the userinfo", url, err)
			}
			continue
		}
		if err != nil || next.TargetURL != want {
			t.Errorf("%s: %q, %v; want %q", url, next.TargetURL, err, want)
		}
	}
}

// TestSealTaskMovesToCurrentKey: a secret kept by a write (sent back as it
// was, or as "***") that an old key sealed is sealed again with the
// current key, so that a write during a rotation does not undo a reseal;
// one the current key sealed keeps its sealed form.
func TestSealTaskMovesToCurrentKey(t *testing.T) {
	t.Parallel()
	oldKey, newKey := make([]byte, 32), make([]byte, 32)
	newKey[0] = 1
	oldBox, _ := seal.New(oldKey)
	box, _ := seal.New(newKey, oldKey)
	newOnly, _ := seal.New(newKey)
	cur := &sundial.Task{Headers: map[string]string{"X-Api-Key": "k-1"}}
	if err := sundial.SealTask(cur, nil, oldBox); err != nil {
		t.Fatal(err)
	}
	next := &sundial.Task{Headers: map[string]string{"X-Api-Key": "***"}}
	if err := sundial.KeepMasked(next, cur, box); err != nil {
		t.Fatal(err)
	}
	if err := sundial.SealTask(next, cur, box); err != nil {
		t.Fatal(err)
	}
	if v, err := newOnly.Open(next.Headers["X-Api-Key"]); err != nil || v != "k-1" {
		t.Errorf("the kept secret opens with the new key alone: %q, %v; want k-1", v, err)
	}
	again := &sundial.Task{Headers: map[string]string{"X-Api-Key": "k-1"}}
	if err := sundial.SealTask(again, next, box); err != nil {
		t.Fatal(err)
	}
	if again.Headers["X-Api-Key"] != next.Headers["X-Api-Key"] {
		t.Error("a secret the current key sealed was sealed again")
	}
}
