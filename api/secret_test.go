package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestTaskDeliveryOptionsRefused: bad redirect policies, signing secrets
// and OIDC options are 400s naming the field; a secret on a server with no
// secrets key is a 400 saying how to set one; a URL with credentials is
// never echoed in an error. Nothing is stored.
func TestTaskDeliveryOptionsRefused(t *testing.T) {
	t.Parallel()
	b := setupStore(t) // no Sealer
	base := `"name":"x","cron_expr":"0 0 * * * *","target_url":"https://example.com/hook"`
	for _, tt := range []struct {
		name, body, field, token, has string
	}{
		{"redirect policy", `{` + base + `,"follow_redirects":"always"}`, "follow_redirects", "always", "none, same_origin, any"},
		{"signing secret", `{` + base + `,"signing_secret":"whsec_c2hvcnQ="}`, "signing_secret", "", "24 to 64 bytes"},
		{"oidc and Authorization", `{` + base + `,"oidc":{},"headers":{"Authorization":"Bearer x"}}`, "oidc", "Authorization", "remove the Authorization header"},
		{"oidc misspelt", `{` + base + `,"oidc":{"audiance":"x"}}`, "oidc.audiance", "audiance", ""},
		{"no key: a header", `{` + base + `,"headers":{"X-Api-Key":"k"}}`, "headers", "X-Api-Key", "secrets.key"},
		{"no key: credentials", `{"name":"x","cron_expr":"0 0 * * * *","target_url":"https://u:pw@example.com/"}`, "target_url", "", "secrets.key"},
		{"no key: signing secret", `{` + base + `,"signing_secret":"generate"}`, "signing_secret", "", "secrets.key"},
		{"no key: oidc", `{` + base + `,"oidc":{"audience":"a"}}`, "oidc", "", "secrets.key"},
		{"*** with nothing stored", `{` + base + `,"headers":{"Cookie":"***"}}`, "headers", "Cookie", "the task has none"},
		{"bad URL with credentials", `{"name":"x","cron_expr":"0 0 * * * *","target_url":"ftp://u:pw-9@example.com/"}`, "target_url", "ftp://***@example.com/", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := b.do(t, "POST", "/api/v1/tasks", tt.body)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d, body %s", rec.Code, rec.Body)
			}
			if strings.Contains(rec.Body.String(), "pw-9") {
				t.Errorf("the error echoes the credentials: %s", rec.Body)
			}
			e := errorOf(t, rec)
			if e.Field != tt.field || e.Token != tt.token || !strings.Contains(e.Message, tt.has) {
				t.Errorf("error %+v, want field %q token %q and a message with %q", e, tt.field, tt.token, tt.has)
			}
		})
	}
	var list struct{ Items []any }
	want(t, b.do(t, "GET", "/api/v1/tasks", nil), http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Errorf("%d tasks stored by refused requests", len(list.Items))
	}
	// A "***" of a header that is not secret is a value like any other.
	want(t, b.do(t, "POST", "/api/v1/tasks", `{`+base+`,"headers":{"X-Stars":"***"}}`), http.StatusCreated, nil)
}
