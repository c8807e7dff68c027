package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/sundialhq/sundial"
)

// backfillRequest is the body of POST /api/v1/tasks/{id}/backfill. The
// times are strings, so that one that is not RFC 3339 is refused naming
// its field.
type backfillRequest struct {
	From   string `json:"from"`
	To     string `json:"to"`
	DryRun bool   `json:"dry_run"`
}

// backfillItem is one fire time of a backfill: its run, when it has one.
type backfillItem struct {
	ScheduledTime time.Time         `json:"scheduled_time"`
	FireKey       string            `json:"fire_key"`
	RunID         int64             `json:"run_id,omitempty"`
	Status        sundial.RunStatus `json:"status,omitempty"`
	// Created says that this request made the run; false for a time
	// backfilled before (its run is given) and for a dry run.
	Created bool `json:"created"`
}

// backfillResponse is the answer to a backfill.
type backfillResponse struct {
	TaskID int64     `json:"task_id"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	DryRun bool      `json:"dry_run"`
	// Count is the number of fire times in the range; Created how many
	// runs this request made, Existing how many times had one already.
	Count    int            `json:"count"`
	Created  int            `json:"created"`
	Existing int            `json:"existing"`
	Items    []backfillItem `json:"items"`
}

// backfillChange is what the audit entry of a backfill records.
type backfillChange struct {
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Count    int       `json:"count"`
	Created  int       `json:"created"`
	Existing int       `json:"existing"`
}

// parseBackfillTime reads the time of the field name, RFC 3339.
func parseBackfillTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, &sundial.Error{Code: sundial.EInvalid, Field: name,
			Message: name + " is required: an RFC 3339 time (for example 2026-01-01T00:00:00Z)"}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, &sundial.Error{Code: sundial.EInvalid, Field: name, Token: v,
			Message: "not an RFC 3339 time (for example 2026-01-01T00:00:00Z)"}
	}
	return t.UTC(), nil
}

// handleTaskBackfill serves POST /api/v1/tasks/{id}/backfill: the fire
// times of the task's schedule in [from, to], a past range, oldest first,
// each with its backfilled run if it has one. With dry_run it only lists
// them (200); otherwise it makes a run with trigger BACKFILL for each
// time that has none (202), which the nodes claim, oldest first, and
// admit under the task's policies. A time is backfilled once: a repeated
// backfill makes runs only for the times that have none. More than
// sundial.MaxBackfill times is refused.
func (s *Server) handleTaskBackfill(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req backfillRequest
	if err := decodeJSON(w, r, &req, maxTaskBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	from, err := parseBackfillTime("from", req.From)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	to, err := parseBackfillTime("to", req.To)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := sundial.CheckBackfillRange(from, to, s.now()); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.store.TaskGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	times, err := t.BackfillTimes(from, to, sundial.MaxBackfill)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := backfillResponse{TaskID: t.ID, From: from, To: to, DryRun: req.DryRun, Count: len(times), Items: []backfillItem{}}
	have, err := s.backfilled(r, t.ID, from, to)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var todo []time.Time
	for _, at := range times {
		if have[sundial.BackfillFireKey(at)] == nil {
			todo = append(todo, at)
		}
	}
	made := map[string]*sundial.Run{}
	if !req.DryRun && len(todo) > 0 {
		runs, err := s.sched.Backfill(r.Context(), t, todo)
		for _, run := range runs {
			if run != nil {
				made[run.FireKey] = run
			}
		}
		if len(made) > 0 {
			s.logChange(r, "task backfilled", slog.Int64("task_id", t.ID), slog.Int("runs", len(made)))
		}
		if err != nil {
			// The runs made stay made: audited as such.
			s.auditBackfill(r, t.ID, from, to, len(times), len(made), len(times)-len(todo))
			s.writeError(w, r, err)
			return
		}
		if len(made) < len(todo) {
			// Another backfill of the same times made some meanwhile.
			if have, err = s.backfilled(r, t.ID, from, to); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
	}
	for _, at := range times {
		key := sundial.BackfillFireKey(at)
		it := backfillItem{ScheduledTime: at, FireKey: key}
		if run := made[key]; run != nil {
			it.RunID, it.Status, it.Created = run.ID, run.Status, true
			resp.Created++
		} else if run := have[key]; run != nil {
			it.RunID, it.Status = run.ID, run.Status
			resp.Existing++
		}
		resp.Items = append(resp.Items, it)
	}
	if req.DryRun {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	s.auditBackfill(r, t.ID, from, to, resp.Count, resp.Created, resp.Existing)
	writeJSON(w, http.StatusAccepted, resp)
}

// auditBackfill writes the audit entry of a backfill of task id.
func (s *Server) auditBackfill(r *http.Request, id int64, from, to time.Time, count, created, existing int) {
	s.audit(r, "task.backfill", taskTarget(id), id, nil,
		backfillChange{From: from, To: to, Count: count, Created: created, Existing: existing})
}

// backfilled returns the backfilled runs of task id scheduled in
// [from, to], by fire key.
func (s *Server) backfilled(r *http.Request, id int64, from, to time.Time) (map[string]*sundial.Run, error) {
	runs, err := s.store.RunList(r.Context(), sundial.RunListParams{TaskID: id, Trigger: []sundial.Trigger{sundial.TriggerBackfill},
		From: from, To: to.Add(time.Second)})
	if err != nil {
		return nil, err
	}
	m := make(map[string]*sundial.Run, len(runs))
	for _, run := range runs {
		m[run.FireKey] = run
	}
	return m, nil
}

// backfillCancelResponse is the answer to a backfill's cancel.
type backfillCancelResponse struct {
	// Canceled are the runs canceled (or, in flight, asked to stop:
	// cancel_requested), oldest first.
	Canceled []*sundial.Run `json:"canceled"`
}

// handleTaskBackfillCancel serves POST /api/v1/tasks/{id}/backfill:cancel:
// every backfilled run of the task that has not ended is canceled as
// POST /runs/{id}/cancel cancels one: one waiting (SCHEDULED, QUEUED) at
// once, one in flight by stopping its call. Runs that end meanwhile are
// left as they end. Each run canceled is audited (run.cancel).
func (s *Server) handleTaskBackfillCancel(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.store.TaskGet(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	runs, err := s.store.RunList(r.Context(), sundial.RunListParams{TaskID: id, Trigger: []sundial.Trigger{sundial.TriggerBackfill},
		Status: []sundial.RunStatus{sundial.RunScheduled, sundial.RunQueued, sundial.RunRunning, sundial.RunWaitingCallback}})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := backfillCancelResponse{Canceled: []*sundial.Run{}}
	var entries []*sundial.AuditEntry
	for i := len(runs) - 1; i >= 0; i-- { // RunList is newest first
		run, err := s.sched.Cancel(r.Context(), runs[i].ID)
		switch {
		case sundial.ErrorCode(err) == sundial.EConflict || sundial.ErrorCode(err) == sundial.ENotFound:
			continue // ended meanwhile
		case err != nil:
			s.auditAll(r, entries)
			s.writeError(w, r, err)
			return
		}
		entries = append(entries, s.auditEntry(r, "run.cancel", runTarget(run.ID), run.TaskID, nil, newRunChange(run)))
		resp.Canceled = append(resp.Canceled, utcRun(run))
	}
	s.auditAll(r, entries)
	s.logChange(r, "task backfill canceled", slog.Int64("task_id", id), slog.Int("runs", len(resp.Canceled)))
	writeJSON(w, http.StatusOK, resp)
}
