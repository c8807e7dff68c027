package scheduler

import (
	"context"
	"log/slog"
	"maps"

	"github.com/sundialhq/sundial"
)

// calendarStore is what the planner's calendar cache needs of the store.
type calendarStore interface {
	CalendarVersions(ctx context.Context) (map[string]int64, error)
	CalendarList(ctx context.Context) ([]*sundial.Calendar, error)
}

// calendarCache holds the calendars compiled (sundial.CalendarSet) for the
// planner. Each pass reads the calendars' names and versions, one small
// read, and reloads them all only when one was created, changed or
// deleted since: a change made on any node is seen by every node's next
// pass. It is used by the planner's goroutine only.
type calendarCache struct {
	store    calendarStore
	log      *slog.Logger
	versions map[string]int64
	set      sundial.CalendarSet
}

// load returns the calendars as they are now. If they cannot be read, it
// returns the set it has (and the error): a calendar change is then seen
// a pass later.
func (c *calendarCache) load(ctx context.Context) (sundial.CalendarSet, error) {
	vs, err := c.store.CalendarVersions(ctx)
	if err != nil {
		return c.set, err
	}
	if c.set != nil && maps.Equal(vs, c.versions) {
		return c.set, nil
	}
	cals, err := c.store.CalendarList(ctx)
	if err != nil {
		return c.set, err
	}
	set := make(sundial.CalendarSet, len(cals))
	versions := make(map[string]int64, len(cals))
	for _, cal := range cals {
		versions[cal.Name] = cal.Version
		rule, err := cal.Compile()
		if err != nil {
			// Checked when written; only a zone removed from the system's
			// database since can fail here. The calendar skips nothing.
			c.log.Error("calendar does not compile", "calendar", cal.Name, "err", err)
			continue
		}
		set[cal.Name] = rule
	}
	c.set, c.versions = set, versions
	return set, nil
}
