package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// backfillBody is the body of a backfill of [from, to].
func backfillBody(from, to string, dry bool) map[string]any {
	return map[string]any{"from": from, "to": to, "dry_run": dry}
}

// backfillRuns are the BACKFILL runs of task id, oldest first.
func (b *storeBundle) backfillRuns(t *testing.T, id int64) []*sundial.Run {
	t.Helper()
	runs, err := b.store.RunList(t.Context(), sundial.RunListParams{TaskID: id, Trigger: []sundial.Trigger{sundial.TriggerBackfill}})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return runs
}

// TestTaskBackfill: a dry run lists the fire times of the range, both ends
// included, oldest first, and makes nothing; a backfill makes one BACKFILL
// run per time, scheduled at it; repeated, and over a range that overlaps,
// it makes runs only for the times that have none.
func TestTaskBackfill(t *testing.T) {
	t.Parallel()
	b := setupStore(t) // now: 2026-01-01T00:00:00Z
	tk := b.create(t, task("hourly", map[string]any{"cron_expr": "0 0 * * * *"}))
	path := taskPath(tk.ID, "/backfill")
	hour := func(h int) time.Time { return time.Date(2025, 12, 31, h, 0, 0, 0, time.UTC) }
	times := func(resp backfillResponse) []time.Time {
		var out []time.Time
		for _, it := range resp.Items {
			out = append(out, it.ScheduledTime)
		}
		return out
	}
	sameTimes := func(t *testing.T, got []time.Time, want ...time.Time) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("times %v, want %v", got, want)
		}
		for i := range got {
			if !got[i].Equal(want[i]) {
				t.Fatalf("times %v, want %v", got, want)
			}
		}
	}

	// 19:30 to 23:00: 20:00, 21:00, 22:00 and 23:00 (the end is in).
	var dry backfillResponse
	want(t, b.do(t, http.MethodPost, path, backfillBody("2025-12-31T19:30:00Z", "2025-12-31T23:00:00Z", true)), http.StatusOK, &dry)
	sameTimes(t, times(dry), hour(20), hour(21), hour(22), hour(23))
	if dry.Count != 4 || dry.Created != 0 || dry.Existing != 0 || !dry.DryRun {
		t.Errorf("dry run: %+v", dry)
	}
	for _, it := range dry.Items {
		if it.RunID != 0 || it.Created || it.FireKey != sundial.BackfillFireKey(it.ScheduledTime) {
			t.Errorf("dry run item %+v", it)
		}
	}
	if runs := b.backfillRuns(t, tk.ID); len(runs) != 0 {
		t.Fatalf("a dry run made %d runs", len(runs))
	}

	var done backfillResponse
	want(t, b.do(t, http.MethodPost, path, backfillBody("2025-12-31T19:30:00Z", "2025-12-31T23:00:00Z", false)), http.StatusAccepted, &done)
	if done.Count != 4 || done.Created != 4 || done.Existing != 0 {
		t.Errorf("backfill: %+v", done)
	}
	runs := b.backfillRuns(t, tk.ID)
	var scheduled []time.Time
	for i, r := range runs {
		scheduled = append(scheduled, r.ScheduledTime)
		if r.Status != sundial.RunScheduled || r.NodeID != "" || r.ID != done.Items[i].RunID || !done.Items[i].Created {
			t.Errorf("run %d: %+v, item %+v", i, r, done.Items[i])
		}
	}
	sameTimes(t, scheduled, hour(20), hour(21), hour(22), hour(23))

	// Again: nothing new.
	var again backfillResponse
	want(t, b.do(t, http.MethodPost, path, backfillBody("2025-12-31T19:30:00Z", "2025-12-31T23:00:00Z", false)), http.StatusAccepted, &again)
	if again.Count != 4 || again.Created != 0 || again.Existing != 4 {
		t.Errorf("backfill again: %+v", again)
	}
	for i, it := range again.Items {
		if it.Created || it.RunID != runs[i].ID || it.Status != sundial.RunScheduled {
			t.Errorf("backfill again, item %d: %+v", i, it)
		}
	}
	// Overlapping, up to now: 22:00 and 23:00 have runs, midnight not.
	var more backfillResponse
	want(t, b.do(t, http.MethodPost, path, backfillBody("2025-12-31T22:00:00Z", "2026-01-01T00:00:00Z", false)), http.StatusAccepted, &more)
	if more.Count != 3 || more.Created != 1 || more.Existing != 2 || !more.Items[2].Created {
		t.Errorf("overlapping backfill: %+v", more)
	}
	if runs := b.backfillRuns(t, tk.ID); len(runs) != 5 {
		t.Fatalf("%d backfilled runs, want 5", len(runs))
	}
	// A dry run shows what is there.
	want(t, b.do(t, http.MethodPost, path, backfillBody("2025-12-31T19:00:00Z", "2025-12-31T20:00:00Z", true)), http.StatusOK, &dry)
	if dry.Count != 2 || dry.Existing != 1 || dry.Items[0].RunID != 0 || dry.Items[1].RunID != runs[0].ID {
		t.Errorf("dry run over a backfilled time: %+v", dry)
	}
	entries, err := b.store.AuditList(t.Context(), sundial.AuditListParams{Action: "task.backfill"})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("%d task.backfill audit entries, want 3 (not the dry runs)", len(entries))
	}

	// Cancelled: every backfilled run not ended, once.
	var canceled backfillCancelResponse
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/backfill:cancel"), nil), http.StatusOK, &canceled)
	if len(canceled.Canceled) != 5 || !canceled.Canceled[0].ScheduledTime.Equal(hour(20)) {
		t.Fatalf("backfill cancel: %d runs", len(canceled.Canceled))
	}
	for _, r := range b.backfillRuns(t, tk.ID) {
		if r.Status != sundial.RunCanceled {
			t.Errorf("run %d is %s after the cancel", r.ID, r.Status)
		}
	}
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/backfill:cancel"), nil), http.StatusOK, &canceled)
	if len(canceled.Canceled) != 0 {
		t.Errorf("backfill cancel again: %d runs", len(canceled.Canceled))
	}
	// A canceled time stays backfilled: a backfill does not run it again.
	want(t, b.do(t, http.MethodPost, path, backfillBody("2025-12-31T20:00:00Z", "2025-12-31T21:00:00Z", false)), http.StatusAccepted, &again)
	if again.Created != 0 || again.Existing != 2 || again.Items[0].Status != sundial.RunCanceled {
		t.Errorf("backfill of canceled times: %+v", again)
	}
}

// TestTaskBackfillRefused: a bad range, a range of more than MaxBackfill
// times, a task without a schedule and an unknown task are refused,
// naming the field, and make nothing.
func TestTaskBackfillRefused(t *testing.T) {
	t.Parallel()
	b := setupStore(t) // now: 2026-01-01T00:00:00Z
	tk := b.create(t, task("every-second", map[string]any{"cron_expr": "* * * * * *"}))
	once := b.create(t, map[string]any{"name": "once", "run_at": "2026-06-01T00:00:00Z", "target_url": "https://example.com/"})
	for _, tc := range []struct {
		name   string
		id     int64
		body   any
		status int
		field  string
		says   string
	}{
		{"no from", tk.ID, map[string]any{"to": "2025-12-31T23:00:00Z"}, 400, "from", "required"},
		{"no to", tk.ID, map[string]any{"from": "2025-12-31T23:00:00Z"}, 400, "to", "required"},
		{"from not a time", tk.ID, backfillBody("yesterday", "2025-12-31T23:00:00Z", false), 400, "from", "RFC 3339"},
		{"to not a time", tk.ID, backfillBody("2025-12-31T23:00:00Z", "2025-12-31", false), 400, "to", "RFC 3339"},
		{"from after to", tk.ID, backfillBody("2025-12-31T23:00:00Z", "2025-12-31T22:00:00Z", false), 400, "from", "before to"},
		{"from equal to to", tk.ID, backfillBody("2025-12-31T23:00:00Z", "2025-12-31T23:00:00Z", true), 400, "from", "before to"},
		{"to in the future", tk.ID, backfillBody("2025-12-31T23:00:00Z", "2026-01-01T00:00:01Z", false), 400, "to", "future"},
		{"too many times", tk.ID, backfillBody("2025-12-31T23:00:00Z", "2025-12-31T23:08:20Z", true), 400, "to", "more than 500 fire times"},
		{"an unknown field", tk.ID, map[string]any{"from": "2025-12-31T23:00:00Z", "to": "2025-12-31T23:01:00Z", "limit": 3}, 400, "limit", "unknown"},
		{"a one-off task", once.ID, backfillBody("2025-12-31T23:00:00Z", "2025-12-31T23:01:00Z", false), 409, "cron_expr", "no schedule"},
		{"an unknown task", 987, backfillBody("2025-12-31T23:00:00Z", "2025-12-31T23:01:00Z", false), 404, "", "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := b.do(t, http.MethodPost, taskPath(tc.id, "/backfill"), tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			e := errorOf(t, rec)
			if e.Field != tc.field || !strings.Contains(e.Message, tc.says) {
				t.Errorf("error %+v, want field %q and %q", e, tc.field, tc.says)
			}
		})
	}
	// The largest range taken: 500 times exactly.
	var ok backfillResponse
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/backfill"), backfillBody("2025-12-31T23:00:00Z", "2025-12-31T23:08:19Z", true)), http.StatusOK, &ok)
	if ok.Count != sundial.MaxBackfill || len(ok.Items) != sundial.MaxBackfill {
		t.Errorf("a range of %d times: count %d", sundial.MaxBackfill, ok.Count)
	}
	if runs := b.backfillRuns(t, tk.ID); len(runs) != 0 {
		t.Errorf("refused backfills made %d runs", len(runs))
	}
}
