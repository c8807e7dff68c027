package storetest

import (
	"regexp"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// traceIDRE is a W3C trace id: 32 lowercase hex digits.
var traceIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

func startAhead(r *sundial.Run) { r.StartAhead = true }

// testClaimStart: a claim starts, in the same write, the runs ClaimStartParams
// selects, as RunStart would, and only those.
func testClaimStart(t *testing.T, open Opener) {
	t.Run("Selects", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		// A planned run marked by its planner (PlanDue stores the mark).
		planned := f.task("planned", withNext(at(10)))
		prs, err := f.s.PlanDue(f.ctx, at(10), 10, "", at(0), func(pt *sundial.Task) sundial.Plan {
			if pt.ID != planned.ID {
				return sundial.Plan{}
			}
			return sundial.Plan{Runs: []*sundial.Run{{TaskID: pt.ID, FireKey: sundial.ScheduledFireKey(at(10)),
				Trigger: sundial.TriggerSchedule, ScheduledTime: at(10), Status: sundial.RunScheduled, StartAhead: true}}}
		})
		if err != nil || len(prs) != 1 {
			t.Fatalf("PlanDue = %d runs, %v; want 1", len(prs), err)
		}
		plannedRun := f.get(prs[0].ID)
		if !plannedRun.StartAhead {
			t.Fatalf("planned run %d lost its StartAhead mark", plannedRun.ID)
		}
		fast := f.run(tk.ID, at(12), sundial.RunScheduled, withNode(""), startAhead)
		later := f.run(tk.ID, at(30), sundial.RunScheduled, withNode(""), startAhead)      // due after By
		plain := f.run(tk.ID, at(11), sundial.RunScheduled, withNode(""))                  // not marked
		stale := f.run(tk.ID, at(5), sundial.RunScheduled, withNode(""), startAhead)       // scheduled before FreshAfter
		retry := f.retrying(tk.ID, at(1), at(15), withKey("s:retry"))                      // delivered before, not marked
		held := f.run(tk.ID, at(13), sundial.RunScheduled, withNode("node-b"), startAhead) // another node's

		runs, tasks, err := f.s.RunClaimDue(f.ctx, "node-a", at(40), 100, sundial.ClaimStartParams{By: at(20), FreshAfter: at(8)})
		if err != nil {
			t.Fatalf("RunClaimDue: %v", err)
		}
		eqIDs(t, "claim", runIDs(runs), []int64{stale.ID, prs[0].ID, plain.ID, fast.ID, retry.ID, later.ID})
		if len(tasks) != 2 || tasks[tk.ID] == nil || tasks[planned.ID] == nil {
			t.Fatalf("tasks of the claim = %v, want tasks %d and %d", tasks, tk.ID, planned.ID)
		}
		before := map[int64]*sundial.Run{stale.ID: stale, prs[0].ID: plannedRun, plain.ID: plain,
			fast.ID: fast, retry.ID: retry, later.ID: later}
		traces := map[string]bool{}
		for _, r := range runs {
			b := before[r.ID]
			want := *b
			want.NodeID, want.Fence, want.UpdatedAt = "node-a", b.Fence+1, r.UpdatedAt
			if r.ID == prs[0].ID || r.ID == fast.ID || r.ID == retry.ID {
				if !traceIDRE.MatchString(r.TraceID) || traces[r.TraceID] || r.TraceID == b.TraceID {
					t.Fatalf("run %d started with trace id %q: want a new one, 32 lowercase hex digits", r.ID, r.TraceID)
				}
				traces[r.TraceID] = true
				want.Status, want.Attempt, want.Deliveries = sundial.RunRunning, max(b.Attempt, 1), b.Deliveries+1
				want.StartedAt, want.TraceID = ptr(b.DueAt), r.TraceID
				// Nothing of the retry's failed delivery is left on it.
				want.HTTPStatus, want.ResponseBody, want.Error, want.Message = 0, "", "", ""
			}
			eqRun(t, r, &want)
			eqRun(t, f.get(r.ID), r)
		}
		eqRun(t, f.get(held.ID), held)

		// A started run is RUNNING under the claim's fence: its outcome is
		// recorded as the delivery the start counted.
		ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: fast.ID, Fence: fast.Fence + 1,
			Status: sundial.RunSuccess, StartedAt: at(12), FinishedAt: at(13), HTTPStatus: 200}})
		if err != nil || !ok[0] {
			t.Fatalf("RunFinish of the started run = %v, %v", ok, err)
		}
		atts, err := f.s.RunAttempts(f.ctx, fast.ID)
		if err != nil || len(atts) != 1 || atts[0].Delivery != 1 || atts[0].NodeID != "node-a" {
			t.Fatalf("attempts of the started run = %+v, %v; want delivery 1 on node-a", atts, err)
		}
	})

	t.Run("StartsLateAtNow", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		when := time.Now().Add(-time.Minute).Truncate(time.Second)
		late := f.run(tk.ID, when, sundial.RunScheduled, withNode(""), startAhead)
		from := time.Now().Truncate(time.Microsecond)
		runs, _, err := f.s.RunClaimDue(f.ctx, "node-a", at(0), 10, sundial.ClaimStartParams{By: at(0)})
		to := time.Now()
		if err != nil || len(runs) != 1 || runs[0].ID != late.ID {
			t.Fatalf("RunClaimDue = %v, %v; want run %d", runIDs(runs), err, late.ID)
		}
		got := runs[0]
		if got.Status != sundial.RunRunning || got.StartedAt == nil || got.StartedAt.Before(from) || got.StartedAt.After(to) {
			t.Fatalf("late run started as %s; want RUNNING, started between %v and %v", fmtRun(*got), from, to)
		}
	})

	t.Run("ZeroStartsNothing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.run(tk.ID, at(10), sundial.RunScheduled, withNode(""), startAhead)
		retry := f.retrying(tk.ID, at(1), at(11), withKey("s:retry"))
		runs, _, err := f.s.RunClaimDue(f.ctx, "node-a", at(20), 10, sundial.ClaimStartParams{})
		if err != nil || len(runs) != 2 {
			t.Fatalf("RunClaimDue = %v, %v; want runs %d and %d", runIDs(runs), err, r.ID, retry.ID)
		}
		for _, got := range runs {
			if got.Status != sundial.RunScheduled {
				t.Fatalf("run %d is %s after a claim that starts nothing", got.ID, got.Status)
			}
		}
	})
}
