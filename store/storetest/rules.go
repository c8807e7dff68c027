package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// The hot paths of a store (planning, claiming, starting, finishing) may
// express a rule of the domain in their SQL, for speed. These cases hold
// that SQL to the rule: over a table of runs (or tasks), what the store does
// is what the domain's function says, run by run.

// clone returns a copy of r that a rule may change.
func clone(r *sundial.Run) *sundial.Run {
	c := *r
	return &c
}

// sameRun reports (Errorf, not Fatalf: a table goes on) a run that is not
// as want.
func sameRun(t *testing.T, what string, got, want *sundial.Run) {
	t.Helper()
	if g, w := normRun(got), normRun(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, fmtRun(g), fmtRun(w))
	}
}

// sameAttempt reports an attempt that is not as want (times normalised).
func sameAttempt(t *testing.T, what string, got, want *sundial.Attempt) {
	t.Helper()
	g, w := *got, *want
	g.StartedAt, w.StartedAt = normTimePtr(g.StartedAt), normTimePtr(w.StartedAt)
	g.FinishedAt, w.FinishedAt = normTime(g.FinishedAt), normTime(w.FinishedAt)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s: attempt\n got %+v\nwant %+v", what, g, w)
	}
}

// testPlanRule: PlanDue plans the tasks sundial.Task.DueBy says are due,
// and only those.
func testPlanRule(t *testing.T, open Opener) {
	f := setup(t, open)
	until := at(100)
	var tasks []*sundial.Task
	for i, c := range []struct {
		status sundial.TaskStatus
		next   *time.Time
	}{
		{sundial.TaskEnabled, ptr(at(50))},
		{sundial.TaskEnabled, ptr(at(100))},
		{sundial.TaskEnabled, ptr(at(101))},
		{sundial.TaskEnabled, nil},
		{sundial.TaskDisabled, ptr(at(50))},
		{sundial.TaskCompleted, ptr(at(50))},
		{sundial.TaskFailed, ptr(at(50))},
	} {
		tk := f.task(fmt.Sprintf("t%d", i), withNext(at(1000)))
		// Written as given: a store keeps the status and next fire it is
		// handed.
		tk.Status, tk.NextFireTime = c.status, c.next
		if err := f.s.TaskUpdate(f.ctx, tk, t0); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		tasks = append(tasks, f.getTask(tk.ID))
	}
	var planned []int64
	if _, err := f.s.PlanDue(f.ctx, until, 100, "", t0, func(tk *sundial.Task) sundial.Plan {
		planned = append(planned, tk.ID)
		return sundial.Plan{}
	}); err != nil {
		t.Fatalf("PlanDue: %v", err)
	}
	for _, tk := range tasks {
		if want := tk.DueBy(until); slices.Contains(planned, tk.ID) != want {
			t.Errorf("task %d (%s, next %v): planned %v, DueBy says %v", tk.ID, tk.Status, tk.NextFireTime,
				!want, want)
		}
	}
}

// testClaimRule: RunClaimDue claims the runs sundial.Run.Unclaimed says it
// may, and starts and writes them as sundial.ClaimStartParams.Starts and
// ClaimStartParams.Claim say.
func testClaimRule(t *testing.T, open Opener) {
	for i, cs := range []sundial.ClaimStartParams{{}, {By: at(20), FreshAfter: at(8)}, {By: at(60)}} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			f := setup(t, open)
			tk := f.task("a")
			var before []*sundial.Run
			n := 0
			key := func() func(*sundial.Run) { n++; return withKey(fmt.Sprintf("k%d", n)) }
			for _, when := range []int{5, 8, 12, 20, 25, 40, 45} {
				for _, mods := range [][]func(*sundial.Run){
					{withNode("")}, {withNode(""), startAhead}, {withNode("node-b"), startAhead},
					{withNode(""), startAhead, manual},
				} {
					before = append(before, f.run(tk.ID, at(when), sundial.RunScheduled, append(mods, key())...))
				}
				before = append(before, f.run(tk.ID, at(when), sundial.RunQueued, withNode(""), key()))
				before = append(before, f.retrying(tk.ID, at(when-5), at(when), key()))
			}
			before = append(before, f.heldRetry(tk.ID, at(1), at(10)))
			// Due before the claim's clock: started at the claim's time.
			late := time.Now().Add(-time.Minute).Truncate(time.Second)
			before = append(before, f.run(tk.ID, late, sundial.RunScheduled, withNode(""), startAhead, key()))
			before = append(before, f.retrying(tk.ID, late.Add(-time.Minute), late, key()))

			until := at(40)
			runs, _, err := f.s.RunClaimDue(f.ctx, "node-a", until, 1000, cs)
			if err != nil {
				t.Fatalf("RunClaimDue: %v", err)
			}
			got := map[int64]*sundial.Run{}
			for _, r := range runs {
				got[r.ID] = r
			}
			for _, b := range before {
				g, claimed := got[b.ID]
				if claimed != b.Unclaimed(until) {
					t.Errorf("run %s: claimed %v, Unclaimed says %v", fmtRun(*b), claimed, !claimed)
					continue
				}
				if !claimed {
					sameRun(t, "run left alone", f.get(b.ID), b)
					continue
				}
				// The claim's clock and trace ID are its own.
				want := clone(b)
				cs.Claim(want, "node-a", g.UpdatedAt, g.TraceID)
				if cs.Starts(b) && (g.TraceID == "" || g.TraceID == b.TraceID) {
					t.Errorf("run %d started with trace ID %q: want a new one", b.ID, g.TraceID)
				}
				sameRun(t, fmt.Sprintf("run %d claimed (starts: %v)", b.ID, cs.Starts(b)), g, want)
				sameRun(t, "claimed run as stored", f.get(b.ID), g)
			}
		})
	}
}

// testStartRule: RunStart starts the runs sundial.RunStartParams.Applies to, as
// RunStartParams.Apply says, and leaves the others.
func testStartRule(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	var (
		before []*sundial.Run
		starts []sundial.RunStartParams
	)
	for i, status := range []sundial.RunStatus{sundial.RunScheduled, sundial.RunQueued, sundial.RunRunning,
		sundial.RunWaitingCallback, sundial.RunSuccess, sundial.RunSkipped, sundial.RunCanceled, sundial.RunInterrupted} {
		for _, fenced := range []bool{false, true} {
			r := f.run(tk.ID, at(i), status, withKey(fmt.Sprintf("%s-%v", status, fenced)))
			s := sundial.RunStartParams{ID: r.ID, Fence: r.Fence, Attempt: 3, StartedAt: at(30 + i), TraceID: fmt.Sprintf("trace-%d", r.ID)}
			if fenced {
				s.Fence++
			}
			before, starts = append(before, r), append(starts, s)
		}
	}
	retry := f.retrying(tk.ID, at(10), at(15), withKey("retry"))
	before = append(before, retry)
	starts = append(starts, sundial.RunStartParams{ID: retry.ID, Fence: retry.Fence, Attempt: 2, StartedAt: at(15), TraceID: "retry"})

	ok, err := f.s.RunStart(f.ctx, starts)
	if err != nil {
		t.Fatalf("RunStart: %v", err)
	}
	for i, b := range before {
		want := clone(b)
		if starts[i].Applies(b) {
			starts[i].Apply(want)
		}
		if ok[i] != starts[i].Applies(b) {
			t.Errorf("start of a %s run under fence %d (run's %d): %v, Applies says %v", b.Status, starts[i].Fence,
				b.Fence, ok[i], !ok[i])
		}
		sameRun(t, fmt.Sprintf("run %d after RunStart", b.ID), f.get(b.ID), want)
	}
}

// testFinishRule: RunFinish records the outcomes sundial.RunFinishParams.Applies
// to, leaves each run and records each attempt as RunFinishParams.Apply says, and
// ends the tasks of CompleteTask as sundial.Task.End says.
func testFinishRule(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	body := strings.Repeat("b", sundial.MaxResponseBody+100)
	var (
		before   []*sundial.Run
		finishes []sundial.RunFinishParams
	)
	n := 0
	add := func(r *sundial.Run, fin sundial.RunFinishParams) {
		fin.ID = r.ID
		if fin.Fence == 0 {
			fin.Fence = r.Fence
		}
		before, finishes = append(before, r), append(finishes, fin)
	}
	outcomes := []sundial.RunFinishParams{
		{Status: sundial.RunSuccess, StartedAt: at(31), FinishedAt: at(32), HTTPStatus: 200, ResponseBody: body},
		{Status: sundial.RunFailed, FinishedAt: at(32), HTTPStatus: 500, Error: "boom"},
		{Status: sundial.RunFailed, StartedAt: at(31), FinishedAt: at(32), HTTPStatus: 503, Error: "busy",
			Retry: true, DueAt: at(60)},
		{Status: sundial.RunTimeout, FinishedAt: at(32), Error: "timed out", Retry: true},
		{Status: sundial.RunWaitingCallback, FinishedAt: at(32), HTTPStatus: 202, ResponseBody: "ok", DueAt: at(90)},
		{Status: sundial.RunWaitingCallback, FinishedAt: at(32), HTTPStatus: 202},
		{Status: sundial.RunFailedTimeout, FinishedAt: at(33), Error: "no callback", DueAt: at(99)},
		{Status: sundial.RunCanceled, FinishedAt: at(33), Error: "canceled"},
		{Status: sundial.RunInterrupted, FinishedAt: at(33), Error: "stopped"},
		// No finish time: the store's clock, which its updated_at shows.
		{Status: sundial.RunFailed, HTTPStatus: 500, Error: "no finish time"},
		{Status: sundial.RunFailed, Error: "no finish time", Retry: true, DueAt: at(70)},
	}
	for _, status := range []sundial.RunStatus{sundial.RunRunning, sundial.RunWaitingCallback, sundial.RunScheduled,
		sundial.RunQueued, sundial.RunSuccess, sundial.RunInterrupted} {
		for _, o := range outcomes {
			n++
			add(f.run(tk.ID, at(n), status, withKey(fmt.Sprintf("k%d", n))), o)
		}
	}
	// A redelivery, a fenced-off outcome, and the end of one-off tasks,
	// one of them disabled meanwhile.
	redo := f.redelivering(tk.ID, at(-20), at(20))
	add(redo, outcomes[0])
	fenced := f.run(tk.ID, at(200), sundial.RunRunning)
	add(fenced, sundial.RunFinishParams{Fence: fenced.Fence + 1, Status: sundial.RunSuccess, FinishedAt: at(201)})
	once := f.task("once", oneOff(at(300)))
	onceOff := f.task("once-off", oneOff(at(300)), disabled)
	tasks := map[int64]*sundial.Task{once.ID: once, onceOff.ID: onceOff}
	add(f.run(once.ID, at(300), sundial.RunRunning),
		sundial.RunFinishParams{Status: sundial.RunSuccess, FinishedAt: at(301), CompleteTask: sundial.TaskCompleted})
	add(f.run(onceOff.ID, at(300), sundial.RunRunning),
		sundial.RunFinishParams{Status: sundial.RunFailed, FinishedAt: at(301), CompleteTask: sundial.TaskFailed})

	attemptsBefore := map[int64]int{}
	for _, b := range before {
		attemptsBefore[b.ID] = len(f.attempts(b.ID))
	}
	ok, err := f.s.RunFinish(f.ctx, finishes)
	if err != nil {
		t.Fatalf("RunFinish: %v", err)
	}
	for i, b := range before {
		fin := finishes[i]
		what := fmt.Sprintf("outcome %s (retry %v) of a %s run %d", fin.Status, fin.Retry, b.Status, b.ID)
		if ok[i] != fin.Applies(b) {
			t.Errorf("%s: applied %v, Applies says %v", what, ok[i], !ok[i])
		}
		got := f.get(b.ID)
		want := clone(b)
		var att *sundial.Attempt
		if fin.Applies(b) {
			att = fin.Apply(want, got.UpdatedAt)
		}
		sameRun(t, what, got, want)
		atts := f.attempts(b.ID)
		switch {
		case att == nil && len(atts) != attemptsBefore[b.ID]:
			t.Errorf("%s: %d attempts, want %d (none recorded)", what, len(atts), attemptsBefore[b.ID])
		case att != nil && len(atts) != attemptsBefore[b.ID]+1:
			t.Errorf("%s: %d attempts, want one more than %d", what, len(atts), attemptsBefore[b.ID])
		case att != nil:
			sameAttempt(t, what, atts[len(atts)-1], att)
		}
		// An outcome that ends its run for good leaves the attempt on the
		// run: the run's own is the one Apply returned.
		if att != nil && want.AttemptOnRun {
			if own := got.OwnAttempt(); own == nil {
				t.Errorf("%s: the run keeps no attempt", what)
			} else {
				sameAttempt(t, what+": the run's own", own, att)
			}
		}
		if task := tasks[b.TaskID]; task != nil {
			want := *task
			if fin.Applies(b) && fin.CompleteTask != "" {
				want.End(fin.CompleteTask, fin.FinishedAt)
			}
			got := f.getTask(task.ID)
			if got.Status != want.Status || got.Version != want.Version || (got.NextFireTime == nil) != (want.NextFireTime == nil) ||
				!got.UpdatedAt.Equal(want.UpdatedAt) {
				t.Errorf("%s: task %s version %d next %v updated %v; Task.End says %s version %d next %v updated %v", what,
					got.Status, got.Version, got.NextFireTime, got.UpdatedAt, want.Status, want.Version, want.NextFireTime,
					want.UpdatedAt)
			}
		}
	}
}

// The rules the stores call on what they read (release, take-back,
// redelivery): these cases hold each store's reads to them too, so that no
// run a rule would change is left unread.

// agree holds the store to the changes c a rule decided on after, clones
// of the runs before it ran: each run c deletes is gone, each other is as
// after holds it, each attempt of c is the latest of its run, and each task
// c rewinds or ends is as Task.Rewind and Task.End leave it.
func (f *fixture) agree(what string, after []*sundial.Run, c sundial.RunChanges, tasks map[int64]*sundial.Task) {
	f.t.Helper()
	gone := map[int64]bool{}
	for _, r := range c.Delete {
		gone[r.ID] = true
	}
	for _, r := range after {
		if gone[r.ID] || c.RewoundAway(r) {
			if _, err := f.s.RunGet(f.ctx, r.ID); sundial.ErrorCode(err) != sundial.ENotFound {
				f.t.Errorf("%s: run %d is still there (%v); the rule deleted it", what, r.ID, err)
			}
			continue
		}
		sameRun(f.t, fmt.Sprintf("%s: run %d", what, r.ID), f.get(r.ID), r)
	}
	for _, a := range c.Attempts {
		atts := f.attempts(a.RunID)
		if len(atts) == 0 {
			f.t.Errorf("%s: run %d has no attempt; the rule recorded one", what, a.RunID)
			continue
		}
		sameAttempt(f.t, what, atts[len(atts)-1], a)
	}
	for id, tk := range tasks {
		want := *tk
		if at, ok := c.Rewind[id]; ok {
			want.Rewind(at)
		}
		for _, e := range c.Ends {
			if e.TaskID == id {
				want.End(e.Status, e.At)
			}
		}
		got, err := f.s.TaskGet(f.ctx, id)
		if sundial.ErrorCode(err) == sundial.ENotFound {
			continue // deleted: its runs are what counts
		}
		if err != nil {
			f.t.Fatalf("TaskGet %d: %v", id, err)
		}
		if got.Status != want.Status || got.Version != want.Version || !reflect.DeepEqual(normTimePtr(got.NextFireTime), normTimePtr(want.NextFireTime)) {
			f.t.Errorf("%s: task %d is %s, version %d, next %v; the rule says %s, %d, %v", what, id,
				got.Status, got.Version, got.NextFireTime, want.Status, want.Version, want.NextFireTime)
		}
	}
}

// clones returns copies of runs for a rule to change.
func clones(runs []*sundial.Run) []*sundial.Run {
	out := make([]*sundial.Run, len(runs))
	for i, r := range runs {
		out[i] = clone(r)
	}
	return out
}

// testReleaseRule: RunRelease does to a node's runs what sundial.Release
// says, and to no other run.
func testReleaseRule(t *testing.T, open Opener) {
	f := setup(t, open)
	a := f.task("a", withNext(at(100)))
	b := f.task("b")
	var runs []*sundial.Run
	n := 0
	key := func() func(*sundial.Run) { n++; return withKey(fmt.Sprintf("k%d", n)) }
	for _, tk := range []*sundial.Task{a, b} {
		for _, status := range []sundial.RunStatus{sundial.RunScheduled, sundial.RunQueued, sundial.RunRunning,
			sundial.RunWaitingCallback, sundial.RunSuccess, sundial.RunSkipped} {
			runs = append(runs, f.run(tk.ID, at(40+n), status, key()))
			runs = append(runs, f.run(tk.ID, at(40+n), status, key(), withNode("node-b")))
		}
		runs = append(runs, f.run(tk.ID, at(30+n), sundial.RunScheduled, key(), manual))
		runs = append(runs, f.run(tk.ID, at(60+n), sundial.RunScheduled, key(),
			func(r *sundial.Run) { r.Trigger = sundial.TriggerCatchUp }))
		runs = append(runs, f.redelivering(tk.ID, at(20+n), at(90)))
		held := f.retrying(tk.ID, at(10+n), at(80), key())
		if _, _, err := f.s.RunClaim(f.ctx, "node-a", []sundial.RunRef{ref(held)}); err != nil {
			t.Fatalf("RunClaim: %v", err)
		}
		runs = append(runs, f.get(held.ID), f.retrying(tk.ID, at(10+n), at(80), key()))
	}
	tasks := map[int64]*sundial.Task{a.ID: f.getTask(a.ID), b.ID: f.getTask(b.ID)}

	after := clones(runs)
	var mine []*sundial.Run
	for _, r := range after {
		if r.NodeID == "node-a" {
			mine = append(mine, r)
		}
	}
	c := sundial.Release(mine, "stopping", at(200))
	if err := f.s.RunRelease(f.ctx, "node-a", "stopping", at(200)); err != nil {
		t.Fatalf("RunRelease: %v", err)
	}
	f.agree("RunRelease", after, c, tasks)
}

// testTakeBackRule: an edit, a disable and a delete of a task do to its
// runs what sundial.TakeBackOnUpdate and TakeBackOnDelete say, and to no
// other run.
func testTakeBackRule(t *testing.T, open Opener) {
	inside, past := t0.Add(sundial.SendMargin/2), t0.Add(sundial.SendMargin+time.Millisecond)
	for _, change := range []string{"update", "disable", "delete"} {
		t.Run(change, func(t *testing.T) {
			t.Parallel()
			f := setup(t, open)
			tk := f.task("changed")
			other := f.task("other")
			n := 0
			key := func() func(*sundial.Run) { n++; return withKey(fmt.Sprintf("k%d", n)) }
			var runs []*sundial.Run
			for _, task := range []int64{tk.ID, other.ID} {
				runs = append(runs,
					f.run(task, at(50), sundial.RunScheduled, key()),
					f.run(task, at(51), sundial.RunScheduled, key(), withNode("")),
					f.run(task, at(52), sundial.RunScheduled, key(), manual),
					f.committed(task, past, key()),
					f.committed(task, inside, key()),
					f.committed(task, at(-5), key()),
					f.committed(task, at(53), key(), manual),
					f.redelivering(task, at(-20), at(30)),
					f.heldRetry(task, at(-40), at(40)),
					f.retrying(task, at(-60), at(60), key()),
					f.run(task, at(-2), sundial.RunQueued, key()),
					f.run(task, at(-3), sundial.RunQueued, key(), manual),
					f.waiting(task, at(-4), at(100), key()),
					f.run(task, at(-6), sundial.RunSuccess, key()),
					f.run(task, at(-7), sundial.RunInterrupted, key()))
			}
			tasks := map[int64]*sundial.Task{tk.ID: f.getTask(tk.ID), other.ID: f.getTask(other.ID)}

			after := clones(runs)
			var its []*sundial.Run
			for _, r := range after {
				if r.TaskID == tk.ID {
					its = append(its, r)
				}
			}
			cutoff := sundial.SendCutoff(t0, time.Now())
			var c sundial.RunChanges
			switch change {
			case "update", "disable":
				upd := f.getTask(tk.ID)
				upd.Priority = 7
				if change == "disable" {
					upd.Status = sundial.TaskDisabled
				}
				if err := f.s.TaskUpdate(f.ctx, upd, t0); err != nil {
					t.Fatalf("TaskUpdate: %v", err)
				}
				c = sundial.TakeBackOnUpdate(upd, its, cutoff, t0)
				delete(tasks, tk.ID) // changed by the update itself
			case "delete":
				if err := f.s.TaskDelete(f.ctx, tk.ID, t0); err != nil {
					t.Fatalf("TaskDelete: %v", err)
				}
				c = sundial.TakeBackOnDelete(its, cutoff, t0)
			}
			f.agree(change, after, c, tasks)
		})
	}
}

// testRedeliverRule: RunRedeliver does to the INTERRUPTED runs what
// sundial.Redeliver says, the one-off tasks it fails included.
func testRedeliverRule(t *testing.T, open Opener) {
	f := setup(t, open)
	cron := f.task("cron")
	once := f.task("once", oneOff(at(10)))
	gone := f.task("gone")
	onceGone := f.task("once-gone", oneOff(at(11)))
	n := 0
	key := func() func(*sundial.Run) { n++; return withKey(fmt.Sprintf("k%d", n)) }
	var runs []*sundial.Run
	for _, tk := range []*sundial.Task{cron, once, gone, onceGone} {
		runs = append(runs, f.run(tk.ID, at(10), sundial.RunInterrupted, key()),
			f.run(tk.ID, at(11), sundial.RunInterrupted, key(), manual),
			f.run(tk.ID, at(12), sundial.RunRunning, key()))
		asked := f.run(tk.ID, at(13), sundial.RunInterrupted, key())
		if _, err := f.s.RunCancel(f.ctx, asked.ID, t0); err != nil {
			t.Fatalf("RunCancel: %v", err)
		}
		runs = append(runs, f.get(asked.ID))
	}
	// Delivered twice: out of deliveries under at most 2.
	twice := f.redelivering(cron.ID, at(-30), at(5))
	if err := f.s.RunRelease(f.ctx, "node-b", "stopping", t0); err != nil {
		t.Fatalf("RunRelease: %v", err)
	}
	runs = append(runs, f.get(twice.ID))
	for _, tk := range []*sundial.Task{gone, onceGone} {
		if err := f.s.TaskDelete(f.ctx, tk.ID, at(1)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
	}
	// As the runs are now (a delete took some back).
	var now []*sundial.Run
	for _, r := range runs {
		if got, err := f.s.RunGet(f.ctx, r.ID); err == nil {
			now = append(now, got)
		}
	}
	runs = now
	all := map[int64]*sundial.Task{}
	for _, tk := range []*sundial.Task{cron, once, gone, onceGone} {
		got, err := f.s.TaskGet(f.ctx, tk.ID)
		if sundial.ErrorCode(err) == sundial.ENotFound {
			// Deleted: TaskDelete leaves its status and version.
			got, err = tk, nil
			got.NextFireTime = nil
		}
		if err != nil {
			t.Fatalf("TaskGet: %v", err)
		}
		all[tk.ID] = got
	}

	after := clones(runs)
	var interrupted []*sundial.Run
	for _, r := range after {
		if r.Status == sundial.RunInterrupted {
			interrupted = append(interrupted, r)
		}
	}
	slices.SortFunc(interrupted, func(a, b *sundial.Run) int {
		if c := a.ScheduledTime.Compare(b.ScheduledTime); c != 0 {
			return c
		}
		return int(a.ID - b.ID)
	})
	again, c := sundial.Redeliver(interrupted, all, map[int64]bool{gone.ID: true, onceGone.ID: true}, "node-c", 2, 100, at(50))
	got, _, err := f.s.RunRedeliver(f.ctx, "node-c", 2, 100, at(50))
	if err != nil {
		t.Fatalf("RunRedeliver: %v", err)
	}
	eqIDs(t, "redelivered", runIDs(got), runIDs(again))
	live := map[int64]*sundial.Task{cron.ID: all[cron.ID], once.ID: all[once.ID]}
	f.agree("RunRedeliver", after, c, live)
}
