package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// BenchPlanDue plans 1,000 due tasks of s, one run each, per operation. s
// must be empty; the adapters' BenchmarkPlanDue call it.
func BenchPlanDue(b *testing.B, s sundial.Store) {
	ctx := context.Background()
	const n = 1000
	for i := range n {
		tk := &sundial.Task{Name: fmt.Sprintf("t%d", i), CronExpr: "* * * * * *", TargetURL: "https://example.com"}
		if err := tk.Normalize(time.Now()); err != nil {
			b.Fatal(err)
		}
		next := time.Unix(0, 0)
		tk.NextFireTime = &next
		if err := CreateTask(ctx, s, tk, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	until := time.Unix(1_900_000_000, 0)
	plan := func(tk *sundial.Task) sundial.Plan {
		at := *tk.NextFireTime
		next := at.Add(time.Second)
		return sundial.Plan{
			Runs: []*sundial.Run{{FireKey: sundial.ScheduledFireKey(at), ScheduledTime: at}},
			Next: &next,
		}
	}
	for b.Loop() {
		runs, err := s.PlanDue(ctx, until, n, "node", time.Now(), plan)
		if err != nil || len(runs) != n {
			b.Fatalf("PlanDue: %d runs, %v", len(runs), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/run")
}

// BenchTaskCreateMany creates 1,000 tasks, each with a request_id, in one
// TaskCreateMany call per operation; the adapters' BenchmarkTaskCreateMany
// call it. The target is well under 100 ms per call.
func BenchTaskCreateMany(b *testing.B, s sundial.Store) {
	ctx := context.Background()
	const n = 1000
	batch := 0
	for b.Loop() {
		b.StopTimer()
		ts := make([]*sundial.Task, n)
		for i := range ts {
			ts[i] = &sundial.Task{Name: fmt.Sprintf("b%d-t%d", batch, i), CronExpr: "* * * * * *",
				TargetURL: "https://example.com", RequestID: fmt.Sprintf("b%d-r%d", batch, i), RequestHash: "h"}
			if err := ts[i].Normalize(time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		batch++
		b.StartTimer()
		if _, err := s.TaskCreateMany(ctx, ts, time.Now()); err != nil {
			b.Fatalf("TaskCreateMany: %v", err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
}

// BenchBurst measures the store's part of a burst of one-off fires, as a
// node pays it: per operation, 2,000 one-off tasks due at one instant are
// created and planned (outside the timer), then claimed and started 250
// at a time and finished, ending their tasks, in one batch. It reports
// the whole cost per fire and the claims' and the outcomes' shares; the
// adapters' BenchmarkBurst call it.
func BenchBurst(b *testing.B, s sundial.Store) {
	ctx := context.Background()
	const (
		n     = 2000
		claim = 250
	)
	var claimTime, finishTime time.Duration
	round := 0
	for b.Loop() {
		b.StopTimer()
		due := time.Now().Truncate(time.Second)
		ts := make([]*sundial.Task, n)
		for i := range ts {
			ts[i] = &sundial.Task{Name: fmt.Sprintf("r%d-t%d", round, i), RunAt: &due,
				TargetURL: "http://127.0.0.1:9/hook", RequestID: fmt.Sprintf("r%d-%d", round, i), RequestHash: "h"}
			if err := ts[i].Normalize(due.Add(-time.Minute)); err != nil {
				b.Fatal(err)
			}
			ts[i].NextFireTime = &due
		}
		round++
		if _, err := s.TaskCreateMany(ctx, ts, time.Now()); err != nil {
			b.Fatalf("TaskCreateMany: %v", err)
		}
		planned, err := s.PlanDue(ctx, due, n, "", time.Now(), func(tk *sundial.Task) sundial.Plan {
			return sundial.Plan{Runs: []*sundial.Run{{FireKey: sundial.ScheduledFireKey(due), Trigger: sundial.TriggerSchedule,
				ScheduledTime: due, Status: sundial.RunScheduled, Attempt: 1, StartAhead: true}}}
		})
		if err != nil || len(planned) != n {
			b.Fatalf("PlanDue: %d runs, %v", len(planned), err)
		}
		b.StartTimer()

		t0 := time.Now()
		var fins []sundial.RunFinishParams
		for {
			now := time.Now()
			runs, _, err := s.RunClaimDue(ctx, "node", due, claim, sundial.ClaimStartParams{By: due, FreshAfter: due.Add(-time.Minute)})
			if err != nil {
				b.Fatalf("RunClaimDue: %v", err)
			}
			for _, r := range runs {
				if r.Status != sundial.RunRunning {
					b.Fatalf("run %d claimed %s, want RUNNING", r.ID, r.Status)
				}
				fins = append(fins, sundial.RunFinishParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess, StartedAt: now,
					FinishedAt: now, HTTPStatus: 204, CompleteTask: sundial.TaskCompleted})
			}
			if len(runs) < claim {
				break
			}
		}
		if len(fins) != n {
			b.Fatalf("claimed %d runs, want %d", len(fins), n)
		}
		t1 := time.Now()
		ok, err := s.RunFinish(ctx, fins)
		if err != nil || !ok[n-1] {
			b.Fatalf("RunFinish: %v", err)
		}
		claimTime += t1.Sub(t0)
		finishTime += time.Since(t1)
	}
	fires := float64(b.N * n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/fires, "ns/fire")
	b.ReportMetric(float64(claimTime.Nanoseconds())/fires, "claim-ns/fire")
	b.ReportMetric(float64(finishTime.Nanoseconds())/fires, "finish-ns/fire")
}

// BenchTaskStates reads the states of 1,000 tasks per operation, as a page
// of GET /tasks?limit=1000 does (TaskList, then TaskStates): each task has
// a saved state with 100 lags, 100 runs that ended and 100 fires planned
// ahead. s must be empty; the adapters' BenchmarkTaskStates call it.
func BenchTaskStates(b *testing.B, s sundial.Store) {
	ctx := context.Background()
	const n, runs = 1000, 100
	t0 := time.Unix(1_900_000_000, 0)
	ts := make([]*sundial.Task, n)
	for i := range ts {
		ts[i] = &sundial.Task{Name: fmt.Sprintf("t%d", i), CronExpr: "* * * * * *", TargetURL: "https://example.com"}
		if err := ts[i].Normalize(t0); err != nil {
			b.Fatal(err)
		}
		ts[i].NextFireTime = &t0
	}
	if _, err := s.TaskCreateMany(ctx, ts, t0); err != nil {
		b.Fatal(err)
	}
	// Each task's runs, planned in batches: those before t0 ended
	// (SKIPPED), those after it planned ahead.
	plan := func(tk *sundial.Task) sundial.Plan {
		var p sundial.Plan
		for j := -runs; j < runs; j++ {
			at := t0.Add(time.Duration(j) * time.Second)
			r := &sundial.Run{FireKey: sundial.ScheduledFireKey(at), Trigger: sundial.TriggerSchedule, ScheduledTime: at,
				Status: sundial.RunScheduled}
			if j < 0 {
				r.Status, r.SkipReason, r.FinishedAt = sundial.RunSkipped, sundial.SkipOverlap, &at
			}
			p.Runs = append(p.Runs, r)
		}
		return p
	}
	for planned := 0; planned < n; {
		got, err := s.PlanDue(ctx, t0, 50, "", t0, plan)
		if err != nil || len(got) == 0 {
			b.Fatalf("PlanDue: %d runs, %v", len(got), err)
		}
		planned += len(got) / (2 * runs)
	}
	ids := make([]int64, n)
	changes := make([]*sundial.TaskState, n)
	for i, tk := range ts {
		ids[i] = tk.ID
		changes[i] = &sundial.TaskState{TaskID: tk.ID}
		changes[i].Record(sundial.RunSuccess, t0)
		for j := range sundial.MaxLagSamples {
			changes[i].AddLag(t0.Add(time.Duration(j-runs)*time.Second), time.Duration(j)*time.Millisecond)
		}
	}
	if err := s.TaskStateSave(ctx, changes, t0); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		saved, last, err := s.TaskStates(ctx, ids, t0)
		if err != nil || len(saved) != n || len(last) != n {
			b.Fatalf("TaskStates: %d saved, %d last runs, %v", len(saved), len(last), err)
		}
	}
}

// BenchTaskStateSave saves the states of 1,000 tasks in one TaskStateSave
// call per operation: in "new" their first states, each a success and its
// lag, as a node saves the outcomes of a burst of one-off tasks (1,000
// tasks created per operation, outside the timer); in "saved" the next
// states of 1,000 tasks that have one, each a success and the lags of 100
// fires, as a node saves a healthy task firing every second every
// scheduler.state_flush. The adapters' BenchmarkTaskStateSave call it.
func BenchTaskStateSave(b *testing.B, s sundial.Store) {
	ctx := context.Background()
	const n = 1000
	t0 := time.Unix(1_900_000_000, 0)
	batch := 0
	create := func() []*sundial.Task {
		ts := make([]*sundial.Task, n)
		for i := range ts {
			ts[i] = &sundial.Task{Name: fmt.Sprintf("b%d-t%d", batch, i), CronExpr: "* * * * * *",
				TargetURL: "https://example.com"}
			if err := ts[i].Normalize(t0); err != nil {
				b.Fatal(err)
			}
		}
		batch++
		if _, err := s.TaskCreateMany(ctx, ts, t0); err != nil {
			b.Fatalf("TaskCreateMany: %v", err)
		}
		return ts
	}
	step := 0
	save := func(ts []*sundial.Task, lags int) {
		step++
		at := t0.Add(time.Duration(step*lags) * time.Second)
		changes := make([]*sundial.TaskState, len(ts))
		for i, tk := range ts {
			changes[i] = &sundial.TaskState{TaskID: tk.ID}
			changes[i].Record(sundial.RunSuccess, at)
			for j := range lags {
				changes[i].AddLag(at.Add(time.Duration(j-lags)*time.Second), time.Duration(j%7)*time.Millisecond)
			}
		}
		if err := s.TaskStateSave(ctx, changes, at); err != nil {
			b.Fatalf("TaskStateSave: %v", err)
		}
	}
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			ts := create()
			b.StartTimer()
			save(ts, 1)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
	})
	b.Run("saved", func(b *testing.B) {
		ts := create()
		save(ts, sundial.MaxLagSamples)
		for b.Loop() {
			save(ts, sundial.MaxLagSamples)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
	})
}
