package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

func testRun(t *testing.T, open Opener) {
	t.Run("InsertGet", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := &sundial.Run{TaskID: tk.ID, FireKey: "m:1", Trigger: sundial.TriggerManual, ScheduledTime: at(3),
			Status: sundial.RunScheduled, Attempt: 1, NodeID: "node-a", Fence: 1}
		if err := f.s.RunInsert(f.ctx, r); err != nil {
			t.Fatalf("RunInsert: %v", err)
		}
		if r.ID <= 0 {
			t.Fatalf("RunInsert set ID %d", r.ID)
		}
		got := f.get(r.ID)
		if got.IdempotencyKey != sundial.IdempotencyKeyFor(tk.ID, "m:1") {
			t.Fatalf("IdempotencyKey = %q, want the default", got.IdempotencyKey)
		}
		want := *r
		want.IdempotencyKey, want.CreatedAt, want.UpdatedAt = got.IdempotencyKey, got.CreatedAt, got.UpdatedAt
		eqRun(t, got, &want)

		keyed := &sundial.Run{TaskID: tk.ID, FireKey: "m:2", Trigger: sundial.TriggerManual, ScheduledTime: at(4),
			Status: sundial.RunScheduled, NodeID: "node-a", Fence: 1, IdempotencyKey: "client-key"}
		if err := f.s.RunInsert(f.ctx, keyed); err != nil {
			t.Fatalf("RunInsert: %v", err)
		}
		if got := f.get(keyed.ID); got.IdempotencyKey != "client-key" {
			t.Fatalf("IdempotencyKey = %q, want client-key", got.IdempotencyKey)
		}
	})

	t.Run("InsertConflict", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		other := f.task("b")
		first := f.run(tk.ID, at(0), sundial.RunScheduled)
		dup := &sundial.Run{TaskID: tk.ID, FireKey: first.FireKey, ScheduledTime: at(0), Status: sundial.RunScheduled, Fence: 1}
		wantErr(t, f.s.RunInsert(f.ctx, dup), sundial.EConflict, "")
		// The same key on another task is another fire.
		f.run(other.ID, at(0), sundial.RunScheduled)
	})

	t.Run("InsertMissingTask", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		gone := f.task("gone")
		if err := f.s.TaskDelete(f.ctx, gone.ID, t0); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		for _, id := range []int64{gone.ID, 9999} {
			r := &sundial.Run{TaskID: id, FireKey: "m:1", ScheduledTime: at(0), Status: sundial.RunScheduled, Fence: 1}
			wantErr(t, f.s.RunInsert(f.ctx, r), sundial.ENotFound, "")
		}
	})

	t.Run("GetMissing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		_, err := f.s.RunGet(f.ctx, 4242)
		wantErr(t, err, sundial.ENotFound, "")
	})

	// RunList orders by scheduled time, newest first, whatever order the
	// runs were written in (b2 is written last, but is the oldest fire).
	t.Run("List", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		a := f.task("a")
		b := f.task("b")
		a1 := f.run(a.ID, at(10), sundial.RunSuccess)
		b1 := f.run(b.ID, at(20), sundial.RunScheduled)
		a2 := f.run(a.ID, at(30), sundial.RunFailed)
		a3 := f.run(a.ID, at(40), sundial.RunScheduled)
		b2 := f.run(b.ID, at(5), sundial.RunSuccess)
		for _, tc := range []struct {
			name string
			f    sundial.RunListParams
			want []*sundial.Run
		}{
			{"all newest first", sundial.RunListParams{}, []*sundial.Run{a3, a2, b1, a1, b2}},
			{"task", sundial.RunListParams{TaskID: a.ID}, []*sundial.Run{a3, a2, a1}},
			{"status", sundial.RunListParams{Status: []sundial.RunStatus{sundial.RunSuccess}}, []*sundial.Run{a1, b2}},
			{"task and status", sundial.RunListParams{TaskID: b.ID, Status: []sundial.RunStatus{sundial.RunScheduled}}, []*sundial.Run{b1}},
			{"statuses", sundial.RunListParams{Status: []sundial.RunStatus{sundial.RunFailed, sundial.RunScheduled}},
				[]*sundial.Run{a3, a2, b1}},
			{"task and statuses", sundial.RunListParams{TaskID: a.ID, Status: []sundial.RunStatus{sundial.RunSuccess,
				sundial.RunFailed, sundial.RunCanceled}}, []*sundial.Run{a2, a1}},
			{"from", sundial.RunListParams{From: at(20)}, []*sundial.Run{a3, a2, b1}},
			{"to is open", sundial.RunListParams{To: at(20)}, []*sundial.Run{a1, b2}},
			{"window", sundial.RunListParams{From: at(10), To: at(31)}, []*sundial.Run{a2, b1, a1}},
			{"before", sundial.RunListParams{BeforeTime: a2.ScheduledTime, BeforeID: a2.ID}, []*sundial.Run{b1, a1, b2}},
			{"before in a window", sundial.RunListParams{From: at(10), BeforeTime: a2.ScheduledTime, BeforeID: a2.ID},
				[]*sundial.Run{b1, a1}},
			{"before with a task", sundial.RunListParams{TaskID: a.ID, BeforeTime: a3.ScheduledTime, BeforeID: a3.ID},
				[]*sundial.Run{a2, a1}},
			{"limit", sundial.RunListParams{Limit: 2}, []*sundial.Run{a3, a2}},
			{"none", sundial.RunListParams{TaskID: 9999}, nil},
		} {
			got, err := f.s.RunList(f.ctx, tc.f)
			if err != nil {
				t.Fatalf("%s: RunList: %v", tc.name, err)
			}
			eqIDs(t, tc.name, runIDs(got), runIDs(tc.want))
		}
		got, err := f.s.RunList(f.ctx, sundial.RunListParams{TaskID: a.ID, Status: []sundial.RunStatus{sundial.RunFailed}})
		if err != nil || len(got) != 1 {
			t.Fatalf("RunList: %d runs, %v", len(got), err)
		}
		eqRun(t, got[0], a2)
	})

	// Pages follow each other across runs scheduled at the same instant
	// (ties by ID, newest first), with and without a task, and with the
	// default limit.
	t.Run("ListPaging", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		a := f.task("a")
		b := f.task("b")
		// 57 runs: for each of 19 instants (written newest instant first),
		// a fire of a, a fire of b and a manual run of a.
		type key struct {
			at time.Time
			id int64
		}
		var all, ofA []key
		for i := range 19 {
			when := at(100 - i)
			for j, r := range []*sundial.Run{
				f.run(a.ID, when, sundial.RunSuccess),
				f.run(b.ID, when, sundial.RunScheduled),
				f.run(a.ID, when, sundial.RunFailed, manual, withKey(fmt.Sprintf("m:%d", i))),
			} {
				all = append(all, key{when, r.ID})
				if j != 1 {
					ofA = append(ofA, key{when, r.ID})
				}
			}
		}
		newestFirst := func(keys []key) []int64 {
			slices.SortFunc(keys, func(x, y key) int {
				if c := y.at.Compare(x.at); c != 0 {
					return c
				}
				return cmp.Compare(y.id, x.id)
			})
			ids := make([]int64, len(keys))
			for i, k := range keys {
				ids[i] = k.id
			}
			return ids
		}
		walk := func(f0 sundial.RunListParams) []int64 {
			t.Helper()
			var ids []int64
			for range 100 {
				page, err := f.s.RunList(f.ctx, f0)
				if err != nil {
					t.Fatalf("RunList: %v", err)
				}
				if len(page) == 0 {
					return ids
				}
				ids = append(ids, runIDs(page)...)
				last := page[len(page)-1]
				f0.BeforeTime, f0.BeforeID = last.ScheduledTime, last.ID
			}
			t.Fatal("RunList: more than 100 pages")
			return nil
		}
		for _, limit := range []int{1, 2, 3, 4, 7} {
			eqIDs(t, fmt.Sprintf("pages of %d", limit), walk(sundial.RunListParams{Limit: limit}), newestFirst(all))
			eqIDs(t, fmt.Sprintf("pages of %d of a", limit), walk(sundial.RunListParams{TaskID: a.ID, Limit: limit}),
				newestFirst(ofA))
		}
		first, err := f.s.RunList(f.ctx, sundial.RunListParams{})
		if err != nil || len(first) != 50 {
			t.Fatalf("RunList with the default limit: %d runs, %v; want 50", len(first), err)
		}
		last := first[len(first)-1]
		rest, err := f.s.RunList(f.ctx, sundial.RunListParams{BeforeTime: last.ScheduledTime, BeforeID: last.ID, Limit: 5000})
		if err != nil {
			t.Fatalf("RunList: %v", err)
		}
		eqIDs(t, "default pages", append(runIDs(first), runIDs(rest)...), newestFirst(all))
	})

	// ExcludePlannedAfter leaves out exactly the runs planned ahead:
	// SCHEDULED, never delivered, scheduled after it.
	t.Run("ListExcludePlanned", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		a := f.task("a")
		b := f.task("b")
		now := at(50)
		planned := f.run(a.ID, at(60), sundial.RunScheduled)
		plannedB := f.run(b.ID, at(51), sundial.RunScheduled)
		plannedManual := f.run(a.ID, at(55), sundial.RunScheduled, manual, withKey("m:1"))
		due := f.run(a.ID, now, sundial.RunScheduled)
		late := f.run(b.ID, at(40), sundial.RunScheduled)
		retry := f.retrying(a.ID, at(30), at(70))
		ahead := f.run(b.ID, at(52), sundial.RunRunning) // committed RUNNING ahead of its instant
		canceled := f.run(a.ID, at(65), sundial.RunCanceled)
		queued := f.run(b.ID, at(20), sundial.RunQueued)
		ended := f.run(a.ID, at(10), sundial.RunSuccess)
		// A fire delivered before and handed back (a retry of a fire whose
		// instant was moved past now): SCHEDULED, but not a plan.
		redelivered := f.retrying(b.ID, at(80), at(90))
		for _, tc := range []struct {
			name string
			f    sundial.RunListParams
			want []*sundial.Run
		}{
			{"all", sundial.RunListParams{}, []*sundial.Run{redelivered, canceled, planned, plannedManual, ahead,
				plannedB, due, late, retry, queued, ended}},
			{"without planned", sundial.RunListParams{ExcludePlannedAfter: now}, []*sundial.Run{redelivered, canceled,
				ahead, due, late, retry, queued, ended}},
			{"task without planned", sundial.RunListParams{TaskID: a.ID, ExcludePlannedAfter: now},
				[]*sundial.Run{canceled, due, retry, ended}},
			{"SCHEDULED without planned", sundial.RunListParams{Status: []sundial.RunStatus{sundial.RunScheduled},
				ExcludePlannedAfter: now}, []*sundial.Run{redelivered, due, late, retry}},
			{"a page without planned", sundial.RunListParams{ExcludePlannedAfter: now, BeforeTime: ahead.ScheduledTime,
				BeforeID: ahead.ID, Limit: 2}, []*sundial.Run{due, late}},
			{"planned later", sundial.RunListParams{ExcludePlannedAfter: at(54)}, []*sundial.Run{redelivered, canceled,
				ahead, plannedB, due, late, retry, queued, ended}},
		} {
			got, err := f.s.RunList(f.ctx, tc.f)
			if err != nil {
				t.Fatalf("%s: RunList: %v", tc.name, err)
			}
			eqIDs(t, tc.name, runIDs(got), runIDs(tc.want))
		}
	})
}

func testRunStart(t *testing.T, open Opener) {
	t.Run("Batch", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		sched := f.run(tk.ID, at(1), sundial.RunScheduled)
		fenced := f.run(tk.ID, at(2), sundial.RunScheduled)
		queued := f.run(tk.ID, at(3), sundial.RunQueued)
		running := f.run(tk.ID, at(4), sundial.RunRunning)
		sched2 := f.run(tk.ID, at(5), sundial.RunScheduled)

		ok, err := f.s.RunStart(f.ctx, []sundial.RunStartParams{
			{ID: sched.ID, Fence: sched.Fence, Attempt: 3, StartedAt: at(10), TraceID: "trace-1"},
			{ID: fenced.ID, Fence: fenced.Fence + 1, Attempt: 1, StartedAt: at(10)},
			{ID: queued.ID, Fence: queued.Fence, Attempt: 1, StartedAt: at(10)},
			{ID: running.ID, Fence: running.Fence, Attempt: 1, StartedAt: at(10)},
			{ID: 99999, Fence: 1, Attempt: 1, StartedAt: at(10)},
			{ID: sched2.ID, Fence: sched2.Fence, Attempt: 1, StartedAt: at(11), TraceID: "trace-2"},
		})
		if err != nil {
			t.Fatalf("RunStart: %v", err)
		}
		if want := []bool{true, false, false, false, false, true}; fmt.Sprint(ok) != fmt.Sprint(want) {
			t.Fatalf("ok = %v, want %v", ok, want)
		}
		got := f.get(sched.ID)
		if got.Status != sundial.RunRunning || got.Attempt != 3 || got.TraceID != "trace-1" || got.Deliveries != 1 {
			t.Fatalf("started run = %s", fmtRun(*got))
		}
		eqTime(t, "StartedAt", got.StartedAt, at(10))
		for _, r := range []*sundial.Run{fenced, queued, running} {
			eqRun(t, f.get(r.ID), r)
		}
		if got := f.get(sched2.ID); got.Status != sundial.RunRunning {
			t.Fatalf("second run is %s, want RUNNING", got.Status)
		}
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		ok, err := f.s.RunStart(f.ctx, nil)
		if err != nil || len(ok) != 0 {
			t.Fatalf("RunStart(nil) = %v, %v", ok, err)
		}
	})
}

func testRunFinish(t *testing.T, open Opener) {
	t.Run("Batch", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		run := f.run(tk.ID, at(1), sundial.RunRunning)
		fenced := f.run(tk.ID, at(2), sundial.RunRunning)
		sched := f.run(tk.ID, at(3), sundial.RunScheduled)
		done := f.run(tk.ID, at(4), sundial.RunSuccess)
		waiting := f.run(tk.ID, at(5), sundial.RunWaitingCallback)
		waiting2 := f.run(tk.ID, at(6), sundial.RunWaitingCallback)
		running2 := f.run(tk.ID, at(7), sundial.RunRunning)
		interrupted := f.run(tk.ID, at(8), sundial.RunInterrupted)

		body := strings.Repeat("x", sundial.MaxResponseBody+500)
		fin := func(r *sundial.Run, s sundial.RunStatus) sundial.RunFinishParams {
			return sundial.RunFinishParams{ID: r.ID, Fence: r.Fence, Status: s, StartedAt: at(20), FinishedAt: at(21),
				HTTPStatus: 500, ResponseBody: body, Error: "boom"}
		}
		stale := fin(fenced, sundial.RunSuccess)
		stale.Fence++
		ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{
			fin(run, sundial.RunFailed),
			stale,
			fin(sched, sundial.RunSuccess),
			fin(done, sundial.RunFailed),
			fin(waiting, sundial.RunSuccess),
			fin(waiting2, sundial.RunTimeout),       // TIMEOUT is RUNNING's, not WAITING_CALLBACK's
			fin(running2, sundial.RunFailedTimeout), // and FAILED_TIMEOUT the other way round
			fin(interrupted, sundial.RunSuccess),
		})
		if err != nil {
			t.Fatalf("RunFinish: %v", err)
		}
		if want := []bool{true, false, false, false, true, false, false, false}; fmt.Sprint(ok) != fmt.Sprint(want) {
			t.Fatalf("ok = %v, want %v", ok, want)
		}
		got := f.get(run.ID)
		if got.Status != sundial.RunFailed || got.HTTPStatus != 500 || got.Error != "boom" ||
			got.ResponseBody != body[:sundial.MaxResponseBody] {
			t.Fatalf("finished run = %s", fmtRun(*got))
		}
		eqTime(t, "StartedAt", got.StartedAt, at(20))
		eqTime(t, "FinishedAt", got.FinishedAt, at(21))
		if got := f.get(waiting.ID); got.Status != sundial.RunSuccess {
			t.Fatalf("callback run is %s, want SUCCESS", got.Status)
		}
		for _, r := range []*sundial.Run{fenced, sched, done, waiting2, running2, interrupted} {
			eqRun(t, f.get(r.ID), r)
		}
	})

	t.Run("IllegalOutcome", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.run(tk.ID, at(1), sundial.RunRunning)
		for _, s := range []sundial.RunStatus{sundial.RunScheduled, sundial.RunQueued, sundial.RunSkipped, sundial.RunRunning, "BOGUS"} {
			_, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: s, FinishedAt: at(2)}})
			if err == nil {
				t.Fatalf("RunFinish to %s: no error", s)
			}
			eqRun(t, f.get(r.ID), r)
		}
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		ok, err := f.s.RunFinish(f.ctx, nil)
		if err != nil || len(ok) != 0 {
			t.Fatalf("RunFinish(nil) = %v, %v", ok, err)
		}
	})
}

func testRunCancel(t *testing.T, open Opener) {
	for _, tc := range []struct {
		from sundial.RunStatus
		want sundial.RunStatus // "" means EConflict
		flag bool              // CancelRequested
	}{
		{sundial.RunScheduled, sundial.RunCanceled, false},
		{sundial.RunQueued, sundial.RunCanceled, false},
		{sundial.RunRunning, sundial.RunRunning, true},
		{sundial.RunWaitingCallback, sundial.RunWaitingCallback, true},
		{sundial.RunInterrupted, sundial.RunInterrupted, true},
		{sundial.RunSuccess, "", false},
		{sundial.RunFailed, "", false},
		{sundial.RunTimeout, "", false},
		{sundial.RunFailedTimeout, "", false},
		{sundial.RunCanceled, "", false},
		{sundial.RunSkipped, "", false},
	} {
		t.Run(string(tc.from), func(t *testing.T) {
			t.Parallel()
			f := setup(t, open)
			tk := f.task("a")
			r := f.run(tk.ID, at(1), tc.from)
			got, err := f.s.RunCancel(f.ctx, r.ID, at(50))
			if tc.want == "" {
				wantErr(t, err, sundial.EConflict, "")
				eqRun(t, f.get(r.ID), r)
				return
			}
			if err != nil {
				t.Fatalf("RunCancel: %v", err)
			}
			if got.Status != tc.want || got.CancelRequested != tc.flag {
				t.Fatalf("canceled run: status %s, CancelRequested %v; want %s, %v", got.Status, got.CancelRequested, tc.want, tc.flag)
			}
			if tc.want == sundial.RunCanceled {
				eqTime(t, "FinishedAt", got.FinishedAt, at(50))
			}
			eqRun(t, f.get(r.ID), got)
		})
	}

	t.Run("Missing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		_, err := f.s.RunCancel(f.ctx, 777, t0)
		wantErr(t, err, sundial.ENotFound, "")
	})
}

func testRunQueuedNext(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	other := f.task("b")
	if r, err := f.s.RunQueuedNext(f.ctx, tk.ID); err != nil || r != nil {
		t.Fatalf("RunQueuedNext with an empty queue = %v, %v; want nil, nil", r, err)
	}
	q30 := f.run(tk.ID, at(30), sundial.RunQueued)
	q10 := f.run(tk.ID, at(10), sundial.RunQueued)
	q20 := f.run(tk.ID, at(20), sundial.RunQueued)
	f.run(other.ID, at(1), sundial.RunQueued)
	f.run(tk.ID, at(5), sundial.RunScheduled)
	f.run(tk.ID, at(6), sundial.RunRunning)

	for _, want := range []*sundial.Run{q10, q20, q30} {
		got, err := f.s.RunQueuedNext(f.ctx, tk.ID)
		if err != nil || got == nil {
			t.Fatalf("RunQueuedNext = %v, %v", got, err)
		}
		eqRun(t, got, want)
		if _, err := f.s.RunCancel(f.ctx, got.ID, at(100)); err != nil {
			t.Fatalf("RunCancel: %v", err)
		}
	}
	if r, err := f.s.RunQueuedNext(f.ctx, tk.ID); err != nil || r != nil {
		t.Fatalf("RunQueuedNext after draining = %v, %v; want nil, nil", r, err)
	}
}

func testRunsOwned(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	s := f.run(tk.ID, at(3), sundial.RunScheduled)
	q := f.run(tk.ID, at(2), sundial.RunQueued)
	r := f.run(tk.ID, at(1), sundial.RunRunning)
	f.run(tk.ID, at(4), sundial.RunSuccess)
	f.run(tk.ID, at(5), sundial.RunWaitingCallback)
	f.run(tk.ID, at(6), sundial.RunScheduled, withNode("node-b"))

	got, err := f.s.RunsOwned(f.ctx, "node-a")
	if err != nil {
		t.Fatalf("RunsOwned: %v", err)
	}
	ids := map[int64]bool{}
	for _, g := range got {
		ids[g.ID] = true
	}
	if len(got) != 3 || !ids[s.ID] || !ids[q.ID] || !ids[r.ID] {
		t.Fatalf("RunsOwned = %v, want %v", runIDs(got), []int64{r.ID, q.ID, s.ID})
	}
	if got, err := f.s.RunsOwned(f.ctx, "nobody"); err != nil || len(got) != 0 {
		t.Fatalf("RunsOwned(nobody) = %v, %v", runIDs(got), err)
	}
}

func testRunRelease(t *testing.T, open Opener) {
	f := setup(t, open)
	a := f.task("a", withNext(at(100))) // the planner has planned up to at(100)
	b := f.task("b")                    // one-off: nothing left to plan
	c := f.task("c", withNext(at(10)))  // already rewound earlier than its runs

	a50 := f.run(a.ID, at(50), sundial.RunScheduled)
	a60 := f.run(a.ID, at(60), sundial.RunScheduled)
	// Another node's planned fires: the one later than a50 goes with a's
	// rewind, to be planned anew (sundial.RunChanges.Rewind).
	a55 := f.run(a.ID, at(55), sundial.RunScheduled, withNode("node-b"))
	a49 := f.run(a.ID, at(49), sundial.RunScheduled, withNode("node-b"))
	running := f.run(a.ID, at(40), sundial.RunRunning)
	queued := f.run(a.ID, at(45), sundial.RunQueued)
	done := f.run(a.ID, at(30), sundial.RunSuccess)
	otherRunning := f.run(a.ID, at(41), sundial.RunRunning, withNode("node-b"))
	man := f.run(a.ID, at(47), sundial.RunScheduled, manual, withKey("m:1"))
	b70 := f.run(b.ID, at(70), sundial.RunScheduled)
	c20 := f.run(c.ID, at(20), sundial.RunScheduled)
	// Backfilled fires are not the planner's: neither deleted by the
	// rewind (node-b's, later than a50) nor unplanned (node-a's, handed
	// back to no node).
	backfill := func(r *sundial.Run) {
		r.Trigger = sundial.TriggerBackfill
		r.FireKey = sundial.BackfillFireKey(r.ScheduledTime)
	}
	bfOwn := f.run(a.ID, at(90), sundial.RunScheduled, backfill)
	bfOther := f.run(a.ID, at(57), sundial.RunScheduled, backfill, withNode("node-b"))

	if err := f.s.RunRelease(f.ctx, "node-a", "shutting down", at(200)); err != nil {
		t.Fatalf("RunRelease: %v", err)
	}
	eqRun(t, f.get(bfOther.ID), bfOther)
	if got := f.get(bfOwn.ID); got.Status != sundial.RunScheduled || got.NodeID != "" || got.Trigger != sundial.TriggerBackfill {
		t.Fatalf("released backfilled run = %s; want SCHEDULED, held by no node", fmtRun(*got))
	}
	for _, r := range []*sundial.Run{a50, a60, a55, b70, c20} {
		_, err := f.s.RunGet(f.ctx, r.ID)
		wantErr(t, err, sundial.ENotFound, "")
	}
	eqTime(t, "a.NextFireTime", f.getTask(a.ID).NextFireTime, at(50))
	eqTime(t, "b.NextFireTime", f.getTask(b.ID).NextFireTime, at(70))
	eqTime(t, "c.NextFireTime", f.getTask(c.ID).NextFireTime, at(10))

	got := f.get(running.ID)
	if got.Status != sundial.RunInterrupted || got.Error != "shutting down" || got.Fence <= running.Fence {
		t.Fatalf("released RUNNING run = %s; want INTERRUPTED, the reason, a new fence", fmtRun(*got))
	}
	// The old owner's late outcome is refused.
	ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: running.ID, Fence: running.Fence,
		Status: sundial.RunSuccess, FinishedAt: at(201)}})
	if err != nil || ok[0] {
		t.Fatalf("late RunFinish = %v, %v; want refused", ok, err)
	}
	// A manual trigger would not be planned again: it is recorded as missed.
	if got := f.get(man.ID); got.Status != sundial.RunSkipped || got.SkipReason != sundial.SkipMisfire {
		t.Fatalf("released manual run = %s; want SKIPPED (MISFIRE)", fmtRun(*got))
	}
	for _, r := range []*sundial.Run{a49, queued, done, otherRunning} {
		eqRun(t, f.get(r.ID), r)
	}
	owned, err := f.s.RunsOwned(f.ctx, "node-a")
	if err != nil {
		t.Fatalf("RunsOwned: %v", err)
	}
	eqIDs(t, "still owned", runIDs(owned), []int64{queued.ID})
}

func testRunPurge(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	var final, live []*sundial.Run
	for i, s := range []sundial.RunStatus{sundial.RunSuccess, sundial.RunFailed, sundial.RunTimeout,
		sundial.RunFailedTimeout, sundial.RunCanceled, sundial.RunSkipped} {
		final = append(final, f.run(tk.ID, at(i), s))
	}
	for i, s := range []sundial.RunStatus{sundial.RunScheduled, sundial.RunQueued, sundial.RunRunning,
		sundial.RunWaitingCallback, sundial.RunInterrupted} {
		live = append(live, f.run(tk.ID, at(100+i), s))
	}
	// Runs are created by the database's clock: none is older than an hour
	// ago, all are older than an hour from now.
	if n, err := f.s.RunPurge(f.ctx, time.Now().Add(-time.Hour), 100); err != nil || n != 0 {
		t.Fatalf("RunPurge of old runs = %d, %v; want 0", n, err)
	}
	var counts []int
	for {
		n, err := f.s.RunPurge(f.ctx, time.Now().Add(time.Hour), 4)
		if err != nil {
			t.Fatalf("RunPurge: %v", err)
		}
		counts = append(counts, n)
		if n == 0 {
			break
		}
	}
	if fmt.Sprint(counts) != "[4 2 0]" {
		t.Fatalf("RunPurge batches = %v, want [4 2 0]", counts)
	}
	for _, r := range final {
		_, err := f.s.RunGet(f.ctx, r.ID)
		wantErr(t, err, sundial.ENotFound, "")
	}
	for _, r := range live {
		eqRun(t, f.get(r.ID), r)
	}
}
