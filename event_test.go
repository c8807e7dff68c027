package sundial

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRunEventKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status RunStatus
		retry  bool
		want   EventKind
	}{
		{RunScheduled, false, EventRunScheduled},
		{RunScheduled, true, EventRunRetrying},
		{RunQueued, false, EventRunQueued},
		{RunRunning, false, EventRunStarted},
		{RunWaitingCallback, false, EventRunWaiting},
		{RunInterrupted, false, EventRunInterrupted},
		{RunSuccess, false, EventRunFinished},
		{RunFailed, true, EventRunFinished},
		{RunSkipped, false, EventRunFinished},
		{RunCanceled, false, EventRunFinished},
	} {
		if got := RunEventKind(tc.status, tc.retry); got != tc.want {
			t.Errorf("RunEventKind(%s, %v) = %s, want %s", tc.status, tc.retry, got, tc.want)
		}
	}
	for _, k := range EventKinds() {
		if g := k.Group(); g != "run" && g != "task" {
			t.Errorf("%s: group %q", k, g)
		}
	}
}

// TestRunEvent: the event of a run as stored says what its status needs:
// the next delivery of a run retried, the deadline of one waiting for its
// callback, no times of a delivery that is not the run's now.
func TestRunEvent(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 4, 3, 0, 0, 0, time.UTC)
	later := t0.Add(time.Minute)
	tk := &Task{ID: 3, Name: "nightly"}
	r := &Run{ID: 7, TaskID: 3, Status: RunScheduled, Trigger: TriggerSchedule, ScheduledTime: t0, DueAt: later,
		Deliveries: 1, Attempt: 1, StartedAt: &t0, FinishedAt: &t0, HTTPStatus: 503, Error: strings.Repeat("é", 400)}
	e := RunEvent(r, tk, later)
	if e.Kind != EventRunRetrying || e.Task.Name != "nightly" || e.Run.DueAt == nil || !e.Run.DueAt.Equal(later) ||
		e.Run.StartedAt != nil || e.Run.FinishedAt != nil || e.Run.HTTPStatus != 503 || len(e.Run.Error) != MaxEventError {
		t.Errorf("retried run: %+v %+v", e, *e.Run)
	}
	r.Status, r.Deliveries = RunWaitingCallback, 1
	if e := RunEvent(r, nil, later); e.Kind != EventRunWaiting || e.Run.DueAt == nil || e.Task.Name != "" || e.Task.ID != 3 {
		t.Errorf("waiting run: %+v %+v", e, *e.Run)
	}
	r.Status, r.Deliveries = RunScheduled, 0
	if e := RunEvent(r, tk, later); e.Kind != EventRunScheduled || e.Run.DueAt != nil {
		t.Errorf("planned run: %+v %+v", e, *e.Run)
	}
}

func TestEventError(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("a", MaxEventError-1) + "é"
	if got := EventError(s); got != strings.Repeat("a", MaxEventError-1) {
		t.Errorf("a rune across the limit is cut whole: %q", got[MaxEventError-4:])
	}
	if got := EventError("short"); got != "short" {
		t.Errorf("EventError(short) = %q", got)
	}
}

// TestTaskEvent: the audit entry of a change of a task made through the
// API is its event; a trigger, a run's cancel, a token's are not.
func TestTaskEvent(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 4, 3, 0, 0, 0, time.UTC)
	task := []byte(`{"id":4,"name":"nightly","status":"ENABLED","version":2,"cron_expr":"0 0 3 * * *"}`)
	for _, tc := range []struct {
		entry AuditEntry
		want  EventKind
		ok    bool
		check func(Event) bool
	}{
		{AuditEntry{Action: "task.create", TaskID: 4, After: task}, EventTaskCreated, true,
			func(e Event) bool {
				return e.Task.Name == "nightly" && e.Task.Version == 2 && e.Task.Status == TaskEnabled
			}},
		{AuditEntry{Action: "task.update", TaskID: 4, Before: task,
			After: []byte(`{"id":4,"name":"nightly","status":"ENABLED","version":3,"changed":["cron_expr"]}`)}, EventTaskUpdated, true,
			func(e Event) bool { return e.Task.Version == 3 && slices.Equal(e.Task.Changed, []string{"cron_expr"}) }},
		{AuditEntry{Action: "task.patch", TaskID: 4, After: task}, EventTaskUpdated, true, nil},
		{AuditEntry{Action: "task.delete", TaskID: 4, Before: task}, EventTaskDeleted, true,
			func(e Event) bool { return e.Task.Name == "nightly" }},
		{AuditEntry{Action: "task.enable", TaskID: 4, After: task}, EventTaskEnabled, true, nil},
		{AuditEntry{Action: "task.disable", TaskID: 4, After: []byte(`{"name":"nightly","status":"DISABLED","changed":["x"]}`)},
			EventTaskDisabled, true, func(e Event) bool { return e.Task.Status == TaskDisabled && e.Task.Changed == nil }},
		{AuditEntry{Action: "task.trigger", TaskID: 4, After: []byte(`{"run_id":9}`)}, "", false, nil},
		{AuditEntry{Action: "run.cancel", TaskID: 4}, "", false, nil},
		{AuditEntry{Action: "token.create"}, "", false, nil},
	} {
		tc.entry.At = at
		e, ok := TaskEvent(&tc.entry)
		if ok != tc.ok || e.Kind != tc.want || (ok && (e.Task.ID != 4 || !e.At.Equal(at))) || (tc.check != nil && !tc.check(e)) {
			t.Errorf("%s: %+v, %v; want %s, %v", tc.entry.Action, e, ok, tc.want, tc.ok)
		}
	}
}

func TestEventID(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 4, 3, 0, 0, 123456000, time.UTC)
	id := NewEventID(at, "a1b2c3.42")
	if id != "1777863600123456-a1b2c3.42" {
		t.Errorf("NewEventID = %s", id)
	}
	if got, err := EventIDTime(id); err != nil || !got.Equal(at) {
		t.Errorf("EventIDTime(%s) = %v, %v", id, got, err)
	}
	for _, bad := range []string{"", "123", "-x", "12a-x", "-1-x", "1-", "1-a b", "1-é", "1-" + strings.Repeat("x", MaxEventIDLen)} {
		if _, err := EventIDTime(bad); err == nil {
			t.Errorf("EventIDTime(%q) took it", bad)
		}
	}
}
