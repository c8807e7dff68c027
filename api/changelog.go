package api

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"slices"

	"github.com/sundialhq/sundial"
)

// logChange writes the one info line of a change made through the API,
// with who asked for it (the client's address and the actor) and what it
// changed.
func (s *Server) logChange(r *http.Request, msg string, attrs ...slog.Attr) {
	attrs = append([]slog.Attr{slog.String("component", "api"), slog.String("remote_addr", r.RemoteAddr),
		slog.String("actor", actorOf(r))}, attrs...)
	s.logger().LogAttrs(r.Context(), slog.LevelInfo, msg, attrs...)
}

// serverSet are the task fields a client does not write: a change of
// theirs is not a change a client made.
var serverSet = []string{"id", "version", "created_at", "updated_at", "next_fire_time", "disabled_at", "disabled_by", "state", "fire_count"}

// changedFields names, in JSON terms and sorted, the fields of a task
// that differ between before and after (both as stored; the retry policy
// compared as in force).
func changedFields(before, after *sundial.Task) []string {
	fields := func(t *sundial.Task) map[string]json.RawMessage {
		v := *t
		v.RetryPolicy, _ = json.Marshal(t.RetryPolicyOf())
		b, _ := json.Marshal(&v)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		for _, k := range serverSet {
			delete(m, k)
		}
		return m
	}
	o, n := fields(before), fields(after)
	var changed []string
	for k := range maps.Keys(n) {
		if string(o[k]) != string(n[k]) {
			changed = append(changed, k)
		}
	}
	for k := range maps.Keys(o) {
		if _, ok := n[k]; !ok {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	return changed
}

// runChange is what the audit log shows of a run a change made or changed.
type runChange struct {
	RunID           int64             `json:"run_id"`
	Status          sundial.RunStatus `json:"status"`
	SkipReason      string            `json:"skip_reason,omitempty"`
	CancelRequested bool              `json:"cancel_requested,omitempty"`
	// Params are those a manual trigger gave the run, in place of its
	// task's.
	Params json.RawMessage `json:"params,omitempty"`
	// RerunOf is the run a rerun runs again.
	RerunOf int64 `json:"rerun_of,omitempty"`
}

func newRunChange(r *sundial.Run) runChange {
	return runChange{RunID: r.ID, Status: r.Status, SkipReason: string(r.SkipReason), CancelRequested: r.CancelRequested,
		Params: r.Params, RerunOf: r.RerunOf}
}

// runAttrs are the attributes of a run a change made or changed: its task,
// itself, and the status it is in (with its skip reason, if skipped).
func runAttrs(r *sundial.Run) []slog.Attr {
	attrs := []slog.Attr{slog.Int64("task_id", r.TaskID), slog.Int64("run_id", r.ID), slog.String("status", string(r.Status))}
	if r.SkipReason != "" {
		attrs = append(attrs, slog.String("skip_reason", string(r.SkipReason)))
	}
	return attrs
}
