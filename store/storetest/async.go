package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// Retries, ASYNC callbacks and progress reports: how a run waits for a
// node again (DueAt), for a callback, and how one-off tasks end with it.

// oneOff makes a task one-off, firing once at runAt.
func oneOff(runAt time.Time) func(*sundial.Task) {
	return func(tk *sundial.Task) { tk.CronExpr, tk.RunAt = "", &runAt }
}

func disabled(tk *sundial.Task) { tk.Status = sundial.TaskDisabled }

// retrying makes a run of task scheduled at when whose first delivery (on
// node-a, started at when) failed with 503 and that waits for a retry due
// at due: SCHEDULED, no node, one delivery, one FAILED attempt.
func (f *fixture) retrying(task int64, when, due time.Time, mods ...func(*sundial.Run)) *sundial.Run {
	f.t.Helper()
	r := f.run(task, when, sundial.RunRunning, mods...)
	ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
		StartedAt: when, FinishedAt: when.Add(time.Second), HTTPStatus: 503, Error: "HTTP 503",
		Retry: true, DueAt: due}})
	if err != nil || !ok[0] {
		f.t.Fatalf("RunFinish %d with a retry: %v %v", r.ID, ok, err)
	}
	return f.get(r.ID)
}

// waiting makes a run of task scheduled at when whose delivery (on node-a,
// started at when) was accepted with 202: WAITING_CALLBACK until due.
func (f *fixture) waiting(task int64, when, due time.Time, mods ...func(*sundial.Run)) *sundial.Run {
	f.t.Helper()
	r := f.run(task, when, sundial.RunRunning, mods...)
	ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunWaitingCallback,
		StartedAt: when, FinishedAt: when.Add(time.Second), HTTPStatus: 202, ResponseBody: "accepted", DueAt: due}})
	if err != nil || !ok[0] {
		f.t.Fatalf("RunFinish %d to WAITING_CALLBACK: %v %v", r.ID, ok, err)
	}
	return f.get(r.ID)
}

func (f *fixture) attempts(runID int64) []*sundial.Attempt {
	f.t.Helper()
	as, err := f.s.RunAttempts(f.ctx, runID)
	if err != nil {
		f.t.Fatalf("RunAttempts %d: %v", runID, err)
	}
	return as
}

// claimDue claims for node the runs due by until and returns their IDs.
func (f *fixture) claimDue(node string, until time.Time) []*sundial.Run {
	f.t.Helper()
	runs, _, err := f.s.RunClaimDue(f.ctx, node, until, 100, sundial.ClaimStartParams{})
	if err != nil {
		f.t.Fatalf("RunClaimDue: %v", err)
	}
	return runs
}

// wantAttempt checks one attempt; a zero started means "not checked".
type wantAttempt struct {
	delivery int
	node     string
	status   sundial.RunStatus
	http     int
	errMsg   string
	started  time.Time
	finished time.Time
}

func eqAttempts(t *testing.T, what string, got []*sundial.Attempt, want []wantAttempt) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d attempts, want %d: %s", what, len(got), len(want), fmtAttempts(got))
	}
	for i, w := range want {
		a := got[i]
		bad := a.Delivery != w.delivery || a.NodeID != w.node || a.Status != w.status || a.HTTPStatus != w.http ||
			a.Error != w.errMsg || !a.FinishedAt.Equal(w.finished)
		if !w.started.IsZero() && (a.StartedAt == nil || !a.StartedAt.Equal(w.started)) {
			bad = true
		}
		if bad {
			t.Fatalf("%s: attempt %d = %s, want %+v", what, i, fmtAttempts(got[i:i+1]), w)
		}
	}
}

func fmtAttempts(as []*sundial.Attempt) string {
	b, _ := json.Marshal(as)
	return string(b)
}

func eqJSON(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	if w := compactJSON(json.RawMessage(want)); string(compactJSON(got)) != string(w) {
		t.Fatalf("%s = %s, want %s", what, got, want)
	}
}

func eqDue(t *testing.T, r *sundial.Run, want time.Time) {
	t.Helper()
	if !r.DueAt.Equal(want) {
		t.Fatalf("run %d is due at %v, want %v", r.ID, r.DueAt, want)
	}
}

// testDueAt: runs wait for a node by DueAt, not ScheduledTime.
func testDueAt(t *testing.T, open Opener) {
	t.Run("NewRun", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.run(tk.ID, at(10), sundial.RunScheduled)
		eqDue(t, r, at(10))
	})

	t.Run("ClaimOrder", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		lo := f.task("lo")
		hi := f.task("hi", withPriority(5))
		hiRetry := f.retrying(hi.ID, at(1), at(30))
		loRetry := f.retrying(lo.ID, at(1), at(20)) // scheduled first, due later
		loFresh := f.run(lo.ID, at(10), sundial.RunScheduled, withNode(""))
		loLater := f.retrying(lo.ID, at(2), at(41))

		eqIDs(t, "claimed by at(9)", runIDs(f.claimDue("node-b", at(9))), nil)
		runs := f.claimDue("node-b", at(40))
		eqIDs(t, "claimed by at(40)", runIDs(runs), []int64{loFresh.ID, loRetry.ID, hiRetry.ID})
		for _, r := range runs {
			if r.NodeID != "node-b" || r.Status != sundial.RunScheduled {
				t.Fatalf("claimed run = %s; want SCHEDULED on node-b", fmtRun(*r))
			}
		}
		if got := f.get(loRetry.ID); got.Fence != loRetry.Fence+1 || got.Deliveries != 1 {
			t.Fatalf("claimed retry = %s; want fence %d, 1 delivery", fmtRun(*got), loRetry.Fence+1)
		}
		eqIDs(t, "claimed by at(41)", runIDs(f.claimDue("node-b", at(41))), []int64{loLater.ID})
	})

	t.Run("FindStuck", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		retry := f.retrying(tk.ID, at(1), at(100))
		fresh := f.run(tk.ID, at(10), sundial.RunScheduled, withNode(""))
		got, err := f.s.RunFindStuck(f.ctx, "node-a", at(40), 10)
		if err != nil {
			t.Fatalf("RunFindStuck: %v", err)
		}
		eqIDs(t, "stuck before at(40)", runIDs(got), []int64{fresh.ID})
		got, err = f.s.RunFindStuck(f.ctx, "node-a", at(200), 10)
		if err != nil {
			t.Fatalf("RunFindStuck: %v", err)
		}
		eqIDs(t, "stuck before at(200), by due time", runIDs(got), []int64{fresh.ID, retry.ID})
	})
}

func testRunFinishRetry(t *testing.T, open Opener) {
	t.Run("Batch", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.run(tk.ID, at(10), sundial.RunRunning)
		other := f.run(tk.ID, at(11), sundial.RunRunning)
		plain := f.run(tk.ID, at(12), sundial.RunRunning)
		stale := f.run(tk.ID, at(13), sundial.RunRunning)

		ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{
			{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed, StartedAt: at(20), FinishedAt: at(21),
				HTTPStatus: 503, ResponseBody: "busy", Error: "HTTP 503", Retry: true, DueAt: at(80)},
			{ID: other.ID, Fence: other.Fence, Status: sundial.RunTimeout, StartedAt: at(20), FinishedAt: at(22),
				Error: "timed out", Retry: true, DueAt: at(70)},
			{ID: plain.ID, Fence: plain.Fence, Status: sundial.RunFailed, StartedAt: at(20), FinishedAt: at(23),
				HTTPStatus: 500, Error: "HTTP 500"},
			{ID: stale.ID, Fence: stale.Fence + 1, Status: sundial.RunFailed, FinishedAt: at(24), Retry: true, DueAt: at(60)},
		})
		if err != nil {
			t.Fatalf("RunFinish: %v", err)
		}
		if fmt.Sprint(ok) != "[true true true false]" {
			t.Fatalf("ok = %v, want [true true true false]", ok)
		}
		got := f.get(r.ID)
		if got.Status != sundial.RunScheduled || got.NodeID != "" || got.Deliveries != 1 || got.Fence != r.Fence ||
			got.HTTPStatus != 503 || got.ResponseBody != "busy" || got.Error != "HTTP 503" || got.FinishedAt != nil {
			t.Fatalf("run sent to retry = %s; want SCHEDULED, no node, 1 delivery, the same fence, "+
				"the failed delivery's outcome, no finish time", fmtRun(*got))
		}
		eqDue(t, got, at(80))
		eqAttempts(t, "retried run", f.attempts(r.ID), []wantAttempt{
			{1, "node-a", sundial.RunFailed, 503, "HTTP 503", at(20), at(21)}})
		if g := f.get(other.ID); g.Status != sundial.RunScheduled || g.NodeID != "" || g.Error != "timed out" {
			t.Fatalf("run sent to retry = %s", fmtRun(*g))
		} else {
			eqDue(t, g, at(70))
		}
		eqAttempts(t, "retried run", f.attempts(other.ID), []wantAttempt{
			{1, "node-a", sundial.RunTimeout, 0, "timed out", at(20), at(22)}})
		if g := f.get(plain.ID); g.Status != sundial.RunFailed || g.NodeID != "node-a" {
			t.Fatalf("run finished without a retry = %s", fmtRun(*g))
		}
		eqAttempts(t, "finished run", f.attempts(plain.ID), []wantAttempt{
			{1, "node-a", sundial.RunFailed, 500, "HTTP 500", at(20), at(23)}})
		eqRun(t, f.get(stale.ID), stale)
		eqAttempts(t, "refused retry", f.attempts(stale.ID), nil)

		// Claimable once due, by any node, under a new fence.
		eqIDs(t, "claimed by at(69)", runIDs(f.claimDue("node-b", at(69))), nil)
		runs := f.claimDue("node-b", at(80))
		eqIDs(t, "claimed by at(80)", runIDs(runs), []int64{other.ID, r.ID})
		claimed := runs[1]
		if claimed.NodeID != "node-b" || claimed.Fence != r.Fence+1 {
			t.Fatalf("claimed retry = %s; want node-b, fence %d", fmtRun(*claimed), r.Fence+1)
		}
		// The first delivery's late outcome is refused.
		ok, err = f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess, FinishedAt: at(85)}})
		if err != nil || ok[0] {
			t.Fatalf("late RunFinish = %v, %v; want refused", ok, err)
		}
		// The second delivery succeeds.
		ok, err = f.s.RunStart(f.ctx, []sundial.RunStartParams{{ID: r.ID, Fence: claimed.Fence, Attempt: 1, StartedAt: at(90)}})
		if err != nil || !ok[0] {
			t.Fatalf("RunStart of the retry = %v, %v", ok, err)
		}
		ok, err = f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: claimed.Fence, Status: sundial.RunSuccess,
			StartedAt: at(90), FinishedAt: at(91), HTTPStatus: 200}})
		if err != nil || !ok[0] {
			t.Fatalf("RunFinish of the retry = %v, %v", ok, err)
		}
		got = f.get(r.ID)
		if got.Status != sundial.RunSuccess || got.Deliveries != 2 || got.HTTPStatus != 200 || got.NodeID != "node-b" {
			t.Fatalf("retried run = %s; want SUCCESS on node-b after 2 deliveries", fmtRun(*got))
		}
		eqAttempts(t, "retried run", f.attempts(r.ID), []wantAttempt{
			{1, "node-a", sundial.RunFailed, 503, "HTTP 503", at(20), at(21)},
			{2, "node-b", sundial.RunSuccess, 200, "", at(90), at(91)}})
	})

	t.Run("KeepsCheckpoint", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.run(tk.ID, at(10), sundial.RunRunning)
		if _, err := f.s.RunProgress(f.ctx, sundial.RunProgressParams{ID: r.ID, Fence: r.Fence,
			Progress: json.RawMessage(`{"pct":40}`), Checkpoint: json.RawMessage(`{"page":4}`), Now: at(11)}); err != nil {
			t.Fatalf("RunProgress: %v", err)
		}
		ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
			FinishedAt: at(12), Retry: true, DueAt: at(30)}})
		if err != nil || !ok[0] {
			t.Fatalf("RunFinish = %v, %v", ok, err)
		}
		got := f.get(r.ID)
		eqJSON(t, "checkpoint after a retry", got.Checkpoint, `{"page":4}`)
		eqJSON(t, "progress after a retry", got.Progress, `{"pct":40}`)
	})
}

func testRunFinishCallback(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	r := f.run(tk.ID, at(10), sundial.RunRunning)
	ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunWaitingCallback,
		StartedAt: at(10), FinishedAt: at(11), HTTPStatus: 202, DueAt: at(300)}})
	if err != nil || !ok[0] {
		t.Fatalf("RunFinish to WAITING_CALLBACK = %v, %v", ok, err)
	}
	got := f.get(r.ID)
	if got.Status != sundial.RunWaitingCallback || got.NodeID != "node-a" || got.Fence != r.Fence {
		t.Fatalf("waiting run = %s", fmtRun(*got))
	}
	eqDue(t, got, at(300))

	// No DueAt: the run keeps the one it has.
	z := f.run(tk.ID, at(20), sundial.RunRunning)
	ok, err = f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: z.ID, Fence: z.Fence, Status: sundial.RunWaitingCallback, FinishedAt: at(21)}})
	if err != nil || !ok[0] {
		t.Fatalf("RunFinish to WAITING_CALLBACK = %v, %v", ok, err)
	}
	eqDue(t, f.get(z.ID), at(20))
}

func testRunFinishCompleteTask(t *testing.T, open Opener) {
	f := setup(t, open)
	once := f.task("once", oneOff(at(10)), withNext(at(10)))
	failed := f.task("failed", oneOff(at(10)), withNext(at(10)))
	off := f.task("off", oneOff(at(10)), withNext(at(10)), disabled)
	stale := f.task("stale", oneOff(at(10)), withNext(at(10)))
	cronTask := f.task("cron", withNext(at(100)))
	r1 := f.run(once.ID, at(10), sundial.RunRunning)
	r2 := f.run(failed.ID, at(10), sundial.RunRunning)
	r3 := f.run(off.ID, at(10), sundial.RunRunning)
	r4 := f.run(stale.ID, at(10), sundial.RunRunning)
	r5 := f.run(cronTask.ID, at(10), sundial.RunRunning)

	fin := func(r *sundial.Run, s sundial.RunStatus, complete sundial.TaskStatus) sundial.RunFinishParams {
		return sundial.RunFinishParams{ID: r.ID, Fence: r.Fence, Status: s, StartedAt: at(10), FinishedAt: at(11), CompleteTask: complete}
	}
	staleFin := fin(r4, sundial.RunSuccess, sundial.TaskCompleted)
	staleFin.Fence++
	ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{
		fin(r1, sundial.RunSuccess, sundial.TaskCompleted),
		fin(r2, sundial.RunFailed, sundial.TaskFailed),
		fin(r3, sundial.RunSuccess, sundial.TaskCompleted),
		staleFin,
		fin(r5, sundial.RunSuccess, ""),
	})
	if err != nil {
		t.Fatalf("RunFinish: %v", err)
	}
	if fmt.Sprint(ok) != "[true true true false true]" {
		t.Fatalf("ok = %v, want [true true true false true]", ok)
	}
	for _, c := range []struct {
		tk   *sundial.Task
		want sundial.TaskStatus
		next *time.Time
	}{
		{once, sundial.TaskCompleted, nil},
		{failed, sundial.TaskFailed, nil},
		{off, sundial.TaskDisabled, ptr(at(10))}, // only an ENABLED task completes
		{stale, sundial.TaskEnabled, ptr(at(10))},
	} {
		got := f.getTask(c.tk.ID)
		if got.Status != c.want || (got.NextFireTime == nil) != (c.next == nil) ||
			(c.next != nil && !got.NextFireTime.Equal(*c.next)) {
			t.Fatalf("task %q: status %s, NextFireTime %v; want %s, %v", c.tk.Name, got.Status, got.NextFireTime, c.want, c.next)
		}
		// A task that ended has a new version; the others keep theirs.
		wantVersion := c.tk.Version
		if c.want != c.tk.Status {
			wantVersion++
		}
		if got.Version != wantVersion {
			t.Fatalf("task %q: version %d, want %d", c.tk.Name, got.Version, wantVersion)
		}
	}
	eqTask(t, f.getTask(cronTask.ID), cronTask)

	// A replacement read before the task ended is stale: it cannot
	// re-enable the task unseen.
	old := *once
	old.Status, old.NextFireTime = sundial.TaskEnabled, ptr(at(10))
	wantErr(t, f.s.TaskUpdate(f.ctx, &old, at(12)), sundial.EConflict, "version")
	if got := f.getTask(once.ID); got.Status != sundial.TaskCompleted {
		t.Fatalf("task %q after a stale update: %s, want COMPLETED", once.Name, got.Status)
	}
}

func testRunComplete(t *testing.T, open Opener) {
	t.Run("FromWaiting", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		once := f.task("once", oneOff(at(10)), withNext(at(10)))
		r := f.waiting(once.ID, at(10), at(400))
		got, err := f.s.RunComplete(f.ctx, sundial.RunCompleteParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess,
			Result: json.RawMessage(`{"rows": 42}`), FinishedAt: at(50), CompleteTask: sundial.TaskCompleted})
		if err != nil {
			t.Fatalf("RunComplete: %v", err)
		}
		if got.Status != sundial.RunSuccess || got.NodeID != "node-a" || got.Fence != r.Fence || got.Deliveries != 1 ||
			got.HTTPStatus != 202 || got.Error != "" {
			t.Fatalf("completed run = %s; want SUCCESS, the node, fence and delivery it had", fmtRun(*got))
		}
		eqTime(t, "FinishedAt", got.FinishedAt, at(50))
		eqJSON(t, "Result", got.Result, `{"rows":42}`)
		eqRun(t, f.get(r.ID), got)
		// The delivery's attempt takes the outcome; no new attempt.
		eqAttempts(t, "completed run", f.attempts(r.ID), []wantAttempt{
			{1, "node-a", sundial.RunSuccess, 202, "", at(10), at(50)}})
		if tk := f.getTask(once.ID); tk.Status != sundial.TaskCompleted || tk.NextFireTime != nil || tk.Version != once.Version+1 {
			t.Fatalf("one-off task after its run = %s, next %v, version %d; want COMPLETED, nil, %d",
				tk.Status, tk.NextFireTime, tk.Version, once.Version+1)
		}
		// Once ended, the run takes no other completion.
		_, err = f.s.RunComplete(f.ctx, sundial.RunCompleteParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed, FinishedAt: at(51)})
		wantErr(t, err, sundial.EConflict, "status")
		eqRun(t, f.get(r.ID), got)
	})

	t.Run("FailedAndCanceled", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		for i, s := range []sundial.RunStatus{sundial.RunFailed, sundial.RunFailedTimeout, sundial.RunCanceled} {
			r := f.waiting(tk.ID, at(10*i), at(400))
			got, err := f.s.RunComplete(f.ctx, sundial.RunCompleteParams{ID: r.ID, Fence: r.Fence, Status: s,
				Error: "reported " + string(s), FinishedAt: at(60 + i)})
			if err != nil {
				t.Fatalf("RunComplete %s: %v", s, err)
			}
			if got.Status != s || got.Error != "reported "+string(s) || got.Result != nil {
				t.Fatalf("completed run = %s; want %s with the error, no result", fmtRun(*got), s)
			}
			eqTime(t, "FinishedAt", got.FinishedAt, at(60+i))
			eqRun(t, f.get(r.ID), got)
			eqAttempts(t, "completed run", f.attempts(r.ID), []wantAttempt{
				{1, "node-a", s, 202, "reported " + string(s), at(10 * i), at(60 + i)}})
		}
		eqTask(t, f.getTask(tk.ID), tk)
	})

	t.Run("FromRunning", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.run(tk.ID, at(10), sundial.RunRunning) // started at(10) on node-a
		got, err := f.s.RunComplete(f.ctx, sundial.RunCompleteParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
			Error: "bad input", Result: json.RawMessage(`{"e":1}`), FinishedAt: at(15)})
		if err != nil {
			t.Fatalf("RunComplete: %v", err)
		}
		if got.Status != sundial.RunFailed || got.Error != "bad input" || got.NodeID != "node-a" {
			t.Fatalf("completed run = %s", fmtRun(*got))
		}
		eqTime(t, "FinishedAt", got.FinishedAt, at(15))
		eqJSON(t, "Result", got.Result, `{"e":1}`)
		eqRun(t, f.get(r.ID), got)
		// The delivery, whose call had not answered, is recorded.
		eqAttempts(t, "completed run", f.attempts(r.ID), []wantAttempt{
			{1, "node-a", sundial.RunFailed, 0, "bad input", at(10), at(15)}})
		// The call's answer, coming later, changes nothing.
		ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunWaitingCallback,
			FinishedAt: at(16), HTTPStatus: 202}})
		if err != nil || ok[0] {
			t.Fatalf("late RunFinish = %v, %v; want refused", ok, err)
		}
		eqRun(t, f.get(r.ID), got)
		if n := len(f.attempts(r.ID)); n != 1 {
			t.Fatalf("%d attempts after the late answer, want 1", n)
		}
	})

	t.Run("Retry", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		w := f.waiting(tk.ID, at(10), at(400))
		got, err := f.s.RunComplete(f.ctx, sundial.RunCompleteParams{ID: w.ID, Fence: w.Fence, Status: sundial.RunFailedTimeout,
			Error: "no callback", FinishedAt: at(60), Retry: true, DueAt: at(90)})
		if err != nil {
			t.Fatalf("RunComplete: %v", err)
		}
		if got.Status != sundial.RunScheduled || got.NodeID != "" || got.Error != "no callback" || got.FinishedAt != nil ||
			got.Fence != w.Fence || got.Deliveries != 1 {
			t.Fatalf("run sent to retry = %s; want SCHEDULED, no node, the error, no finish time, same fence", fmtRun(*got))
		}
		eqDue(t, got, at(90))
		eqRun(t, f.get(w.ID), got)
		eqAttempts(t, "retried run", f.attempts(w.ID), []wantAttempt{
			{1, "node-a", sundial.RunFailedTimeout, 202, "no callback", at(10), at(60)}})
		eqIDs(t, "claimed by at(89)", runIDs(f.claimDue("node-b", at(89))), nil)
		eqIDs(t, "claimed by at(90)", runIDs(f.claimDue("node-b", at(90))), []int64{w.ID})

		r := f.run(tk.ID, at(20), sundial.RunRunning)
		got, err = f.s.RunComplete(f.ctx, sundial.RunCompleteParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
			Error: "try later", FinishedAt: at(30), Retry: true, DueAt: at(95)})
		if err != nil {
			t.Fatalf("RunComplete: %v", err)
		}
		if got.Status != sundial.RunScheduled || got.NodeID != "" || got.FinishedAt != nil {
			t.Fatalf("run sent to retry = %s", fmtRun(*got))
		}
		eqDue(t, got, at(95))
		eqAttempts(t, "retried running run", f.attempts(r.ID), []wantAttempt{
			{1, "node-a", sundial.RunFailed, 0, "try later", at(20), at(30)}})
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		w := f.waiting(tk.ID, at(10), at(400))
		done := f.run(tk.ID, at(11), sundial.RunSuccess)
		sched := f.run(tk.ID, at(12), sundial.RunScheduled)
		queued := f.run(tk.ID, at(13), sundial.RunQueued)
		interrupted := f.run(tk.ID, at(14), sundial.RunInterrupted)
		c := func(r *sundial.Run, fence int64, s sundial.RunStatus) sundial.RunCompleteParams {
			return sundial.RunCompleteParams{ID: r.ID, Fence: fence, Status: s, FinishedAt: at(50)}
		}
		for _, fence := range []int64{w.Fence + 1, w.Fence - 1} {
			_, err := f.s.RunComplete(f.ctx, c(w, fence, sundial.RunSuccess))
			wantErr(t, err, sundial.EConflict, "fence")
		}
		for _, r := range []*sundial.Run{done, sched, queued, interrupted} {
			_, err := f.s.RunComplete(f.ctx, c(r, r.Fence, sundial.RunSuccess))
			wantErr(t, err, sundial.EConflict, "status")
		}
		// The fence is checked first.
		_, err := f.s.RunComplete(f.ctx, c(done, done.Fence+1, sundial.RunSuccess))
		wantErr(t, err, sundial.EConflict, "fence")
		_, err = f.s.RunComplete(f.ctx, sundial.RunCompleteParams{ID: 999999, Fence: 1, Status: sundial.RunSuccess, FinishedAt: at(50)})
		wantErr(t, err, sundial.ENotFound, "")
		for _, s := range []sundial.RunStatus{sundial.RunScheduled, sundial.RunQueued, sundial.RunRunning,
			sundial.RunWaitingCallback, sundial.RunSkipped, sundial.RunInterrupted, sundial.RunTimeout, "BOGUS", ""} {
			if _, err := f.s.RunComplete(f.ctx, c(w, w.Fence, s)); err == nil {
				t.Fatalf("RunComplete to %q: no error", s)
			}
		}
		for _, r := range []*sundial.Run{w, done, sched, queued, interrupted} {
			eqRun(t, f.get(r.ID), r)
		}
		eqAttempts(t, "refused completions", f.attempts(w.ID), []wantAttempt{
			{1, "node-a", sundial.RunWaitingCallback, 202, "", at(10), at(11)}})
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		// A callback and the deadline sweep of several nodes race: one wins.
		f := setup(t, open)
		tk := f.task("a")
		w := f.waiting(tk.ID, at(10), at(400))
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = f.s.RunComplete(f.ctx, sundial.RunCompleteParams{ID: w.ID, Fence: w.Fence,
					Status: sundial.RunSuccess, Error: fmt.Sprint(i), FinishedAt: at(50 + i)})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
				continue
			}
			wantErr(t, err, sundial.EConflict, "status")
		}
		if won != 1 {
			t.Fatalf("%d concurrent completions applied, want 1", won)
		}
		as := f.attempts(w.ID)
		if len(as) != 1 || as[0].Status != sundial.RunSuccess || as[0].Error != f.get(w.ID).Error {
			t.Fatalf("attempts = %s; want one SUCCESS, with the winner's error", fmtAttempts(as))
		}
	})
}

func testRunProgress(t *testing.T, open Opener) {
	t.Run("Waiting", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		w := f.waiting(tk.ID, at(10), at(100))
		got, err := f.s.RunProgress(f.ctx, sundial.RunProgressParams{ID: w.ID, Fence: w.Fence,
			Progress: json.RawMessage(`{"pct":10}`), Checkpoint: json.RawMessage(`{"page":3}`), DueAt: at(150), Now: at(30)})
		if err != nil {
			t.Fatalf("RunProgress: %v", err)
		}
		if got.Status != sundial.RunWaitingCallback || !got.UpdatedAt.Equal(at(30)) {
			t.Fatalf("run after progress = %s; want WAITING_CALLBACK, updated at(30)", fmtRun(*got))
		}
		eqJSON(t, "Progress", got.Progress, `{"pct":10}`)
		eqJSON(t, "Checkpoint", got.Checkpoint, `{"page":3}`)
		eqDue(t, got, at(150))
		eqRun(t, f.get(w.ID), got)

		// nil keeps the checkpoint; an earlier deadline does not move it.
		got, err = f.s.RunProgress(f.ctx, sundial.RunProgressParams{ID: w.ID, Fence: w.Fence,
			Progress: json.RawMessage(`{"pct":20}`), DueAt: at(120), Now: at(40)})
		if err != nil {
			t.Fatalf("RunProgress: %v", err)
		}
		eqJSON(t, "Progress", got.Progress, `{"pct":20}`)
		eqJSON(t, "Checkpoint", got.Checkpoint, `{"page":3}`)
		eqDue(t, got, at(150))
		got, err = f.s.RunProgress(f.ctx, sundial.RunProgressParams{ID: w.ID, Fence: w.Fence,
			Checkpoint: json.RawMessage(`{"page":9}`), Now: at(41)})
		if err != nil {
			t.Fatalf("RunProgress: %v", err)
		}
		eqJSON(t, "Progress", got.Progress, `{"pct":20}`)
		eqJSON(t, "Checkpoint", got.Checkpoint, `{"page":9}`)
		eqDue(t, got, at(150))
		eqRun(t, f.get(w.ID), got)
	})

	t.Run("Running", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.run(tk.ID, at(10), sundial.RunRunning)
		got, err := f.s.RunProgress(f.ctx, sundial.RunProgressParams{ID: r.ID, Fence: r.Fence,
			Progress: json.RawMessage(`{"pct":50}`), DueAt: at(500), Now: at(12)})
		if err != nil {
			t.Fatalf("RunProgress: %v", err)
		}
		if got.Status != sundial.RunRunning || got.Checkpoint != nil {
			t.Fatalf("run after progress = %s", fmtRun(*got))
		}
		eqJSON(t, "Progress", got.Progress, `{"pct":50}`)
		eqDue(t, got, at(10)) // only a callback deadline moves
		eqRun(t, f.get(r.ID), got)
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		w := f.waiting(tk.ID, at(10), at(100))
		done := f.run(tk.ID, at(11), sundial.RunSuccess)
		sched := f.run(tk.ID, at(12), sundial.RunScheduled)
		p := func(r *sundial.Run, fence int64) sundial.RunProgressParams {
			return sundial.RunProgressParams{ID: r.ID, Fence: fence, Progress: json.RawMessage(`{"x":1}`), DueAt: at(900), Now: at(20)}
		}
		_, err := f.s.RunProgress(f.ctx, p(w, w.Fence+1))
		wantErr(t, err, sundial.EConflict, "fence")
		for _, r := range []*sundial.Run{done, sched} {
			_, err := f.s.RunProgress(f.ctx, p(r, r.Fence))
			wantErr(t, err, sundial.EConflict, "status")
		}
		_, err = f.s.RunProgress(f.ctx, sundial.RunProgressParams{ID: 999999, Fence: 1, Now: at(20)})
		wantErr(t, err, sundial.ENotFound, "")
		for _, r := range []*sundial.Run{w, done, sched} {
			eqRun(t, f.get(r.ID), r)
		}
	})
}

func testRunCallbackExpired(t *testing.T, open Opener) {
	f := setup(t, open)
	a := f.task("a")
	gone := f.task("gone")
	w1 := f.waiting(a.ID, at(1), at(50))
	w2 := f.waiting(a.ID, at(2), at(20))
	w3 := f.waiting(a.ID, at(3), at(50)) // same deadline as w1, higher ID
	f.waiting(a.ID, at(4), at(200))      // not yet
	f.run(a.ID, at(5), sundial.RunRunning)
	f.retrying(a.ID, at(6), at(10))
	w5 := f.waiting(gone.ID, at(7), at(30))
	if err := f.s.TaskDelete(f.ctx, gone.ID, at(8)); err != nil {
		t.Fatalf("TaskDelete: %v", err)
	}

	runs, tasks, err := f.s.RunCallbackExpired(f.ctx, at(100), 10)
	if err != nil {
		t.Fatalf("RunCallbackExpired: %v", err)
	}
	eqIDs(t, "expired", runIDs(runs), []int64{w2.ID, w5.ID, w1.ID, w3.ID})
	eqRun(t, runs[0], f.get(w2.ID))
	if len(tasks) != 2 || tasks[a.ID] == nil || tasks[gone.ID] == nil {
		t.Fatalf("tasks = %v; want tasks %d and %d (deleted)", tasks, a.ID, gone.ID)
	}
	eqTask(t, tasks[a.ID], a)
	if tasks[gone.ID].ID != gone.ID || tasks[gone.ID].Name != "gone" {
		t.Fatalf("deleted task = %+v", tasks[gone.ID])
	}
	runs, _, err = f.s.RunCallbackExpired(f.ctx, at(100), 2)
	if err != nil {
		t.Fatalf("RunCallbackExpired: %v", err)
	}
	eqIDs(t, "expired (limit 2)", runIDs(runs), []int64{w2.ID, w5.ID})
	runs, _, err = f.s.RunCallbackExpired(f.ctx, at(20), 10)
	if err != nil {
		t.Fatalf("RunCallbackExpired: %v", err)
	}
	eqIDs(t, "expired at the deadline", runIDs(runs), []int64{w2.ID})
	runs, tasks, err = f.s.RunCallbackExpired(f.ctx, at(19), 10)
	if err != nil || len(runs) != 0 || len(tasks) != 0 {
		t.Fatalf("RunCallbackExpired before any deadline = %v, %v, %v; want nothing", runIDs(runs), tasks, err)
	}
}

func testRunUpcoming(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	other := f.task("b")
	s10 := f.run(tk.ID, at(10), sundial.RunScheduled)
	s5 := f.run(tk.ID, at(5), sundial.RunScheduled, withNode(""))
	m7 := f.run(tk.ID, at(7), sundial.RunScheduled, manual, withKey("m:1"))
	f.retrying(tk.ID, at(1), at(6))
	f.run(tk.ID, at(2), sundial.RunRunning)
	f.run(tk.ID, at(3), sundial.RunQueued)
	f.run(tk.ID, at(4), sundial.RunSuccess)
	f.run(other.ID, at(1), sundial.RunScheduled)

	for _, tc := range []struct {
		limit int
		want  []int64
	}{
		{10, []int64{s5.ID, m7.ID, s10.ID}},
		{0, []int64{s5.ID, m7.ID, s10.ID}},
		{2, []int64{s5.ID, m7.ID}},
	} {
		got, err := f.s.RunUpcoming(f.ctx, tk.ID, tc.limit)
		if err != nil {
			t.Fatalf("RunUpcoming: %v", err)
		}
		eqIDs(t, fmt.Sprintf("upcoming (limit %d)", tc.limit), runIDs(got), tc.want)
	}
	got, err := f.s.RunUpcoming(f.ctx, tk.ID, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("RunUpcoming = %v, %v", runIDs(got), err)
	}
	eqRun(t, got[0], s5)
	if got, err := f.s.RunUpcoming(f.ctx, 999999, 10); err != nil || len(got) != 0 {
		t.Fatalf("RunUpcoming of an unknown task = %v, %v; want nothing", runIDs(got), err)
	}
}

// testRetries: runs waiting for a retry are not the planner's. Changing
// the task keeps them (handing a claimed one back to no node), deleting it cancels them, and a node that gives
// them up hands them back as they are.
func testRetries(t *testing.T, open Opener) {
	t.Run("TaskUpdateKeeps", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a", withNext(at(100)))
		retry := f.retrying(tk.ID, at(10), at(60))
		f.retrying(tk.ID, at(11), at(12))
		held := f.claimDue("node-a", at(12))[0]
		fresh := f.run(tk.ID, at(20), sundial.RunScheduled)
		if err := f.s.TaskUpdate(f.ctx, tk, at(30)); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		_, err := f.s.RunGet(f.ctx, fresh.ID)
		wantErr(t, err, sundial.ENotFound, "")
		eqRun(t, f.get(retry.ID), retry)
		// The claimed one goes back to no node, to be claimed with the
		// changed task.
		held.NodeID, held.Fence, held.UpdatedAt = "", held.Fence+1, at(30)
		eqRun(t, f.get(held.ID), held)
	})

	t.Run("TaskDeleteCancels", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a", withNext(at(100)))
		retry := f.retrying(tk.ID, at(10), at(60))
		fresh := f.run(tk.ID, at(20), sundial.RunScheduled)
		queued := f.run(tk.ID, at(21), sundial.RunQueued)
		running := f.run(tk.ID, at(22), sundial.RunRunning)
		if err := f.s.TaskDelete(f.ctx, tk.ID, at(40)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		_, err := f.s.RunGet(f.ctx, fresh.ID)
		wantErr(t, err, sundial.ENotFound, "")
		for _, r := range []*sundial.Run{retry, queued} {
			got := f.get(r.ID)
			if got.Status != sundial.RunCanceled || got.Error == "" {
				t.Fatalf("run of a deleted task = %s; want CANCELED with a reason", fmtRun(*got))
			}
			eqTime(t, "FinishedAt", got.FinishedAt, at(40))
		}
		eqRun(t, f.get(running.ID), running)
	})

	t.Run("RunRelease", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a", withNext(at(100)))
		f.retrying(tk.ID, at(50), at(60))
		retry := f.claimDue("node-a", at(60))[0]
		// A manual run cut off and delivered again on node-a.
		man := f.run(tk.ID, at(40), sundial.RunInterrupted, manual, withKey("m:1"))
		runs, _, err := f.s.RunRedeliver(f.ctx, "node-a", 5, 10, at(45))
		if err != nil || len(runs) != 1 || runs[0].ID != man.ID {
			t.Fatalf("RunRedeliver = %v, %v; want run %d", runIDs(runs), err, man.ID)
		}
		fresh := f.run(tk.ID, at(70), sundial.RunScheduled)

		if err := f.s.RunRelease(f.ctx, "node-a", "stopping", at(200)); err != nil {
			t.Fatalf("RunRelease: %v", err)
		}
		_, err = f.s.RunGet(f.ctx, fresh.ID)
		wantErr(t, err, sundial.ENotFound, "")
		for _, c := range []struct {
			r   *sundial.Run
			due time.Time
		}{{retry, at(60)}, {man, at(45)}} {
			got := f.get(c.r.ID)
			if got.Status != sundial.RunScheduled || got.NodeID != "" || got.Deliveries != 1 || got.Trigger != c.r.Trigger {
				t.Fatalf("released run delivered before = %s; want SCHEDULED, no node, 1 delivery", fmtRun(*got))
			}
			eqDue(t, got, c.due)
		}
		// Only the fresh run is planned again.
		eqTime(t, "NextFireTime", f.getTask(tk.ID).NextFireTime, at(70))
		eqIDs(t, "claimable", runIDs(f.claimDue("node-b", at(60))), []int64{man.ID, retry.ID})
	})

	t.Run("NodeReap", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		if err := f.s.NodeRegister(f.ctx, &sundial.Node{ID: "node-r"}); err != nil {
			t.Fatalf("NodeRegister: %v", err)
		}
		tk := f.task("a", withNext(at(100)))
		f.retrying(tk.ID, at(50), at(60))
		retry := f.claimDue("node-r", at(60))[0]
		dead, err := f.s.NodeReap(f.ctx, overdue, at(200))
		if err != nil || !slices.Equal(dead, []string{"node-r"}) {
			t.Fatalf("NodeReap = %v, %v; want [node-r]", dead, err)
		}
		got := f.get(retry.ID)
		if got.Status != sundial.RunScheduled || got.NodeID != "" || got.Deliveries != 1 {
			t.Fatalf("reaped retry = %s; want SCHEDULED, no node", fmtRun(*got))
		}
		eqDue(t, got, at(60))
		eqTime(t, "NextFireTime", f.getTask(tk.ID).NextFireTime, at(100))
	})
}

// testOneOffEnd: a one-off task ends FAILED when its scheduled run is
// cancelled, skipped or runs out of deliveries.
func testOneOffEnd(t *testing.T, open Opener) {
	wantStatus := func(t *testing.T, f *fixture, tk *sundial.Task, want sundial.TaskStatus) {
		t.Helper()
		got := f.getTask(tk.ID)
		if got.Status != want {
			t.Fatalf("task %q is %s, want %s", tk.Name, got.Status, want)
		}
		if want == sundial.TaskFailed && got.NextFireTime != nil {
			t.Fatalf("failed task %q has NextFireTime %v, want nil", tk.Name, got.NextFireTime)
		}
		// Its end is a change of the task: a client that read it before
		// and writes it back is told so by its version.
		wantVersion := tk.Version
		if got.Status != tk.Status {
			wantVersion++
		}
		if got.Version != wantVersion {
			t.Fatalf("task %q went from %s to %s with version %d, want %d", tk.Name, tk.Status, got.Status, got.Version, wantVersion)
		}
	}

	t.Run("RunCancel", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		sched := f.task("sched", oneOff(at(10)), withNext(at(10)))
		queued := f.task("queued", oneOff(at(10)), withNext(at(10)))
		running := f.task("running", oneOff(at(10)))
		man := f.task("manual", oneOff(at(10)), withNext(at(10)))
		off := f.task("off", oneOff(at(10)), disabled)
		cronTask := f.task("cron", withNext(at(10)))
		runs := []*sundial.Run{
			f.run(sched.ID, at(10), sundial.RunScheduled),
			f.run(queued.ID, at(10), sundial.RunQueued),
			f.run(running.ID, at(10), sundial.RunRunning),
			f.run(man.ID, at(10), sundial.RunScheduled, manual, withKey("m:1")),
			f.run(off.ID, at(10), sundial.RunScheduled),
			f.run(cronTask.ID, at(10), sundial.RunScheduled),
		}
		for _, r := range runs {
			if _, err := f.s.RunCancel(f.ctx, r.ID, at(20)); err != nil {
				t.Fatalf("RunCancel: %v", err)
			}
		}
		wantStatus(t, f, sched, sundial.TaskFailed)
		wantStatus(t, f, queued, sundial.TaskFailed)
		wantStatus(t, f, running, sundial.TaskEnabled) // its cancellation is only requested
		wantStatus(t, f, off, sundial.TaskDisabled)
		eqTask(t, f.getTask(man.ID), man)
		eqTask(t, f.getTask(cronTask.ID), cronTask)
	})

	t.Run("RunAdmit", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		once := f.task("once", oneOff(at(10)), withNext(at(10)))
		r := f.run(once.ID, at(10), sundial.RunScheduled)
		got, err := f.s.RunAdmit(f.ctx, r.ID, r.Fence, at(10), capture(new(sundial.AdmitState), sundial.Admission{
			Status: sundial.RunSkipped, SkipReason: sundial.SkipOverlap, Attempt: 1, CompleteTask: sundial.TaskFailed}))
		if err != nil || got.Status != sundial.RunSkipped {
			t.Fatalf("RunAdmit = %v, %v; want SKIPPED", got, err)
		}
		wantStatus(t, f, once, sundial.TaskFailed)

		cronTask := f.task("cron", withNext(at(100)))
		c := f.run(cronTask.ID, at(10), sundial.RunScheduled)
		if _, err := f.s.RunAdmit(f.ctx, c.ID, c.Fence, at(10), capture(new(sundial.AdmitState),
			sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipOverlap, Attempt: 1})); err != nil {
			t.Fatalf("RunAdmit: %v", err)
		}
		eqTask(t, f.getTask(cronTask.ID), cronTask)
	})

	t.Run("RunRedeliver", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		once := f.task("once", oneOff(at(10)))
		man := f.task("manual", oneOff(at(10)))
		cronTask := f.task("cron", withNext(at(100)))
		again := f.task("again", oneOff(at(10)))
		f.run(once.ID, at(10), sundial.RunInterrupted)
		f.run(man.ID, at(10), sundial.RunInterrupted, manual, withKey("m:1"))
		f.run(cronTask.ID, at(10), sundial.RunInterrupted)
		// With one delivery allowed, every run has used it: FAILED.
		runs, _, err := f.s.RunRedeliver(f.ctx, "node-c", 1, 10, at(50))
		if err != nil || len(runs) != 0 {
			t.Fatalf("RunRedeliver = %v, %v; want nothing delivered", runIDs(runs), err)
		}
		wantStatus(t, f, once, sundial.TaskFailed)
		eqTask(t, f.getTask(man.ID), man)
		eqTask(t, f.getTask(cronTask.ID), cronTask)

		// A run delivered again leaves its task as it is.
		a := f.run(again.ID, at(10), sundial.RunInterrupted)
		runs, _, err = f.s.RunRedeliver(f.ctx, "node-c", 2, 10, at(60))
		if err != nil || len(runs) != 1 || runs[0].ID != a.ID {
			t.Fatalf("RunRedeliver = %v, %v; want run %d", runIDs(runs), err, a.ID)
		}
		eqDue(t, runs[0], at(60))
		eqTask(t, f.getTask(again.ID), again)
	})
}
