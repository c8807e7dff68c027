package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/sundialhq/sundial"
)

// replayRequest is the body of POST /api/v1/runs:replay: the dead letters
// to replay, by id or by a filter, not both.
type replayRequest struct {
	IDs    []int64       `json:"ids"`
	Filter *replayFilter `json:"filter"`
}

// replayFilter selects dead letters as GET /runs?dead_letter=true does.
type replayFilter struct {
	TaskID   int64  `json:"task_id"`
	Selector string `json:"selector"`
	From     string `json:"from"`
	To       string `json:"to"`
}

// replayItem is the outcome of the replay of one dead letter: the new run,
// or the error that kept it from being made.
type replayItem struct {
	RerunOf int64        `json:"rerun_of"`
	Run     *sundial.Run `json:"run,omitempty"`
	Error   *errorDetail `json:"error,omitempty"`
}

// replayResponse is the answer to a bulk replay.
type replayResponse struct {
	Items []replayItem `json:"items"`
}

// handleRunReplay serves POST /api/v1/runs:replay: each dead letter named
// (ids) or matched (filter), up to sundial.MaxReplay, oldest first, is
// rerun as POST /runs/{id}/rerun reruns one. The request is checked whole
// first: an id that is no run, a run that is not a dead letter or whose
// task was deleted, an id given twice, or more than MaxReplay runs, and
// nothing is replayed. The answer is 202 with one item per run, its new
// run or the error that kept it from being made (this node stopping
// meanwhile); each replay is audited as run.rerun.
func (s *Server) handleRunReplay(w http.ResponseWriter, r *http.Request) {
	var req replayRequest
	if err := decodeJSON(w, r, &req, maxTaskBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	runs, err := s.replayRuns(r, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := replayResponse{Items: []replayItem{}}
	var entries []*sundial.AuditEntry
	for _, of := range runs {
		it := replayItem{RerunOf: of.ID}
		run, err := s.sched.Rerun(r.Context(), of)
		if err != nil {
			_, it.Error = s.itemError(r, err)
		} else {
			it.Run = utcRun(run)
			entries = append(entries, s.auditEntry(r, "run.rerun", runTarget(of.ID), run.TaskID, nil, newRunChange(run)))
		}
		resp.Items = append(resp.Items, it)
	}
	s.auditAll(r, entries)
	s.logChange(r, "dead letters replayed", slog.Int("runs", len(entries)))
	writeJSON(w, http.StatusAccepted, resp)
}

// replayRuns reads and checks the runs a replay names, oldest first.
func (s *Server) replayRuns(r *http.Request, req replayRequest) ([]*sundial.Run, error) {
	ctx := r.Context()
	switch {
	case len(req.IDs) > 0 && req.Filter != nil:
		return nil, &sundial.Error{Code: sundial.EInvalid, Field: "filter", Message: "give ids or filter, not both"}
	case len(req.IDs) == 0 && req.Filter == nil:
		return nil, &sundial.Error{Code: sundial.EInvalid, Field: "ids", Message: "give the dead letters to replay: ids, or a filter"}
	case len(req.IDs) > sundial.MaxReplay:
		return nil, &sundial.Error{Code: sundial.EInvalid, Field: "ids",
			Message: fmt.Sprintf("%d ids: one replay takes at most %d runs", len(req.IDs), sundial.MaxReplay)}
	}
	var runs []*sundial.Run
	if req.Filter != nil {
		f := sundial.RunListParams{TaskID: req.Filter.TaskID, Status: sundial.DeadLetterStatuses(), Limit: sundial.MaxReplay + 1}
		var err error
		if f.Selector, err = sundial.ParseSelector("filter.selector", req.Filter.Selector); err != nil {
			return nil, err
		}
		for _, p := range []struct {
			name, v string
			dst     *time.Time
		}{{"filter.from", req.Filter.From, &f.From}, {"filter.to", req.Filter.To, &f.To}} {
			if p.v == "" {
				continue
			}
			t, err := time.Parse(time.RFC3339, p.v)
			if err != nil {
				return nil, &sundial.Error{Code: sundial.EInvalid, Field: p.name, Token: p.v,
					Message: "not an RFC 3339 time (for example 2026-01-01T00:00:00Z)"}
			}
			*p.dst = t.UTC()
		}
		if !f.From.IsZero() && !f.To.IsZero() && !f.To.After(f.From) {
			return nil, &sundial.Error{Code: sundial.EInvalid, Field: "filter.to", Token: req.Filter.To,
				Message: "filter.to must be after filter.from: runs are selected by scheduled time in [from, to)"}
		}
		if runs, err = s.store.RunList(ctx, f); err != nil {
			return nil, err
		}
		if len(runs) > sundial.MaxReplay {
			return nil, &sundial.Error{Code: sundial.EInvalid, Field: "filter",
				Message: fmt.Sprintf("the filter matches more than %d dead letters, the most one replay takes: narrow it", sundial.MaxReplay)}
		}
		// RunList is newest first: replay oldest first.
		for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
			runs[i], runs[j] = runs[j], runs[i]
		}
	} else {
		seen := map[int64]bool{}
		for i, id := range req.IDs {
			field := "ids[" + strconv.Itoa(i) + "]"
			if seen[id] {
				return nil, &sundial.Error{Code: sundial.EInvalid, Field: field, Token: strconv.FormatInt(id, 10),
					Message: fmt.Sprintf("run %d is given twice", id)}
			}
			seen[id] = true
			run, err := s.store.RunGet(ctx, id)
			if sundial.ErrorCode(err) == sundial.ENotFound {
				return nil, &sundial.Error{Code: sundial.EInvalid, Field: field, Token: strconv.FormatInt(id, 10),
					Message: fmt.Sprintf("run %d not found", id)}
			} else if err != nil {
				return nil, err
			}
			if !run.Status.DeadLetter() {
				return nil, &sundial.Error{Code: sundial.EInvalid, Field: field, Token: strconv.FormatInt(id, 10),
					Message: fmt.Sprintf("run %d is %s, not a dead letter (FAILED, TIMEOUT or FAILED_TIMEOUT): rerun it with POST /runs/%d/rerun", id, run.Status, id)}
			}
			runs = append(runs, run)
		}
	}
	// Every run's task must be live.
	live := map[int64]bool{}
	for i, run := range runs {
		if live[run.TaskID] {
			continue
		}
		if _, err := s.store.TaskGet(ctx, run.TaskID); sundial.ErrorCode(err) == sundial.ENotFound {
			field := "filter"
			if req.Filter == nil {
				field = "ids[" + strconv.Itoa(i) + "]"
			}
			return nil, &sundial.Error{Code: sundial.EConflict, Field: field, Token: strconv.FormatInt(run.ID, 10),
				Message: fmt.Sprintf("run %d is of task %d, which has been deleted: a replay needs a live task", run.ID, run.TaskID)}
		} else if err != nil {
			return nil, err
		}
		live[run.TaskID] = true
	}
	return runs, nil
}
