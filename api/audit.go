package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// audit records a change made through the API: who made it (actorOf), the
// action, its target, the task concerned (0: none), and the target's
// fields before and after (nil for none; a task is masked, see
// maskedTask). The change is made by then: an entry that cannot be
// written is logged, and the request still succeeds.
func (s *Server) audit(r *http.Request, action, target string, taskID int64, before, after any) {
	s.auditAll(r, []*sundial.AuditEntry{s.auditEntry(r, action, target, taskID, before, after)})
}

// auditEntry is the entry of one change of r.
func (s *Server) auditEntry(r *http.Request, action, target string, taskID int64, before, after any) *sundial.AuditEntry {
	return &sundial.AuditEntry{At: s.now(), Actor: actorOf(r), Action: action, Target: target, TaskID: taskID,
		Before: auditJSON(before), After: auditJSON(after)}
}

// auditAll writes the entries of r's changes in one call, and publishes
// the live events of the changes of tasks among them.
func (s *Server) auditAll(r *http.Request, es []*sundial.AuditEntry) {
	if len(es) == 0 {
		return
	}
	s.publishTaskEvents(es)
	// The change is made: its entry is written even if the client has
	// gone away meanwhile.
	ctx := context.WithoutCancel(r.Context())
	if err := s.store.AuditInsert(ctx, es); err != nil {
		s.logger().LogAttrs(ctx, slog.LevelError, "audit entries not written",
			slog.String("component", "api"), slog.String("action", es[0].Action), slog.String("target", es[0].Target),
			slog.Int("entries", len(es)), slog.String("actor", es[0].Actor), slog.Any("err", err))
	}
}

// auditJSON is v as an audit entry holds it; a task is masked first.
func auditJSON(v any) []byte {
	switch t := v.(type) {
	case nil:
		return nil
	case *sundial.Task:
		if t == nil {
			return nil
		}
		v = maskedTask(t)
	case taskUpdate:
		v = taskUpdate{Task: maskedTask(t.Task), Changed: t.Changed}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// taskUpdate is the after of an update's entry: the task, and the fields
// the update changed, which tell a changed secret from one kept (both are
// masked alike).
type taskUpdate struct {
	*sundial.Task
	Changed []string `json:"changed"`
}

// maskedTask is a copy of t with its secrets shown as sundial.Masked
// (sundial.MaskTask).
func maskedTask(t *sundial.Task) *sundial.Task {
	c := *t
	sundial.MaskTask(&c)
	return &c
}

// auditView is an audit entry as the API shows it.
type auditView struct {
	ID     int64           `json:"id"`
	At     time.Time       `json:"at"`
	Actor  string          `json:"actor"`
	Action string          `json:"action"`
	Target string          `json:"target"`
	TaskID int64           `json:"task_id,omitempty"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// handleAuditList serves GET /api/v1/audit?actor=&action=&task_id=&from=&to=&limit=&cursor=:
// the audit log, newest first.
func (s *Server) handleAuditList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := sundial.AuditListParams{Actor: q.Get("actor"), Action: q.Get("action")}
	if v := q.Get("task_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			s.writeError(w, r, &sundial.Error{Code: sundial.EInvalid, Field: "task_id", Token: v,
				Message: "task_id must be a positive integer"})
			return
		}
		f.TaskID = id
	}
	if err := timeRange(q, &f.From, &f.To, "entries are selected by time"); err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, err := parseLimit(q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if v := q.Get("cursor"); v != "" {
		if f.BeforeID, err = decodeAuditCursor(v); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	f.Limit = limit + 1
	entries, err := s.store.AuditList(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	entries, next := page(entries, limit, func(e *sundial.AuditEntry) string { return encodeAuditCursor(e.ID) })
	items := make([]auditView, len(entries))
	for i, e := range entries {
		items[i] = auditView{ID: e.ID, At: e.At.UTC(), Actor: e.Actor, Action: e.Action, Target: e.Target,
			TaskID: e.TaskID, Before: rawOrNull(e.Before), After: rawOrNull(e.After)}
	}
	writeJSON(w, http.StatusOK, listResponse[auditView]{Items: items, NextCursor: next})
}

func rawOrNull(b []byte) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}

// An audit list's cursor is auditCursorTag and the ID of the page's last
// entry, separated by a colon, in base64url.
const auditCursorTag = "audit"

func encodeAuditCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(auditCursorTag + ":" + strconv.FormatInt(id, 10)))
}

func decodeAuditCursor(s string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, errCursor(s)
	}
	tag, num, ok := strings.Cut(string(b), ":")
	id, err := strconv.ParseInt(num, 10, 64)
	if !ok || tag != auditCursorTag || err != nil || id < 1 {
		return 0, errCursor(s)
	}
	return id, nil
}
