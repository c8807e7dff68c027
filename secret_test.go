package sundial_test

import (
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
