package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sundialhq/sundial"
)

// maxCalendarBody bounds a calendar's POST or PUT body: a thousand entries
// of a cron expression each, escaped, with room to spare.
const maxCalendarBody = 512 << 10

// calendarRequest is the body of POST /api/v1/calendars and PUT
// /api/v1/calendars/{name}: the writable fields of sundial.Calendar. A PUT
// takes the calendar as GET returned it: its name, if given, must be the
// path's, its version, if not 0, the calendar's current one (else 409),
// and its times are ignored; a POST refuses version and the times.
type calendarRequest struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Timezone    string          `json:"timezone"`
	Entries     []string        `json:"entries"`
	Version     json.RawMessage `json:"version"`
	CreatedAt   json.RawMessage `json:"created_at"`
	UpdatedAt   json.RawMessage `json:"updated_at"`
}

// calendar checks the request and returns the calendar it describes,
// normalised, for the calendar named path (a PUT; "" for a POST).
func (req *calendarRequest) calendar(path string, s *Server) (*sundial.Calendar, error) {
	c := &sundial.Calendar{Name: req.Name, Description: req.Description, Timezone: req.Timezone, Entries: req.Entries}
	if path == "" {
		for _, ro := range []struct {
			field string
			raw   json.RawMessage
		}{{"version", req.Version}, {"created_at", req.CreatedAt}, {"updated_at", req.UpdatedAt}} {
			if ro.raw != nil {
				return nil, sundial.Errorf(sundial.EInvalid, ro.field, "%s is set by the server and cannot be given", ro.field)
			}
		}
	} else {
		if c.Name != "" && c.Name != path {
			return nil, &sundial.Error{Code: sundial.EInvalid, Field: "name", Token: c.Name,
				Message: "name differs from the calendar named by the path; a calendar cannot be renamed"}
		}
		c.Name = path
		if req.Version != nil && string(req.Version) != "null" {
			v, err := strconv.ParseInt(string(req.Version), 10, 64)
			if err != nil || v < 0 {
				return nil, &sundial.Error{Code: sundial.EInvalid, Field: "version", Token: string(req.Version),
					Message: "version must be the calendar's version as read (an integer), or 0 for any"}
			}
			c.Version = v
		}
	}
	if err := c.Normalize(); err != nil {
		return nil, err
	}
	now := s.now()
	c.CreatedAt, c.UpdatedAt = now, now
	return c, nil
}

// handleCalendarCreate serves POST /api/v1/calendars.
func (s *Server) handleCalendarCreate(w http.ResponseWriter, r *http.Request) {
	var req calendarRequest
	if err := decodeJSON(w, r, &req, maxCalendarBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := req.calendar("", s)
	if err == nil {
		err = s.store.CalendarCreate(r.Context(), c)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.audit(r, "calendar.create", "calendar/"+c.Name, 0, nil, c)
	w.Header().Set("Location", "/api/v1/calendars/"+url.PathEscape(c.Name))
	writeJSON(w, http.StatusCreated, utcCalendar(c))
}

// handleCalendarList serves GET /api/v1/calendars: every calendar, by name.
func (s *Server) handleCalendarList(w http.ResponseWriter, r *http.Request) {
	cs, err := s.store.CalendarList(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if cs == nil {
		cs = []*sundial.Calendar{}
	}
	for _, c := range cs {
		utcCalendar(c)
	}
	writeJSON(w, http.StatusOK, listResponse[*sundial.Calendar]{Items: cs})
}

// handleCalendarGet serves GET /api/v1/calendars/{name}.
func (s *Server) handleCalendarGet(w http.ResponseWriter, r *http.Request) {
	c, err := s.store.CalendarGet(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, utcCalendar(c))
}

// handleCalendarReplace serves PUT /api/v1/calendars/{name}: the
// calendar's description, zone and entries are replaced. The fires of the
// tasks that reference it follow the change from the next planner pass on,
// but for those already planned (see docs/api.md, "Calendars").
func (s *Server) handleCalendarReplace(w http.ResponseWriter, r *http.Request) {
	var req calendarRequest
	if err := decodeJSON(w, r, &req, maxCalendarBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	name := r.PathValue("name")
	before, err := s.store.CalendarGet(r.Context(), name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := req.calendar(name, s)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	after, err := s.store.CalendarUpdate(r.Context(), c)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.audit(r, "calendar.update", "calendar/"+name, 0, before, after)
	s.sched.Poke()
	writeJSON(w, http.StatusOK, utcCalendar(after))
}

// handleCalendarDelete serves DELETE /api/v1/calendars/{name}. A calendar
// that tasks reference is not deleted: 409, naming them.
func (s *Server) handleCalendarDelete(w http.ResponseWriter, r *http.Request) {
	c, err := s.store.CalendarDelete(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.audit(r, "calendar.delete", "calendar/"+c.Name, 0, c, nil)
	w.WriteHeader(http.StatusNoContent)
}

// utcCalendar shows c's times in UTC, as every answer does.
func utcCalendar(c *sundial.Calendar) *sundial.Calendar {
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c
}
