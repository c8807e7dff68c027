package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

// testCalendar: calendars are created, read, listed, updated (with and
// without the version they were read at) and deleted; a name taken is a
// conflict; a calendar that a live task references is not deleted, and
// the refusal names the task; a task's dst and calendars round-trip.
func testCalendar(t *testing.T, open Opener) {
	t.Run("CRUD", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		hol := &sundial.Calendar{Name: "us-holidays", Description: "US", Timezone: "America/New_York",
			Entries: []string{"2026-12-25", "2026-12-24..2026-12-31", "0 0 0 ? 11 4#4"}, CreatedAt: t0, UpdatedAt: t0}
		wk := &sundial.Calendar{Name: "weekends", Entries: []string{"0 0 0 * * SAT,SUN"}, CreatedAt: t0, UpdatedAt: t0}
		for _, c := range []*sundial.Calendar{hol, wk} {
			if err := f.s.CalendarCreate(f.ctx, c); err != nil {
				t.Fatalf("CalendarCreate(%s): %v", c.Name, err)
			}
			if c.Version != 1 {
				t.Fatalf("CalendarCreate(%s): version %d, want 1", c.Name, c.Version)
			}
		}
		dup := &sundial.Calendar{Name: "weekends", Entries: []string{}, CreatedAt: t0, UpdatedAt: t0}
		if err := f.s.CalendarCreate(f.ctx, dup); sundial.ErrorCode(err) != sundial.EConflict {
			t.Fatalf("CalendarCreate(same name) = %v, want conflict", err)
		}
		got, err := f.s.CalendarGet(f.ctx, "us-holidays")
		if err != nil || got.Description != "US" || got.Timezone != "America/New_York" ||
			!slices.Equal(got.Entries, hol.Entries) || got.Version != 1 || !got.CreatedAt.Equal(t0) {
			t.Fatalf("CalendarGet = %+v, %v; want %+v", got, err, hol)
		}
		if _, err := f.s.CalendarGet(f.ctx, "nope"); sundial.ErrorCode(err) != sundial.ENotFound {
			t.Fatalf("CalendarGet(unknown) = %v, want not_found", err)
		}
		list, err := f.s.CalendarList(f.ctx)
		if err != nil || len(list) != 2 || list[0].Name != "us-holidays" || list[1].Name != "weekends" {
			t.Fatalf("CalendarList = %+v, %v", list, err)
		}
		vs, err := f.s.CalendarVersions(f.ctx)
		if err != nil || len(vs) != 2 || vs["weekends"] != 1 {
			t.Fatalf("CalendarVersions = %v, %v", vs, err)
		}

		// An update at the version read, then one at a stale version.
		upd := &sundial.Calendar{Name: "weekends", Description: "Sat+Sun", Entries: []string{"0 0 0 * * SAT"},
			Version: 1, UpdatedAt: at(10)}
		got, err = f.s.CalendarUpdate(f.ctx, upd)
		if err != nil || got.Version != 2 || got.Description != "Sat+Sun" || !slices.Equal(got.Entries, []string{"0 0 0 * * SAT"}) ||
			!got.UpdatedAt.Equal(at(10)) || !got.CreatedAt.Equal(t0) {
			t.Fatalf("CalendarUpdate = %+v, %v", got, err)
		}
		if _, err := f.s.CalendarUpdate(f.ctx, upd); sundial.ErrorCode(err) != sundial.EConflict {
			t.Fatalf("CalendarUpdate(stale version) = %v, want conflict", err)
		}
		upd.Version, upd.Entries = 0, nil // any version; no entries
		if got, err = f.s.CalendarUpdate(f.ctx, upd); err != nil || got.Version != 3 || len(got.Entries) != 0 || got.Entries == nil {
			t.Fatalf("CalendarUpdate(any version) = %+v, %v", got, err)
		}
		if _, err := f.s.CalendarUpdate(f.ctx, &sundial.Calendar{Name: "nope"}); sundial.ErrorCode(err) != sundial.ENotFound {
			t.Fatalf("CalendarUpdate(unknown) = %v, want not_found", err)
		}
		if vs, _ := f.s.CalendarVersions(f.ctx); vs["weekends"] != 3 {
			t.Fatalf("CalendarVersions after updates = %v, want weekends at 3", vs)
		}

		del, err := f.s.CalendarDelete(f.ctx, "weekends")
		if err != nil || del.Name != "weekends" {
			t.Fatalf("CalendarDelete = %+v, %v", del, err)
		}
		if _, err := f.s.CalendarDelete(f.ctx, "weekends"); sundial.ErrorCode(err) != sundial.ENotFound {
			t.Fatalf("CalendarDelete twice = %v, want not_found", err)
		}
		if list, _ := f.s.CalendarList(f.ctx); len(list) != 1 {
			t.Fatalf("CalendarList after delete = %d calendars, want 1", len(list))
		}
	})

	t.Run("Referenced", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		for _, name := range []string{"a_b", "axb", "other"} {
			if err := f.s.CalendarCreate(f.ctx, &sundial.Calendar{Name: name, Entries: []string{"2026-01-01"},
				CreatedAt: t0, UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
		tk := f.task("uses-a_b", func(tk *sundial.Task) { tk.Calendars, tk.DST = []string{"other", "a_b"}, "skip_gap" })
		got := f.getTask(tk.ID)
		if !slices.Equal(got.Calendars, []string{"other", "a_b"}) || got.DST != "skip_gap" {
			t.Fatalf("task read back: calendars %v, dst %q", got.Calendars, got.DST)
		}
		_, err := f.s.CalendarDelete(f.ctx, "a_b")
		if sundial.ErrorCode(err) != sundial.EConflict || !strings.Contains(err.Error(), "uses-a_b") {
			t.Fatalf("CalendarDelete(referenced) = %v, want a conflict naming uses-a_b", err)
		}
		// "axb" matches the LIKE pattern of "a_b", but no task names it.
		if _, err := f.s.CalendarDelete(f.ctx, "axb"); err != nil {
			t.Fatalf("CalendarDelete(unreferenced) = %v", err)
		}
		// Once the task no longer references it (or is deleted), it goes.
		got.Calendars = []string{"other"}
		if err := f.s.TaskUpdate(f.ctx, got, at(1)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.CalendarDelete(f.ctx, "a_b"); err != nil {
			t.Fatalf("CalendarDelete after the task dropped it = %v", err)
		}
		if err := f.s.TaskDelete(f.ctx, tk.ID, at(2)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.CalendarDelete(f.ctx, "other"); err != nil {
			t.Fatalf("CalendarDelete after the task was deleted = %v", err)
		}
		// A task without any reads back with none, and the Vixie rule.
		plain := f.getTask(f.task("plain").ID)
		if plain.Calendars == nil || len(plain.Calendars) != 0 || plain.DST != "vixie" {
			t.Fatalf("plain task: calendars %#v, dst %q; want [] and vixie", plain.Calendars, plain.DST)
		}
	})

	t.Run("AdmitLeavesOutCalendarSkips", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("holidays")
		failed := f.run(tk.ID, at(0), sundial.RunFailed)
		// More CALENDAR skips than MaxSkipsSinceLast, then the failure
		// policy's own skip: it must still be seen.
		for i := range sundial.MaxSkipsSinceLast + 2 {
			s := at(1 + i)
			fin := s
			r := &sundial.Run{TaskID: tk.ID, FireKey: sundial.ScheduledFireKey(s), Trigger: sundial.TriggerSchedule,
				ScheduledTime: s, Status: sundial.RunSkipped, SkipReason: sundial.SkipCalendar, Attempt: 1,
				FinishedAt: &fin, Error: sundial.CalendarSkipError("x")}
			if err := f.s.RunInsert(f.ctx, r); err != nil {
				t.Fatalf("RunInsert(calendar skip): %v", err)
			}
		}
		policySkip := f.run(tk.ID, at(100), sundial.RunSkipped)
		run := f.run(tk.ID, at(101), sundial.RunScheduled)
		var st sundial.AdmitState
		if _, err := f.s.RunAdmit(f.ctx, run.ID, run.Fence, at(101), capture(&st,
			sundial.Admission{Status: sundial.RunRunning, Attempt: 1})); err != nil {
			t.Fatalf("RunAdmit: %v", err)
		}
		if st.LastEffective == nil || st.LastEffective.ID != failed.ID {
			t.Fatalf("LastEffective = %v, want run %d", st.LastEffective, failed.ID)
		}
		eqIDs(t, "SkipsSinceLast", runIDs(st.SkipsSinceLast), []int64{policySkip.ID})
	})
}
