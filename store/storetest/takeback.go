package storetest

import (
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// Fires committed RUNNING ahead of their instant (RunStart) and not yet
// sent: a change of their task takes back those due past the send cutoff,
// and RunCheckSend tells the node holding them.

// committed makes a run of task scheduled (and started) at when, committed
// RUNNING ahead of it by node-a.
func (f *fixture) committed(task int64, when time.Time, mods ...func(*sundial.Run)) *sundial.Run {
	f.t.Helper()
	return f.run(task, when, sundial.RunRunning, mods...)
}

// redelivering makes a run of task whose first delivery failed and whose
// retry, due at due, node-b claimed and committed RUNNING ahead of due.
func (f *fixture) redelivering(task int64, when, due time.Time) *sundial.Run {
	f.t.Helper()
	r := f.retrying(task, when, due)
	got, _, err := f.s.RunClaim(f.ctx, "node-b", []sundial.RunRef{{ID: r.ID, Fence: r.Fence}})
	if err != nil || len(got) != 1 {
		f.t.Fatalf("RunClaim %d: %v %v", r.ID, got, err)
	}
	ok, err := f.s.RunStart(f.ctx, []sundial.RunStartParams{{ID: r.ID, Fence: got[0].Fence, Attempt: 2, StartedAt: due}})
	if err != nil || !ok[0] {
		f.t.Fatalf("RunStart %d: %v %v", r.ID, ok, err)
	}
	return f.get(r.ID)
}

// heldRetry makes a run waiting for a retry due at due that node-b has
// claimed but not committed.
func (f *fixture) heldRetry(task int64, when, due time.Time) *sundial.Run {
	f.t.Helper()
	r := f.retrying(task, when, due)
	if got, _, err := f.s.RunClaim(f.ctx, "node-b", []sundial.RunRef{{ID: r.ID, Fence: r.Fence}}); err != nil || len(got) != 1 {
		f.t.Fatalf("RunClaim %d: %v %v", r.ID, got, err)
	}
	return f.get(r.ID)
}

func (f *fixture) gone(what string, id int64) {
	f.t.Helper()
	_, err := f.s.RunGet(f.ctx, id)
	wantErr(f.t, err, sundial.ENotFound, "")
	if f.t.Failed() {
		f.t.Errorf("%s (run %d) is still there", what, id)
	}
}

func testTaskChangeTakesBack(t *testing.T, open Opener) {
	// t0 is later than the wall clock: the cutoff is t0 + SendMargin.
	inside := t0.Add(sundial.SendMargin / 2)
	past := t0.Add(sundial.SendMargin + time.Millisecond)

	for _, change := range []string{"update", "disable", "delete"} {
		t.Run(change, func(t *testing.T) {
			f := setup(t, open)
			tk := f.task("changed")
			other := f.task("other")

			ahead := f.committed(tk.ID, past)                         // taken back
			sending := f.committed(tk.ID, inside, withKey("sending")) // within the margin: goes out
			sent := f.committed(tk.ID, at(-5))                        // already on the wire
			redo := f.redelivering(tk.ID, at(-20), at(30))            // a retry committed ahead
			held := f.heldRetry(tk.ID, at(-40), at(40))               // a retry claimed, not committed
			manualRun := f.committed(tk.ID, at(50), manual)           // a manual run committed ahead
			untouched := f.committed(other.ID, past)                  // another task's
			queued := f.run(tk.ID, at(-2), sundial.RunQueued)         // waiting for a slot
			queuedManual := f.run(tk.ID, at(-1), sundial.RunQueued, manual, withKey("manual-queued"))

			switch change {
			case "update", "disable":
				upd := f.getTask(tk.ID)
				upd.TargetURL = "https://example.com/new"
				if change == "disable" {
					upd.Status = sundial.TaskDisabled
				}
				if err := f.s.TaskUpdate(f.ctx, upd, t0); err != nil {
					t.Fatalf("TaskUpdate: %v", err)
				}
			case "delete":
				if err := f.s.TaskDelete(f.ctx, tk.ID, t0); err != nil {
					t.Fatalf("TaskDelete: %v", err)
				}
			}

			f.gone("a first delivery committed past the cutoff", ahead.ID)
			// A disabled or deleted task sends nothing more: its queued runs
			// are taken back (delete cancels them, disable records them
			// skipped); an edit leaves them queued.
			for _, r := range []*sundial.Run{queued, queuedManual} {
				got := f.get(r.ID)
				var ok bool
				switch change {
				case "update":
					ok = got.Status == sundial.RunQueued && got.FinishedAt == nil
				case "disable":
					ok = got.Status == sundial.RunSkipped && got.SkipReason == sundial.SkipDisabled &&
						got.Error == sundial.DisabledQueuedError && got.FinishedAt != nil
				case "delete":
					ok = got.Status == sundial.RunCanceled && got.FinishedAt != nil
				}
				if !ok {
					t.Errorf("queued run %d after %s: %s (%s) error %q finished %v", r.ID, change,
						got.Status, got.SkipReason, got.Error, got.FinishedAt)
				}
			}
			for _, r := range []*sundial.Run{sending, sent, untouched} {
				if got := f.get(r.ID); got.Status != sundial.RunRunning || got.Fence != r.Fence || got.Deliveries != r.Deliveries {
					t.Errorf("run %d: %s fence %d deliveries %d, want it left RUNNING at fence %d, %d deliveries",
						r.ID, got.Status, got.Fence, got.Deliveries, r.Fence, r.Deliveries)
				}
			}
			gotRedo, gotHeld, gotManual := f.get(redo.ID), f.get(held.ID), f.get(manualRun.ID)
			if change == "delete" {
				for _, c := range []struct {
					r, got *sundial.Run
				}{{redo, gotRedo}, {held, gotHeld}, {manualRun, gotManual}} {
					wantDeliveries := c.r.Deliveries
					if c.r.Status == sundial.RunRunning {
						wantDeliveries--
					}
					if c.got.Status != sundial.RunCanceled || c.got.Deliveries != wantDeliveries || c.got.FinishedAt == nil {
						t.Errorf("run %d of a deleted task: %s, %d deliveries, finished %v; want CANCELED, %d deliveries, finished",
							c.r.ID, c.got.Status, c.got.Deliveries, c.got.FinishedAt, wantDeliveries)
					}
				}
				return
			}
			// Taken back to no node, with a new fence: the node holding
			// it fails to commit or to check it, and the next claim takes
			// it with the new task. A disabled task's runs waiting for
			// another delivery are cancelled instead: it sends nothing
			// more (a manual run, which a disabled task may have, stays).
			retries := []struct {
				what   string
				r, got *sundial.Run
				undo   int
			}{{"redelivery committed ahead", redo, gotRedo, 1}, {"claimed retry", held, gotHeld, 0}}
			if change == "disable" {
				for _, c := range retries {
					if c.got.Status != sundial.RunCanceled || c.got.Error != sundial.DisabledRetryError ||
						c.got.FinishedAt == nil || c.got.Deliveries != c.r.Deliveries-c.undo {
						t.Errorf("%s (run %d) of a disabled task: %s error %q deliveries %d; want CANCELED (%q), %d deliveries",
							c.what, c.r.ID, c.got.Status, c.got.Error, c.got.Deliveries, sundial.DisabledRetryError,
							c.r.Deliveries-c.undo)
					}
				}
				retries = nil
			}
			for _, c := range append(retries, struct {
				what   string
				r, got *sundial.Run
				undo   int
			}{"manual run committed ahead", manualRun, gotManual, 1}) {
				if c.got.Status != sundial.RunScheduled || c.got.NodeID != "" || c.got.Fence != c.r.Fence+1 ||
					c.got.Deliveries != c.r.Deliveries-c.undo {
					t.Errorf("%s (run %d): %s node %q fence %d deliveries %d; want SCHEDULED, no node, fence %d, deliveries %d",
						c.what, c.r.ID, c.got.Status, c.got.NodeID, c.got.Fence, c.got.Deliveries,
						c.r.Fence+1, c.r.Deliveries-c.undo)
				}
			}
			if change == "update" {
				// The retry is claimable again.
				runs, _, err := f.s.RunClaimDue(f.ctx, "node-c", at(100), 10, sundial.ClaimStartParams{})
				if err != nil {
					t.Fatalf("RunClaimDue: %v", err)
				}
				if ids := runIDs(runs); !containsID(ids, redo.ID) || !containsID(ids, held.ID) {
					t.Errorf("RunClaimDue after the update claimed %v, want runs %d and %d among them", ids, redo.ID, held.ID)
				}
			}
		})
	}
}

func containsID(ids []int64, id int64) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

func testRunCheckSend(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("checked")
	f.committed(tk.ID, at(5)) // taken back by the update below, and made again
	asked := f.committed(tk.ID, at(6))
	if _, err := f.s.RunCancel(f.ctx, asked.ID, t0); err != nil {
		t.Fatalf("RunCancel: %v", err)
	}
	done := f.run(tk.ID, at(7), sundial.RunSuccess)
	planned := f.run(tk.ID, at(8), sundial.RunScheduled)
	deleted := f.committed(tk.ID, at(9))
	upd := f.getTask(tk.ID)
	if err := f.s.TaskUpdate(f.ctx, upd, t0); err != nil {
		t.Fatalf("TaskUpdate: %v", err)
	}
	// The update took back deleted (and live, and asked): make live and
	// asked again.
	live := f.committed(tk.ID, at(5))
	asked = f.committed(tk.ID, at(6))
	if _, err := f.s.RunCancel(f.ctx, asked.ID, t0); err != nil {
		t.Fatalf("RunCancel: %v", err)
	}
	moved := f.committed(tk.ID, at(10))

	refs := []sundial.RunRef{
		{ID: live.ID, Fence: live.Fence},
		{ID: asked.ID, Fence: asked.Fence},
		{ID: moved.ID, Fence: moved.Fence + 1}, // fenced off
		{ID: done.ID, Fence: done.Fence},
		{ID: planned.ID, Fence: planned.Fence},
		{ID: deleted.ID, Fence: deleted.Fence},
		{ID: 1 << 40, Fence: 1},
	}
	want := []sundial.SendCheck{sundial.SendGo, sundial.SendCancel, sundial.SendDrop, sundial.SendDrop,
		sundial.SendDrop, sundial.SendDrop, sundial.SendDrop}
	got, err := f.s.RunCheckSend(f.ctx, refs)
	if err != nil {
		t.Fatalf("RunCheckSend: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("RunCheckSend returned %d verdicts for %d runs", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("RunCheckSend of run %d at fence %d: %d, want %d", refs[i].ID, refs[i].Fence, got[i], want[i])
		}
	}
	if got, err := f.s.RunCheckSend(f.ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("RunCheckSend(nil) = %v, %v; want nothing", got, err)
	}

	// Many at once: more than one statement's worth of IDs, most of them
	// of no run.
	many := make([]sundial.RunRef, 1200)
	for i := range many {
		many[i] = sundial.RunRef{ID: 1<<40 + int64(i), Fence: 1}
	}
	many[700] = sundial.RunRef{ID: live.ID, Fence: live.Fence}
	many[1100] = sundial.RunRef{ID: asked.ID, Fence: asked.Fence}
	got, err = f.s.RunCheckSend(f.ctx, many)
	if err != nil {
		t.Fatalf("RunCheckSend of %d: %v", len(many), err)
	}
	for i, v := range got {
		wantV := sundial.SendDrop
		switch i {
		case 700:
			wantV = sundial.SendGo
		case 1100:
			wantV = sundial.SendCancel
		}
		if v != wantV {
			t.Errorf("RunCheckSend of %d: verdict %d is %d, want %d", len(many), i, v, wantV)
		}
	}
}
