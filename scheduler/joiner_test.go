package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/scheduler"
)

// TestDependencies: two parents on the same schedule. A child with join
// all fires once per fire of both, scheduled at their time, with their
// runs as variables; when one parent fails, that fire of the child is
// SKIPPED (UPSTREAM) and a child waiting for its failure fires instead
// (and records its other fires SKIPPED). A
// child whose second parent never fires is SKIPPED at its join deadline.
func TestDependencies(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.start()
		a := b.addTask(t, "*/10 * * * * *", nil)
		p := b.addTask(t, "*/10 * * * * *", nil)
		never := b.addTask(t, "0 0 0 1 1 * 2099", nil)
		deps := func(join sundial.JoinMode, deadline int, parents ...sundial.Dependency) func(*sundial.Task) {
			return func(tk *sundial.Task) { tk.DependsOn, tk.Join, tk.JoinDeadline = parents, join, deadline }
		}
		on := func(tk *sundial.Task, o sundial.DependOn) sundial.Dependency {
			return sundial.Dependency{Task: tk.Name, On: o}
		}
		all := b.addTask(t, "", deps(sundial.JoinAll, 0, on(a, sundial.DependSuccess), on(p, sundial.DependSuccess)))
		onFail := b.addTask(t, "", deps(sundial.JoinAny, 0, on(p, sundial.DependFailure)))
		late := b.addTask(t, "", deps(sundial.JoinAll, 15, on(a, sundial.DependCompletion), on(never, sundial.DependSuccess)))
		first := *a.NextFireTime
		fire := func(k int) time.Time { return first.Add(time.Duration(k-1) * 10 * time.Second) }

		waitUntil(fire(2).Add(5 * time.Second)) // fires 1 and 2 succeeded
		synctest.Wait()
		b.target.mu.Lock()
		b.target.failTask = p.ID
		b.target.mu.Unlock()
		waitUntil(fire(3).Add(5 * time.Second)) // fire 3 of p failed
		synctest.Wait()
		b.target.mu.Lock()
		b.target.failTask = 0
		b.target.mu.Unlock()
		waitUntil(fire(4).Add(5 * time.Second))
		synctest.Wait()
		b.stop(t)

		runs := b.runs(t, all.ID)
		if len(runs) != 4 {
			t.Fatalf("join all: %d runs, want 4: %+v", len(runs), summarize(runs))
		}
		for i, r := range runs {
			k := i + 1
			if r.Trigger != sundial.TriggerDependency || !r.ScheduledTime.Equal(fire(k)) || r.FireKey != sundial.DependencyFireKey(fire(k)) {
				t.Errorf("join all, fire %d: %+v", k, r)
			}
			want := sundial.RunSuccess
			if k == 3 {
				want = sundial.RunSkipped
			}
			if r.Status != want || (k == 3 && (r.SkipReason != sundial.SkipUpstream || !strings.Contains(r.Error, p.Name+" ended FAILED"))) {
				t.Errorf("join all, fire %d: %s %s %q, want %s", k, r.Status, r.SkipReason, r.Error, want)
			}
		}
		// Waiting for p's failure: fired by fire 3, each other fire
		// recorded SKIPPED (UPSTREAM).
		failRuns := b.runs(t, onFail.ID)
		if len(failRuns) != 4 {
			t.Fatalf("on failure: %+v", summarize(failRuns))
		}
		for i, r := range failRuns {
			if want := (i == 2); (r.Status == sundial.RunSuccess) != want || (!want && r.SkipReason != sundial.SkipUpstream) ||
				!r.ScheduledTime.Equal(fire(i+1)) {
				t.Errorf("on failure, fire %d: %s %s at %s", i+1, r.Status, r.SkipReason, r.ScheduledTime)
			}
		}
		delivered := map[int64]int{}
		for _, c := range b.target.snapshot() {
			if c.taskID != all.ID {
				continue
			}
			delivered[c.runID]++
			if c.trigger != string(sundial.TriggerDependency) || c.extra["parents."+a.Name+".status"] != "SUCCESS" ||
				c.extra["parents."+p.Name+".run_id"] == "" || c.extra["parents."+p.Name+".result"] != "null" {
				t.Errorf("child's delivery: trigger %s, vars %v", c.trigger, c.extra)
			}
		}
		if len(delivered) != 3 {
			t.Errorf("join all: %d runs delivered, want 3", len(delivered))
		}
		for id, n := range delivered {
			if n != 1 {
				t.Errorf("run %d delivered %d times", id, n)
			}
		}
		// The child whose other parent never fires: skipped 15 s after
		// each of a's fires (within the 2 s deadline pass).
		lateRuns := b.runs(t, late.ID)
		if len(lateRuns) < 2 {
			t.Fatalf("join deadline: %+v", summarize(lateRuns))
		}
		for _, r := range lateRuns {
			if r.Status != sundial.RunSkipped || r.SkipReason != sundial.SkipUpstream || !strings.Contains(r.Error, "deadline") ||
				r.FinishedAt == nil || r.FinishedAt.Before(r.ScheduledTime.Add(15*time.Second)) ||
				r.FinishedAt.After(r.ScheduledTime.Add(20*time.Second)) {
				t.Errorf("join deadline: %+v", r)
			}
		}
	})
}

// TestDependencySweep: a parent's run that ended on a node that died
// before recording it on its children's joins (here: ended through the
// store, past this node's scheduler) is recorded by the sweep of a live
// node within joinSweepEvery, and its child fires once.
func TestDependencySweep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.start()
		parent := b.addTask(t, "0 0 0 1 1 * 2099", nil)
		child := b.addTask(t, "", func(tk *sundial.Task) { tk.DependsOn = []sundial.Dependency{{Task: parent.Name}} })
		waitUntil(time.Now().Add(3 * time.Second)) // the child is known
		ctx := context.Background()
		now := time.Now()
		r := &sundial.Run{TaskID: parent.ID, FireKey: "manual:gone", Trigger: sundial.TriggerManual, ScheduledTime: now,
			NodeID: "node-gone", Fence: 1}
		if err := b.store.RunInsert(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: 1, Attempt: 1, StartedAt: now}}); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: 1, Status: sundial.RunSuccess,
			StartedAt: now, FinishedAt: now}}); err != nil || !ok[0] {
			t.Fatal(ok, err)
		}
		waitUntil(now.Add(35 * time.Second))
		synctest.Wait()
		b.stop(t)
		runs := b.runs(t, child.ID)
		if len(runs) != 1 || runs[0].Trigger != sundial.TriggerDependency || runs[0].Status != sundial.RunSuccess ||
			!runs[0].ScheduledTime.Equal(sundial.LogicalTime(r)) {
			t.Fatalf("child after the sweep: %+v", summarize(runs))
		}
	})
}
