package storetest

import (
	"slices"
	"sync"
	"testing"

	"github.com/sundialhq/sundial"
)

// Claims: how the nodes of a cluster share the runs the planner made.

func ref(r *sundial.Run) sundial.RunRef { return sundial.RunRef{ID: r.ID, Fence: r.Fence} }

func testRunClaimDue(t *testing.T, open Opener) {
	t.Run("PriorityFollowsTask", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		a := f.task("a")
		b := f.task("b")
		a10 := f.run(a.ID, at(10), sundial.RunScheduled, withNode(""))
		b11 := f.run(b.ID, at(11), sundial.RunScheduled, withNode(""))
		bRetry := f.retrying(b.ID, at(1), at(10)) // due with a10
		if a10.Priority != 0 || b11.Priority != 0 {
			t.Fatalf("priorities %d, %d; want the tasks' 0", a10.Priority, b11.Priority)
		}
		// Raising b's priority raises its runs waiting for a retry; its
		// planned runs are deleted by the update and planned anew.
		up := f.getTask(b.ID)
		up.Priority = 9
		if err := f.s.TaskUpdate(f.ctx, up, at(0)); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		if got := f.get(bRetry.ID); got.Priority != 9 {
			t.Fatalf("retry of b has priority %d after the update, want 9", got.Priority)
		}
		runs := f.claimDue("node-a", at(20))
		eqIDs(t, "claim", runIDs(runs), []int64{bRetry.ID, a10.ID})
		b12 := f.run(b.ID, at(10), sundial.RunScheduled, withNode(""), withKey("s:again"))
		if b12.Priority != 9 {
			t.Fatalf("new run of b has priority %d, want 9", b12.Priority)
		}
	})

	t.Run("Order", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		a := f.task("a")
		hi := f.task("hi", withPriority(5))
		a10 := f.run(a.ID, at(10), sundial.RunScheduled, withNode(""))
		hi10 := f.run(hi.ID, at(10), sundial.RunScheduled, withNode(""))
		a20 := f.run(a.ID, at(20), sundial.RunScheduled, withNode(""))
		hi15 := f.run(hi.ID, at(15), sundial.RunScheduled, withNode(""))
		later := f.run(a.ID, at(100), sundial.RunScheduled, withNode(""))
		held := f.run(a.ID, at(5), sundial.RunScheduled, withNode("node-b"))
		queued := f.run(a.ID, at(6), sundial.RunQueued, withNode(""))
		man := f.run(hi.ID, at(7), sundial.RunScheduled, withNode(""), manual, withKey("m:1"))

		runs, tasks, err := f.s.RunClaimDue(f.ctx, "node-a", at(20), 3, sundial.ClaimStartParams{})
		if err != nil {
			t.Fatalf("RunClaimDue: %v", err)
		}
		// Due time first, then priority among runs due at the same time.
		eqIDs(t, "first claim", runIDs(runs), []int64{man.ID, hi10.ID, a10.ID})
		for _, r := range runs {
			if r.NodeID != "node-a" || r.Fence != 2 || r.Status != sundial.RunScheduled {
				t.Fatalf("claimed run = %s; want SCHEDULED, node-a, fence 2", fmtRun(*r))
			}
			eqRun(t, f.get(r.ID), r)
		}
		if len(tasks) != 2 || tasks[hi.ID] == nil || tasks[a.ID] == nil {
			t.Fatalf("tasks of the claim = %v, want tasks %d and %d", tasks, hi.ID, a.ID)
		}
		eqTask(t, tasks[hi.ID], hi)

		runs, tasks, err = f.s.RunClaimDue(f.ctx, "node-c", at(20), 10, sundial.ClaimStartParams{})
		if err != nil {
			t.Fatalf("RunClaimDue: %v", err)
		}
		eqIDs(t, "second claim", runIDs(runs), []int64{hi15.ID, a20.ID})
		if len(tasks) != 2 || tasks[a.ID] == nil || tasks[hi.ID] == nil {
			t.Fatalf("tasks of the second claim = %v, want tasks %d and %d", tasks, a.ID, hi.ID)
		}
		runs, _, err = f.s.RunClaimDue(f.ctx, "node-c", at(20), 10, sundial.ClaimStartParams{})
		if err != nil || len(runs) != 0 {
			t.Fatalf("third claim = %v, %v; want nothing left", runIDs(runs), err)
		}
		for _, r := range []*sundial.Run{later, held, queued} {
			eqRun(t, f.get(r.ID), r)
		}
		// The planner's fence no longer starts the run; the claimer's does.
		ok, err := f.s.RunStart(f.ctx, []sundial.RunStartParams{
			{ID: a10.ID, Fence: a10.Fence, Attempt: 1, StartedAt: at(10)},
			{ID: a20.ID, Fence: a20.Fence + 1, Attempt: 1, StartedAt: at(20)},
		})
		if err != nil || !slices.Equal(ok, []bool{false, true}) {
			t.Fatalf("RunStart after the claim = %v, %v; want [false true]", ok, err)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		var all []int64
		for i := range 120 {
			all = append(all, f.run(tk.ID, at(i), sundial.RunScheduled, withNode("")).ID)
		}
		var mu sync.Mutex
		claimed := map[int64]string{}
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for _, node := range []string{"n1", "n2", "n3"} {
			wg.Go(func() {
				for {
					runs, _, err := f.s.RunClaimDue(f.ctx, node, at(200), 7, sundial.ClaimStartParams{})
					if err != nil {
						errs <- err
						return
					}
					if len(runs) == 0 {
						return
					}
					mu.Lock()
					for _, r := range runs {
						if prev, dup := claimed[r.ID]; dup {
							mu.Unlock()
							t.Errorf("run %d claimed by %s and %s", r.ID, prev, node)
							return
						}
						claimed[r.ID] = node
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("RunClaimDue: %v", err)
		}
		if len(claimed) != len(all) {
			t.Fatalf("%d of %d runs claimed", len(claimed), len(all))
		}
	})
}

func testRunClaim(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	sched := f.run(tk.ID, at(10), sundial.RunScheduled, withNode("node-b"))
	queued := f.run(tk.ID, at(11), sundial.RunQueued, withNode("node-b"))
	running := f.run(tk.ID, at(12), sundial.RunRunning, withNode("node-b"))
	stale := f.run(tk.ID, at(13), sundial.RunScheduled, withNode("node-b"))

	runs, tasks, err := f.s.RunClaim(f.ctx, "node-a", []sundial.RunRef{
		ref(sched), ref(queued), ref(running), {ID: stale.ID, Fence: stale.Fence + 7}, {ID: 999999, Fence: 1},
	})
	if err != nil {
		t.Fatalf("RunClaim: %v", err)
	}
	eqIDs(t, "claimed", runIDs(runs), []int64{sched.ID, queued.ID})
	for _, r := range runs {
		if r.NodeID != "node-a" || r.Fence != 2 {
			t.Fatalf("claimed run = %s; want node-a, fence 2", fmtRun(*r))
		}
		eqRun(t, f.get(r.ID), r)
	}
	if len(tasks) != 1 || tasks[tk.ID] == nil {
		t.Fatalf("tasks = %v, want task %d", tasks, tk.ID)
	}
	eqRun(t, f.get(running.ID), running)
	eqRun(t, f.get(stale.ID), stale)
	// A second claim with the old fence takes nothing.
	runs, _, err = f.s.RunClaim(f.ctx, "node-c", []sundial.RunRef{ref(sched)})
	if err != nil || len(runs) != 0 {
		t.Fatalf("claim with the old fence = %v, %v; want nothing", runIDs(runs), err)
	}
}

func testRunRedeliver(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	gone := f.task("gone")
	first := f.run(tk.ID, at(10), sundial.RunInterrupted)
	second := f.run(tk.ID, at(20), sundial.RunInterrupted)
	orphan := f.run(gone.ID, at(5), sundial.RunInterrupted)
	running := f.run(tk.ID, at(30), sundial.RunRunning)
	canceled := f.run(tk.ID, at(3), sundial.RunInterrupted)
	if _, err := f.s.RunCancel(f.ctx, canceled.ID, at(35)); err != nil {
		t.Fatalf("RunCancel of an interrupted run: %v", err)
	}
	if err := f.s.TaskDelete(f.ctx, gone.ID, at(40)); err != nil {
		t.Fatalf("TaskDelete: %v", err)
	}

	// One delivery so far each: with at most 2, both get another.
	runs, tasks, err := f.s.RunRedeliver(f.ctx, "node-c", 2, 1, at(50))
	if err != nil {
		t.Fatalf("RunRedeliver: %v", err)
	}
	eqIDs(t, "redelivered (limit 1, oldest first)", runIDs(runs), []int64{first.ID})
	got := runs[0]
	if got.Status != sundial.RunScheduled || got.NodeID != "node-c" || got.Fence <= first.Fence ||
		got.Deliveries != 1 || got.FireKey != first.FireKey || got.IdempotencyKey != first.IdempotencyKey {
		t.Fatalf("redelivered run = %s; want SCHEDULED on node-c, a new fence, 1 delivery, same keys", fmtRun(*got))
	}
	if !got.DueAt.Equal(at(50)) {
		t.Fatalf("redelivered run is due at %v, want now (%v)", got.DueAt, at(50))
	}
	eqRun(t, f.get(got.ID), got)
	if len(tasks) != 1 || tasks[tk.ID] == nil {
		t.Fatalf("tasks = %v, want task %d", tasks, tk.ID)
	}
	// A run whose cancellation was asked is not delivered again.
	if r := f.get(canceled.ID); r.Status != sundial.RunFailed || r.Error == "" || r.FinishedAt == nil {
		t.Fatalf("interrupted run asked to cancel = %s; want FAILED with a reason", fmtRun(*r))
	}
	// The deleted task's run failed instead of being counted in the limit.
	if r := f.get(orphan.ID); r.Status != sundial.RunFailed || r.Error == "" || r.FinishedAt == nil {
		t.Fatalf("run of a deleted task = %s; want FAILED with a reason", fmtRun(*r))
	}

	// With at most one delivery, the second has used its share: FAILED.
	runs, _, err = f.s.RunRedeliver(f.ctx, "node-c", 1, 10, at(60))
	if err != nil || len(runs) != 0 {
		t.Fatalf("RunRedeliver(max 1) = %v, %v; want nothing to deliver", runIDs(runs), err)
	}
	if r := f.get(second.ID); r.Status != sundial.RunFailed || r.Error == "" || r.FinishedAt == nil {
		t.Fatalf("run out of deliveries = %s; want FAILED with a reason", fmtRun(*r))
	}
	eqRun(t, f.get(running.ID), running)
}

func testRunFindStuck(t *testing.T, open Opener) {
	f := setup(t, open)
	for _, id := range []string{"node-a", "node-b", "node-x"} {
		if err := f.s.NodeRegister(f.ctx, &sundial.Node{ID: id}); err != nil {
			t.Fatalf("NodeRegister: %v", err)
		}
	}
	if err := f.s.NodeLeave(f.ctx, "node-b"); err != nil {
		t.Fatalf("NodeLeave: %v", err)
	}
	tk := f.task("a")
	mine := f.run(tk.ID, at(12), sundial.RunScheduled)
	left := f.run(tk.ID, at(10), sundial.RunScheduled, withNode("node-b"))
	nobody := f.run(tk.ID, at(11), sundial.RunScheduled, withNode(""))
	unknown := f.run(tk.ID, at(13), sundial.RunScheduled, withNode("node-c"))
	f.run(tk.ID, at(14), sundial.RunScheduled, withNode("node-x")) // held by a live node
	f.run(tk.ID, at(50), sundial.RunScheduled)                     // not due long enough
	f.run(tk.ID, at(15), sundial.RunQueued)                        // waiting by policy
	f.run(tk.ID, at(16), sundial.RunRunning)                       // started

	got, err := f.s.RunFindStuck(f.ctx, "node-a", at(40), 10)
	if err != nil {
		t.Fatalf("RunFindStuck: %v", err)
	}
	eqIDs(t, "stuck", runIDs(got), []int64{left.ID, nobody.ID, mine.ID, unknown.ID})
	got, err = f.s.RunFindStuck(f.ctx, "node-a", at(40), 2)
	if err != nil {
		t.Fatalf("RunFindStuck: %v", err)
	}
	eqIDs(t, "stuck (limit 2)", runIDs(got), []int64{left.ID, nobody.ID})
}

func testRunCancelRequested(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	running := f.run(tk.ID, at(10), sundial.RunRunning)
	waiting := f.run(tk.ID, at(11), sundial.RunWaitingCallback)
	f.run(tk.ID, at(12), sundial.RunRunning) // not asked to cancel
	elsewhere := f.run(tk.ID, at(13), sundial.RunRunning, withNode("node-b"))
	for _, r := range []*sundial.Run{running, waiting, elsewhere} {
		if _, err := f.s.RunCancel(f.ctx, r.ID, at(20)); err != nil {
			t.Fatalf("RunCancel: %v", err)
		}
	}
	ids, err := f.s.RunCancelRequested(f.ctx, "node-a")
	if err != nil {
		t.Fatalf("RunCancelRequested: %v", err)
	}
	slices.Sort(ids)
	eqIDs(t, "cancel requested on node-a", ids, []int64{running.ID, waiting.ID})
}
