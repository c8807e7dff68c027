package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/sundialhq/sundial"
)

// Limits of the callback endpoints.
const maxCallbackBody = 128 << 10

// callbackRequest is the body of a callback: the outcome of an ASYNC run.
type callbackRequest struct {
	Status  sundial.RunStatus `json:"status"`
	Result  json.RawMessage   `json:"result"`
	Message string            `json:"message"`
	// Retry false makes a FAILED final even when the task's retry policy
	// has attempts left.
	Retry *bool `json:"retry"`
}

func (*callbackRequest) examples() map[string]string {
	return map[string]string{"status": `"SUCCESS"`, "message": `"imported 120 rows"`, "retry": `false`}
}

// progressRequest is the body of POST /api/v1/runs/{id}/progress.
type progressRequest struct {
	Progress   json.RawMessage `json:"progress"`
	Checkpoint json.RawMessage `json:"checkpoint"`
}

// callbackToken reads the token of a callback or progress report: the
// X-Sundial-Callback-Token header, or an Authorization bearer token.
func callbackToken(r *http.Request) string {
	if t := r.Header.Get("X-Sundial-Callback-Token"); t != "" {
		return t
	}
	// The scheme is case-insensitive (RFC 9110 section 11.1).
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token)
	}
	return ""
}

// callbackRun authenticates a callback or progress report on the run of
// the path and returns the run, its task (nil when deleted) and the fence
// the token was issued for.
func (s *Server) callbackRun(r *http.Request) (*sundial.Run, *sundial.Task, int64, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, nil, 0, err
	}
	tok := callbackToken(r)
	if tok == "" {
		return nil, nil, 0, sundial.Errorf(sundial.EUnauthorized, "",
			"missing callback token: send the X-Sundial-Callback-Token the run's call carried, "+
				"in that header or as Authorization: Bearer <token>")
	}
	fence, ok := sundial.VerifyCallbackToken(s.sched.CallbackSecret(), id, tok)
	if !ok {
		return nil, nil, 0, sundial.Errorf(sundial.EUnauthorized, "", "the callback token is not valid for run %d", id)
	}
	run, err := s.store.RunGet(r.Context(), id)
	if err != nil {
		return nil, nil, 0, err
	}
	t, err := s.store.TaskGet(r.Context(), run.TaskID)
	if err != nil && sundial.ErrorCode(err) != sundial.ENotFound {
		return nil, nil, 0, err
	}
	return run, t, fence, nil
}

// handleRunCallback serves /api/v1/runs/{id}/callback with the task's
// callback_method: the target of an ASYNC run reports its outcome. With
// GET, status and message come from the query.
func (s *Server) handleRunCallback(w http.ResponseWriter, r *http.Request) {
	run, t, fence, err := s.callbackRun(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if t != nil && r.Method != t.CallbackMethod {
		w.Header().Set("Allow", t.CallbackMethod)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: errorDetail{
			Code:    codeMethodNotAllowed,
			Message: "task " + t.Name + " calls back with " + t.CallbackMethod + " (its callback_method), not " + r.Method,
		}})
		return
	}
	var req callbackRequest
	if r.Method == http.MethodGet {
		q := r.URL.Query()
		req.Status, req.Message = sundial.RunStatus(q.Get("status")), q.Get("message")
		if !utf8.ValidString(req.Message) {
			s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "message", "message must be valid UTF-8 text"))
			return
		}
	} else if err := decodeJSON(w, r, &req, maxCallbackBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	req.Status = sundial.RunStatus(sundial.UpperASCII(string(req.Status)))
	switch req.Status {
	case sundial.RunSuccess, sundial.RunFailed:
	case "":
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "status", "status is required: SUCCESS or FAILED"))
		return
	default:
		s.writeError(w, r, &sundial.Error{Code: sundial.EInvalid, Field: "status", Token: string(req.Status),
			Message: "must be one of SUCCESS, FAILED"})
		return
	}
	if string(req.Result) == "null" {
		req.Result = nil
	}
	if len(req.Result) > sundial.MaxResultLen {
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "result", "result is larger than %d bytes", sundial.MaxResultLen))
		return
	}
	if len(req.Message) > sundial.MaxResponseBody {
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "message", "message is longer than %d bytes", sundial.MaxResponseBody))
		return
	}
	done, err := s.sched.Complete(r.Context(), run, t, fence, sundial.CallbackReport{
		Status: req.Status, Result: req.Result, Message: req.Message, NoRetry: req.Retry != nil && !*req.Retry})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, utcRun(done))
}

// handleRunProgress serves POST /api/v1/runs/{id}/progress: a long job
// reports progress and saves a checkpoint, which extends its callback
// deadline and goes with any later delivery of the run.
func (s *Server) handleRunProgress(w http.ResponseWriter, r *http.Request) {
	run, t, fence, err := s.callbackRun(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req progressRequest
	if err := decodeJSON(w, r, &req, maxCallbackBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Progress == nil && req.Checkpoint == nil {
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "", "give progress, checkpoint or both"))
		return
	}
	if len(req.Progress) > sundial.MaxProgressLen {
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "progress", "progress is larger than %d bytes", sundial.MaxProgressLen))
		return
	}
	if len(req.Checkpoint) > sundial.MaxCheckpointLen {
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "checkpoint", "checkpoint is larger than %d bytes", sundial.MaxCheckpointLen))
		return
	}
	done, err := s.sched.Progress(r.Context(), run, t, fence, req.Progress, req.Checkpoint)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, utcRun(done))
}
