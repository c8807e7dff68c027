package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/sundialhq/sundial"
)

// readyPingTimeout bounds the store ping of GET /readyz.
const readyPingTimeout = 2 * time.Second

// nodeListResponse is the body of GET /api/v1/nodes.
type nodeListResponse struct {
	Items []*sundial.Node `json:"items"`
}

// handleNodeList serves GET /api/v1/nodes: every node of the cluster,
// newest first.
func (s *Server) handleNodeList(w http.ResponseWriter, r *http.Request) {
	nodes, err := s.store.NodeList(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if nodes == nil {
		nodes = []*sundial.Node{}
	}
	for _, n := range nodes {
		n.StartedAt = n.StartedAt.UTC()
		n.HeartbeatAt = n.HeartbeatAt.UTC()
	}
	writeJSON(w, http.StatusOK, nodeListResponse{Items: nodes})
}

// healthResponse is the body of GET /healthz and GET /readyz.
type healthResponse struct {
	Status string `json:"status"` // "ok", or "unavailable" (readyz only)
	// Checks says, for readyz, how each dependency fared: "ok" or what is
	// wrong, without internal detail (that goes to the log).
	Checks map[string]string `json:"checks,omitempty"`
}

// handleHealthz serves GET /healthz: the process is up and serving.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, healthResponse{Status: "ok"})
}

// handleReadyz serves GET /readyz: 200 when the database answers and the
// scheduler runs and holds its membership, 503 otherwise.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	resp := healthResponse{Status: "ok", Checks: map[string]string{"store": "ok", "scheduler": "ok"}}
	ctx, cancel := context.WithTimeout(r.Context(), readyPingTimeout)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		resp.Status, resp.Checks["store"] = "unavailable", "the database does not answer"
		s.logger().LogAttrs(r.Context(), slog.LevelWarn, "readiness: store ping failed",
			slog.String("component", "api"), slog.Any("err", err))
	}
	if !s.sched.Ready() {
		resp.Status, resp.Checks["scheduler"] = "unavailable", "not running, or not a member of the cluster"
	}
	status := http.StatusOK
	if resp.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, resp)
}

// handleCompensation serves GET /api/v1/admin/compensation: the state of
// this node's start compensator (seed 000).
func (s *Server) handleCompensation(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.sched.CompensationStatus())
}

// handleCompensationTrigger serves POST /api/v1/admin/compensation/trigger:
// a compensation round now, with the interval reset to its base.
func (s *Server) handleCompensationTrigger(w http.ResponseWriter, r *http.Request) {
	s.sched.TriggerCompensation()
	s.audit(r, "compensation.trigger", "compensation", 0, nil, nil)
	writeJSON(w, http.StatusAccepted, s.sched.CompensationStatus())
}
