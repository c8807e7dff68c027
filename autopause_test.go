package sundial

import "testing"

// TestAutoPause: the latest N counted runs all failed pause the task; a
// success among them, too few runs, a disabled task, or no limit do not.
func TestAutoPause(t *testing.T) {
	t.Parallel()
	runs := func(statuses ...RunStatus) []*Run {
		var out []*Run
		for i, s := range statuses {
			out = append(out, &Run{ID: int64(10 - i), Status: s, Error: "HTTP 500 Internal Server Error"})
		}
		return out
	}
	tk := &Task{ID: 1, Status: TaskEnabled, PauseAfterFailures: 3}
	for _, tc := range []struct {
		name   string
		task   *Task
		latest []*Run
		pause  bool
	}{
		{"three failures", tk, runs(RunFailed, RunTimeout, RunFailedTimeout), true},
		{"three failures, older success", tk, runs(RunFailed, RunFailed, RunFailed, RunSuccess), true},
		{"a success among them", tk, runs(RunFailed, RunSuccess, RunFailed), false},
		{"two failures", tk, runs(RunFailed, RunFailed), false},
		{"disabled", &Task{ID: 1, Status: TaskDisabled, PauseAfterFailures: 3}, runs(RunFailed, RunFailed, RunFailed), false},
		{"no limit", &Task{ID: 1, Status: TaskEnabled}, runs(RunFailed, RunFailed, RunFailed), false},
	} {
		reason, ok := AutoPause(tc.task, tc.latest)
		if ok != tc.pause {
			t.Errorf("%s: pause %v, want %v", tc.name, ok, tc.pause)
		}
		if ok && reason != "paused after 3 consecutive failures (pause_after_failures); the last: run 10 FAILED: HTTP 500 Internal Server Error" {
			t.Errorf("%s: reason %q", tc.name, reason)
		}
	}
	bad := &Task{Name: "x", CronExpr: "* * * * * *", TargetURL: "https://example.com/", PauseAfterFailures: MaxPauseAfterFailures + 1}
	if err := bad.Normalize(bad.CreatedAt); ErrorCode(err) != EInvalid {
		t.Errorf("pause_after_failures %d: %v", bad.PauseAfterFailures, err)
	}
}
