package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// runListParams are the query parameters of GET /api/v1/runs; those of
// GET /api/v1/tasks/{id}/runs are the same less task_id, the first.
var runListParams = []string{"task_id", "status", "trigger", "selector", "from", "to", "finished_after", "finished_before",
	"planned", "dead_letter", "limit", "cursor"}

// handleRunList serves
// GET /api/v1/runs?task_id=&status=&trigger=&selector=&from=&to=&finished_after=&finished_before=&planned=&dead_letter=&limit=&cursor=:
// runs newest first by scheduled time.
func (s *Server) handleRunList(w http.ResponseWriter, r *http.Request) {
	f, limit, err := runFilter(r.URL.Query(), 0, s.now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.listRuns(w, r, f, limit)
}

// handleTaskRuns serves GET /api/v1/tasks/{id}/runs: GET /api/v1/runs with
// the task from the path. A deleted task's runs are served as a live
// task's are, as GET /api/v1/runs?task_id= serves them (they are kept until
// the retention purges them); the answer is 404 only for an ID no task ever
// had.
func (s *Server) handleTaskRuns(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, limit, err := runFilter(r.URL.Query(), id, s.now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ok, err := s.store.TaskExists(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !ok {
		s.writeError(w, r, sundial.Errorf(sundial.ENotFound, "", "task %d not found", id))
		return
	}
	s.listRuns(w, r, f, limit)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, f sundial.RunListParams, limit int) {
	f.Limit = limit + 1
	runs, err := s.store.RunList(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	runs, next := page(runs, limit, encodeRunCursor)
	for _, run := range runs {
		utcRun(run)
	}
	writeJSON(w, http.StatusOK, listResponse[*sundial.Run]{Items: runs, NextCursor: next})
}

// runFilter reads the query of a run list. taskID is the task the path
// names, or 0 (the route of a task takes no task_id parameter). Without
// planned=true, the runs planned ahead of now are left out.
func runFilter(q url.Values, taskID int64, now time.Time) (sundial.RunListParams, int, error) {
	f := sundial.RunListParams{TaskID: taskID}
	if v := q.Get("task_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return f, 0, &sundial.Error{Code: sundial.EInvalid, Field: "task_id", Token: v,
				Message: "task_id must be a positive integer"}
		}
		f.TaskID = id
	}
	statuses, err := enumList(q, "status", sundial.RunStatuses())
	if err != nil {
		return f, 0, err
	}
	f.Status = statuses
	switch v := strings.ToLower(q.Get("dead_letter")); v {
	case "", "false":
	case "true":
		// The runs that failed for good: see sundial.RunStatus.DeadLetter.
		if len(statuses) > 0 {
			return f, 0, &sundial.Error{Code: sundial.EInvalid, Field: "dead_letter", Token: q.Get("dead_letter"),
				Message: "dead_letter=true selects the statuses FAILED, TIMEOUT and FAILED_TIMEOUT: give it or status, not both"}
		}
		f.Status = sundial.DeadLetterStatuses()
	default:
		return f, 0, &sundial.Error{Code: sundial.EInvalid, Field: "dead_letter", Token: q.Get("dead_letter"),
			Message: "dead_letter must be true (only the runs that failed for good: FAILED, TIMEOUT, FAILED_TIMEOUT) or false"}
	}
	if f.Trigger, err = enumList(q, "trigger", sundial.Triggers()); err != nil {
		return f, 0, err
	}
	if f.Selector, err = sundial.ParseSelector("selector", q.Get("selector")); err != nil {
		return f, 0, err
	}
	if err := timeRange(q, &f.From, &f.To, "runs are selected by scheduled time"); err != nil {
		return f, 0, err
	}
	if err := timeRangeOf(q, "finished_after", "finished_before", &f.FinishedFrom, &f.FinishedTo,
		"runs are selected by finished time"); err != nil {
		return f, 0, err
	}
	switch v := strings.ToLower(q.Get("planned")); v {
	case "true":
	case "", "false":
		f.ExcludePlannedAfter = now
	default:
		return f, 0, &sundial.Error{Code: sundial.EInvalid, Field: "planned", Token: q.Get("planned"),
			Message: "planned must be true (list the fires planned ahead too) or false"}
	}
	limit, err := parseLimit(q)
	if err != nil {
		return f, 0, err
	}
	if v := q.Get("cursor"); v != "" {
		if f.BeforeTime, f.BeforeID, err = decodeRunCursor(v); err != nil {
			return f, 0, err
		}
	}
	return f, limit, nil
}

// handleRunGet serves GET /api/v1/runs/{id}.
func (s *Server) handleRunGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	run, err := s.store.RunGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	attempts, err := s.store.RunAttempts(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if attempts == nil {
		attempts = []*sundial.Attempt{}
	}
	for _, a := range attempts {
		a.StartedAt = utcPtr(a.StartedAt)
		a.FinishedAt = a.FinishedAt.UTC()
	}
	writeJSON(w, http.StatusOK, runDetail{Run: utcRun(run), Attempts: attempts})
}

// runDetail is the body of GET /api/v1/runs/{id}: the run and each of its
// deliveries that ended, oldest first.
type runDetail struct {
	*sundial.Run
	Attempts []*sundial.Attempt `json:"attempts"`
}

// handleRunCancel serves POST /api/v1/runs/{id}/cancel. A run not yet
// started is CANCELED at once; one in flight has cancel_requested set and
// is stopped by its node. A finished run is a conflict.
func (s *Server) handleRunCancel(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	run, err := s.sched.Cancel(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.logChange(r, "run canceled", append(runAttrs(run), slog.Bool("cancel_requested", run.CancelRequested))...)
	s.audit(r, "run.cancel", "run/"+strconv.FormatInt(run.ID, 10), run.TaskID, nil, newRunChange(run))
	writeJSON(w, http.StatusOK, utcRun(run))
}

// handleRunRerun serves POST /api/v1/runs/{id}/rerun: a new MANUAL run of
// the run's task, with the run's params, made and admitted as a trigger
// is (POST /api/v1/tasks/{id}/trigger), that records the run it runs again
// in rerun_of. The answer is 202 with the new run as admission left it; an
// unknown run is 404, a run whose task was deleted 409.
func (s *Server) handleRunRerun(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	of, err := s.store.RunGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.store.TaskGet(r.Context(), of.TaskID); sundial.ErrorCode(err) == sundial.ENotFound {
		s.writeError(w, r, taskDeleted(of, "a rerun needs a live task"))
		return
	} else if err != nil {
		s.writeError(w, r, err)
		return
	}
	run, err := s.sched.Rerun(r.Context(), of)
	if err != nil {
		if sundial.ErrorCode(err) == sundial.ENotFound {
			// Deleted since it was read.
			err = taskDeleted(of, "a rerun needs a live task")
		}
		s.writeError(w, r, err)
		return
	}
	s.logChange(r, "run rerun", append(runAttrs(run), slog.Int64("rerun_of", of.ID))...)
	s.audit(r, "run.rerun", "run/"+strconv.FormatInt(of.ID, 10), run.TaskID, nil, newRunChange(run))
	writeJSON(w, http.StatusAccepted, utcRun(run))
}

// taskDeleted is the conflict of an action on run that needs its task,
// which has been deleted; why says what needs it.
func taskDeleted(run *sundial.Run, why string) error {
	return &sundial.Error{Code: sundial.EConflict, Field: "task_id", Token: strconv.FormatInt(run.TaskID, 10),
		Message: fmt.Sprintf("run %d is of task %d, which has been deleted: %s", run.ID, run.TaskID, why)}
}

// runTarget is the audit target of run id.
func runTarget(id int64) string { return "run/" + strconv.FormatInt(id, 10) }

// utcRun puts run's times in UTC, the zone every response uses.
func utcRun(run *sundial.Run) *sundial.Run {
	run.ScheduledTime = run.ScheduledTime.UTC()
	run.DueAt = run.DueAt.UTC()
	run.StartedAt = utcPtr(run.StartedAt)
	run.FinishedAt = utcPtr(run.FinishedAt)
	run.CreatedAt = run.CreatedAt.UTC()
	run.UpdatedAt = run.UpdatedAt.UTC()
	return run
}
