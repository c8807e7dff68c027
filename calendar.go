package sundial

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sundialhq/sundial/cron"
)

// Limits on calendars.
const (
	MaxCalendarNameLen   = 64
	MaxCalendarEntries   = 1000
	MaxCalendarEntryLen  = 256
	MaxCalendarsPerTask  = 16
	calendarDateLayout   = "2006-01-02"
	calendarRangeDivider = ".."
)

// Calendar is a named set of days on which the tasks that reference it do
// not fire (Task.Calendars): a fire that falls on one is recorded SKIPPED
// with reason CALENDAR instead of running. It is stored once and shared.
//
// Each entry is one of:
//
//	2026-12-25              a date
//	2026-12-24..2026-12-31  a range of dates, both included
//	0 0 0 25 12 *           a cron expression: every date on which it fires
//
// A fire falls on an entry when the date of its scheduled time, on the wall
// clock of the calendar's Timezone, is the entry's date, within its range,
// or a date on which the expression fires at least once. So a cron entry
// picks days, and its second, minute and hour fields only decide whether a
// day has a fire (write them 0 0 0): "0 0 0 25 12 *" is every 25 December,
// "0 0 0 ? 1 MON#3" the third Monday of January, "0 0 0 ? 5 MONL" the last
// Monday of May, "0 0 0 * * SAT,SUN" every weekend.
type Calendar struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Timezone is the IANA zone whose dates the entries name; "" for the
	// zone of each task that references the calendar.
	Timezone  string    `json:"timezone"`
	Entries   []string  `json:"entries"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// calendarDay is a civil date, comparable in order.
type calendarDay struct {
	y int
	m time.Month
	d int
}

func (a calendarDay) before(b calendarDay) bool {
	if a.y != b.y {
		return a.y < b.y
	}
	if a.m != b.m {
		return a.m < b.m
	}
	return a.d < b.d
}

// CalendarRule is a calendar compiled for the planner: its entries parsed
// once. Its methods are safe for concurrent use.
type CalendarRule struct {
	name   string
	loc    *time.Location // nil: the task's zone
	ranges [][2]calendarDay
	crons  []*cron.Schedule
}

// Name is the calendar's name.
func (r *CalendarRule) Name() string { return r.name }

// Contains reports whether a fire at at, of a task whose zone is taskLoc,
// falls on the calendar (see Calendar).
func (r *CalendarRule) Contains(at time.Time, taskLoc *time.Location) bool {
	loc := r.loc
	if loc == nil {
		loc = taskLoc
	}
	at = at.In(loc)
	y, m, d := at.Date()
	day := calendarDay{y, m, d}
	for _, rg := range r.ranges {
		if !day.before(rg[0]) && !rg[1].before(day) {
			return true
		}
	}
	if len(r.crons) == 0 {
		return false
	}
	start := time.Date(y, m, d, 0, 0, 0, 0, loc)
	end := time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	for _, s := range r.crons {
		// The expression's first fire at or after the day's first instant.
		if n := s.Next(start.Add(-time.Nanosecond)); !n.IsZero() && n.Before(end) {
			return true
		}
	}
	return false
}

// Compile checks the calendar and returns its rule. Errors name the field
// (entries[i] for an entry).
func (c *Calendar) Compile() (*CalendarRule, error) {
	if err := CheckCalendarName("name", c.Name); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(c.Description) > MaxDescriptionLen || !utf8.ValidString(c.Description) || strings.ContainsRune(c.Description, 0) {
		return nil, Errorf(EInvalid, "description", "description must be valid UTF-8 text of at most %d characters", MaxDescriptionLen)
	}
	r := &CalendarRule{name: c.Name}
	if c.Timezone != "" {
		loc, err := LoadLocation(c.Timezone)
		if err != nil || c.Timezone == "Local" {
			return nil, &Error{Code: EInvalid, Field: "timezone", Token: c.Timezone,
				Message: "not an IANA time zone name (for example Europe/Berlin), or empty for the zone of each task"}
		}
		r.loc = loc
	}
	if len(c.Entries) > MaxCalendarEntries {
		return nil, Errorf(EInvalid, "entries", "a calendar has at most %d entries", MaxCalendarEntries)
	}
	for i, e := range c.Entries {
		field := fmt.Sprintf("entries[%d]", i)
		if len(e) > MaxCalendarEntryLen {
			return nil, Errorf(EInvalid, field, "an entry is at most %d bytes", MaxCalendarEntryLen)
		}
		if rg, ok, err := parseCalendarDates(field, e); err != nil {
			return nil, err
		} else if ok {
			r.ranges = append(r.ranges, rg)
			continue
		}
		s, err := cron.Parse(e)
		if err != nil {
			msg := err.Error()
			token := e
			if pe, ok := err.(*cron.ParseError); ok {
				msg, token = fmt.Sprintf("%s: %q: %s", pe.Field, pe.Token, pe.Reason), pe.Token
			}
			return nil, &Error{Code: EInvalid, Field: field, Token: token,
				Message: "not a date (2026-12-25), a range (2026-12-24..2026-12-31) or a cron expression: " + msg}
		}
		if s.Interval() > 0 {
			return nil, &Error{Code: EInvalid, Field: field, Token: e,
				Message: "an @every expression picks no days; give a cron expression such as 0 0 0 25 12 *"}
		}
		r.crons = append(r.crons, s)
	}
	return r, nil
}

// Normalize trims and canonicalises the calendar's entries (cron
// expressions in their normalised form, ranges as written), then checks it.
func (c *Calendar) Normalize() error {
	c.Name = strings.TrimSpace(c.Name)
	if c.Entries == nil {
		c.Entries = []string{}
	}
	for i, e := range c.Entries {
		c.Entries[i] = strings.TrimSpace(e)
		if s, err := cron.Parse(c.Entries[i]); err == nil && !looksLikeDate(c.Entries[i]) {
			c.Entries[i] = s.String()
		}
	}
	_, err := c.Compile()
	return err
}

// looksLikeDate reports whether an entry starts like a date (four digits
// and a dash), which no cron expression does.
func looksLikeDate(e string) bool {
	return len(e) >= 5 && e[4] == '-' && strings.Trim(e[:4], "0123456789") == ""
}

// parseCalendarDates reads a date or a range of dates; ok is false for an
// entry that is neither (a cron expression, perhaps).
func parseCalendarDates(field, e string) (rg [2]calendarDay, ok bool, err error) {
	if !looksLikeDate(e) {
		return rg, false, nil
	}
	from, to, isRange := strings.Cut(e, calendarRangeDivider)
	if !isRange {
		to = from
	}
	bad := &Error{Code: EInvalid, Field: field, Token: e,
		Message: "a date is YYYY-MM-DD, a range YYYY-MM-DD..YYYY-MM-DD"}
	a, err1 := time.Parse(calendarDateLayout, from)
	b, err2 := time.Parse(calendarDateLayout, to)
	if err1 != nil || err2 != nil {
		return rg, false, bad
	}
	if b.Before(a) {
		return rg, false, &Error{Code: EInvalid, Field: field, Token: e, Message: "the range ends before it starts"}
	}
	rg[0] = calendarDay{a.Year(), a.Month(), a.Day()}
	rg[1] = calendarDay{b.Year(), b.Month(), b.Day()}
	return rg, true, nil
}

// CheckCalendarName refuses a calendar name that is empty, longer than
// MaxCalendarNameLen, or not made of letters, digits, '.', '_' and '-'
// starting with a letter or digit.
func CheckCalendarName(field, name string) error {
	bad := &Error{Code: EInvalid, Field: field, Token: name,
		Message: fmt.Sprintf("a calendar name is 1 to %d letters, digits, '.', '_' or '-', starting with a letter or digit", MaxCalendarNameLen)}
	if name == "" || len(name) > MaxCalendarNameLen {
		return bad
	}
	for i := range len(name) {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return bad
		}
	}
	return nil
}

// CalendarSet is the compiled calendars by name, as the planner holds them.
type CalendarSet map[string]*CalendarRule

// Skips reports whether the fire at at of t falls on one of the calendars
// t references, and which. A calendar missing from the set (deleted while
// a task referencing it was being written) skips nothing.
func (cs CalendarSet) Skips(t *Task, at time.Time, loc *time.Location) (string, bool) {
	for _, name := range t.Calendars {
		if r := cs[name]; r != nil && r.Contains(at, loc) {
			return name, true
		}
	}
	return "", false
}
