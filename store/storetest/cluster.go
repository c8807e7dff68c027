package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// The Cluster cases: two or three stores on one database, each with its
// own connections, as the nodes of a cluster have, racing for the same
// tasks and runs on goroutines released together. The races are real; what
// the cases assert holds whichever node wins each of them.

// cluster is a fixture whose database several stores share: f.s is
// nodes[0], on which the fixture's helpers build what the nodes then race
// for.
type cluster struct {
	*fixture
	nodes []sundial.Store
}

func setupCluster(t *testing.T, b Backend, n int) *cluster {
	t.Helper()
	nodes := b.Open(t, n)
	if len(nodes) != n {
		t.Fatalf("Open(%d) = %d stores", n, len(nodes))
	}
	return &cluster{fixture: &fixture{t: t, s: nodes[0], ctx: t.Context()}, nodes: nodes}
}

// node returns the store of racer i: the nodes in turn.
func (c *cluster) node(i int) sundial.Store { return c.nodes[i%len(c.nodes)] }

// race calls fn(0) to fn(n-1) on goroutines released together, and returns
// when all have returned.
func race(n int, fn func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// patience bounds a wait for something that must happen: it fails a test
// that would otherwise hang, and times nothing.
const patience = 30 * time.Second

// await returns what ch gives, failing t if nothing comes within patience.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("%s: nothing after %v", what, patience)
	}
	var zero T
	return zero
}

// planResult is what a PlanDue on another goroutine returned.
type planResult struct {
	runs []*sundial.Run
	err  error
}

// mostUrgent sorts runs as a claim takes them: DueAt, then Priority
// descending, then ID.
func mostUrgent(a, b *sundial.Run) int {
	return cmp.Or(a.DueAt.Compare(b.DueAt), cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.ID, b.ID))
}

func testClusterPlanDue(t *testing.T, b Backend) {
	t.Run("EachFireOnce", func(t *testing.T) {
		t.Parallel()
		// Eight planners on two nodes, taking 50 or 7 tasks at a time, plan
		// 200 tasks, due from t0 to t0+6s and firing every second, until
		// each is planned past t0+9s: every fire is planned exactly once,
		// by one call, in a run with its task's priority, and no task is
		// left due.
		c := setupCluster(t, b, 2)
		const tasks, last = 200, 9
		until := at(last)
		type fire struct {
			task int64
			sec  int
		}
		want := map[fire]bool{}
		prio := map[int64]int{}
		for i := range tasks {
			tk := c.task(fmt.Sprintf("t%03d", i), withNext(at(i%7)), withPriority(i%5))
			prio[tk.ID] = tk.Priority
			for s := i % 7; s <= last; s++ {
				want[fire{tk.ID, s}] = true
			}
		}
		// Each call plans a fire under a key of its own: a fire planned
		// twice would be two runs, not one run and a duplicate left alone.
		var calls atomic.Int64
		every := func(tk *sundial.Task) sundial.Plan {
			at := *tk.NextFireTime
			next := at.Add(time.Second)
			key := fmt.Sprintf("%s/%d", sundial.ScheduledFireKey(at), calls.Add(1))
			return sundial.Plan{Runs: []*sundial.Run{{FireKey: key, ScheduledTime: at}}, Next: &next}
		}
		var (
			mu       sync.Mutex
			returned = map[int64]*sundial.Run{}
		)
		race(8, func(i int) {
			node := fmt.Sprintf("node-%d", i)
			limit := []int{50, 7}[i/2%2] // on each node, planners of both sizes
			for {
				runs, err := c.node(i).PlanDue(c.ctx, until, limit, node, t0, every)
				if err != nil {
					t.Errorf("%s: PlanDue: %v", node, err)
					return
				}
				if len(runs) == 0 {
					return
				}
				mu.Lock()
				for _, r := range runs {
					if returned[r.ID] != nil {
						t.Errorf("run %d returned twice", r.ID)
					}
					returned[r.ID] = r
					if r.NodeID != node || r.Priority != prio[r.TaskID] {
						t.Errorf("%s planned %s; want its node and its task's priority %d", node, fmtRun(*r), prio[r.TaskID])
					}
				}
				mu.Unlock()
			}
		})
		if t.Failed() {
			t.FailNow()
		}
		fireOf := func(r *sundial.Run) fire { return fire{r.TaskID, int(r.ScheduledTime.Sub(t0) / time.Second)} }
		got := map[fire]int{}
		for _, r := range returned {
			got[fireOf(r)]++
		}
		for f, n := range got {
			if !want[f] {
				t.Fatalf("task %d's fire at t0+%ds was planned, and is not one of its fires", f.task, f.sec)
			}
			if n != 1 {
				t.Fatalf("task %d's fire at t0+%ds was planned %d times, want once", f.task, f.sec, n)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d fires planned, want %d", len(got), len(want))
		}
		// What the database holds: those runs and no other, each with its
		// task's priority; no task due any more.
		stored := 0
		for id := range prio {
			runs, err := c.nodes[1].RunList(c.ctx, sundial.RunListParams{TaskID: id, Limit: 1000})
			if err != nil {
				t.Fatalf("RunList: %v", err)
			}
			for _, r := range runs {
				if p := returned[r.ID]; p == nil || fireOf(r) != fireOf(p) || r.Priority != prio[id] {
					t.Fatalf("stored run %s; want one of the runs planned, with its task's priority %d", fmtRun(*r), prio[id])
				}
			}
			stored += len(runs)
			eqTime(t, fmt.Sprintf("task %d's NextFireTime", id), c.getTask(id).NextFireTime, at(last+1))
		}
		if stored != len(want) {
			t.Fatalf("%d runs in the database, want %d", stored, len(want))
		}
		for i, s := range c.nodes {
			if runs, err := s.PlanDue(c.ctx, until, tasks, "node-x", t0, every); err != nil || len(runs) != 0 {
				t.Fatalf("PlanDue on node %d after the race: %d runs, %v; want none", i, len(runs), err)
			}
		}
	})

	t.Run("SkipsLocked", func(t *testing.T) {
		t.Parallel()
		// Node a plans the 100 most urgent of 200 due tasks and holds them
		// in its transaction while node b plans: b plans the other 100, and
		// none of a's. Where rows lock, b does so while a holds its tasks
		// (a waits for b inside its transaction): b passes over them
		// without waiting. Where one writer locks the whole database, b's
		// plan waits for a's transaction to end, and takes what a left.
		c := setupCluster(t, b, 2)
		a, bn := c.nodes[0], c.nodes[1]
		const tasks, held = 200, 100
		until := at(tasks)
		var all []*sundial.Task
		for i := range tasks {
			// Due two at a time, the later made the sooner: urgency is not
			// the order of IDs.
			all = append(all, c.task(fmt.Sprintf("t%03d", i), withNext(at((tasks-1-i)/2))))
		}
		slices.SortFunc(all, func(x, y *sundial.Task) int {
			return cmp.Or(x.NextFireTime.Compare(*y.NextFireTime), cmp.Compare(x.ID, y.ID))
		})
		once := func(tk *sundial.Task) sundial.Plan {
			at := *tk.NextFireTime
			return sundial.Plan{Runs: []*sundial.Run{{FireKey: sundial.ScheduledFireKey(at), ScheduledTime: at}},
				Next: ptr(at.Add(time.Hour))} // past until: not due again
		}
		holding := make(chan struct{})
		var holdOnce sync.Once
		hold := func() { holdOnce.Do(func() { close(holding) }) }
		defer hold() // lets node b's goroutine end if node a fails first
		bDone := make(chan planResult, 1)
		go func() {
			<-holding
			runs, err := bn.PlanDue(c.ctx, until, tasks, "node-b", t0, once)
			bDone <- planResult{runs, err}
		}()
		var bRes planResult
		first := true
		aRuns, err := a.PlanDue(c.ctx, until, held, "node-a", t0, func(tk *sundial.Task) sundial.Plan {
			if first {
				first = false
				hold()
				if !b.oneWriter() {
					select {
					case bRes = <-bDone:
					case <-time.After(patience):
						t.Error("node b's PlanDue waited for node a's tasks")
					}
				}
			}
			return once(tk)
		})
		if err != nil {
			t.Fatalf("node a: PlanDue: %v", err)
		}
		if t.Failed() {
			t.FailNow()
		}
		if b.oneWriter() {
			bRes = await(t, bDone, "node b's PlanDue after node a's")
		}
		if bRes.err != nil {
			t.Fatalf("node b: PlanDue: %v", bRes.err)
		}
		if len(aRuns) != held || len(bRes.runs) != tasks-held {
			t.Fatalf("node a planned %d runs and node b %d, want %d and %d", len(aRuns), len(bRes.runs), held, tasks-held)
		}
		ids := func(runs []*sundial.Run) []int64 {
			var ids []int64
			for _, r := range runs {
				ids = append(ids, r.TaskID)
			}
			slices.Sort(ids)
			return ids
		}
		urgent := taskIDs(all[:held])
		slices.Sort(urgent)
		eqIDs(t, "tasks node a planned (the most urgent)", ids(aRuns), urgent)
		both := append(ids(aRuns), ids(bRes.runs)...)
		slices.Sort(both)
		want := taskIDs(all)
		slices.Sort(want)
		eqIDs(t, "tasks the nodes planned (each once)", both, want)
		if runs, err := a.PlanDue(c.ctx, until, tasks, "node-a", t0, once); err != nil || len(runs) != 0 {
			t.Fatalf("PlanDue after both: %d runs, %v; want none", len(runs), err)
		}
	})
}

// unowned makes, through PlanDue, perTask runs of each task that no node
// holds, due at t0 .. t0+perTask-1 s, and returns them.
func (c *cluster) unowned(tasks []*sundial.Task, perTask int) []*sundial.Run {
	c.t.Helper()
	runs, err := c.s.PlanDue(c.ctx, t0, len(tasks), "", t0, func(tk *sundial.Task) sundial.Plan {
		var p sundial.Plan
		for i := range perTask {
			at := at(i)
			p.Runs = append(p.Runs, &sundial.Run{FireKey: sundial.ScheduledFireKey(at), ScheduledTime: at})
		}
		return p
	})
	if err != nil || len(runs) != len(tasks)*perTask {
		c.t.Fatalf("PlanDue: %d runs, %v; want %d", len(runs), err, len(tasks)*perTask)
	}
	return runs
}

func testClusterRunClaimDue(t *testing.T, b Backend) {
	until := at(3600)

	t.Run("EachOnce", func(t *testing.T) {
		t.Parallel()
		// Three nodes claim 1,000 due runs that no node holds, 100 at a
		// time, all at once: each run is taken exactly once, by one node,
		// in batches most urgent first (due time, then priority, then ID).
		c := setupCluster(t, b, 3)
		var tasks []*sundial.Task
		prio := map[int64]int{}
		for i := range 10 {
			tk := c.task(fmt.Sprintf("t%02d", i), withNext(t0), withPriority(i%5))
			tasks = append(tasks, tk)
			prio[tk.ID] = tk.Priority
		}
		planned := c.unowned(tasks, 100)
		for _, r := range planned {
			if r.Priority != prio[r.TaskID] || r.NodeID != "" || r.Fence != 1 {
				t.Fatalf("planned %s; want no node, fence 1 and its task's priority %d", fmtRun(*r), prio[r.TaskID])
			}
		}
		var (
			mu      sync.Mutex
			claimed = map[int64]string{}
			calls   = map[string]int{}
		)
		race(3, func(i int) {
			node := fmt.Sprintf("node-%d", i)
			for {
				runs, ts, err := c.node(i).RunClaimDue(c.ctx, node, until, 100, sundial.ClaimStartParams{})
				if err != nil {
					t.Errorf("%s: RunClaimDue: %v", node, err)
					return
				}
				if len(runs) == 0 {
					return
				}
				if len(runs) > 100 {
					t.Errorf("%s: %d runs claimed, limit 100", node, len(runs))
				}
				if !slices.IsSortedFunc(runs, mostUrgent) {
					t.Errorf("%s: a claim is not most urgent first", node)
				}
				mu.Lock()
				calls[node]++
				for _, r := range runs {
					if prev, dup := claimed[r.ID]; dup {
						t.Errorf("run %d claimed by %s and %s", r.ID, prev, node)
					}
					claimed[r.ID] = node
					if r.NodeID != node || r.Fence != 2 || ts[r.TaskID] == nil || ts[r.TaskID].ID != r.TaskID ||
						r.Priority != ts[r.TaskID].Priority {
						t.Errorf("%s: claimed %s with task %v; want its node, fence 2, its task and its priority",
							node, fmtRun(*r), ts[r.TaskID])
					}
				}
				mu.Unlock()
			}
		})
		if t.Failed() {
			t.FailNow()
		}
		t.Logf("claims per node: %v", calls)
		if len(claimed) != len(planned) {
			t.Fatalf("%d of %d runs claimed", len(claimed), len(planned))
		}
		stored := 0
		for _, tk := range tasks {
			runs, err := c.nodes[2].RunList(c.ctx, sundial.RunListParams{TaskID: tk.ID, Limit: 1000})
			if err != nil {
				t.Fatalf("RunList: %v", err)
			}
			for _, r := range runs {
				if r.NodeID != claimed[r.ID] || r.Fence != 2 || r.Status != sundial.RunScheduled {
					t.Fatalf("run after the claims: %s; want SCHEDULED, held by %q with fence 2", fmtRun(*r), claimed[r.ID])
				}
			}
			stored += len(runs)
		}
		if stored != len(planned) {
			t.Fatalf("%d runs in the database, want %d", stored, len(planned))
		}
	})

	t.Run("SkipsLocked", func(t *testing.T) {
		t.Parallel()
		// Another transaction holds the five most urgent of 50 due runs
		// (of two tasks). Where rows lock, node b's claims pass over them
		// without waiting: a claim of 10 takes the next 10 most urgent, a
		// claim of all takes every other one, and once they are released
		// a claim takes them. Where one writer locks the whole database,
		// the other transaction (node a's plan, held open) holds all of
		// it: node b's claim waits for it to end and then takes the ten
		// most urgent.
		c := setupCluster(t, b, 2)
		a, bn := c.nodes[0], c.nodes[1]
		tasks := []*sundial.Task{c.task("low", withNext(t0)), c.task("high", withNext(t0), withPriority(1))}
		order := c.unowned(tasks, 25)
		slices.SortFunc(order, mostUrgent)
		claim := func(ctx context.Context, limit int) []int64 {
			t.Helper()
			runs, _, err := bn.RunClaimDue(ctx, "node-b", until, limit, sundial.ClaimStartParams{})
			if err != nil {
				t.Fatalf("RunClaimDue: %v", err)
			}
			return runIDs(runs)
		}

		if b.oneWriter() {
			c.task("holder", withNext(t0)) // the only task due: the others have no next fire
			holding, release := make(chan struct{}), make(chan struct{})
			aDone := make(chan planResult, 1)
			go func() {
				runs, err := a.PlanDue(c.ctx, t0, 1, "node-a", t0, func(*sundial.Task) sundial.Plan {
					close(holding)
					<-release
					return sundial.Plan{}
				})
				aDone <- planResult{runs, err}
			}()
			await(t, holding, "node a's plan")
			claiming := make(chan struct{})
			bDone := make(chan []int64, 1)
			go func() {
				close(claiming)
				runs, _, err := bn.RunClaimDue(c.ctx, "node-b", until, 10, sundial.ClaimStartParams{})
				if err != nil {
					t.Errorf("RunClaimDue while node a writes: %v", err)
				}
				bDone <- runIDs(runs)
			}()
			<-claiming
			close(release)
			if res := await(t, aDone, "node a's plan"); res.err != nil {
				t.Fatalf("node a: PlanDue: %v", res.err)
			}
			eqIDs(t, "claimed after node a's transaction", await(t, bDone, "node b's claim"), runIDs(order[:10]))
			return
		}

		held := runIDs(order[:5])
		release := b.LockRuns(t, a, held)
		var releaseOnce sync.Once
		defer releaseOnce.Do(release)
		// A claim that waited for those locks would wait until the lock
		// wait timeout, if any; this one must end well before.
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		defer cancel()
		begun := time.Now()
		got := claim(ctx, 10)
		took := time.Since(begun)
		eqIDs(t, fmt.Sprintf("claimed with %v locked", held), got, runIDs(order[5:15]))
		if took > 5*time.Second {
			t.Fatalf("the claim took %v: it waited for the locks", took)
		}
		t.Logf("the claim past %d locked runs took %v", len(held), took)
		eqIDs(t, "claimed (all) with the first locked", claim(ctx, 1000), runIDs(order[15:]))
		releaseOnce.Do(release)
		eqIDs(t, "claimed after the lock's release", claim(c.ctx, 1000), held)
	})
}

func testClusterRunAdmit(t *testing.T, b Backend) {
	// max_concurrency is the cluster's: with a limit of 2, twenty
	// admissions of one task on two nodes at once start exactly two runs.
	c := setupCluster(t, b, 2)
	tk := c.task("a", func(tk *sundial.Task) { tk.MaxConcurrency = 2 })
	var runs []*sundial.Run
	for i := range 20 {
		runs = append(runs, c.run(tk.ID, at(i), sundial.RunScheduled))
	}
	decide := func(s sundial.AdmitState) sundial.Admission {
		if s.Active < s.Task.MaxConcurrency {
			return sundial.Admission{Status: sundial.RunRunning, Attempt: 1}
		}
		return sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipConcurrency, Attempt: 1}
	}
	errs := make([]error, len(runs))
	race(len(runs), func(i int) {
		_, errs[i] = c.node(i).RunAdmit(c.ctx, runs[i].ID, runs[i].Fence, at(30), decide)
	})
	for _, err := range errs {
		if err != nil {
			t.Fatalf("RunAdmit: %v", err)
		}
	}
	for _, w := range []struct {
		status sundial.RunStatus
		n      int
	}{{sundial.RunRunning, 2}, {sundial.RunSkipped, 18}} {
		got, err := c.nodes[1].RunList(c.ctx, sundial.RunListParams{TaskID: tk.ID, Status: []sundial.RunStatus{w.status}})
		if err != nil || len(got) != w.n {
			t.Fatalf("%d %s runs (%v), want %d", len(got), w.status, err, w.n)
		}
	}
}

func testClusterTaskCreateMany(t *testing.T, b Backend) {
	for _, ownNames := range []bool{false, true} {
		name := "SameRequest"
		if ownNames {
			name += "OwnNames"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Sixteen clients of two nodes send the same request at once:
			// one task, and every client is answered with it.
			c := setupCluster(t, b, 2)
			const n = 16
			tasks := make([]*sundial.Task, n)
			existed := make([]bool, n)
			errs := make([]error, n)
			for i := range tasks {
				name := "same"
				if ownNames {
					name = fmt.Sprintf("c-%02d", i)
				}
				tasks[i] = newTask(name, oneOff(at(60)), withRequest("req-c", "hash-c"))
			}
			race(n, func(i int) {
				ex, err := c.node(i).TaskCreateMany(c.ctx, []*sundial.Task{tasks[i]}, t0)
				errs[i] = err
				if err == nil {
					existed[i] = ex[0]
				}
			})
			created := 0
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("client %d: TaskCreateMany: %v", i, errs[i])
				}
				if !existed[i] {
					created++
				}
			}
			if created != 1 {
				t.Fatalf("%d clients created the task, want 1 (existed %v)", created, existed)
			}
			live, err := c.nodes[1].TaskList(c.ctx, sundial.TaskListParams{Limit: 1000})
			if err != nil || len(live) != 1 {
				t.Fatalf("live tasks %v, %v; want one", taskIDs(live), err)
			}
			want := c.getTask(live[0].ID)
			for i, tk := range tasks {
				if tk.ID != want.ID {
					t.Fatalf("client %d answered with task %d, want %d", i, tk.ID, want.ID)
				}
				eqTask(t, tk, want)
			}
		})
	}
}

func testClusterSettingEnsure(t *testing.T, b Backend) {
	// Eight nodes starting together on two stores agree on one value.
	c := setupCluster(t, b, 2)
	const n = 8
	got := make([]string, n)
	errs := make([]error, n)
	race(n, func(i int) { got[i], errs[i] = c.node(i).SettingEnsure(c.ctx, "race", fmt.Sprintf("v%d", i)) })
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("SettingEnsure: %v", errs[i])
		}
		if got[i] != got[0] {
			t.Fatalf("concurrent SettingEnsure answered %v, want one value", got)
		}
	}
	for i, s := range c.nodes {
		if v, err := s.SettingEnsure(c.ctx, "race", "late"); err != nil || v != got[0] {
			t.Fatalf("SettingEnsure on node %d after the race = %q, %v; want %q", i, v, err, got[0])
		}
	}
}

func testClusterRunComplete(t *testing.T, b Backend) {
	// A callback and the deadline sweeps of several nodes, on two stores,
	// race to end one WAITING_CALLBACK run: one wins, the others find it
	// ended.
	c := setupCluster(t, b, 2)
	tk := c.task("a")
	w := c.waiting(tk.ID, at(10), at(400))
	const n = 8
	errs := make([]error, n)
	race(n, func(i int) {
		_, errs[i] = c.node(i).RunComplete(c.ctx, sundial.RunCompleteParams{ID: w.ID, Fence: w.Fence,
			Status: sundial.RunSuccess, Error: fmt.Sprint(i), FinishedAt: at(50 + i)})
	})
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
	as := c.attempts(w.ID)
	if len(as) != 1 || as[0].Status != sundial.RunSuccess || as[0].Error != c.get(w.ID).Error {
		t.Fatalf("attempts = %s; want one SUCCESS, with the winner's error", fmtAttempts(as))
	}
}

func testClusterRunFinish(t *testing.T, b Backend) {
	// The outcome of an ASYNC run's call (WAITING_CALLBACK) and its
	// callback's (FAILED) are written by two nodes at once, for twenty
	// runs: whichever comes first, the run ends FAILED and its delivery is
	// recorded once. The call's outcome, first, makes the attempt, which
	// the callback's then ends without another; the callback's, first,
	// ends the delivery, and the call's is refused. An outcome that waited
	// for the other one sees what that one left.
	c := setupCluster(t, b, 2)
	tk := c.task("a")
	const n = 20
	var runs []*sundial.Run
	for i := range n {
		runs = append(runs, c.run(tk.ID, at(i), sundial.RunRunning))
	}
	call, callback := make([]bool, n), make([]bool, n)
	race(2*n, func(i int) {
		r := runs[i/2]
		fin := sundial.RunFinishParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunWaitingCallback,
			StartedAt: r.ScheduledTime, FinishedAt: at(100), HTTPStatus: 202, DueAt: at(400)}
		applied := call
		if i%2 == 1 {
			fin = sundial.RunFinishParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed, FinishedAt: at(101), HTTPStatus: 500}
			applied = callback
		}
		ok, err := c.node(i).RunFinish(c.ctx, []sundial.RunFinishParams{fin})
		if err != nil {
			t.Errorf("RunFinish %s of run %d: %v", fin.Status, r.ID, err)
			return
		}
		applied[i/2] = ok[0]
	})
	if t.Failed() {
		t.FailNow()
	}
	first := map[bool]int{}
	for i, r := range runs {
		want := wantAttempt{1, "node-a", sundial.RunFailed, 500, "", r.ScheduledTime, at(101)}
		if call[i] {
			want = wantAttempt{1, "node-a", sundial.RunWaitingCallback, 202, "", r.ScheduledTime, at(100)}
		}
		first[call[i]]++
		if !callback[i] {
			t.Fatalf("run %d: the callback's outcome was refused (the call's applied: %v)", r.ID, call[i])
		}
		if got := c.get(r.ID); got.Status != sundial.RunFailed {
			t.Fatalf("run %d = %s; want FAILED", r.ID, got.Status)
		}
		eqAttempts(t, fmt.Sprintf("run %d", r.ID), c.attempts(r.ID), []wantAttempt{want})
	}
	t.Logf("the call's outcome came first for %d runs, the callback's for %d", first[true], first[false])
}

func testClusterTakeover(t *testing.T, b Backend) {
	t.Run("Reap", func(t *testing.T) {
		t.Parallel()
		// Two nodes reap a dead node at once: one declares it dead, and
		// each of its deliveries is cut off once, with one INTERRUPTED
		// attempt.
		c := setupCluster(t, b, 2)
		if err := c.s.NodeRegister(c.ctx, &sundial.Node{ID: "dead"}); err != nil {
			t.Fatalf("NodeRegister: %v", err)
		}
		tk := c.task("a")
		var runs []*sundial.Run
		for i := range 10 {
			runs = append(runs, c.run(tk.ID, at(i), sundial.RunRunning, withNode("dead")))
		}
		dead := make([][]string, 2)
		errs := make([]error, 2)
		race(2, func(i int) { dead[i], errs[i] = c.node(i).NodeReap(c.ctx, overdue, at(200)) })
		for _, err := range errs {
			if err != nil {
				t.Fatalf("NodeReap: %v", err)
			}
		}
		if all := slices.Concat(dead...); !slices.Equal(all, []string{"dead"}) {
			t.Fatalf("NodeReap on two nodes = %v; want [dead] once", dead)
		}
		for _, r := range runs {
			got := c.get(r.ID)
			if got.Status != sundial.RunInterrupted || got.Fence <= r.Fence {
				t.Fatalf("run of the dead node = %s; want INTERRUPTED with a new fence", fmtRun(*got))
			}
			if as := c.attempts(r.ID); len(as) != 1 || as[0].Status != sundial.RunInterrupted || as[0].NodeID != "dead" {
				t.Fatalf("attempts of run %d = %s; want one INTERRUPTED attempt of the dead node", r.ID, fmtAttempts(as))
			}
		}
	})

	t.Run("Redeliver", func(t *testing.T) {
		t.Parallel()
		// Two nodes redeliver interrupted runs at once, three at a time:
		// each run is taken by one of them.
		c := setupCluster(t, b, 2)
		tk := c.task("a")
		runs := map[int64]*sundial.Run{}
		for i := range 12 {
			r := c.run(tk.ID, at(i), sundial.RunInterrupted)
			runs[r.ID] = r
		}
		var (
			mu    sync.Mutex
			taken = map[int64]string{}
		)
		race(2, func(i int) {
			node := fmt.Sprintf("node-%d", i)
			for {
				got, _, err := c.node(i).RunRedeliver(c.ctx, node, 3, 3, at(50))
				if err != nil {
					t.Errorf("%s: RunRedeliver: %v", node, err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, r := range got {
					if prev, dup := taken[r.ID]; dup {
						t.Errorf("run %d redelivered by %s and %s", r.ID, prev, node)
					}
					taken[r.ID] = node
				}
				mu.Unlock()
			}
		})
		if t.Failed() {
			t.FailNow()
		}
		if len(taken) != len(runs) {
			t.Fatalf("%d of %d runs redelivered", len(taken), len(runs))
		}
		for id, r := range runs {
			got := c.get(id)
			if got.Status != sundial.RunScheduled || got.NodeID != taken[id] || got.Fence <= r.Fence || got.Deliveries != r.Deliveries {
				t.Fatalf("redelivered run = %s; want SCHEDULED on %s, a new fence, %d deliveries", fmtRun(*got), taken[id], r.Deliveries)
			}
		}
	})

	t.Run("RunClaim", func(t *testing.T) {
		t.Parallel()
		// Two nodes take over the same runs of a gone node at once, each
		// naming them in its own order: each run is taken by one of them,
		// with one new fence.
		c := setupCluster(t, b, 2)
		tk := c.task("a")
		var runs []*sundial.Run
		for i := range 20 {
			runs = append(runs, c.run(tk.ID, at(i), sundial.RunScheduled, withNode("gone")))
		}
		refs := [][]sundial.RunRef{{}, {}}
		for _, r := range runs {
			refs[0] = append(refs[0], ref(r))
		}
		refs[1] = slices.Clone(refs[0])
		slices.Reverse(refs[1])
		took := make([][]*sundial.Run, 2)
		errs := make([]error, 2)
		race(2, func(i int) { took[i], _, errs[i] = c.node(i).RunClaim(c.ctx, fmt.Sprintf("node-%d", i), refs[i]) })
		taken := map[int64]string{}
		for i, rs := range took {
			if errs[i] != nil {
				t.Fatalf("RunClaim: %v", errs[i])
			}
			for _, r := range rs {
				if prev, dup := taken[r.ID]; dup {
					t.Fatalf("run %d taken over by %s and node-%d", r.ID, prev, i)
				}
				taken[r.ID] = r.NodeID
			}
		}
		t.Logf("node-0 took %d runs, node-1 %d", len(took[0]), len(took[1]))
		for _, r := range runs {
			got := c.get(r.ID)
			if taken[r.ID] == "" || got.NodeID != taken[r.ID] || got.Fence != r.Fence+1 || got.Status != sundial.RunScheduled {
				t.Fatalf("run after the takeovers = %s; want SCHEDULED, held by %q with fence %d", fmtRun(*got), taken[r.ID], r.Fence+1)
			}
		}
	})
}

func testClusterFence(t *testing.T, b Backend) {
	t.Run("LateWrite", func(t *testing.T) {
		t.Parallel()
		// Node b takes over node a's run: what node a then writes with the
		// fence it had is refused, and node b's writes apply.
		c := setupCluster(t, b, 2)
		a, bn := c.nodes[0], c.nodes[1]
		tk := c.task("a")
		r := c.run(tk.ID, at(10), sundial.RunScheduled)
		took, _, err := bn.RunClaim(c.ctx, "node-b", []sundial.RunRef{ref(r)})
		if err != nil || len(took) != 1 || took[0].Fence == r.Fence {
			t.Fatalf("RunClaim by node b = %v, %v; want the run with a new fence", runIDs(took), err)
		}
		mine := took[0]
		before := c.get(r.ID)
		if ok, err := a.RunStart(c.ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: at(10)}}); err != nil || ok[0] {
			t.Fatalf("node a's RunStart with its old fence = %v, %v; want refused", ok, err)
		}
		_, err = a.RunAdmit(c.ctx, r.ID, r.Fence, at(10), func(sundial.AdmitState) sundial.Admission {
			return sundial.Admission{Status: sundial.RunRunning, Attempt: 1}
		})
		wantErr(t, err, sundial.ENotFound, "")
		eqRun(t, c.get(r.ID), before)
		if ok, err := bn.RunStart(c.ctx, []sundial.RunStartParams{{ID: r.ID, Fence: mine.Fence, Attempt: 1, StartedAt: at(10)}}); err != nil || !ok[0] {
			t.Fatalf("node b's RunStart = %v, %v; want applied", ok, err)
		}
		if ok, err := a.RunFinish(c.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess,
			FinishedAt: at(11)}}); err != nil || ok[0] {
			t.Fatalf("node a's RunFinish with its old fence = %v, %v; want refused", ok, err)
		}
		if got := c.get(r.ID); got.Status != sundial.RunRunning || got.NodeID != "node-b" {
			t.Fatalf("run after node a's late finish = %s; want RUNNING on node-b", fmtRun(*got))
		}
		if ok, err := bn.RunFinish(c.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: mine.Fence, Status: sundial.RunSuccess,
			FinishedAt: at(12)}}); err != nil || !ok[0] {
			t.Fatalf("node b's RunFinish = %v, %v; want applied", ok, err)
		}
		eqAttempts(t, "attempts", c.attempts(r.ID), []wantAttempt{{1, "node-b", sundial.RunSuccess, 0, "", at(10), at(12)}})
	})

	t.Run("StartOrTakeover", func(t *testing.T) {
		t.Parallel()
		// Node a starts twenty runs it holds while node b takes them over,
		// each at once: for each run exactly one of the two applies.
		c := setupCluster(t, b, 2)
		a, bn := c.nodes[0], c.nodes[1]
		tk := c.task("a")
		var runs []*sundial.Run
		for i := range 20 {
			runs = append(runs, c.run(tk.ID, at(i), sundial.RunScheduled))
		}
		started, taken := make([]bool, len(runs)), make([]bool, len(runs))
		race(2*len(runs), func(i int) {
			r := runs[i/2]
			if i%2 == 0 {
				ok, err := a.RunStart(c.ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: at(i / 2)}})
				if err != nil {
					t.Errorf("RunStart: %v", err)
					return
				}
				started[i/2] = ok[0]
				return
			}
			took, _, err := bn.RunClaim(c.ctx, "node-b", []sundial.RunRef{ref(r)})
			if err != nil {
				t.Errorf("RunClaim: %v", err)
				return
			}
			taken[i/2] = len(took) == 1
		})
		if t.Failed() {
			t.FailNow()
		}
		n := 0
		for i, r := range runs {
			got := c.get(r.ID)
			switch {
			case started[i] == taken[i]:
				t.Fatalf("run %d: started %v, taken over %v; want exactly one", r.ID, started[i], taken[i])
			case started[i] && (got.Status != sundial.RunRunning || got.NodeID != "node-a" || got.Fence != r.Fence):
				t.Fatalf("started run = %s; want RUNNING on node-a with fence %d", fmtRun(*got), r.Fence)
			case taken[i] && (got.Status != sundial.RunScheduled || got.NodeID != "node-b" || got.Fence != r.Fence+1):
				t.Fatalf("run taken over = %s; want SCHEDULED on node-b with fence %d", fmtRun(*got), r.Fence+1)
			}
			if started[i] {
				n++
			}
		}
		t.Logf("node a started %d runs, node b took %d", n, len(runs)-n)
	})
}

func testClusterLockOrder(t *testing.T, b Backend) {
	// Two nodes write the same runs of three tasks in batches that name
	// them in opposite orders, at once (RunStart, then RunFinish): each
	// write of a run applies on one node only, and neither batch fails. A
	// batch that locked its runs in its own order would deadlock with the
	// other; a deadlock the adapter could not resolve would fail it here.
	c := setupCluster(t, b, 2)
	tasks := []*sundial.Task{c.task("a"), c.task("b"), c.task("c")}
	var runs []*sundial.Run
	for i := range 30 {
		runs = append(runs, c.run(tasks[i%3].ID, at(i), sundial.RunScheduled))
	}
	// in returns the items in node i's order: as made, or reversed.
	in := func(i int, items []int) []int {
		out := slices.Clone(items)
		if i == 1 {
			slices.Reverse(out)
		}
		return out
	}
	idx := make([]int, len(runs))
	for i := range idx {
		idx[i] = i
	}
	applied := func(what string, oks [][]bool) {
		t.Helper()
		for k := range runs {
			n := 0
			for i, ok := range oks {
				if ok[slices.Index(in(i, idx), k)] {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%s of run %d applied %d times, want once", what, runs[k].ID, n)
			}
		}
	}

	oks, errs := make([][]bool, 2), make([]error, 2)
	race(2, func(i int) {
		var starts []sundial.RunStartParams
		for _, k := range in(i, idx) {
			starts = append(starts, sundial.RunStartParams{ID: runs[k].ID, Fence: runs[k].Fence, Attempt: 1, StartedAt: at(k)})
		}
		oks[i], errs[i] = c.node(i).RunStart(c.ctx, starts)
	})
	for _, err := range errs {
		if err != nil {
			t.Fatalf("RunStart: %v", err)
		}
	}
	applied("RunStart", oks)

	race(2, func(i int) {
		var fins []sundial.RunFinishParams
		for _, k := range in(i, idx) {
			fins = append(fins, sundial.RunFinishParams{ID: runs[k].ID, Fence: runs[k].Fence,
				Status: []sundial.RunStatus{sundial.RunSuccess, sundial.RunFailed}[i], FinishedAt: at(100 + i)})
		}
		oks[i], errs[i] = c.node(i).RunFinish(c.ctx, fins)
	})
	for _, err := range errs {
		if err != nil {
			t.Fatalf("RunFinish: %v", err)
		}
	}
	applied("RunFinish", oks)
	for k, r := range runs {
		got := c.get(r.ID)
		want := sundial.RunSuccess
		if oks[1][slices.Index(in(1, idx), k)] {
			want = sundial.RunFailed
		}
		if got.Status != want || len(c.attempts(r.ID)) != 1 {
			t.Fatalf("run %d = %s with %d attempts; want %s, the outcome applied, and one attempt", r.ID, got.Status,
				len(c.attempts(r.ID)), want)
		}
	}
}
