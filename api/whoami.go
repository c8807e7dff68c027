package api

import (
	"net/http"

	"github.com/sundialhq/sundial"
)

// whoamiResponse is the body of GET /api/v1/whoami.
type whoamiResponse struct {
	// Actor is the name the audit log records the caller's changes under:
	// a token's name, "bootstrap", or "anonymous" when authentication is
	// off.
	Actor string `json:"actor"`
	// Role is the caller's role; with authentication off every request may
	// do everything, an admin's.
	Role string `json:"role"`
	// AuthRequired says whether requests need a token.
	AuthRequired bool `json:"auth_required"`
}

// handleWhoami serves GET /api/v1/whoami: who the caller is and what its
// role allows, so that a client (the console) offers only the actions the
// caller may take.
func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) {
	resp := whoamiResponse{Actor: sundial.ActorAnonymous, Role: sundial.RoleAdmin.String()}
	if p, ok := r.Context().Value(principalKey{}).(*principal); ok {
		resp.Actor, resp.Role = p.actor, p.role.String()
	}
	resp.AuthRequired = s.auth != nil && s.auth.Required
	writeJSON(w, http.StatusOK, resp)
}
