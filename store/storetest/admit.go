package storetest

import (
	"sync"
	"testing"

	"github.com/sundialhq/sundial"
)

// capture returns an AdmitFunc that records the state it is given and
// returns d.
func capture(state *sundial.AdmitState, d sundial.Admission) sundial.AdmitFunc {
	return func(s sundial.AdmitState) sundial.Admission {
		*state = s
		return d
	}
}

func testRunAdmit(t *testing.T, open Opener) {
	t.Run("State", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		other := f.task("b")
		// The task's history, oldest first.
		f.run(tk.ID, at(0), sundial.RunSuccess)
		running := f.run(tk.ID, at(1), sundial.RunRunning)
		waiting := f.run(tk.ID, at(2), sundial.RunWaitingCallback)
		failed := f.run(tk.ID, at(3), sundial.RunFailed) // the last effective run
		skip1 := f.run(tk.ID, at(4), sundial.RunSkipped)
		queued := f.run(tk.ID, at(5), sundial.RunQueued)
		skip2 := f.run(tk.ID, at(6), sundial.RunSkipped)
		earlier := f.run(tk.ID, at(7), sundial.RunScheduled)
		tie := f.run(tk.ID, at(8), sundial.RunScheduled, withKey("m:tie"), manual) // same second, lower ID
		run := f.run(tk.ID, at(8), sundial.RunScheduled)
		f.run(tk.ID, at(8), sundial.RunScheduled, withKey("m:after"), manual) // same second, higher ID
		f.run(tk.ID, at(9), sundial.RunScheduled)                             // later: not pending
		f.run(other.ID, at(1), sundial.RunRunning)                            // another task's
		f.run(other.ID, at(2), sundial.RunQueued)

		var st sundial.AdmitState
		if _, err := f.s.RunAdmit(f.ctx, run.ID, run.Fence, at(8), capture(&st,
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipOverlap, Attempt: 1})); err != nil {
			t.Fatalf("RunAdmit: %v", err)
		}
		if st.Task == nil || st.Task.ID != tk.ID || st.Run == nil {
			t.Fatalf("state has Task %v, Run %v", st.Task, st.Run)
		}
		eqTask(t, st.Task, tk)
		eqRun(t, st.Run, run)
		eqIDs(t, "Pending", runIDs(st.Pending), []int64{running.ID, waiting.ID, queued.ID, earlier.ID, tie.ID})
		if st.Active != 2 || st.Queued != 1 {
			t.Fatalf("Active %d, Queued %d; want 2, 1", st.Active, st.Queued)
		}
		if st.LastEffective == nil {
			t.Fatalf("LastEffective is nil, want run %d", failed.ID)
		}
		eqRun(t, st.LastEffective, failed)
		eqIDs(t, "SkipsSinceLast", runIDs(st.SkipsSinceLast), []int64{skip1.ID, skip2.ID})
	})

	t.Run("StateEmpty", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		run := f.run(tk.ID, at(0), sundial.RunScheduled)
		var st sundial.AdmitState
		if _, err := f.s.RunAdmit(f.ctx, run.ID, run.Fence, at(0), capture(&st,
			sundial.Admission{Status: sundial.RunRunning, Attempt: 1})); err != nil {
			t.Fatalf("RunAdmit: %v", err)
		}
		if len(st.Pending) != 0 || st.Active != 0 || st.Queued != 0 || st.LastEffective != nil || len(st.SkipsSinceLast) != 0 {
			t.Fatalf("state of a first run = %+v, want empty", st)
		}
	})

	t.Run("SkipsCapped", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		f.run(tk.ID, at(0), sundial.RunSkipped) // before the last effective run
		last := f.run(tk.ID, at(1), sundial.RunSuccess)
		var skips []int64
		for i := range 12 {
			skips = append(skips, f.run(tk.ID, at(10+i), sundial.RunSkipped).ID)
		}
		run := f.run(tk.ID, at(30), sundial.RunScheduled)
		var st sundial.AdmitState
		if _, err := f.s.RunAdmit(f.ctx, run.ID, run.Fence, at(30), capture(&st,
			sundial.Admission{Status: sundial.RunRunning, Attempt: 1})); err != nil {
			t.Fatalf("RunAdmit: %v", err)
		}
		eqRun(t, st.LastEffective, last)
		eqIDs(t, "SkipsSinceLast", runIDs(st.SkipsSinceLast), skips[:10])
	})

	t.Run("SkipsWithoutLast", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		s1 := f.run(tk.ID, at(0), sundial.RunSkipped)
		s2 := f.run(tk.ID, at(1), sundial.RunSkipped)
		run := f.run(tk.ID, at(5), sundial.RunScheduled)
		var st sundial.AdmitState
		if _, err := f.s.RunAdmit(f.ctx, run.ID, run.Fence, at(5), capture(&st,
			sundial.Admission{Status: sundial.RunRunning, Attempt: 1})); err != nil {
			t.Fatalf("RunAdmit: %v", err)
		}
		if st.LastEffective != nil {
			t.Fatalf("LastEffective = %d, want nil", st.LastEffective.ID)
		}
		eqIDs(t, "SkipsSinceLast", runIDs(st.SkipsSinceLast), []int64{s1.ID, s2.ID})
	})

	t.Run("LastEffectiveKinds", func(t *testing.T) {
		t.Parallel()
		// Every status but SCHEDULED, QUEUED and SKIPPED is effective. One
		// status after another, each on a store of its own that it gives
		// back when it ends (a backend may hand it to the next, emptied).
		for _, s := range sundial.RunStatuses() {
			t.Run(string(s), func(t *testing.T) {
				f := setup(t, open)
				tk := f.task("a")
				prev := f.run(tk.ID, at(0), sundial.RunSuccess)
				cand := f.run(tk.ID, at(1), s)
				run := f.run(tk.ID, at(2), sundial.RunScheduled)
				var st sundial.AdmitState
				if _, err := f.s.RunAdmit(f.ctx, run.ID, run.Fence, at(2), capture(&st,
					sundial.Admission{Status: sundial.RunRunning, Attempt: 1})); err != nil {
					t.Fatalf("%s: RunAdmit: %v", s, err)
				}
				want := cand
				if s == sundial.RunScheduled || s == sundial.RunQueued || s == sundial.RunSkipped {
					want = prev
				}
				if st.LastEffective == nil || st.LastEffective.ID != want.ID {
					t.Fatalf("with a %s run: LastEffective = %v, want run %d", s, st.LastEffective, want.ID)
				}
			})
		}
	})

	t.Run("Apply", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name string
			from sundial.RunStatus
			d    sundial.Admission
		}{
			{"scheduled to running", sundial.RunScheduled, sundial.Admission{Status: sundial.RunRunning, Attempt: 2, TraceID: "tr"}},
			{"scheduled to queued", sundial.RunScheduled, sundial.Admission{Status: sundial.RunQueued, Attempt: 3}},
			{"scheduled to skipped", sundial.RunScheduled, sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipFailure, Attempt: 4}},
			{"queued to running", sundial.RunQueued, sundial.Admission{Status: sundial.RunRunning, Attempt: 5, TraceID: "tq"}},
			{"queued to skipped", sundial.RunQueued, sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipQueueFull, Attempt: 6}},
			{"queued stays queued", sundial.RunQueued, sundial.Admission{Status: sundial.RunQueued, Attempt: 7}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				f := setup(t, open)
				tk := f.task("a")
				r := f.run(tk.ID, at(1), tc.from)
				got, err := f.s.RunAdmit(f.ctx, r.ID, r.Fence, at(9), capture(new(sundial.AdmitState), tc.d))
				if err != nil {
					t.Fatalf("RunAdmit: %v", err)
				}
				want := *r
				want.Status, want.Attempt, want.UpdatedAt = tc.d.Status, tc.d.Attempt, at(9)
				switch tc.d.Status {
				case sundial.RunRunning:
					want.StartedAt, want.Deliveries, want.TraceID = ptr(at(9)), r.Deliveries+1, tc.d.TraceID
				case sundial.RunSkipped:
					want.SkipReason, want.FinishedAt = tc.d.SkipReason, ptr(at(9))
				}
				eqRun(t, got, &want)
				eqRun(t, f.get(r.ID), &want)
			})
		}
	})

	t.Run("NotAdmissible", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		sched := f.run(tk.ID, at(1), sundial.RunScheduled)
		running := f.run(tk.ID, at(2), sundial.RunRunning)
		gone := f.task("gone")
		orphan := f.run(gone.ID, at(3), sundial.RunQueued)
		if err := f.s.TaskDelete(f.ctx, gone.ID, at(4)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		never := func(sundial.AdmitState) sundial.Admission {
			t.Error("decide called for a run that is not admissible")
			return sundial.Admission{Status: sundial.RunRunning}
		}
		for _, tc := range []struct {
			name      string
			id, fence int64
		}{
			{"fence mismatch", sched.ID, sched.Fence + 1},
			{"missing", 99999, 1},
			{"running", running.ID, running.Fence},
			{"task deleted", orphan.ID, orphan.Fence},
		} {
			_, err := f.s.RunAdmit(f.ctx, tc.id, tc.fence, at(5), never)
			if err == nil {
				t.Fatalf("%s: no error", tc.name)
			}
			wantErr(t, err, sundial.ENotFound, "")
		}
		eqRun(t, f.get(sched.ID), sched)
		eqRun(t, f.get(running.ID), running)
	})

	t.Run("IllegalDecision", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		prev := f.run(tk.ID, at(0), sundial.RunScheduled)
		r := f.run(tk.ID, at(1), sundial.RunScheduled)
		for _, s := range []sundial.RunStatus{sundial.RunSuccess, sundial.RunScheduled, sundial.RunCanceled, ""} {
			_, err := f.s.RunAdmit(f.ctx, r.ID, r.Fence, at(2), capture(new(sundial.AdmitState),
				sundial.Admission{Status: s, Cancel: []int64{prev.ID}}))
			wantErr(t, err, sundial.EConflict, "")
		}
		// Nothing changed, the cancel included.
		eqRun(t, f.get(r.ID), r)
		eqRun(t, f.get(prev.ID), prev)
	})

	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a", func(tk *sundial.Task) { tk.OverlapAction = sundial.OverlapCancelPrev })
		other := f.task("b")
		done := f.run(tk.ID, at(0), sundial.RunSuccess)
		running := f.run(tk.ID, at(1), sundial.RunRunning)
		waiting := f.run(tk.ID, at(2), sundial.RunWaitingCallback)
		queued := f.run(tk.ID, at(3), sundial.RunQueued)
		sched := f.run(tk.ID, at(4), sundial.RunScheduled)
		foreign := f.run(other.ID, at(1), sundial.RunRunning)
		r := f.run(tk.ID, at(5), sundial.RunScheduled)

		decide := func(s sundial.AdmitState) sundial.Admission {
			cancel := runIDs(s.Pending)
			cancel = append(cancel, done.ID, foreign.ID, 424242) // final, another task's, missing: left alone
			return sundial.Admission{Status: sundial.RunRunning, Attempt: 1, Cancel: cancel}
		}
		got, err := f.s.RunAdmit(f.ctx, r.ID, r.Fence, at(5), decide)
		if err != nil {
			t.Fatalf("RunAdmit: %v", err)
		}
		if got.Status != sundial.RunRunning {
			t.Fatalf("admitted run is %s, want RUNNING", got.Status)
		}
		for _, c := range []struct {
			r    *sundial.Run
			want sundial.RunStatus
			flag bool
		}{
			{running, sundial.RunRunning, true},
			{waiting, sundial.RunWaitingCallback, true},
			{queued, sundial.RunCanceled, false},
			{sched, sundial.RunCanceled, false},
		} {
			g := f.get(c.r.ID)
			if g.Status != c.want || g.CancelRequested != c.flag {
				t.Fatalf("run %d after CANCEL_PREV: %s, CancelRequested %v; want %s, %v", c.r.ID, g.Status, g.CancelRequested, c.want, c.flag)
			}
		}
		eqRun(t, f.get(done.ID), done)
		eqRun(t, f.get(foreign.ID), foreign)
	})

	t.Run("Atomic", func(t *testing.T) {
		t.Parallel()
		// Admissions of one task see each other: with a limit of 2, twenty
		// concurrent admissions start exactly two runs.
		f := setup(t, open)
		tk := f.task("a", func(tk *sundial.Task) { tk.MaxConcurrency = 2 })
		var runs []*sundial.Run
		for i := range 20 {
			runs = append(runs, f.run(tk.ID, at(i), sundial.RunScheduled))
		}
		decide := func(s sundial.AdmitState) sundial.Admission {
			if s.Active < s.Task.MaxConcurrency {
				return sundial.Admission{Status: sundial.RunRunning, Attempt: 1}
			}
			return sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipConcurrency, Attempt: 1}
		}
		var wg sync.WaitGroup
		errs := make([]error, len(runs))
		for i, r := range runs {
			wg.Go(func() { _, errs[i] = f.s.RunAdmit(f.ctx, r.ID, r.Fence, at(30), decide) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("RunAdmit: %v", err)
			}
		}
		got, err := f.s.RunList(f.ctx, sundial.RunListParams{TaskID: tk.ID, Status: []sundial.RunStatus{sundial.RunRunning}})
		if err != nil || len(got) != 2 {
			t.Fatalf("%d RUNNING runs (%v), want 2", len(got), err)
		}
	})
}

// testTransitions holds every status-changing method to the state machine:
// from each status, a change is applied exactly when it is a legal edge
// (sundial.CanTransition), and a refused change leaves the run as it was.
func testTransitions(t *testing.T, open Opener) {
	type op struct {
		name  string
		to    sundial.RunStatus
		apply func(f *fixture, r *sundial.Run) (bool, error)
	}
	ops := []op{
		{"RunStart", sundial.RunRunning, func(f *fixture, r *sundial.Run) (bool, error) {
			ok, err := f.s.RunStart(f.ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: at(50)}})
			return err == nil && ok[0], err
		}},
		{"RunAdmit", sundial.RunRunning, func(f *fixture, r *sundial.Run) (bool, error) {
			_, err := f.s.RunAdmit(f.ctx, r.ID, r.Fence, at(50), capture(new(sundial.AdmitState),
				sundial.Admission{Status: sundial.RunRunning, Attempt: 1}))
			if sundial.ErrorCode(err) == sundial.ENotFound {
				return false, nil
			}
			return err == nil, err
		}},
	}
	for _, to := range []sundial.RunStatus{sundial.RunSuccess, sundial.RunFailed, sundial.RunTimeout,
		sundial.RunFailedTimeout, sundial.RunCanceled, sundial.RunWaitingCallback, sundial.RunInterrupted} {
		ops = append(ops, op{"RunFinish " + string(to), to, func(f *fixture, r *sundial.Run) (bool, error) {
			ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: to, FinishedAt: at(50)}})
			return err == nil && ok[0], err
		}})
	}
	for _, from := range sundial.RunStatuses() {
		t.Run(string(from), func(t *testing.T) {
			t.Parallel()
			f := setup(t, open)
			tk := f.task("a")
			for i, o := range ops {
				r := f.run(tk.ID, at(i), from)
				// RunStart and RunAdmit start only SCHEDULED (and, for RunAdmit,
				// QUEUED) runs, RunFinish only active ones, among the legal edges.
				want := sundial.CanTransition(from, o.to)
				switch o.name {
				case "RunStart":
					want = from == sundial.RunScheduled
				case "RunAdmit":
					want = from == sundial.RunScheduled || from == sundial.RunQueued
				default:
					want = want && from.Active()
				}
				got, err := o.apply(f, r)
				if err != nil {
					t.Fatalf("%s from %s: %v", o.name, from, err)
				}
				if got != want {
					t.Fatalf("%s from %s applied = %v, want %v", o.name, from, got, want)
				}
				g := f.get(r.ID)
				if got && g.Status != o.to {
					t.Fatalf("%s from %s: status %s, want %s", o.name, from, g.Status, o.to)
				}
				if !got {
					eqRun(t, g, r)
				}
				if got && !sundial.CanTransition(from, g.Status) {
					t.Fatalf("%s moved a run from %s to %s: not an edge of the state machine", o.name, from, g.Status)
				}
			}
		})
	}
}
