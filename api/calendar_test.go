package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// TestCalendarAPI: a calendar is created with its entries normalised, read,
// listed, replaced at its version; a task references it (an unknown one is
// 400 naming calendars[i]); its upcoming fires leave out the calendar's
// days; and it cannot be deleted while the task references it (409 naming
// the task).
func TestCalendarAPI(t *testing.T) {
	t.Parallel()
	onEveryBackend(t, func(t *testing.T, b *storeBundle) {
		start := time.Date(2026, 12, 23, 12, 0, 0, 0, time.UTC)
		b.setNow(start)
		var cal sundial.Calendar
		want(t, b.do(t, http.MethodPost, "/api/v1/calendars", map[string]any{
			"name": "holidays", "entries": []string{" 2026-12-25 ", "2026-12-31..2027-01-01", "0 0 0 ? 11 thu#4"}}),
			http.StatusCreated, &cal)
		if cal.Version != 1 || strings.Join(cal.Entries, "|") != "2026-12-25|2026-12-31..2027-01-01|0 0 0 ? 11 THU#4" || cal.Timezone != "" {
			t.Fatalf("created %+v", cal)
		}
		wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks", task("uses-nope", map[string]any{
			"cron_expr": "0 0 9 * * *", "calendars": []string{"holidays", "nope"}})),
			http.StatusBadRequest, errorDetail{Code: "invalid", Field: "calendars[1]", Token: "nope",
				Message: "no calendar is named nope (GET /api/v1/calendars lists them)"})
		tk := b.create(t, task("daily", map[string]any{"cron_expr": "0 0 9 * * *", "timezone": "America/New_York",
			"calendars": []string{"holidays"}, "dst": "Skip_Gap"}))
		if tk.DST != "skip_gap" || len(tk.Calendars) != 1 {
			t.Fatalf("task dst %q calendars %v", tk.DST, tk.Calendars)
		}

		// Upcoming: 9:00 New York each day (from 07:00 on 12-23) but 12-25.
		var up upcomingResponse
		want(t, b.do(t, http.MethodGet, taskPath(tk.ID, "/upcoming?limit=5"), nil), http.StatusOK, &up)
		var got []string
		for _, n := range up.Next {
			got = append(got, n.Format("01-02"))
		}
		if strings.Join(got, " ") != "12-23 12-24 12-26 12-27 12-28" {
			t.Errorf("upcoming %v, want 12-23 12-24 12-26 12-27 12-28", got)
		}

		// Replaced at its version: the next fires follow.
		want(t, b.do(t, http.MethodPut, "/api/v1/calendars/holidays", map[string]any{
			"entries": []string{"0 0 0 * * SAT,SUN"}, "version": 1}), http.StatusOK, &cal)
		if cal.Version != 2 {
			t.Fatalf("replaced: version %d", cal.Version)
		}
		want(t, b.do(t, http.MethodGet, taskPath(tk.ID, "/upcoming?limit=4"), nil), http.StatusOK, &up)
		got = got[:0]
		for _, n := range up.Next {
			got = append(got, n.Format("01-02"))
		}
		if strings.Join(got, " ") != "12-23 12-24 12-25 12-28" {
			t.Errorf("upcoming after the change %v, want 12-23 12-24 12-25 12-28 (a weekend skipped)", got)
		}
		var list listResponse[*sundial.Calendar]
		want(t, b.do(t, http.MethodGet, "/api/v1/calendars", nil), http.StatusOK, &list)
		if len(list.Items) != 1 || list.Items[0].Name != "holidays" {
			t.Fatalf("list %+v", list.Items)
		}

		rec := b.do(t, http.MethodDelete, "/api/v1/calendars/holidays", nil)
		if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "daily (") {
			t.Fatalf("delete of a referenced calendar: %d %s, want 409 naming the task", rec.Code, rec.Body)
		}
		want(t, b.do(t, http.MethodPatch, taskPath(tk.ID), map[string]any{"calendars": nil}), http.StatusOK, nil)
		want(t, b.do(t, http.MethodDelete, "/api/v1/calendars/holidays", nil), http.StatusNoContent, nil)
		want(t, b.do(t, http.MethodGet, "/api/v1/calendars/holidays", nil), http.StatusNotFound, nil)
	})
}
