package scheduler

import (
	"slices"
	"testing"

	"github.com/sundialhq/sundial"
)

func TestAdmit(t *testing.T) {
	t.Parallel()
	task := func(mod func(*sundial.Task)) *sundial.Task {
		tk := &sundial.Task{
			OverlapAction:     sundial.OverlapAllow,
			FailureAction:     sundial.FailureRunNew,
			ConcurrencyPolicy: sundial.ConcurrencyQueue,
			MaxQueue:          2,
		}
		if mod != nil {
			mod(tk)
		}
		return tk
	}
	sched := &sundial.Run{ID: 10, Status: sundial.RunScheduled, Trigger: sundial.TriggerSchedule}
	running := &sundial.Run{ID: 5, Status: sundial.RunRunning, Attempt: 1}
	waiting := &sundial.Run{ID: 6, Status: sundial.RunWaitingCallback, Attempt: 1}
	queued := &sundial.Run{ID: 7, Status: sundial.RunQueued, Attempt: 1}
	failed := func(attempt int) *sundial.Run {
		return &sundial.Run{ID: 4, Status: sundial.RunFailed, Attempt: attempt}
	}
	skipped := func(reason sundial.SkipReason, attempt int) *sundial.Run {
		return &sundial.Run{ID: 8, Status: sundial.RunSkipped, SkipReason: reason, Attempt: attempt}
	}
	run := sundial.Admission{Status: sundial.RunRunning, Attempt: 1}

	tests := []struct {
		name string
		s    sundial.AdmitState
		want sundial.Admission
	}{
		{"first fire runs with attempt 1",
			sundial.AdmitState{Task: task(nil), Run: sched}, run},
		{"after a success attempt is 1",
			sundial.AdmitState{Task: task(nil), Run: sched, LastEffective: &sundial.Run{Status: sundial.RunSuccess, Attempt: 3}}, run},

		// Overlap (seed 001 section 5 step 5).
		{"overlap SKIP with a running run records an OVERLAP skip",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.OverlapAction = sundial.OverlapSkip }), Run: sched,
				Pending: []*sundial.Run{running}, Active: 1},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipOverlap, Attempt: 1}},
		{"overlap SKIP counts a queued run as pending",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.OverlapAction = sundial.OverlapSkip }), Run: sched,
				Pending: []*sundial.Run{queued}, Queued: 1},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipOverlap, Attempt: 1}},
		{"overlap SKIP after a failure records the next attempt",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.OverlapAction = sundial.OverlapSkip }), Run: sched,
				Pending: []*sundial.Run{running}, Active: 1, LastEffective: failed(2)},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipOverlap, Attempt: 3}},
		{"overlap SKIP with nothing pending runs",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.OverlapAction = sundial.OverlapSkip }), Run: sched}, run},
		{"overlap CANCEL_PREV cancels running and waiting runs, not queued ones, and queues behind the queued one",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.OverlapAction = sundial.OverlapCancelPrev; t.MaxConcurrency = 2 }),
				Run: sched, Pending: []*sundial.Run{running, waiting, queued}, Active: 2, Queued: 1},
			sundial.Admission{Status: sundial.RunQueued, Attempt: 1, Cancel: []int64{5, 6}}},
		{"overlap CANCEL_PREV with nothing queued cancels and runs",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.OverlapAction = sundial.OverlapCancelPrev; t.MaxConcurrency = 2 }),
				Run: sched, Pending: []*sundial.Run{running, waiting}, Active: 2},
			sundial.Admission{Status: sundial.RunRunning, Attempt: 1, Cancel: []int64{5, 6}}},
		{"overlap CANCEL_PREV frees the slots it cancels for max_concurrency 1",
			sundial.AdmitState{Task: task(func(t *sundial.Task) {
				t.OverlapAction = sundial.OverlapCancelPrev
				t.MaxConcurrency = 1
				t.ConcurrencyPolicy = sundial.ConcurrencySkip
			}), Run: sched, Pending: []*sundial.Run{running}, Active: 1},
			sundial.Admission{Status: sundial.RunRunning, Attempt: 1, Cancel: []int64{5}}},
		{"overlap PARALLEL ignores max_concurrency",
			sundial.AdmitState{Task: task(func(t *sundial.Task) {
				t.OverlapAction = sundial.OverlapParallel
				t.MaxConcurrency = 1
				t.ConcurrencyPolicy = sundial.ConcurrencySkip
			}), Run: sched, Pending: []*sundial.Run{running}, Active: 1}, run},
		{"overlap ALLOW goes on to the concurrency policy",
			sundial.AdmitState{Task: task(func(t *sundial.Task) {
				t.MaxConcurrency = 1
				t.ConcurrencyPolicy = sundial.ConcurrencySkip
			}), Run: sched, Pending: []*sundial.Run{running}, Active: 1},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipConcurrency, Attempt: 1}},

		// Failure (step 6).
		{"failure RUN_NEW resets the attempt to 1",
			sundial.AdmitState{Task: task(nil), Run: sched, LastEffective: failed(4)}, run},
		{"failure RETRY runs with attempt previous + 1",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.FailureAction = sundial.FailureRetry }), Run: sched,
				LastEffective: failed(4)},
			sundial.Admission{Status: sundial.RunRunning, Attempt: 5}},
		{"failure RETRY counts TIMEOUT, FAILED_TIMEOUT and CANCELED as failures",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.FailureAction = sundial.FailureRetry }), Run: sched,
				LastEffective: &sundial.Run{Status: sundial.RunCanceled, Attempt: 1}},
			sundial.Admission{Status: sundial.RunRunning, Attempt: 2}},
		{"failure SKIP skips once with attempt previous + 1",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.FailureAction = sundial.FailureSkip }), Run: sched,
				LastEffective: failed(1)},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipFailure, Attempt: 2}},
		{"failure SKIP after its skip runs with attempt previous + 2",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.FailureAction = sundial.FailureSkip }), Run: sched,
				LastEffective: failed(1), SkipsSinceLast: []*sundial.Run{skipped(sundial.SkipFailure, 2)}},
			sundial.Admission{Status: sundial.RunRunning, Attempt: 3}},
		{"failure SKIP counts an overlap skip with the raised attempt as the skip",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.FailureAction = sundial.FailureSkip }), Run: sched,
				LastEffective: failed(1), SkipsSinceLast: []*sundial.Run{skipped(sundial.SkipOverlap, 2)}},
			sundial.Admission{Status: sundial.RunRunning, Attempt: 3}},
		{"failure SKIP ignores a misfire record",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.FailureAction = sundial.FailureSkip }), Run: sched,
				LastEffective: failed(1), SkipsSinceLast: []*sundial.Run{skipped(sundial.SkipMisfire, 2)}},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipFailure, Attempt: 2}},
		{"failure SKIP ignores a skip whose attempt was not raised",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.FailureAction = sundial.FailureSkip }), Run: sched,
				LastEffective: failed(3), SkipsSinceLast: []*sundial.Run{skipped(sundial.SkipFailure, 2)}},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipFailure, Attempt: 4}},
		{"failure SKIP after a success runs normally",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.FailureAction = sundial.FailureSkip }), Run: sched,
				LastEffective: &sundial.Run{Status: sundial.RunSuccess, Attempt: 2}}, run},
		{"a running last run is not a failure",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.FailureAction = sundial.FailureRetry }), Run: sched,
				LastEffective: &sundial.Run{Status: sundial.RunRunning, Attempt: 2}, Active: 1}, run},

		// Concurrency (step 7).
		{"max_concurrency 0 means no limit",
			sundial.AdmitState{Task: task(nil), Run: sched, Active: 50}, run},
		{"under the limit runs",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.MaxConcurrency = 2 }), Run: sched, Active: 1}, run},
		{"concurrency SKIP at the limit records a CONCURRENCY skip",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.MaxConcurrency = 1; t.ConcurrencyPolicy = sundial.ConcurrencySkip }),
				Run: sched, Active: 1},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipConcurrency, Attempt: 1}},
		{"concurrency SKIP keeps the failure attempt",
			sundial.AdmitState{Task: task(func(t *sundial.Task) {
				t.MaxConcurrency = 1
				t.ConcurrencyPolicy = sundial.ConcurrencySkip
				t.FailureAction = sundial.FailureRetry
			}), Run: sched, Active: 1, LastEffective: failed(2)},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipConcurrency, Attempt: 3}},
		{"concurrency PARALLEL ignores the limit",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.MaxConcurrency = 1; t.ConcurrencyPolicy = sundial.ConcurrencyParallel }),
				Run: sched, Active: 3}, run},
		{"concurrency QUEUE at the limit queues",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.MaxConcurrency = 1 }), Run: sched, Active: 1, Queued: 1},
			sundial.Admission{Status: sundial.RunQueued, Attempt: 1}},
		{"concurrency QUEUE with a free slot but runs queued: the new fire queues behind them",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.MaxConcurrency = 1 }), Run: sched, Active: 0, Queued: 1},
			sundial.Admission{Status: sundial.RunQueued, Attempt: 1}},
		{"concurrency QUEUE with a free slot and a full queue: QUEUE_FULL",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.MaxConcurrency = 1 }), Run: sched, Active: 0, Queued: 2},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipQueueFull, Attempt: 1}},
		{"concurrency QUEUE with a full queue skips QUEUE_FULL",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.MaxConcurrency = 1 }), Run: sched, Active: 1, Queued: 2},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipQueueFull, Attempt: 1}},

		// Queued runs and manual triggers.
		{"a queued run waits while the task is at its limit",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.MaxConcurrency = 1 }),
				Run: &sundial.Run{ID: 7, Status: sundial.RunQueued, Attempt: 3}, Active: 1},
			sundial.Admission{Status: sundial.RunQueued, Attempt: 3}},
		{"a queued run starts with its attempt when a slot is free",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.MaxConcurrency = 1; t.OverlapAction = sundial.OverlapSkip }),
				Run: &sundial.Run{ID: 7, Status: sundial.RunQueued, Attempt: 3}, Pending: []*sundial.Run{queued}},
			sundial.Admission{Status: sundial.RunRunning, Attempt: 3}},
		{"a manual trigger ignores overlap and failure actions",
			sundial.AdmitState{Task: task(func(t *sundial.Task) {
				t.OverlapAction = sundial.OverlapSkip
				t.FailureAction = sundial.FailureSkip
			}), Run: &sundial.Run{ID: 11, Status: sundial.RunScheduled, Trigger: sundial.TriggerManual},
				Pending: []*sundial.Run{running}, Active: 1, LastEffective: failed(1)}, run},
		{"a manual trigger obeys the concurrency policy",
			sundial.AdmitState{Task: task(func(t *sundial.Task) { t.MaxConcurrency = 1; t.ConcurrencyPolicy = sundial.ConcurrencySkip }),
				Run: &sundial.Run{ID: 11, Status: sundial.RunScheduled, Trigger: sundial.TriggerManual}, Active: 1},
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipConcurrency, Attempt: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Admit(tc.s)
			if got.Status != tc.want.Status || got.SkipReason != tc.want.SkipReason ||
				got.Attempt != tc.want.Attempt || !slices.Equal(got.Cancel, tc.want.Cancel) {
				t.Errorf("Admit() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestUnconstrained(t *testing.T) {
	t.Parallel()
	tests := []struct {
		overlap sundial.OverlapAction
		failure sundial.FailureAction
		max     int
		policy  sundial.ConcurrencyPolicy
		want    bool
	}{
		{sundial.OverlapAllow, sundial.FailureRunNew, 0, sundial.ConcurrencyQueue, true},
		{sundial.OverlapAllow, sundial.FailureRunNew, 1, sundial.ConcurrencyParallel, true},
		{sundial.OverlapParallel, sundial.FailureRunNew, 1, sundial.ConcurrencySkip, true},
		{sundial.OverlapAllow, sundial.FailureRunNew, 1, sundial.ConcurrencyQueue, false},
		{sundial.OverlapSkip, sundial.FailureRunNew, 0, sundial.ConcurrencyQueue, false},
		{sundial.OverlapCancelPrev, sundial.FailureRunNew, 0, sundial.ConcurrencyQueue, false},
		{sundial.OverlapAllow, sundial.FailureRetry, 0, sundial.ConcurrencyQueue, false},
		{sundial.OverlapAllow, sundial.FailureSkip, 0, sundial.ConcurrencyQueue, false},
	}
	for _, tc := range tests {
		tk := &sundial.Task{OverlapAction: tc.overlap, FailureAction: tc.failure, MaxConcurrency: tc.max, ConcurrencyPolicy: tc.policy}
		if got := unconstrained(tk); got != tc.want {
			t.Errorf("unconstrained(%s, %s, %d, %s) = %v, want %v", tc.overlap, tc.failure, tc.max, tc.policy, got, tc.want)
		}
	}
}
