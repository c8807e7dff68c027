package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

const calendarCols = `name, description, timezone, entries_json, version, created_at, updated_at`

// calendarQueries are the statements of the calendar methods, rendered in
// a dialect.
type calendarQueries struct {
	Create, Get, List, Versions, Update, Delete, Referencing string
}

func newCalendarQueries(d Dialect) calendarQueries {
	b := d.bind
	return calendarQueries{
		Create:   b(`INSERT INTO calendars (` + calendarCols + `) VALUES (?, ?, ?, ?, 1, ?, ?)`),
		Get:      b(`SELECT ` + calendarCols + ` FROM calendars WHERE name = ?`),
		List:     `SELECT ` + calendarCols + ` FROM calendars ORDER BY name`,
		Versions: `SELECT name, version FROM calendars`,
		// The version given, or any when 0.
		Update: b(`UPDATE calendars SET description = ?, timezone = ?, entries_json = ?, version = version + 1, updated_at = ?
			WHERE name = ? AND (? = 0 OR version = ?)`),
		Delete: b(`DELETE FROM calendars WHERE name = ?`),
		// The live tasks whose calendars_json may name the calendar (LIKE
		// also matches '_' anywhere): CalendarDelete checks each.
		Referencing: b(`SELECT id, name, calendars_json FROM tasks WHERE deleted = ` + d.False + ` AND calendars_json LIKE ? ORDER BY id`),
	}
}

func scanCalendar(sc sqlrow.Scanner) (*sundial.Calendar, error) {
	var (
		c                sundial.Calendar
		entries          string
		created, updated int64
	)
	if err := sc.Scan(&c.Name, &c.Description, &c.Timezone, &entries, &c.Version, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(entries), &c.Entries); err != nil {
		return nil, fmt.Errorf("decode entries of calendar %s: %w", c.Name, err)
	}
	if c.Entries == nil {
		c.Entries = []string{}
	}
	c.CreatedAt, c.UpdatedAt = sqlrow.FromMicros(created), sqlrow.FromMicros(updated)
	return &c, nil
}

func entriesJSON(c *sundial.Calendar) (string, error) {
	if len(c.Entries) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(c.Entries)
	if err != nil {
		return "", fmt.Errorf("encode entries: %w", err)
	}
	return string(b), nil
}

// CalendarCreate inserts c at version 1; a name taken is EConflict.
func (p *Plain) CalendarCreate(ctx context.Context, c *sundial.Calendar) (err error) {
	defer p.classify(&err)
	ej, err := entriesJSON(c)
	if err != nil {
		return err
	}
	_, err = p.w.Exec(ctx, p.cq.Create, c.Name, c.Description, c.Timezone, ej,
		sqlrow.Micros(c.CreatedAt), sqlrow.Micros(c.UpdatedAt))
	if err != nil {
		if p.q.d.Duplicate != nil && p.q.d.Duplicate(err) {
			return sundial.Errorf(sundial.EConflict, "name", "a calendar named %q exists", c.Name)
		}
		return p.wrap(err, "create calendar %s", c.Name)
	}
	c.Version = 1
	c.CreatedAt, c.UpdatedAt = sqlrow.Norm(c.CreatedAt), sqlrow.Norm(c.UpdatedAt)
	return nil
}

// CalendarGet returns the calendar name, or ENotFound.
func (p *Plain) CalendarGet(ctx context.Context, name string) (_ *sundial.Calendar, err error) {
	defer p.classify(&err)
	return p.calendarGet(ctx, p.r, name)
}

func (p *Plain) calendarGet(ctx context.Context, db DB, name string) (*sundial.Calendar, error) {
	c, err := scanCalendar(db.QueryRow(ctx, p.cq.Get, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("", "calendar %s not found", name)
	}
	if err != nil {
		return nil, p.wrap(err, "get calendar %s", name)
	}
	return c, nil
}

// CalendarList returns every calendar, by name.
func (p *Plain) CalendarList(ctx context.Context) (_ []*sundial.Calendar, err error) {
	defer p.classify(&err)
	rows, err := p.r.Query(ctx, p.cq.List)
	out, err := scanAll(rows, err, scanCalendar)
	if err != nil {
		return nil, p.wrap(err, "list calendars")
	}
	return out, nil
}

// CalendarVersions returns the version of every calendar, by name.
func (p *Plain) CalendarVersions(ctx context.Context) (_ map[string]int64, err error) {
	defer p.classify(&err)
	rows, err := p.r.Query(ctx, p.cq.Versions)
	if err != nil {
		return nil, p.wrap(err, "read calendar versions")
	}
	defer rows.Close()
	out := make(map[string]int64)
	for rows.Next() {
		var (
			name string
			v    int64
		)
		if err := rows.Scan(&name, &v); err != nil {
			return nil, p.wrap(err, "read calendar versions")
		}
		out[name] = v
	}
	if err := rows.Err(); err != nil {
		return nil, p.wrap(err, "read calendar versions")
	}
	return out, nil
}

// CalendarUpdate replaces the description, zone and entries of the
// calendar c.Name, if its version is c.Version (any when 0), and returns it
// as stored. A missing calendar is ENotFound, another version EConflict.
func (p *Plain) CalendarUpdate(ctx context.Context, c *sundial.Calendar) (_ *sundial.Calendar, err error) {
	defer p.classify(&err)
	ej, err := entriesJSON(c)
	if err != nil {
		return nil, err
	}
	n, err := p.w.Exec(ctx, p.cq.Update, c.Description, c.Timezone, ej, sqlrow.Micros(c.UpdatedAt),
		c.Name, c.Version, c.Version)
	if err != nil {
		return nil, p.wrap(err, "update calendar %s", c.Name)
	}
	cur, err := p.calendarGet(ctx, p.w, c.Name)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, &sundial.Error{Code: sundial.EConflict, Field: "version", Token: fmt.Sprint(c.Version),
			Message: fmt.Sprintf("calendar %s is at version %d, not %d: read it again", c.Name, cur.Version, c.Version)}
	}
	return cur, nil
}

// maxNamedReferences bounds the tasks a refused CalendarDelete names.
const maxNamedReferences = 10

// CalendarDelete deletes the calendar name and returns it as it was. A
// calendar that live tasks reference is not deleted: EConflict naming
// them (up to ten, and how many there are).
func (p *Plain) CalendarDelete(ctx context.Context, name string) (_ *sundial.Calendar, err error) {
	defer p.classify(&err)
	c, err := p.calendarGet(ctx, p.w, name)
	if err != nil {
		return nil, err
	}
	quoted, _ := json.Marshal(name)
	rows, err := p.w.Query(ctx, p.cq.Referencing, "%"+string(quoted)+"%")
	type ref struct {
		id   int64
		name string
	}
	refs, err := scanAll(rows, err, func(sc sqlrow.Scanner) (ref, error) {
		var (
			r    ref
			cals sql.NullString
		)
		if err := sc.Scan(&r.id, &r.name, &cals); err != nil {
			return r, err
		}
		var names []string
		if cals.Valid {
			if err := json.Unmarshal([]byte(cals.String), &names); err != nil {
				return r, fmt.Errorf("decode calendars of task %d: %w", r.id, err)
			}
		}
		if !slices.Contains(names, name) {
			r.id = 0 // LIKE matched another name
		}
		return r, nil
	})
	if err != nil {
		return nil, p.wrap(err, "find the tasks of calendar %s", name)
	}
	var named []string
	count := 0
	for _, r := range refs {
		if r.id == 0 {
			continue
		}
		count++
		if len(named) < maxNamedReferences {
			named = append(named, fmt.Sprintf("%s (%d)", r.name, r.id))
		}
	}
	if count > 0 {
		more := ""
		if count > len(named) {
			more = fmt.Sprintf(" and %d more", count-len(named))
		}
		return nil, &sundial.Error{Code: sundial.EConflict, Field: "name", Token: name,
			Message: fmt.Sprintf("calendar %s is referenced by %d task(s): %s%s; remove it from their calendars first",
				name, count, strings.Join(named, ", "), more)}
	}
	n, err := p.w.Exec(ctx, p.cq.Delete, name)
	if err != nil {
		return nil, p.wrap(err, "delete calendar %s", name)
	}
	if n == 0 { // deleted meanwhile by another request
		return nil, sqlrow.NotFound("", "calendar %s not found", name)
	}
	return c, nil
}
