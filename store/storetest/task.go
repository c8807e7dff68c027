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

func testTask(t *testing.T, open Opener) {
	t.Run("CreateGet", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := newTask("nightly", withNext(at(10)), withPriority(7))
		// The delivery options, stored as given (sealing is the caller's).
		tk.FollowRedirects = sundial.RedirectAny
		tk.SigningSecret = sundial.SealedPrefix + "c2VhbGVk"
		tk.OIDC = &sundial.OIDCOption{Audience: "https://example.com/aud"}
		if err := CreateTask(f.ctx, f.s, tk, t0); err != nil {
			t.Fatalf("CreateTask: %v", err)
		}
		if tk.ID <= 0 || tk.Version != 1 || !tk.CreatedAt.Equal(t0) || !tk.UpdatedAt.Equal(t0) {
			t.Fatalf("created task has ID %d, Version %d, CreatedAt %v, UpdatedAt %v; want ID > 0, 1, %v, %v",
				tk.ID, tk.Version, tk.CreatedAt, tk.UpdatedAt, t0, t0)
		}
		eqTask(t, f.getTask(tk.ID), tk)

		other := f.task("weekly")
		if other.ID == tk.ID {
			t.Fatalf("two tasks share ID %d", tk.ID)
		}
		if other.NextFireTime != nil {
			t.Fatalf("NextFireTime = %v, want nil", other.NextFireTime)
		}
		eqTask(t, f.getTask(other.ID), other)
	})

	t.Run("GetMissing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		_, err := f.s.TaskGet(f.ctx, 12345)
		wantErr(t, err, sundial.ENotFound, "")
	})

	// TaskExists tells a deleted task (its runs are history) from an ID
	// no task ever had.
	t.Run("Exists", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		live := f.task("live")
		gone := f.task("gone")
		f.run(gone.ID, at(1), sundial.RunSuccess)
		if err := f.s.TaskDelete(f.ctx, gone.ID, at(2)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		for _, tc := range []struct {
			id   int64
			want bool
		}{{live.ID, true}, {gone.ID, true}, {gone.ID + 1000, false}, {0, false}, {-1, false}} {
			got, err := f.s.TaskExists(f.ctx, tc.id)
			if err != nil || got != tc.want {
				t.Errorf("TaskExists(%d) = %v, %v; want %v", tc.id, got, err, tc.want)
			}
		}
		_, err := f.s.TaskGet(f.ctx, gone.ID)
		wantErr(t, err, sundial.ENotFound, "")
	})

	t.Run("NameUniqueAmongLive", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		first := f.task("report")
		err := CreateTask(f.ctx, f.s, newTask("report"), t0)
		wantErr(t, err, sundial.EConflict, "name")

		if err := f.s.TaskDelete(f.ctx, first.ID, at(1)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		_, err = f.s.TaskGet(f.ctx, first.ID)
		wantErr(t, err, sundial.ENotFound, "")
		second := f.task("report") // a deleted task frees its name
		if second.ID == first.ID {
			t.Fatalf("the new task reuses the deleted task's ID %d", first.ID)
		}
		eqTask(t, f.getTask(second.ID), second)
	})

	t.Run("Update", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("sync", withNext(at(5)))
		up := newTask("sync-renamed", withNext(at(60)), withPriority(-3), func(u *sundial.Task) {
			u.Status = sundial.TaskDisabled
			u.Headers = map[string]string{"X-New": "1"}
			u.FollowRedirects = sundial.RedirectNone
		})
		up.ID, up.Version = tk.ID, tk.Version
		if err := f.s.TaskUpdate(f.ctx, up, at(100)); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		if up.Version != 2 || !up.UpdatedAt.Equal(at(100)) || !up.CreatedAt.Equal(t0) {
			t.Fatalf("updated task has Version %d, UpdatedAt %v, CreatedAt %v; want 2, %v, %v",
				up.Version, up.UpdatedAt, up.CreatedAt, at(100), t0)
		}
		eqTask(t, f.getTask(tk.ID), up)
		// The old name is free again.
		f.task("sync")
	})

	t.Run("UpdateStaleVersion", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		stale := *tk
		if err := f.s.TaskUpdate(f.ctx, tk, at(1)); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		stale.Description = "lost update"
		err := f.s.TaskUpdate(f.ctx, &stale, at(2))
		wantErr(t, err, sundial.EConflict, "version")
		eqTask(t, f.getTask(tk.ID), tk)
	})

	// Why, when and by whom a task is disabled round-trip through a
	// create, a read, a list and an update, and are cleared by one; the
	// longest reason, in characters of several bytes, is kept whole.
	t.Run("DisabledReason", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		reason := strings.Repeat("é", sundial.MaxDisabledReasonLen-1) + "!"
		tk := newTask("paused", func(tk *sundial.Task) {
			tk.Status = sundial.TaskDisabled
			tk.DisabledReason, tk.DisabledAt, tk.DisabledBy = reason, ptr(at(1).Add(123*time.Microsecond)), "ops-token"
		})
		if err := CreateTask(f.ctx, f.s, tk, at(1)); err != nil {
			t.Fatalf("CreateTask: %v", err)
		}
		eqTask(t, f.getTask(tk.ID), tk)
		list, err := f.s.TaskList(f.ctx, sundial.TaskListParams{Status: []sundial.TaskStatus{sundial.TaskDisabled}})
		if err != nil || len(list) != 1 {
			t.Fatalf("TaskList: %d tasks, %v", len(list), err)
		}
		eqTask(t, list[0], tk)

		tk.DisabledReason = "waiting for the vendor"
		if err := f.s.TaskUpdate(f.ctx, tk, at(2)); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		eqTask(t, f.getTask(tk.ID), tk)

		tk.Status, tk.DisabledReason, tk.DisabledAt, tk.DisabledBy = sundial.TaskEnabled, "", nil, ""
		if err := f.s.TaskUpdate(f.ctx, tk, at(3)); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		got := f.getTask(tk.ID)
		if got.DisabledReason != "" || got.DisabledAt != nil || got.DisabledBy != "" {
			t.Fatalf("enabled task has disabled_reason %q, disabled_at %v, disabled_by %q; want none",
				got.DisabledReason, got.DisabledAt, got.DisabledBy)
		}
		eqTask(t, got, tk)
	})

	t.Run("UpdateMissing", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		gone := f.task("gone")
		if err := f.s.TaskDelete(f.ctx, gone.ID, at(1)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		for _, id := range []int64{gone.ID, 9999} {
			tk := newTask("x")
			tk.ID, tk.Version = id, 1
			wantErr(t, f.s.TaskUpdate(f.ctx, tk, at(2)), sundial.ENotFound, "")
		}
	})

	t.Run("UpdateNameTaken", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		f.task("a")
		b := f.task("b")
		b.Name = "a"
		wantErr(t, f.s.TaskUpdate(f.ctx, b, at(1)), sundial.EConflict, "name")
		if got := f.getTask(b.ID); got.Name != "b" || got.Version != 1 {
			t.Fatalf("task after refused update: name %q version %d, want b 1", got.Name, got.Version)
		}
	})

	t.Run("UpdateDeletesScheduledRuns", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a", withNext(at(100)))
		other := f.task("b")
		sched := f.run(tk.ID, at(10), sundial.RunScheduled)
		sched2 := f.run(tk.ID, at(20), sundial.RunScheduled)
		man := f.run(tk.ID, at(15), sundial.RunScheduled, manual, withKey("m:1"))
		running := f.run(tk.ID, at(5), sundial.RunRunning)
		queued := f.run(tk.ID, at(6), sundial.RunQueued)
		done := f.run(tk.ID, at(1), sundial.RunSuccess)
		otherSched := f.run(other.ID, at(10), sundial.RunScheduled)

		if err := f.s.TaskUpdate(f.ctx, tk, at(30)); err != nil {
			t.Fatalf("TaskUpdate: %v", err)
		}
		for _, r := range []*sundial.Run{sched, sched2} {
			_, err := f.s.RunGet(f.ctx, r.ID)
			wantErr(t, err, sundial.ENotFound, "")
		}
		// A manual trigger is not the planner's to plan again: it stays.
		for _, r := range []*sundial.Run{man, running, queued, done, otherSched} {
			eqRun(t, f.get(r.ID), r)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a", withNext(at(0)))
		keep := f.task("b")
		sched := f.run(tk.ID, at(10), sundial.RunScheduled)
		running := f.run(tk.ID, at(5), sundial.RunRunning)
		queued := f.run(tk.ID, at(6), sundial.RunQueued)

		if err := f.s.TaskDelete(f.ctx, tk.ID, at(20)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		_, err := f.s.TaskGet(f.ctx, tk.ID)
		wantErr(t, err, sundial.ENotFound, "")
		_, err = f.s.RunGet(f.ctx, sched.ID)
		wantErr(t, err, sundial.ENotFound, "")
		eqRun(t, f.get(running.ID), running)
		// A deleted task's queue is canceled: nothing would ever admit it.
		if q := f.get(queued.ID); q.Status != sundial.RunCanceled {
			t.Fatalf("queued run of a deleted task is %s, want CANCELED", q.Status)
		}
		list, err := f.s.TaskList(f.ctx, sundial.TaskListParams{})
		if err != nil {
			t.Fatalf("TaskList: %v", err)
		}
		eqIDs(t, "TaskList", taskIDs(list), []int64{keep.ID})

		wantErr(t, f.s.TaskDelete(f.ctx, tk.ID, at(21)), sundial.ENotFound, "")
		wantErr(t, f.s.TaskDelete(f.ctx, 9999, at(21)), sundial.ENotFound, "")
	})
}

func testTaskList(t *testing.T, open Opener) {
	t.Run("Paging", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		var want []int64
		for i := range 7 {
			want = append(want, f.task(fmt.Sprintf("t%d", i)).ID)
		}
		var got []int64
		after := int64(0)
		for page := 0; ; page++ {
			ts, err := f.s.TaskList(f.ctx, sundial.TaskListParams{AfterID: after, Limit: 3})
			if err != nil {
				t.Fatalf("TaskList: %v", err)
			}
			if len(ts) > 3 {
				t.Fatalf("page %d has %d tasks, limit 3", page, len(ts))
			}
			if len(ts) == 0 {
				break
			}
			got = append(got, taskIDs(ts)...)
			after = ts[len(ts)-1].ID
		}
		eqIDs(t, "pages", got, want)
	})

	t.Run("Limit", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		for i := range 55 {
			f.task(fmt.Sprintf("t%02d", i))
		}
		for _, tc := range []struct{ limit, want int }{{0, 50}, {-1, 50}, {10, 10}, {5000, 55}} {
			ts, err := f.s.TaskList(f.ctx, sundial.TaskListParams{Limit: tc.limit})
			if err != nil {
				t.Fatalf("TaskList: %v", err)
			}
			if len(ts) != tc.want {
				t.Errorf("Limit %d: %d tasks, want %d", tc.limit, len(ts), tc.want)
			}
		}
	})

	t.Run("Filters", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		disabled := func(tk *sundial.Task) { tk.Status = sundial.TaskDisabled }
		jobA := f.task("job-a")
		jobB := f.task("job-b", disabled)
		jobs := f.task("jobs")
		pct := f.task("50%_off")
		like := f.task("50x_off")
		gone := f.task("job-gone")
		if err := f.s.TaskDelete(f.ctx, gone.ID, at(1)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		for _, tc := range []struct {
			name string
			f    sundial.TaskListParams
			want []int64
		}{
			{"all", sundial.TaskListParams{}, []int64{jobA.ID, jobB.ID, jobs.ID, pct.ID, like.ID}},
			{"enabled", sundial.TaskListParams{Status: []sundial.TaskStatus{sundial.TaskEnabled}}, []int64{jobA.ID, jobs.ID, pct.ID, like.ID}},
			{"disabled", sundial.TaskListParams{Status: []sundial.TaskStatus{sundial.TaskDisabled}}, []int64{jobB.ID}},
			{"prefix", sundial.TaskListParams{NamePrefix: "job-"}, []int64{jobA.ID, jobB.ID}},
			{"prefix and status", sundial.TaskListParams{NamePrefix: "job", Status: []sundial.TaskStatus{sundial.TaskEnabled}}, []int64{jobA.ID, jobs.ID}},
			{"prefix is literal", sundial.TaskListParams{NamePrefix: "50%"}, []int64{pct.ID}},
			{"underscore is literal", sundial.TaskListParams{NamePrefix: "50x_"}, []int64{like.ID}},
			{"no match", sundial.TaskListParams{NamePrefix: "zzz"}, nil},
			{"contains", sundial.TaskListParams{NameContains: "ob-"}, []int64{jobA.ID, jobB.ID}},
			{"contains in either case", sundial.TaskListParams{NameContains: "OB"}, []int64{jobA.ID, jobB.ID, jobs.ID}},
			{"contains is literal", sundial.TaskListParams{NameContains: "%_"}, []int64{pct.ID}},
			{"contains and status", sundial.TaskListParams{NameContains: "_OFF", Status: []sundial.TaskStatus{sundial.TaskEnabled}}, []int64{pct.ID, like.ID}},
			{"after", sundial.TaskListParams{AfterID: jobs.ID}, []int64{pct.ID, like.ID}},
		} {
			ts, err := f.s.TaskList(f.ctx, tc.f)
			if err != nil {
				t.Fatalf("%s: TaskList: %v", tc.name, err)
			}
			eqIDs(t, tc.name, taskIDs(ts), tc.want)
		}
		ts, err := f.s.TaskList(f.ctx, sundial.TaskListParams{NamePrefix: "job-a"})
		if err != nil || len(ts) != 1 {
			t.Fatalf("TaskList job-a: %d tasks, %v", len(ts), err)
		}
		eqTask(t, ts[0], jobA)
	})

	// Name and RequestID match exactly, case and all, and only live tasks:
	// a deleted task's name or request_id may be in use again.
	t.Run("Exact", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		old := f.task("nightly", withRequest("req-1", "h1"))
		if err := f.s.TaskDelete(f.ctx, old.ID, at(1)); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}
		nightly := f.task("nightly", withRequest("req-1", "h2"))
		nightlyX := f.task("nightly-x", withRequest("req-10", "h3"), disabled)
		other := f.task("Nightly", withRequest("REQ-1", "h4"))
		plain := f.task("plain", func(tk *sundial.Task) { tk.BizID = "biz" })
		enabled, off := sundial.TaskEnabled, sundial.TaskDisabled
		for _, tc := range []struct {
			name string
			f    sundial.TaskListParams
			want []int64
		}{
			{"name", sundial.TaskListParams{Name: "nightly"}, []int64{nightly.ID}},
			{"name is not a prefix", sundial.TaskListParams{Name: "night"}, nil},
			{"name is case-sensitive", sundial.TaskListParams{Name: "Nightly"}, []int64{other.ID}},
			{"name and prefix", sundial.TaskListParams{Name: "nightly-x", NamePrefix: "nightly"}, []int64{nightlyX.ID}},
			{"name and status", sundial.TaskListParams{Name: "nightly-x", Status: []sundial.TaskStatus{enabled}}, nil},
			{"request_id", sundial.TaskListParams{RequestID: "req-1"}, []int64{nightly.ID}},
			{"request_id is not a prefix", sundial.TaskListParams{RequestID: "req"}, nil},
			{"request_id is case-sensitive", sundial.TaskListParams{RequestID: "REQ-1"}, []int64{other.ID}},
			{"request_id and name", sundial.TaskListParams{RequestID: "req-10", Name: "nightly"}, nil},
			{"statuses", sundial.TaskListParams{Status: []sundial.TaskStatus{off, enabled}},
				[]int64{nightly.ID, nightlyX.ID, other.ID, plain.ID}},
			{"statuses and prefix", sundial.TaskListParams{Status: []sundial.TaskStatus{sundial.TaskCompleted, off},
				NamePrefix: "n"}, []int64{nightlyX.ID}},
			{"status none", sundial.TaskListParams{Status: []sundial.TaskStatus{sundial.TaskFailed}}, nil},
			// Trailing spaces are part of the value (MySQL's collation
			// alone would ignore them).
			{"name with a trailing space", sundial.TaskListParams{Name: "plain "}, nil},
			{"request_id with a trailing space", sundial.TaskListParams{RequestID: "req-1 "}, nil},
			{"biz_id with a trailing space", sundial.TaskListParams{BizID: "biz "}, nil},
			{"biz_id", sundial.TaskListParams{BizID: "biz"}, []int64{plain.ID}},
		} {
			ts, err := f.s.TaskList(f.ctx, tc.f)
			if err != nil {
				t.Fatalf("%s: TaskList: %v", tc.name, err)
			}
			eqIDs(t, tc.name, taskIDs(ts), tc.want)
		}
	})
}

// planEvery returns a PlanFunc that plans one SCHEDULED run at the task's
// NextFireTime and moves it on by step (nil when step is 0), and records the
// tasks it was called for.
func planEvery(step time.Duration, called *[]int64) sundial.PlanFunc {
	return func(tk *sundial.Task) sundial.Plan {
		*called = append(*called, tk.ID)
		at := *tk.NextFireTime
		p := sundial.Plan{Runs: []*sundial.Run{{
			TaskID:        tk.ID,
			FireKey:       sundial.ScheduledFireKey(at),
			Trigger:       sundial.TriggerSchedule,
			ScheduledTime: at,
			Status:        sundial.RunScheduled,
		}}}
		if step != 0 {
			p.Next = ptr(at.Add(step))
		}
		return p
	}
}

func testPlanDue(t *testing.T, open Opener) {
	t.Run("ClaimsDueEnabledLive", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		due := f.task("due", withNext(at(0)))
		edge := f.task("edge", withNext(at(5)))
		f.task("later", withNext(at(6)))
		f.task("disabled", withNext(at(0)), func(tk *sundial.Task) { tk.Status = sundial.TaskDisabled })
		f.task("never")
		gone := f.task("gone", withNext(at(0)))
		if err := f.s.TaskDelete(f.ctx, gone.ID, t0); err != nil {
			t.Fatalf("TaskDelete: %v", err)
		}

		var called []int64
		runs, err := f.s.PlanDue(f.ctx, at(5), 100, "node-1", at(-1), planEvery(10*time.Second, &called))
		if err != nil {
			t.Fatalf("PlanDue: %v", err)
		}
		eqIDs(t, "planned tasks", called, []int64{due.ID, edge.ID})
		if len(runs) != 2 {
			t.Fatalf("PlanDue inserted %d runs, want 2", len(runs))
		}
		for i, tk := range []*sundial.Task{due, edge} {
			r := runs[i]
			want := &sundial.Run{
				ID: r.ID, TaskID: tk.ID, FireKey: sundial.ScheduledFireKey(*tk.NextFireTime),
				Trigger: sundial.TriggerSchedule, ScheduledTime: *tk.NextFireTime, DueAt: *tk.NextFireTime,
				Status: sundial.RunScheduled, NodeID: "node-1", Fence: 1, CreatedAt: at(-1), UpdatedAt: at(-1),
				IdempotencyKey: sundial.IdempotencyKeyFor(tk.ID, sundial.ScheduledFireKey(*tk.NextFireTime)),
			}
			if r.ID <= 0 {
				t.Fatalf("run %d has no ID", i)
			}
			eqRun(t, r, want)
			eqRun(t, f.get(r.ID), want)

			// NextFireTime moves on; Version and UpdatedAt stay.
			got := f.getTask(tk.ID)
			eqTime(t, "NextFireTime", got.NextFireTime, tk.NextFireTime.Add(10*time.Second))
			if got.Version != 1 || !got.UpdatedAt.Equal(t0) {
				t.Fatalf("planning changed Version to %d and UpdatedAt to %v", got.Version, got.UpdatedAt)
			}
		}

		// Nothing is due by at(5) any more.
		called = nil
		runs, err = f.s.PlanDue(f.ctx, at(5), 100, "node-1", at(0), planEvery(10*time.Second, &called))
		if err != nil || len(runs) != 0 || len(called) != 0 {
			t.Fatalf("second PlanDue: %d runs, called for %v, %v; want nothing", len(runs), called, err)
		}
	})

	t.Run("DueOrderAndLimit", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		a := f.task("a", withPriority(0), withNext(at(0)))
		b := f.task("b", withPriority(5), withNext(at(3)))
		c := f.task("c", withPriority(5), withNext(at(1)))
		d := f.task("d", withPriority(-1), withNext(at(-9)))
		e := f.task("e", withPriority(5), withNext(at(1)))

		var called []int64
		runs, err := f.s.PlanDue(f.ctx, at(10), 3, "n", t0, planEvery(0, &called))
		if err != nil {
			t.Fatalf("PlanDue: %v", err)
		}
		// Earliest first, whatever the priority (the claims order by it).
		eqIDs(t, "first pass", called, []int64{d.ID, a.ID, c.ID})
		if len(runs) != 3 {
			t.Fatalf("inserted %d runs, want 3", len(runs))
		}
		called = nil
		if _, err := f.s.PlanDue(f.ctx, at(10), 3, "n", t0, planEvery(0, &called)); err != nil {
			t.Fatalf("PlanDue: %v", err)
		}
		eqIDs(t, "second pass", called, []int64{e.ID, b.ID})
		for _, r := range runs {
			if want := map[int64]int{d.ID: -1, a.ID: 0, c.ID: 5}[r.TaskID]; r.Priority != want {
				t.Errorf("run of task %d has priority %d, want its task's %d", r.TaskID, r.Priority, want)
			}
		}
	})

	t.Run("NilNext", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		once := f.task("once", withNext(at(0)))
		var called []int64
		if _, err := f.s.PlanDue(f.ctx, at(0), 10, "n", t0, planEvery(0, &called)); err != nil {
			t.Fatalf("PlanDue: %v", err)
		}
		if got := f.getTask(once.ID); got.NextFireTime != nil {
			t.Fatalf("NextFireTime = %v, want nil", got.NextFireTime)
		}
		called = nil
		if _, err := f.s.PlanDue(f.ctx, at(100000), 10, "n", t0, planEvery(0, &called)); err != nil {
			t.Fatalf("PlanDue: %v", err)
		}
		eqIDs(t, "planned again", called, nil)
	})

	t.Run("Keep", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		planned := f.task("planned", withNext(at(0)))
		kept := f.task("kept", withNext(at(5)))
		// The first task is planned; the second is kept as it is, for a
		// later call: no run, its row not written.
		plan := func(task *sundial.Task) sundial.Plan {
			if task.ID == kept.ID {
				return sundial.Plan{Keep: true, Runs: []*sundial.Run{{TaskID: task.ID, FireKey: "s:kept",
					ScheduledTime: at(5), Status: sundial.RunScheduled}}, Next: ptr(at(99))}
			}
			return sundial.Plan{Runs: []*sundial.Run{{TaskID: task.ID, FireKey: sundial.ScheduledFireKey(at(0)),
				ScheduledTime: at(0), Status: sundial.RunScheduled}}, Next: ptr(at(60))}
		}
		runs, err := f.s.PlanDue(f.ctx, at(10), 10, "n", t0, plan)
		if err != nil || len(runs) != 1 || runs[0].TaskID != planned.ID {
			t.Fatalf("PlanDue: %d runs, %v; want the planned task's one", len(runs), err)
		}
		if got := f.getTask(planned.ID); got.NextFireTime == nil || !got.NextFireTime.Equal(at(60)) {
			t.Fatalf("planned task: NextFireTime = %v, want %v", got.NextFireTime, at(60))
		}
		got := f.getTask(kept.ID)
		if got.NextFireTime == nil || !got.NextFireTime.Equal(at(5)) || got.Version != kept.Version {
			t.Fatalf("kept task: NextFireTime %v, version %d; want %v, %d (untouched)", got.NextFireTime, got.Version, at(5), kept.Version)
		}
		all, err := f.s.RunList(f.ctx, sundial.RunListParams{TaskID: kept.ID})
		if err != nil || len(all) != 0 {
			t.Fatalf("kept task: %d runs, %v; want none", len(all), err)
		}
		// Still due: the next call plans it.
		var called []int64
		if _, err := f.s.PlanDue(f.ctx, at(10), 10, "n", t0, planEvery(0, &called)); err != nil {
			t.Fatalf("PlanDue again: %v", err)
		}
		eqIDs(t, "due again", called, []int64{kept.ID})
	})

	t.Run("IdempotentFire", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a", withNext(at(0)))
		// A plan that does not move the task on plans the same fire again,
		// and lists it twice: one run.
		same := func(task *sundial.Task) sundial.Plan {
			r := func() *sundial.Run {
				return &sundial.Run{TaskID: task.ID, FireKey: "s:fixed", ScheduledTime: at(0), Status: sundial.RunScheduled}
			}
			return sundial.Plan{Runs: []*sundial.Run{r(), r()}, Next: task.NextFireTime}
		}
		first, err := f.s.PlanDue(f.ctx, at(0), 10, "n1", t0, same)
		if err != nil || len(first) != 1 {
			t.Fatalf("first PlanDue: %d runs, %v; want 1", len(first), err)
		}
		again, err := f.s.PlanDue(f.ctx, at(0), 10, "n2", at(1), same)
		if err != nil || len(again) != 0 {
			t.Fatalf("second PlanDue: %d runs, %v; want 0", len(again), err)
		}
		all, err := f.s.RunList(f.ctx, sundial.RunListParams{TaskID: tk.ID})
		if err != nil {
			t.Fatalf("RunList: %v", err)
		}
		eqIDs(t, "runs", runIDs(all), []int64{first[0].ID})
		if all[0].NodeID != "n1" {
			t.Fatalf("re-planning changed the owner to %q", all[0].NodeID)
		}
	})

	t.Run("SkippedRecordAndKeys", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a", withNext(at(0)))
		plan := func(task *sundial.Task) sundial.Plan {
			return sundial.Plan{Runs: []*sundial.Run{
				{TaskID: task.ID, FireKey: "s:miss", Trigger: sundial.TriggerCatchUp, ScheduledTime: at(-50),
					Status: sundial.RunSkipped, SkipReason: sundial.SkipMisfire, MissedCount: 7},
				{TaskID: task.ID, FireKey: "s:now", ScheduledTime: at(0), Status: sundial.RunScheduled,
					IdempotencyKey: "caller-key"},
			}, Next: ptr(at(60))}
		}
		runs, err := f.s.PlanDue(f.ctx, at(0), 10, "n", at(1), plan)
		if err != nil || len(runs) != 2 {
			t.Fatalf("PlanDue: %d runs, %v; want 2", len(runs), err)
		}
		skip := f.get(runs[0].ID)
		if skip.Status != sundial.RunSkipped || skip.SkipReason != sundial.SkipMisfire || skip.MissedCount != 7 ||
			skip.Trigger != sundial.TriggerCatchUp || skip.IdempotencyKey != sundial.IdempotencyKeyFor(tk.ID, "s:miss") {
			t.Fatalf("misfire record = %s", fmtRun(*skip))
		}
		eqRun(t, skip, runs[0])
		if got := f.get(runs[1].ID); got.IdempotencyKey != "caller-key" || got.Status != sundial.RunScheduled {
			t.Fatalf("scheduled run = %s", fmtRun(*got))
		}
	})
	// The runs of a call go in by instant, then task, whatever the order of
	// the plans: the runs due together lie together.
	t.Run("InsertsByInstant", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		a := f.task("a", withNext(at(0)))
		b := f.task("b", withNext(at(0)))
		fires := map[int64][]int{a.ID: {20, 10, 0}, b.ID: {10, 30}}
		runs, err := f.s.PlanDue(f.ctx, at(0), 10, "", at(-1), func(tk *sundial.Task) sundial.Plan {
			var p sundial.Plan
			for _, sec := range fires[tk.ID] {
				p.Runs = append(p.Runs, &sundial.Run{TaskID: tk.ID, FireKey: sundial.ScheduledFireKey(at(sec)),
					Trigger: sundial.TriggerSchedule, ScheduledTime: at(sec), Status: sundial.RunScheduled})
			}
			p.Next = ptr(at(60))
			return p
		})
		if err != nil || len(runs) != 5 {
			t.Fatalf("PlanDue: %d runs, %v; want 5", len(runs), err)
		}
		slices.SortFunc(runs, func(x, y *sundial.Run) int { return cmp.Compare(x.ID, y.ID) })
		want := []struct {
			task int64
			sec  int
		}{{a.ID, 0}, {a.ID, 10}, {b.ID, 10}, {a.ID, 20}, {b.ID, 30}}
		for i, r := range runs {
			if r.TaskID != want[i].task || !r.ScheduledTime.Equal(at(want[i].sec)) {
				t.Errorf("run %d by ID: task %d at %s, want task %d at %s", i, r.TaskID, r.ScheduledTime, want[i].task, at(want[i].sec))
			}
		}
	})
}
