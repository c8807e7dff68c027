package api

import (
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// maxTokenBody is the largest body of POST /api/v1/tokens.
const maxTokenBody = 4 << 10

// tokenRequest is the body of POST /api/v1/tokens.
type tokenRequest struct {
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// tokenView is a token as the API shows it. Secret is set only in the
// answer of its creation: it is stored nowhere.
type tokenView struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	Expired   bool       `json:"expired"`
	CreatedBy string     `json:"created_by"`
	Secret    string     `json:"secret,omitempty"`
}

func viewToken(t *sundial.Token, now time.Time) tokenView {
	return tokenView{ID: t.ID, Name: t.Name, Role: t.Role.String(), CreatedAt: t.CreatedAt.UTC(),
		ExpiresAt: utcPtr(t.ExpiresAt), Expired: t.Expired(now), CreatedBy: t.CreatedBy}
}

// tokenName is what a token's name may be: it is the actor of the audit
// entries of its requests.
var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// check validates a token request at now.
func (req *tokenRequest) check(now time.Time) (sundial.Role, error) {
	switch {
	case req.Name == "":
		return 0, sundial.Errorf(sundial.EInvalid, "name", "name is required")
	case !tokenName.MatchString(req.Name):
		e := sundial.Errorf(sundial.EInvalid, "name",
			"a token's name is 1 to %d letters, digits, '.', '_' or '-', starting with a letter or digit", sundial.MaxTokenNameLen)
		e.Token = req.Name
		return 0, e
	case strings.EqualFold(req.Name, sundial.ActorBootstrap) || strings.EqualFold(req.Name, sundial.ActorAnonymous):
		e := sundial.Errorf(sundial.EInvalid, "name", "%q names the actor of the audit log without a token; choose another name", req.Name)
		e.Token = req.Name
		return 0, e
	}
	role, ok := sundial.ParseRole(req.Role)
	if !ok {
		e := sundial.Errorf(sundial.EInvalid, "role", "role must be viewer, operator, editor or admin")
		e.Token = req.Role
		return 0, e
	}
	if req.ExpiresAt != nil && !req.ExpiresAt.After(now) {
		return 0, sundial.Errorf(sundial.EInvalid, "expires_at", "expires_at must be in the future")
	}
	return role, nil
}

// handleTokenCreate serves POST /api/v1/tokens: a new token, whose secret
// the answer holds, once.
func (s *Server) handleTokenCreate(w http.ResponseWriter, r *http.Request) {
	var req tokenRequest
	if err := decodeJSON(w, r, &req, maxTokenBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	now := s.now()
	role, err := req.check(now)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id, secret := sundial.NewToken()
	t := &sundial.Token{ID: id, Name: req.Name, Role: role, Hash: sundial.HashToken(secret),
		CreatedAt: now, ExpiresAt: req.ExpiresAt, CreatedBy: actorOf(r)}
	if err := s.store.TokenCreate(r.Context(), t); err != nil {
		s.writeError(w, r, err)
		return
	}
	v := viewToken(t, now)
	s.audit(r, "token.create", "token/"+t.ID, 0, nil, v)
	w.Header().Set("Location", "/api/v1/tokens/"+t.ID)
	v.Secret = secret
	writeJSON(w, http.StatusCreated, v)
}

// handleTokenList serves GET /api/v1/tokens: every token, by name, without
// its secret.
func (s *Server) handleTokenList(w http.ResponseWriter, r *http.Request) {
	ts, err := s.store.TokenList(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	now := s.now()
	items := make([]tokenView, len(ts))
	for i, t := range ts {
		items[i] = viewToken(t, now)
	}
	writeJSON(w, http.StatusOK, listResponse[tokenView]{Items: items})
}

// handleTokenDelete serves DELETE /api/v1/tokens/{id}: the token is
// revoked, on every node at once (each request reads its token afresh).
func (s *Server) handleTokenDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	t, err := s.store.TokenDelete(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.audit(r, "token.delete", "token/"+t.ID, 0, viewToken(t, s.now()), nil)
	w.WriteHeader(http.StatusNoContent)
}
