package sundial

import (
	"testing"
	"time"
)

// TestBackfillTimes: the fire times of a range, both ends included,
// oldest first, in the task's zone; a range of none; the limit.
func TestBackfillTimes(t *testing.T) {
	t.Parallel()
	tk := &Task{ID: 1, CronExpr: "0 0 9 * * *", Timezone: "Europe/Paris"} // 08:00 UTC in winter
	day := func(d, h, m int, s float64) time.Time {
		return time.Date(2026, 1, d, h, m, 0, int(s*1e9), time.UTC)
	}
	for _, tc := range []struct {
		name     string
		from, to time.Time
		want     []time.Time
	}{
		{"both ends in", day(1, 8, 0, 0), day(3, 8, 0, 0), []time.Time{day(1, 8, 0, 0), day(2, 8, 0, 0), day(3, 8, 0, 0)}},
		{"from within the second after a fire", day(1, 8, 0, 0.5), day(2, 8, 0, 0.5), []time.Time{day(2, 8, 0, 0)}},
		{"none", day(1, 8, 0, 1), day(2, 7, 59, 59), nil},
	} {
		got, err := tk.BackfillTimes(tc.from, tc.to, 10)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for i := range got {
			if !got[i].Equal(tc.want[i]) || got[i].Location() != time.UTC {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
	}
	if got, err := tk.BackfillTimes(day(1, 0, 0, 0), day(3, 8, 0, 0), 3); err != nil || len(got) != 3 {
		t.Errorf("3 times, limit 3: %v, %v", got, err)
	}
	if _, err := tk.BackfillTimes(day(1, 0, 0, 0), day(4, 8, 0, 0), 3); ErrorCode(err) != EInvalid {
		t.Errorf("4 times, limit 3: %v", err)
	}
	once := &Task{ID: 2, RunAt: &time.Time{}}
	if _, err := once.BackfillTimes(day(1, 0, 0, 0), day(2, 0, 0, 0), 3); ErrorCode(err) != EConflict {
		t.Errorf("a one-off task: %v", err)
	}
}

// TestBackfillRunNotPlanned: a backfilled run is not the planner's: a
// change of its task keeps it, and a node giving it up hands it back.
func TestBackfillRunNotPlanned(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	tk := &Task{ID: 1, CronExpr: "0 0 9 * * *", Timezone: "UTC", Status: TaskEnabled}
	r := BackfillRun(tk, now.Add(-48*time.Hour), now)
	r.ID, r.NodeID = 7, "node-a"
	if r.Planned() || TriggerBackfill.Planned() {
		t.Fatal("a backfilled run is Planned")
	}
	if a := ReleaseOf(r); a != ReleaseHandBack {
		t.Errorf("ReleaseOf = %v, want ReleaseHandBack", a)
	}
	if c := TakeBackOnUpdate(tk, []*Run{r}, now, now); len(c.Delete) != 0 {
		t.Errorf("TakeBackOnUpdate deletes a backfilled run: %+v", c)
	}
	if c := Release([]*Run{r}, "stopping", now); len(c.Update) != 1 || c.Update[0].NodeID != "" || len(c.Rewind) != 0 {
		t.Errorf("Release of a backfilled run: %+v", c)
	}
}
