package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/sundialhq/sundial"
)

// GET /api/v1/runs/{id}/request shows the HTTP request a run sends: the
// method, URL, headers and rendered body of its last delivery (before any,
// of its first), from its task as the task is now. Every secret is shown as
// "***": sensitive header values, credentials in the URL, an ASYNC run's
// callback token (in the body too), the signature and an OIDC token. The
// traceparent's span id and a signature's timestamp are made for the
// answer; each delivery makes its own. curl is the same request as a
// command line, for a user to reproduce a call by hand.

// runRequest is the body of GET /api/v1/runs/{id}/request.
type runRequest struct {
	RunID    int64           `json:"run_id"`
	Delivery int             `json:"delivery"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Headers  []requestHeader `json:"headers"`
	Body     string          `json:"body"`
	Curl     string          `json:"curl"`
}

// requestHeader is one header line of a runRequest.
type requestHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// handleRunRequest serves GET /api/v1/runs/{id}/request.
func (s *Server) handleRunRequest(w http.ResponseWriter, r *http.Request) {
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
	t, err := s.store.TaskGet(r.Context(), run.TaskID)
	if sundial.ErrorCode(err) == sundial.ENotFound {
		s.writeError(w, r, taskDeleted(run, "its request is made from the task"))
		return
	} else if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.sched.Request(r.Context(), t, run)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := runRequest{RunID: run.ID, Delivery: max(run.Deliveries, 1), Method: p.Method, URL: p.URL, Body: p.Body}
	names := make([]string, 0, len(p.Header))
	for k := range p.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range p.Header[k] {
			out.Headers = append(out.Headers, requestHeader{Name: k, Value: v})
		}
	}
	out.Curl = curlLine(out)
	writeJSON(w, http.StatusOK, out)
}

// curlLine writes req as a curl command, each argument quoted for a POSIX
// shell.
func curlLine(req runRequest) string {
	var b strings.Builder
	b.WriteString("curl -X " + req.Method + " " + shellQuote(req.URL))
	for _, h := range req.Headers {
		if h.Name == "User-Agent" {
			b.WriteString(" \\\n  -A " + shellQuote(h.Value))
			continue
		}
		b.WriteString(" \\\n  -H " + shellQuote(h.Name+": "+h.Value))
	}
	if req.Body != "" {
		b.WriteString(" \\\n  --data-binary " + shellQuote(req.Body))
	}
	return b.String()
}

// shellQuote is s in single quotes, each of its own single quotes closed,
// escaped and reopened.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
