package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/cron"
)

// Limits of GET /api/v1/cron/next.
const (
	cronNextDefaultCount = 5
	cronNextMaxCount     = 1000
)

// cronNextResponse is the body of GET /api/v1/cron/next.
type cronNextResponse struct {
	Expr        string   `json:"expr"`        // the normalised expression
	Timezone    string   `json:"timezone"`    // the IANA zone the times are in
	Description string   `json:"description"` // the schedule in plain English
	Next        []string `json:"next"`        // RFC 3339 fire times, with offset
}

// handleCronNext serves GET /api/v1/cron/next?expr=&tz=&from=&count=&dst=: the
// next fire times of a cron expression, so a client can check a schedule
// before creating a task with it.
func (s *Server) handleCronNext(w http.ResponseWriter, r *http.Request) {
	resp, err := s.cronNext(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) cronNext(r *http.Request) (*cronNextResponse, error) {
	q := r.URL.Query()

	expr := q.Get("expr")
	if expr == "" {
		return nil, sundial.Errorf(sundial.EInvalid, "expr", "is required")
	}
	sched, err := cron.Parse(expr)
	if err != nil {
		if pe, ok := errors.AsType[*cron.ParseError](err); ok {
			return nil, &sundial.Error{Code: sundial.EInvalid, Field: "expr", Token: pe.Token,
				Message: pe.Field + ": " + pe.Reason}
		}
		return nil, &sundial.Error{Code: sundial.EInvalid, Field: "expr", Token: expr, Message: err.Error()}
	}

	tz := q.Get("tz")
	if tz == "" {
		tz = "UTC"
	}
	loc, err := loadLocation(tz)
	if err != nil {
		return nil, &sundial.Error{Code: sundial.EInvalid, Field: "tz", Token: tz,
			Message: "not a known IANA time zone (for example Europe/Paris)"}
	}

	from := s.now()
	if v := q.Get("from"); v != "" {
		from, err = time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, &sundial.Error{Code: sundial.EInvalid, Field: "from", Token: v,
				Message: "not an RFC 3339 time (for example 2026-01-01T00:00:00Z)"}
		}
	}

	count := cronNextDefaultCount
	if v := q.Get("count"); v != "" {
		count, err = strconv.Atoi(v)
		if err != nil || count < 1 || count > cronNextMaxCount {
			return nil, &sundial.Error{Code: sundial.EInvalid, Field: "count", Token: v,
				Message: "must be an integer from 1 to " + strconv.Itoa(cronNextMaxCount)}
		}
	}

	if v := q.Get("dst"); v != "" {
		d, ok := cron.ParseDST(strings.ToLower(v))
		if !ok {
			return nil, &sundial.Error{Code: sundial.EInvalid, Field: "dst", Token: v,
				Message: "must be one of vixie, skip_gap, repeat"}
		}
		sched = sched.WithDST(d)
	}

	fires := sched.NextN(from.In(loc), count)
	next := make([]string, len(fires))
	for i, t := range fires {
		next[i] = t.In(loc).Format(time.RFC3339Nano)
	}
	return &cronNextResponse{
		Expr:        sched.String(),
		Timezone:    loc.String(),
		Description: sched.Explain(),
		Next:        next,
	}, nil
}

// loadLocation loads an IANA time zone. "Local" is refused: it names the
// server's zone, which a client can neither know nor rely on.
func loadLocation(name string) (*time.Location, error) {
	if name == "Local" {
		return nil, errors.New("the server's local zone is not an IANA name")
	}
	return sundial.LoadLocation(name)
}
