package api

import (
	"net/http"
	"testing"
)

// TestCallbackTokenFromRequest: the token comes from X-Sundial-Callback-Token,
// or from an Authorization header whose scheme is Bearer in any case.
func TestCallbackTokenFromRequest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		header, value, want string
	}{
		{"X-Sundial-Callback-Token", "v1.1.abc", "v1.1.abc"},
		{"Authorization", "Bearer v1.1.abc", "v1.1.abc"},
		{"Authorization", "bearer v1.1.abc", "v1.1.abc"},
		{"Authorization", "BEARER  v1.1.abc ", "v1.1.abc"},
		{"Authorization", "Basic dXNlcjpwYXNz", ""},
		{"Authorization", "Bearer", ""},
		{"Authorization", "Bearerv1.1.abc", ""},
	} {
		r, err := http.NewRequest(http.MethodPost, "/api/v1/runs/1/callback", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set(c.header, c.value)
		if got := callbackToken(r); got != c.want {
			t.Errorf("%s: %q = token %q, want %q", c.header, c.value, got, c.want)
		}
	}
}
