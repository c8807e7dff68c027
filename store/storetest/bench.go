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
		if err := s.TaskCreate(ctx, tk, time.Now()); err != nil {
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
