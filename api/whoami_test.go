package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/sundialhq/sundial"
)

// TestWhoami: each token learns its own name and role; the bootstrap
// token is an admin; without authentication every caller is an anonymous
// admin; a missing token is 401.
func TestWhoami(t *testing.T) {
	t.Parallel()
	b := setupAuth(t, Auth{Required: true, Bootstrap: testBootstrap})
	for _, tc := range []struct {
		secret      string
		actor, role string
	}{
		{b.secrets[sundial.RoleViewer], "viewer-token", "viewer"},
		{b.secrets[sundial.RoleOperator], "operator-token", "operator"},
		{b.secrets[sundial.RoleEditor], "editor-token", "editor"},
		{b.secrets[sundial.RoleAdmin], "admin-token", "admin"},
		{testBootstrap, "bootstrap", "admin"},
	} {
		rec := b.req(t, "GET", "/api/v1/whoami", tc.secret, "")
		var got whoamiResponse
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
			t.Fatalf("GET /api/v1/whoami as %s = %d %s", tc.actor, rec.Code, rec.Body)
		}
		if want := (whoamiResponse{Actor: tc.actor, Role: tc.role, AuthRequired: true}); got != want {
			t.Errorf("whoami = %+v, want %+v", got, want)
		}
	}
	if rec := b.req(t, "GET", "/api/v1/whoami", "", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("whoami without a token = %d, want 401", rec.Code)
	}

	open := setup(t)
	rec := open.do(t, "GET", "/api/v1/whoami", "", nil)
	var got whoamiResponse
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
		t.Fatalf("GET /api/v1/whoami without auth = %d %s", rec.Code, rec.Body)
	}
	if want := (whoamiResponse{Actor: "anonymous", Role: "admin"}); got != want {
		t.Errorf("whoami without auth = %+v, want %+v", got, want)
	}
}
