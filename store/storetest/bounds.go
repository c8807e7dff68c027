package storetest

import (
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// testTaskBounds: a task's start_at, end_at, max_runs and jitter_seconds
// round-trip through create and update; its fire counters are the
// planner's: PlanDue writes them as the plan left them on the task, with
// the next fire and without a new version, and TaskUpdate leaves them as
// they are; a plan that ends the task (Plan.End) ends it as Task.End does.
func testTaskBounds(t *testing.T, open Opener) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		start, end := at(60).Add(250*time.Millisecond), at(3600)
		tk := f.task("bounded", func(tk *sundial.Task) {
			tk.StartAt, tk.EndAt, tk.MaxRuns, tk.JitterSeconds = &start, &end, 7, 30
		})
		got := f.getTask(tk.ID)
		eqTime(t, "StartAt", got.StartAt, start)
		eqTime(t, "EndAt", got.EndAt, end)
		if got.MaxRuns != 7 || got.JitterSeconds != 30 || got.FireCount != 0 || got.CountedThrough != nil {
			t.Fatalf("read back: max_runs %d, jitter %d, fire_count %d, counted through %v; want 7, 30, 0, none",
				got.MaxRuns, got.JitterSeconds, got.FireCount, got.CountedThrough)
		}
		got.StartAt, got.MaxRuns, got.JitterSeconds = nil, 0, 0
		if err := f.s.TaskUpdate(f.ctx, got, at(1)); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		got = f.getTask(tk.ID)
		if got.StartAt != nil || got.MaxRuns != 0 || got.JitterSeconds != 0 {
			t.Fatalf("after the update: start_at %v, max_runs %d, jitter %d; want none, 0, 0", got.StartAt, got.MaxRuns, got.JitterSeconds)
		}
		eqTime(t, "EndAt", got.EndAt, end)
	})

	t.Run("PlanDueCounts", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("counted", withNext(at(0)), func(tk *sundial.Task) { tk.MaxRuns, tk.JitterSeconds = 5, 2 })
		runs, err := f.s.PlanDue(f.ctx, at(5), 10, "", at(-1), func(pt *sundial.Task) sundial.Plan {
			var p sundial.Plan
			for _, s := range []time.Time{at(0), at(5)} {
				pt.Count(s)
				p.Runs = append(p.Runs, &sundial.Run{TaskID: pt.ID, FireKey: sundial.ScheduledFireKey(s),
					Trigger: sundial.TriggerSchedule, ScheduledTime: s, DueAt: s.Add(1500 * time.Millisecond),
					Status: sundial.RunScheduled, Attempt: 1})
			}
			next := at(10)
			p.Next = &next
			return p
		})
		if err != nil {
			t.Fatalf("PlanDue: %v", err)
		}
		if len(runs) != 2 {
			t.Fatalf("PlanDue inserted %d runs, want 2", len(runs))
		}
		for _, r := range runs {
			if got := f.get(r.ID); !got.DueAt.Equal(got.ScheduledTime.Add(1500 * time.Millisecond)) {
				t.Errorf("run of %s due at %s, want its jitter kept (1.5 s after)", got.ScheduledTime, got.DueAt)
			}
		}
		got := f.getTask(tk.ID)
		eqTime(t, "NextFireTime", got.NextFireTime, at(10))
		eqTime(t, "CountedThrough", got.CountedThrough, at(5))
		if got.FireCount != 2 || got.Status != sundial.TaskEnabled || got.Version != 1 || !got.UpdatedAt.Equal(t0) {
			t.Fatalf("planned task: fire_count %d, %s, version %d, updated %s; want 2, ENABLED, 1, %s",
				got.FireCount, got.Status, got.Version, got.UpdatedAt, t0)
		}
		// An edit keeps the counters.
		edit := f.getTask(tk.ID)
		edit.Description, edit.FireCount, edit.CountedThrough = "edited", 0, nil
		if err := f.s.TaskUpdate(f.ctx, edit, at(1)); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		got = f.getTask(tk.ID)
		if got.FireCount != 2 || got.CountedThrough == nil || !got.CountedThrough.Equal(at(5)) {
			t.Fatalf("after an edit: fire_count %d, counted through %v; want 2, %s", got.FireCount, got.CountedThrough, at(5))
		}
	})

	t.Run("PlanDueEnds", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("ending", withNext(at(0)), func(tk *sundial.Task) { e := at(3); tk.EndAt = &e })
		_, err := f.s.PlanDue(f.ctx, at(5), 10, "", at(-1), func(pt *sundial.Task) sundial.Plan {
			return sundial.Plan{End: sundial.TaskCompleted}
		})
		if err != nil {
			t.Fatalf("PlanDue: %v", err)
		}
		got := f.getTask(tk.ID)
		if got.Status != sundial.TaskCompleted || got.NextFireTime != nil || got.Version != 2 || !got.UpdatedAt.Equal(at(-1)) {
			t.Fatalf("ended task: %s, next %v, version %d, updated %s; want COMPLETED, none, 2, %s",
				got.Status, got.NextFireTime, got.Version, got.UpdatedAt, at(-1))
		}
		var called []int64
		if _, err := f.s.PlanDue(f.ctx, at(100), 10, "", at(50), planEvery(time.Second, &called)); err != nil {
			t.Fatalf("PlanDue: %v", err)
		}
		if len(called) != 0 {
			t.Fatalf("an ended task was planned again: %v", called)
		}
	})
}
