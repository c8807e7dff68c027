package sundial_test

import (
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestCalendarContains: a fire falls on a calendar when its date, on the
// calendar's zone (or the task's), is an entry's date, within its range, or
// a day on which its cron expression fires.
func TestCalendarContains(t *testing.T) {
	t.Parallel()
	ny, _ := time.LoadLocation("America/New_York")
	berlin, _ := time.LoadLocation("Europe/Berlin")
	us := &sundial.Calendar{Name: "us", Entries: []string{"2026-07-03", "2026-12-24..2026-12-31",
		"0 0 0 1 1 *", "0 0 0 ? 5 MONL", "0 0 0 ? 11 THU#4", "0 30 14 ? 1 MON#3"}}
	if err := us.Normalize(); err != nil {
		t.Fatal(err)
	}
	rule, err := us.Compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Time
		loc  *time.Location
		want bool
	}{
		{time.Date(2026, 7, 3, 9, 0, 0, 0, ny), ny, true},
		{time.Date(2026, 7, 4, 9, 0, 0, 0, ny), ny, false},
		{time.Date(2026, 12, 24, 0, 0, 0, 0, ny), ny, true},           // range start
		{time.Date(2026, 12, 31, 23, 59, 59, 0, ny), ny, true},        // range end, included
		{time.Date(2027, 1, 1, 12, 0, 0, 0, ny), ny, true},            // 0 0 0 1 1 *
		{time.Date(2027, 1, 2, 0, 0, 0, 0, ny), ny, false},            // after the range and New Year
		{time.Date(2026, 5, 25, 8, 0, 0, 0, ny), ny, true},            // the last Monday of May 2026
		{time.Date(2026, 5, 18, 8, 0, 0, 0, ny), ny, false},           // another Monday
		{time.Date(2026, 11, 26, 8, 0, 0, 0, ny), ny, true},           // Thanksgiving 2026
		{time.Date(2026, 1, 19, 0, 0, 0, 0, ny), ny, true},            // third Monday of January: its time fields do not matter
		{time.Date(2026, 1, 19, 23, 0, 0, 0, ny), ny, true},           // ... all day
		{time.Date(2026, 7, 3, 3, 0, 0, 0, time.UTC), ny, false},      // 07-02 23:00 in New York
		{time.Date(2026, 7, 3, 3, 0, 0, 0, time.UTC), time.UTC, true}, // the task's zone decides
		{time.Date(2026, 7, 3, 23, 30, 0, 0, berlin), berlin, true},   // in Berlin: 07-03
		{time.Date(2026, 7, 4, 0, 30, 0, 0, berlin), berlin, false},   // 07-04 in Berlin
		{time.Date(2026, 7, 4, 0, 30, 0, 0, berlin), time.UTC, true},  // but 07-03 22:30 in UTC
	} {
		if got := rule.Contains(c.at, c.loc); got != c.want {
			t.Errorf("Contains(%s in %s) = %v, want %v", c.at, c.loc, got, c.want)
		}
	}
	// A calendar with a zone of its own reads dates there, whatever the task's.
	nyCal := &sundial.Calendar{Name: "ny", Timezone: "America/New_York", Entries: []string{"2026-12-25"}}
	r, err := nyCal.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if !r.Contains(time.Date(2026, 12, 26, 3, 0, 0, 0, time.UTC), berlin) { // 12-25 22:00 in New York
		t.Error("a calendar in New York does not hold 12-26 03:00Z (12-25 in New York)")
	}
	if r.Contains(time.Date(2026, 12, 25, 3, 0, 0, 0, time.UTC), berlin) { // 12-24 22:00 in New York
		t.Error("a calendar in New York holds 12-25 03:00Z (12-24 in New York)")
	}
	// On a day with a daylight-saving change the day is still one date.
	if !r.Contains(time.Date(2026, 12, 25, 23, 59, 59, 0, ny), nil) {
		t.Error("the end of the day is not on it")
	}
}

func TestCalendarErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cal   sundial.Calendar
		field string
	}{
		{sundial.Calendar{Name: ""}, "name"},
		{sundial.Calendar{Name: "a b"}, "name"},
		{sundial.Calendar{Name: "-x"}, "name"},
		{sundial.Calendar{Name: "x", Timezone: "Mars/Olympus"}, "timezone"},
		{sundial.Calendar{Name: "x", Timezone: "Local"}, "timezone"},
		{sundial.Calendar{Name: "x", Entries: []string{"2026-12-25", "2026-13-01"}}, "entries[1]"},
		{sundial.Calendar{Name: "x", Entries: []string{"2026-12-31..2026-12-24"}}, "entries[0]"},
		{sundial.Calendar{Name: "x", Entries: []string{"christmas"}}, "entries[0]"},
		{sundial.Calendar{Name: "x", Entries: []string{"@every 1h"}}, "entries[0]"},
		{sundial.Calendar{Name: "x", Entries: []string{"0 0 0 30 2 *"}}, "entries[0]"},
	} {
		err := c.cal.Normalize()
		if e, ok := err.(*sundial.Error); !ok || e.Code != sundial.EInvalid || e.Field != c.field {
			t.Errorf("%+v: %v, want invalid on %s", c.cal, err, c.field)
		}
	}
}

func TestTaskDSTAndCalendars(t *testing.T) {
	t.Parallel()
	base := func() *sundial.Task {
		return &sundial.Task{Name: "t", CronExpr: "0 30 2 * * *", TargetURL: "https://example.com/"}
	}
	tk := base()
	tk.DST, tk.Calendars = "SKIP_GAP", []string{"a", "b.c"}
	if err := tk.Normalize(time.Now()); err != nil || tk.DST != "skip_gap" {
		t.Fatalf("Normalize: %v, dst %q", err, tk.DST)
	}
	tk.Timezone = "America/New_York"
	next := tk.NextAfter(time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC); next == nil || !next.Equal(want) {
		t.Errorf("NextAfter across the gap under skip_gap = %v, want %s", next, want)
	}
	for _, c := range []struct {
		mod   func(*sundial.Task)
		field string
	}{
		{func(t *sundial.Task) { t.DST = "both" }, "dst"},
		{func(t *sundial.Task) { t.CronExpr, t.RunAt, t.DST = "", new(time.Now().Add(time.Hour)), "repeat" }, "dst"},
		{func(t *sundial.Task) {
			t.CronExpr, t.RunAt, t.Calendars = "", new(time.Now().Add(time.Hour)), []string{"a"}
		}, "calendars"},
		{func(t *sundial.Task) { t.Calendars = []string{"a", "a"} }, "calendars[1]"},
		{func(t *sundial.Task) { t.Calendars = []string{"ok", "no way"} }, "calendars[1]"},
	} {
		tk := base()
		c.mod(tk)
		err := tk.Normalize(time.Now())
		if e, ok := err.(*sundial.Error); !ok || e.Field != c.field {
			t.Errorf("%v, want invalid on %s", err, c.field)
		}
	}
	// Given neither, a task hashes as before they existed.
	a, b := base(), base()
	b.DST, b.Calendars = "", []string{}
	if a.InputHash() != b.InputHash() {
		t.Error("an empty dst and calendars change the input hash")
	}
}
