package scheduler_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
	"github.com/sundialhq/sundial/scheduler"
	"github.com/sundialhq/sundial/store/sqlite"
	"github.com/sundialhq/sundial/store/sqlite/sqlitetest"
)

// target is an in-memory HTTP target: it records every delivery and answers
// after hold (fake time) with status.
type target struct {
	mu     sync.Mutex
	calls  []call
	hold   time.Duration
	status string // executor outcome status; "" means SUCCESS
	// failTask, when set, is a task whose deliveries fail (HTTP 500).
	failTask int64
}

type call struct {
	runID     int64
	scheduled time.Time
	at        time.Time
	attempt   int
	trigger   string
	key       string
	node      string
	taskID    int64
	extra     map[string]string
}

func (tg *target) Deliver(ctx context.Context, req executor.Request) executor.Outcome {
	start := time.Now()
	tg.mu.Lock()
	tg.calls = append(tg.calls, call{req.Vars.RunID, req.Vars.ScheduledTime, start, req.Vars.Attempt,
		req.Vars.Trigger, req.Vars.IdempotencyKey, req.Vars.NodeID, req.Vars.TaskID, req.Vars.Extra})
	hold, status := tg.hold, tg.status
	if tg.failTask != 0 && req.Vars.TaskID == tg.failTask {
		status = "FAILED"
	}
	tg.mu.Unlock()
	out := executor.Outcome{Started: start, HTTPStatus: 200, Status: "SUCCESS"}
	if status != "" {
		out.Status, out.HTTPStatus, out.Error = status, 500, "HTTP 500 Internal Server Error"
	}
	if hold > 0 {
		timer := time.NewTimer(min(hold, req.Timeout))
		defer timer.Stop()
		select {
		case <-ctx.Done():
			out.Status, out.HTTPStatus, out.Error = "CANCELED", 0, "canceled"
		case <-timer.C:
			if req.Timeout < hold {
				out.Status, out.HTTPStatus, out.Error = "TIMEOUT", 0, "timed out"
			}
		}
	}
	out.Finished = time.Now()
	return out
}

func (tg *target) snapshot() []call {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.calls)
}

var taskSeq atomic.Int64

// bundle is what a scheduler test needs.
type bundle struct {
	store  *sqlite.Store
	target *target
	sched  *scheduler.Scheduler
	logs   *syncLog // the scheduler's log, JSON lines
	cancel context.CancelFunc
	done   chan error
}

// setup opens a fresh database and a scheduler on it. Call it inside a
// synctest bubble; start runs the scheduler.
func setup(t *testing.T, cfg scheduler.Config) *bundle {
	t.Helper()
	return setupWith(t, cfg, nil)
}

// setupWith is setup with the scheduler's store wrapped by wrap, if not nil.
func setupWith(t *testing.T, cfg scheduler.Config, wrap func(sundial.Store) sundial.Store) *bundle {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlitetest.NewDB(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bundle{store: st, target: &target{}, logs: &syncLog{}}
	if cfg.Node.ID == "" {
		cfg.Node = sundial.Node{ID: "node-a", Host: "test", PID: 1}
	}
	var store sundial.Store = st
	if wrap != nil {
		store = wrap(st)
	}
	log := slog.New(slog.NewJSONHandler(b.logs, nil))
	b.sched, err = scheduler.New(cfg, store, b.target, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *bundle) start() {
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan error, 1)
	go func() { b.done <- b.sched.Run(ctx) }()
}

// stop stops the scheduler gracefully and waits for it.
func (b *bundle) stop(t *testing.T) {
	t.Helper()
	b.cancel()
	if err := <-b.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// addTask creates an enabled task firing on expr, changed by mod.
func (b *bundle) addTask(t *testing.T, expr string, mod func(*sundial.Task)) *sundial.Task {
	t.Helper()
	tk := &sundial.Task{Name: fmt.Sprintf("task-%d", taskSeq.Add(1)), CronExpr: expr,
		HTTPMethod: "POST", TargetURL: "http://127.0.0.1:9/hook"}
	if mod != nil {
		mod(tk)
	}
	if err := tk.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tk.NextFireTime = tk.NextAfter(now)
	if _, err := b.store.TaskCreateMany(context.Background(), []*sundial.Task{tk}, now); err != nil {
		t.Fatal(err)
	}
	b.sched.Poke()
	return tk
}

// runs returns a task's runs in the order they were written (by ID).
func (b *bundle) runs(t *testing.T, taskID int64) []*sundial.Run {
	t.Helper()
	rs, err := b.store.RunList(context.Background(), sundial.RunListParams{TaskID: taskID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rs, func(x, y *sundial.Run) int { return cmp.Compare(x.ID, y.ID) })
	return rs
}

// runsBefore returns a task's runs scheduled before end, in the order they
// were written.
func (b *bundle) runsBefore(t *testing.T, taskID int64, end time.Time) []*sundial.Run {
	t.Helper()
	var out []*sundial.Run
	for _, r := range b.runs(t, taskID) {
		if r.ScheduledTime.Before(end) {
			out = append(out, r)
		}
	}
	return out
}

type runSummary struct {
	Status  sundial.RunStatus
	Reason  sundial.SkipReason
	Attempt int
}

func summarize(rs []*sundial.Run) []runSummary {
	var out []runSummary
	for _, r := range rs {
		out = append(out, runSummary{r.Status, r.SkipReason, r.Attempt})
	}
	return out
}

// epoch is a whole second: synctest's clock starts at 2000-01-01T00:00:00Z.
func waitUntil(t time.Time) { time.Sleep(time.Until(t)) }

// restartFor starts a new scheduler of node-restarted on store with cfg
// (reg, if not nil, its metrics), runs it for d and stops it gracefully.
func restartFor(t *testing.T, cfg scheduler.Config, store sundial.Store, d scheduler.Deliverer,
	reg prometheus.Registerer, run time.Duration) {
	t.Helper()
	cfg.Node = sundial.Node{ID: "node-restarted"}
	s, err := scheduler.New(cfg, store, d, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	time.Sleep(run)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFiresOnTheSecond(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.start()
		start := time.Now()
		tk := b.addTask(t, "* * * * * *", nil)
		waitUntil(start.Add(5*time.Second + 500*time.Millisecond))
		b.stop(t)

		calls := b.target.snapshot()
		if len(calls) != 5 {
			t.Fatalf("got %d deliveries, want 5: %+v", len(calls), calls)
		}
		keys := map[string]bool{}
		for i, c := range calls {
			want := start.Add(time.Duration(i+1) * time.Second)
			if !c.scheduled.Equal(want) || !c.at.Equal(want) {
				t.Errorf("delivery %d: scheduled %s, delivered %s; want both %s", i, c.scheduled, c.at, want)
			}
			if c.attempt != 1 || c.trigger != "SCHEDULE" || keys[c.key] {
				t.Errorf("delivery %d: attempt %d trigger %s key %q (repeated: %v)", i, c.attempt, c.trigger, c.key, keys[c.key])
			}
			keys[c.key] = true
		}
		got := b.runs(t, tk.ID)
		for _, r := range got[:5] {
			if r.Status != sundial.RunSuccess || r.HTTPStatus != 200 || r.TraceID == "" || r.StartedAt == nil || r.FinishedAt == nil {
				t.Errorf("run %d = %+v, want SUCCESS with status 200, trace id and times", r.ID, r)
			}
		}
	})
}

func TestPolicies(t *testing.T) {
	t.Parallel()
	sec := time.Second
	tests := []struct {
		name   string
		expr   string // default: every second
		hold   time.Duration
		status string
		mod    func(*sundial.Task)
		want   []runSummary
	}{
		{
			name: "overlap SKIP records skips while a run is in flight",
			hold: 2500 * time.Millisecond,
			mod:  func(tk *sundial.Task) { tk.OverlapAction = sundial.OverlapSkip },
			want: []runSummary{
				{sundial.RunSuccess, "", 1}, {sundial.RunSkipped, sundial.SkipOverlap, 1}, {sundial.RunSkipped, sundial.SkipOverlap, 1},
				{sundial.RunSuccess, "", 1}, {sundial.RunSkipped, sundial.SkipOverlap, 1}, {sundial.RunSkipped, sundial.SkipOverlap, 1},
			},
		},
		{
			name: "concurrency SKIP with max_concurrency 1",
			hold: 1500 * time.Millisecond,
			mod: func(tk *sundial.Task) {
				tk.MaxConcurrency, tk.ConcurrencyPolicy = 1, sundial.ConcurrencySkip
			},
			want: []runSummary{
				{sundial.RunSuccess, "", 1}, {sundial.RunSkipped, sundial.SkipConcurrency, 1},
				{sundial.RunSuccess, "", 1}, {sundial.RunSkipped, sundial.SkipConcurrency, 1},
				{sundial.RunSuccess, "", 1}, {sundial.RunSkipped, sundial.SkipConcurrency, 1},
			},
		},
		{
			name:   "failure RETRY raises the attempt on every failed fire",
			status: "FAILED",
			mod:    func(tk *sundial.Task) { tk.FailureAction = sundial.FailureRetry },
			want: []runSummary{
				{sundial.RunFailed, "", 1}, {sundial.RunFailed, "", 2}, {sundial.RunFailed, "", 3},
				{sundial.RunFailed, "", 4}, {sundial.RunFailed, "", 5}, {sundial.RunFailed, "", 6},
			},
		},
		{
			name:   "failure SKIP skips once after each failure, then previous + 2",
			status: "FAILED",
			mod:    func(tk *sundial.Task) { tk.FailureAction = sundial.FailureSkip },
			want: []runSummary{
				{sundial.RunFailed, "", 1}, {sundial.RunSkipped, sundial.SkipFailure, 2}, {sundial.RunFailed, "", 3},
				{sundial.RunSkipped, sundial.SkipFailure, 4}, {sundial.RunFailed, "", 5}, {sundial.RunSkipped, sundial.SkipFailure, 6},
			},
		},
		{
			name:   "failure RUN_NEW keeps attempt 1",
			status: "FAILED",
			want: []runSummary{
				{sundial.RunFailed, "", 1}, {sundial.RunFailed, "", 1}, {sundial.RunFailed, "", 1},
				{sundial.RunFailed, "", 1}, {sundial.RunFailed, "", 1}, {sundial.RunFailed, "", 1},
			},
		},
		{
			name: "a timeout is TIMEOUT and counts as a failure",
			expr: "*/2 * * * * *",
			hold: 3 * sec,
			mod: func(tk *sundial.Task) {
				tk.TimeoutSeconds, tk.FailureAction = 1, sundial.FailureRetry
			},
			want: []runSummary{{sundial.RunTimeout, "", 1}, {sundial.RunTimeout, "", 2}, {sundial.RunTimeout, "", 3}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setup(t, scheduler.Config{})
				b.target.hold, b.target.status = tc.hold, tc.status
				b.start()
				start := time.Now()
				expr := tc.expr
				if expr == "" {
					expr = "* * * * * *"
				}
				tk := b.addTask(t, expr, tc.mod)
				waitUntil(start.Add(6*sec + 100*time.Millisecond))
				// Stop firing, let the last calls finish.
				if err := b.store.TaskDelete(context.Background(), tk.ID, time.Now()); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * sec)
				b.stop(t)
				got := summarize(b.runs(t, tk.ID))
				if len(got) < len(tc.want) || !slices.Equal(got[:len(tc.want)], tc.want) {
					t.Errorf("runs:\n got  %v\n want %v", got, tc.want)
				}
			})
		})
	}
}

func TestQueue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.target.hold = 3500 * time.Millisecond
		b.start()
		start := time.Now()
		tk := b.addTask(t, "1-4 * * * * *", func(tk *sundial.Task) {
			tk.MaxConcurrency, tk.ConcurrencyPolicy, tk.MaxQueue = 1, sundial.ConcurrencyQueue, 2
		})
		waitUntil(start.Add(15 * time.Second))
		b.stop(t)

		// Fires at 1, 2, 3, 4 s: the first runs from 1 to 4.5; 2 and 3 queue;
		// 4 finds the queue full. Queued runs start first in first out as the
		// slot frees: 2 at 4.5 s, 3 at 8 s. (The next minute's fires may be
		// planned already: the task fires every second in its seconds.)
		got := summarize(b.runsBefore(t, tk.ID, start.Add(time.Minute)))
		want := []runSummary{
			{sundial.RunSuccess, "", 1}, {sundial.RunSuccess, "", 1}, {sundial.RunSuccess, "", 1},
			{sundial.RunSkipped, sundial.SkipQueueFull, 1},
		}
		if !slices.Equal(got, want) {
			t.Fatalf("runs:\n got  %v\n want %v", got, want)
		}
		calls := b.target.snapshot()
		wantAt := []time.Duration{1000, 4500, 8000}
		if len(calls) != len(wantAt) {
			t.Fatalf("got %d deliveries, want %d", len(calls), len(wantAt))
		}
		for i, c := range calls {
			if at := c.at.Sub(start); at != wantAt[i]*time.Millisecond {
				t.Errorf("delivery %d at +%s, want +%dms", i, at, wantAt[i])
			}
			if want := start.Add(time.Duration(i+1) * time.Second); !c.scheduled.Equal(want) {
				t.Errorf("delivery %d is the fire of %s, want %s (first in, first out)", i, c.scheduled, want)
			}
		}
	})
}

func TestCancelPrev(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{DrainTimeout: time.Second})
		b.target.hold = time.Hour
		b.start()
		start := time.Now()
		tk := b.addTask(t, "*/2 * * * * *", func(tk *sundial.Task) {
			tk.OverlapAction = sundial.OverlapCancelPrev
			tk.MaxConcurrency = 1
			tk.ConcurrencyPolicy = sundial.ConcurrencySkip
		})
		waitUntil(start.Add(6*time.Second + 100*time.Millisecond))
		if err := b.store.TaskDelete(context.Background(), tk.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		b.stop(t) // the third call is cut off by the drain timeout
		got := summarize(b.runs(t, tk.ID))
		want := []runSummary{
			{sundial.RunCanceled, "", 1}, {sundial.RunCanceled, "", 1}, {sundial.RunInterrupted, "", 1},
		}
		if !slices.Equal(got, want) {
			t.Fatalf("runs:\n got  %v\n want %v", got, want)
		}
	})
}

func TestManualTriggerAndCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.target.hold = time.Hour
		b.start()
		tk := b.addTask(t, "0 0 0 1 1 *", func(tk *sundial.Task) { tk.Status = sundial.TaskDisabled })
		synctest.Wait() // the node has registered and fires
		r, err := b.sched.Trigger(context.Background(), tk.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if calls := b.target.snapshot(); len(calls) != 1 || calls[0].trigger != "MANUAL" || calls[0].runID != r.ID {
			t.Fatalf("deliveries after trigger = %+v, want one MANUAL delivery of run %d", calls, r.ID)
		}
		c, err := b.sched.Cancel(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !c.CancelRequested {
			t.Errorf("cancel of a running run: %+v, want cancel requested", c)
		}
		synctest.Wait()
		time.Sleep(100 * time.Millisecond) // let the batched writer record it
		got, err := b.store.RunGet(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != sundial.RunCanceled {
			t.Errorf("run after cancel = %s, want CANCELED", got.Status)
		}
		if _, err := b.sched.Cancel(context.Background(), r.ID); sundial.ErrorCode(err) != sundial.EConflict {
			t.Errorf("second cancel: %v, want conflict", err)
		}
		b.stop(t)
	})
}

// TestRerun: a rerun is a manual run of the run's task, with the run's
// params, delivered as a trigger's is, that records the run it reruns.
func TestRerun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.start()
		tk := b.addTask(t, "0 0 0 1 1 *", func(tk *sundial.Task) { tk.Status = sundial.TaskDisabled })
		synctest.Wait()
		first, err := b.sched.Trigger(context.Background(), tk.ID, json.RawMessage(`{"day":"2030-01-02"}`))
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		again, err := b.sched.Rerun(context.Background(), first)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		stored, err := b.store.RunGet(context.Background(), again.ID)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID == first.ID || stored.RerunOf != first.ID || stored.Trigger != sundial.TriggerManual ||
			string(stored.Params) != `{"day":"2030-01-02"}` {
			t.Fatalf("rerun of run %d = %+v", first.ID, stored)
		}
		if calls := b.target.snapshot(); len(calls) != 2 || calls[1].runID != again.ID || calls[1].trigger != "MANUAL" {
			t.Fatalf("deliveries = %+v, want the trigger's and the rerun's", calls)
		}
		b.stop(t)
	})
}

func TestGracefulStop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{DrainTimeout: 2 * time.Second})
		b.target.hold = time.Hour
		b.start()
		start := time.Now()
		tk := b.addTask(t, "*/10 * * * * *", func(tk *sundial.Task) { tk.OverlapAction = sundial.OverlapParallel })
		// By 11.5 s a planner pass (every second, mid-second ±100 ms) has
		// planned the fire at 20 s, and the fires after it up to the task's
		// refill boundary (two of its fires come within a lookahead).
		waitUntil(start.Add(11*time.Second + 500*time.Millisecond))
		stopAt := time.Now()
		b.stop(t)
		if took := time.Since(stopAt); took < 2*time.Second || took > 3*time.Second {
			t.Errorf("stop took %s, want the 2s drain timeout", took)
		}
		// The call cut off by the drain timeout is INTERRUPTED with the
		// reason; the fires planned ahead (20 s, 30 s...) are held by no
		// node, for any node to claim when they come due.
		rs := b.runs(t, tk.ID)
		if len(rs) < 2 || rs[0].Status != sundial.RunInterrupted || rs[0].Error == "" {
			t.Fatalf("runs after stop = %v, want an INTERRUPTED run with the reason, then the planned fires", summarize(rs))
		}
		for i, r := range rs[1:] {
			if r.Status != sundial.RunScheduled || r.NodeID != "" || !r.ScheduledTime.Equal(start.Add(time.Duration(20+10*i)*time.Second)) {
				t.Errorf("planned fire %d after stop = %+v, want SCHEDULED at +%ds, held by no node", i, r, 20+10*i)
			}
		}
		nodes, err := b.store.NodeList(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 1 || nodes[0].State != sundial.NodeLeft {
			t.Errorf("nodes after stop = %+v, want this node LEFT", nodes)
		}
	})
}

func TestCatchUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode sundial.CatchUpMode
		want func(rs []*sundial.Run) error
	}{
		{sundial.CatchUpNone, func(rs []*sundial.Run) error {
			// One MISFIRE record counting the 300 missed fires, then the
			// fires after the restart.
			if rs[0].Status != sundial.RunSkipped || rs[0].SkipReason != sundial.SkipMisfire || rs[0].MissedCount != 300 {
				return fmt.Errorf("first run %+v, want a MISFIRE record of 300", summarize(rs[:1]))
			}
			return nil
		}},
		{sundial.CatchUpCompact, func(rs []*sundial.Run) error {
			// (Planned with the fires after it, it goes in by its
			// instant, the restart's second.)
			var catchUps []*sundial.Run
			for _, r := range rs {
				if r.Trigger == sundial.TriggerCatchUp {
					catchUps = append(catchUps, r)
				}
			}
			if len(catchUps) != 1 || catchUps[0].Status != sundial.RunSuccess || catchUps[0].MissedCount != 300 {
				return fmt.Errorf("catch-up runs %v, want one CATCH_UP run standing for 300", summarize(catchUps))
			}
			return nil
		}},
		{sundial.CatchUpFull, func(rs []*sundial.Run) error {
			// catch_up_limit 50: the 50 oldest run, 250 are counted.
			n := 0
			for _, r := range rs {
				if r.Trigger == sundial.TriggerCatchUp && r.Status == sundial.RunSuccess {
					n++
				}
			}
			if n != 50 {
				return fmt.Errorf("%d catch-up runs, want 50", n)
			}
			for _, r := range rs {
				if r.SkipReason == sundial.SkipMisfire && r.MissedCount == 250 {
					return nil
				}
			}
			return fmt.Errorf("no MISFIRE record of the 250 beyond the limit")
		}},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setup(t, scheduler.Config{MisfireThreshold: 5 * time.Second, Workers: 64})
				start := time.Now()
				tk := b.addTask(t, "* * * * * *", func(tk *sundial.Task) {
					tk.CatchUpMode, tk.CatchUpLimit, tk.OverlapAction = tc.mode, 50, sundial.OverlapParallel
				})
				// Down for the first 305 s: fires 1..300 are older than the
				// 5 s misfire threshold when the scheduler starts.
				waitUntil(start.Add(305*time.Second + 500*time.Millisecond))
				b.start()
				time.Sleep(3 * time.Second)
				b.stop(t)
				rs := b.runs(t, tk.ID)
				if err := tc.want(rs); err != nil {
					t.Error(err)
				}
				// Fires 301..305 were late by less than the threshold: they
				// run, as scheduled fires.
				late := 0
				for _, r := range rs {
					if r.Trigger == sundial.TriggerSchedule && r.Status == sundial.RunSuccess &&
						r.ScheduledTime.After(start.Add(300*time.Second)) {
						late++
					}
				}
				if late < 5 {
					t.Errorf("%d scheduled fires after the missed ones ran, want at least 5", late)
				}
			})
		})
	}
}

// TestStartRateLimit: starts to a rate-limited host are spaced by its
// interval, first in first out, and none is dropped.
func TestStartRateLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{StartIntervals: map[string]time.Duration{"127.0.0.1:9": 5 * time.Second}})
		b.start()
		start := time.Now()
		var tasks []*sundial.Task
		for range 3 {
			tasks = append(tasks, b.addTask(t, "1 0 0 * * *", nil)) // all fire at 00:00:01
		}
		other := b.addTask(t, "1 0 0 * * *", func(tk *sundial.Task) { tk.TargetURL = "http://127.0.0.2:9/hook" })
		waitUntil(start.Add(20 * time.Second))
		b.stop(t)
		var limited, free []time.Duration
		for _, c := range b.target.snapshot() {
			if c.key == sundial.IdempotencyKeyFor(other.ID, sundial.ScheduledFireKey(c.scheduled)) {
				free = append(free, c.at.Sub(start))
			} else {
				limited = append(limited, c.at.Sub(start))
			}
		}
		if want := []time.Duration{time.Second, 6 * time.Second, 11 * time.Second}; !slices.Equal(limited, want) {
			t.Errorf("starts to the limited host at %v, want %v", limited, want)
		}
		if want := []time.Duration{time.Second}; !slices.Equal(free, want) {
			t.Errorf("starts to the other host at %v, want %v (not limited)", free, want)
		}
		for _, tk := range tasks {
			if rs := b.runs(t, tk.ID); len(rs) != 1 || rs[0].Status != sundial.RunSuccess {
				t.Errorf("task %d runs %v, want one SUCCESS", tk.ID, summarize(rs))
			}
		}
	})
}

// TestQueueFirstInFirstOut: queued runs are delivered in order and a fire
// due just before a slot frees, with the queue full, is QUEUE_FULL. (A fire
// due at the very instant a slot frees may be admitted before or after the
// queue's head starts: both are right, so the test keeps them apart. The
// rule that a new fire queues behind waiting runs even with a slot free is
// pinned by TestAdmit.)
func TestQueueFirstInFirstOut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.target.hold = 3*time.Second + 100*time.Millisecond // the fire of 1 s runs until 4.1 s; the next is due at 4 s
		b.start()
		start := time.Now()
		tk := b.addTask(t, "1-4 * * * * *", func(tk *sundial.Task) {
			tk.MaxConcurrency, tk.ConcurrencyPolicy, tk.MaxQueue = 1, sundial.ConcurrencyQueue, 2
		})
		waitUntil(start.Add(15 * time.Second))
		b.stop(t)
		got := summarize(b.runsBefore(t, tk.ID, start.Add(time.Minute)))
		want := []runSummary{
			{sundial.RunSuccess, "", 1}, {sundial.RunSuccess, "", 1}, {sundial.RunSuccess, "", 1},
			{sundial.RunSkipped, sundial.SkipQueueFull, 1},
		}
		if !slices.Equal(got, want) {
			t.Fatalf("runs:\n got  %v\n want %v", got, want)
		}
		var order []time.Duration
		for _, c := range b.target.snapshot() {
			order = append(order, c.scheduled.Sub(start))
		}
		if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !slices.Equal(order, want) {
			t.Errorf("delivered the fires of %v, want %v in that order", order, want)
		}
	})
}

// TestAdmissionBurstFillsLane: a burst of runs of a QUEUE task larger than
// an admission lane's room is admitted and delivered, first in first out,
// while the lane starts queued runs (which takes the dispatcher's lock)
// and the dispatcher waits for room in the lane.
func TestAdmissionBurstFillsLane(t *testing.T) {
	t.Parallel()
	// A deadlock blocks on locks, which a fake clock does not see as
	// durable: bound the test in real time instead of hanging.
	watchdog := time.AfterFunc(2*time.Minute, func() { panic("TestAdmissionBurstFillsLane: the burst deadlocked") })
	defer watchdog.Stop()
	synctest.Test(t, func(t *testing.T) {
		const burst = 60
		b := setup(t, scheduler.WithAdmitLaneCap(scheduler.Config{MisfireThreshold: 5 * time.Second}, 4))
		start := time.Now()
		b.addTask(t, "* * * * * *", func(tk *sundial.Task) {
			tk.MaxConcurrency, tk.ConcurrencyPolicy, tk.MaxQueue = 1, sundial.ConcurrencyQueue, 1000
			tk.CatchUpMode, tk.CatchUpLimit = sundial.CatchUpFull, burst
		})
		// Down for 100 s: the 60 oldest missed fires are planned at once,
		// all due, and reach the task's admission lane together.
		waitUntil(start.Add(100*time.Second + 500*time.Millisecond))
		b.start()
		time.Sleep(30 * time.Second)
		b.stop(t)

		var order []time.Time
		for _, c := range b.target.snapshot() {
			if c.trigger == string(sundial.TriggerCatchUp) {
				order = append(order, c.scheduled)
			}
		}
		if len(order) != burst {
			t.Fatalf("%d catch-up fires delivered, want %d", len(order), burst)
		}
		for i, at := range order {
			if want := start.Add(time.Duration(i+1) * time.Second); !at.Equal(want) {
				t.Fatalf("delivery %d is the fire of %s, want %s: first in, first out", i, at, want)
			}
		}
	})
}

// TestOutcomeLines: every outcome line names the task as well as its id,
// whichever path recorded the outcome (a delivery, an admission's skip).
func TestOutcomeLines(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.target.hold = 1500 * time.Millisecond
		logs := &syncLog{}
		start := time.Now()
		tk := b.addTask(t, "1,2 * * * * *", func(tk *sundial.Task) { tk.OverlapAction = sundial.OverlapSkip })
		stop := startNode(t, b, b.store, "node-log", slog.New(slog.NewJSONHandler(logs, nil)))
		waitUntil(start.Add(5 * time.Second))
		stop()

		seen := map[string]bool{}
		for line := range strings.Lines(logs.String()) {
			var rec struct {
				Msg      string `json:"msg"`
				TaskID   int64  `json:"task_id"`
				TaskName string `json:"task_name"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if rec.Msg != "run finished" && rec.Msg != "run skipped" {
				continue
			}
			if rec.TaskID != tk.ID || rec.TaskName != tk.Name {
				t.Errorf("%q line names task %d %q, want %d %q", rec.Msg, rec.TaskID, rec.TaskName, tk.ID, tk.Name)
			}
			seen[rec.Msg] = true
		}
		if !seen["run finished"] || !seen["run skipped"] {
			t.Errorf("outcome lines seen: %v, want a finished and a skipped run:\n%s", seen, logs)
		}
	})
}

// TestLogLines: every line names the component that wrote it, a Go error
// is logged under err, and a run's own error text under run_error, never
// under the key of Go errors.
func TestLogLines(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var part *partitioned
		b := setupWith(t, scheduler.Config{}, func(st sundial.Store) sundial.Store {
			part = &partitioned{Store: st}
			return part
		})
		b.target.status = string(sundial.RunFailed)
		b.target.hold = 1500 * time.Millisecond
		start := time.Now()
		b.start()
		b.addTask(t, "* * * * * *", func(tk *sundial.Task) { tk.OverlapAction = sundial.OverlapSkip })
		b.addTask(t, "* * * * * *", func(tk *sundial.Task) {
			tk.MaxConcurrency, tk.ConcurrencyPolicy = 1, sundial.ConcurrencyQueue
		})
		// Cut off from the database for a moment (less than DeadAfter):
		// the loops log what failed.
		waitUntil(start.Add(3*time.Second + 700*time.Millisecond))
		part.down.Store(true)
		waitUntil(start.Add(5*time.Second + 200*time.Millisecond))
		part.down.Store(false)
		waitUntil(start.Add(8 * time.Second))
		b.stop(t)

		components := map[string]bool{"scheduler": true, "planner": true, "claimer": true, "dispatcher": true,
			"pool": true, "writer": true, "membership": true, "callbacks": true, "housekeeping": true, "compensator": true}
		// Lines the run above must have written, and the component of each.
		want := map[string]string{
			"scheduler started": "scheduler",
			"scheduler stopped": "scheduler",
			"plan due tasks":    "planner",
			"claim due runs":    "claimer",
			"run queued":        "dispatcher",
			"run skipped":       "writer",
			"run finished":      "writer",
			"heartbeat":         "membership",
		}
		seen := map[string]bool{}
		for line := range strings.Lines(b.logs.String()) {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			msg, _ := rec["msg"].(string)
			c, _ := rec["component"].(string)
			if !components[c] {
				t.Errorf("line %q has component %q, want the name of a component", msg, c)
			}
			if w, ok := want[msg]; ok {
				seen[msg] = true
				if c != w {
					t.Errorf("line %q has component %q, want %q", msg, c, w)
				}
			}
			if _, ok := rec["error"]; ok {
				t.Errorf("line %q has an error key: a Go error is logged as err, a run's error as run_error: %s", msg, line)
			}
			switch msg {
			case "run finished":
				if rec["status"] == string(sundial.RunFailed) && rec["run_error"] != "HTTP 500 Internal Server Error" {
					t.Errorf("line of a failed run has run_error %v, want the run's error: %s", rec["run_error"], line)
				}
			case "heartbeat", "claim due runs", "plan due tasks":
				if rec["err"] != errUnreachable.Error() {
					t.Errorf("line %q has err %v, want the store's error: %s", msg, rec["err"], line)
				}
			}
		}
		for msg := range want {
			if !seen[msg] {
				t.Errorf("no %q line in the log:\n%s", msg, b.logs)
			}
		}
	})
}

// TestDisableStopsQueuedRuns: once a task is disabled nothing more of it
// is sent, its queued runs included; they are recorded SKIPPED (DISABLED).
func TestDisableStopsQueuedRuns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.target.hold = 2 * time.Second
		b.start()
		start := time.Now()
		tk := b.addTask(t, "* * * * * *", func(tk *sundial.Task) {
			tk.MaxConcurrency, tk.ConcurrencyPolicy = 1, sundial.ConcurrencyQueue
		})
		// Fire 1 runs from 1 s to 3 s, fire 2 from 3 s; fires 3 and 4 queue.
		waitUntil(start.Add(4*time.Second + 500*time.Millisecond))
		cur, err := b.store.TaskGet(context.Background(), tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		cur.Status, cur.NextFireTime = sundial.TaskDisabled, nil
		if err := b.store.TaskUpdate(context.Background(), cur, time.Now()); err != nil {
			t.Fatal(err)
		}
		disabled := time.Now()
		time.Sleep(10 * time.Second)
		b.stop(t)

		for _, c := range b.target.snapshot() {
			if c.at.After(disabled) {
				t.Errorf("the fire of %s was delivered at +%s, after the task was disabled at +%s",
					c.scheduled.Sub(start), c.at.Sub(start), disabled.Sub(start))
			}
		}
		skipped := 0
		for _, r := range b.runs(t, tk.ID) {
			switch {
			case r.Status == sundial.RunQueued:
				t.Errorf("run %d is still QUEUED", r.ID)
			case r.SkipReason == sundial.SkipDisabled:
				skipped++
			}
		}
		if skipped < 2 {
			t.Errorf("%d runs SKIPPED (DISABLED), want the 2 queued when the task was disabled", skipped)
		}
	})
}

// TestCatchUpAfterLongOutage: an outage longer than the lookahead plus the
// misfire threshold leaves planned fires behind it as well as fires never
// planned. Each missed fire is counted once: NONE writes one MISFIRE record
// for the outage, COMPACT makes one call, FULL runs each missed fire once.
func TestCatchUpAfterLongOutage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg := scheduler.Config{MisfireThreshold: 5 * time.Second}
		b := setup(t, cfg)
		start := time.Now()
		tasks := map[sundial.CatchUpMode]*sundial.Task{}
		for _, mode := range []sundial.CatchUpMode{sundial.CatchUpNone, sundial.CatchUpCompact, sundial.CatchUpFull} {
			tasks[mode] = b.addTask(t, "*/2 * * * * *", func(tk *sundial.Task) { tk.CatchUpMode = mode })
		}
		b.start()
		waitUntil(start.Add(9*time.Second + 500*time.Millisecond))
		b.stop(t) // fires 2 to 8 went out; 10 to 18 stay planned, held by no node
		waitUntil(start.Add(34*time.Second + 500*time.Millisecond))

		// The restart: fires 10 to 28 are more than 5 s late, 30 to 34 less.
		reg := prometheus.NewRegistry()
		restartFor(t, cfg, b.store, b.target, reg, 5*time.Second)

		var missed []time.Time
		for f := 10; f <= 28; f += 2 {
			missed = append(missed, start.Add(time.Duration(f)*time.Second))
		}
		calls := map[string]int{}
		for _, c := range b.target.snapshot() {
			calls[c.key]++
		}
		for mode, tk := range tasks {
			var misfires, catchUps []*sundial.Run
			for _, r := range b.runs(t, tk.ID) {
				switch {
				case r.SkipReason == sundial.SkipMisfire:
					misfires = append(misfires, r)
				case r.Trigger == sundial.TriggerCatchUp:
					catchUps = append(catchUps, r)
				case r.Trigger == sundial.TriggerSchedule && r.ScheduledTime.After(start.Add(9*time.Second)) &&
					r.ScheduledTime.Before(start.Add(29*time.Second)):
					t.Errorf("%s: missed fire of +%s ran as a scheduled fire (%s)", mode, r.ScheduledTime.Sub(start), r.Status)
				}
			}
			switch mode {
			case sundial.CatchUpNone:
				if len(misfires) != 1 || len(catchUps) != 0 || misfires[0].MissedCount != len(missed) ||
					!misfires[0].ScheduledTime.Equal(missed[0]) {
					t.Errorf("NONE: %d MISFIRE records %v, %d catch-up runs; want one record of %d fires from +10s",
						len(misfires), summarize(misfires), len(catchUps), len(missed))
				}
			case sundial.CatchUpCompact:
				if len(catchUps) != 1 || len(misfires) != 0 || catchUps[0].MissedCount != len(missed) ||
					calls[catchUps[0].IdempotencyKey] != 1 {
					t.Errorf("COMPACT: %d catch-up runs, %d MISFIRE records; want one run standing for %d fires, called once",
						len(catchUps), len(misfires), len(missed))
				}
			case sundial.CatchUpFull:
				var got []time.Time
				for _, r := range catchUps {
					got = append(got, r.ScheduledTime)
					if calls[r.IdempotencyKey] != 1 {
						t.Errorf("FULL: the catch-up run of +%s was called %d times", r.ScheduledTime.Sub(start), calls[r.IdempotencyKey])
					}
				}
				slices.SortFunc(got, time.Time.Compare)
				if len(misfires) != 0 || !slices.EqualFunc(got, missed, time.Time.Equal) {
					t.Errorf("FULL: catch-up runs of %v and %d MISFIRE records; want one run of each of %v", got, len(misfires), missed)
				}
			}
			// The fires late by less than the threshold ran, late.
			for f := 30; f <= 34; f += 2 {
				key := sundial.IdempotencyKeyFor(tk.ID, sundial.ScheduledFireKey(start.Add(time.Duration(f)*time.Second)))
				if calls[key] != 1 {
					t.Errorf("%s: the fire of +%ds was called %d times, want once", mode, f, calls[key])
				}
			}
		}
		if got := counterValue(t, reg, "sundial_fires_missed_total"); got != float64(len(missed)) {
			t.Errorf("sundial_fires_missed_total = %v, want %d (the NONE task's fires)", got, len(missed))
		}
	})
}

// counterValue is the value of the counter name in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			sum := 0.0
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestStartingDeadline: a task's starting_deadline_seconds replaces the
// server's misfire threshold for its fires, whether they were planned
// before an outage or not.
func TestStartingDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg := scheduler.Config{MisfireThreshold: time.Minute}
		b := setup(t, cfg)
		start := time.Now()
		strict := b.addTask(t, "* * * * * *", func(tk *sundial.Task) { tk.StartingDeadline = 2 })
		lenient := b.addTask(t, "* * * * * *", nil)
		b.start()
		waitUntil(start.Add(5*time.Second + 500*time.Millisecond))
		b.stop(t) // fires 1 to 5 went out; 6 to 15 stay planned
		waitUntil(start.Add(12*time.Second + 500*time.Millisecond))
		restartFor(t, cfg, b.store, b.target, nil, 3*time.Second)

		// The strict task: fires 6 to 10 were more than 2 s late at the
		// restart, counted in one MISFIRE record; 11 and 12 ran late.
		var misfires []*sundial.Run
		ran := map[int]bool{}
		for _, r := range b.runs(t, strict.ID) {
			if r.SkipReason == sundial.SkipMisfire {
				misfires = append(misfires, r)
			} else if r.Status == sundial.RunSuccess {
				ran[int(r.ScheduledTime.Sub(start)/time.Second)] = true
			}
		}
		if len(misfires) != 1 || misfires[0].MissedCount != 5 || !misfires[0].ScheduledTime.Equal(start.Add(6*time.Second)) {
			t.Errorf("strict task: MISFIRE records %v, want one of 5 fires from +6s", summarize(misfires))
		}
		for f := 1; f <= 15; f++ {
			if want := f <= 5 || f >= 11; ran[f] != want {
				t.Errorf("strict task: the fire of +%ds ran: %v, want %v", f, ran[f], want)
			}
		}
		// The lenient task runs every fire late by less than the server's
		// minute.
		for _, r := range b.runs(t, lenient.ID) {
			if r.ScheduledTime.After(start.Add(15 * time.Second)) {
				continue // planned ahead when the node stopped
			}
			if r.Status != sundial.RunSuccess || r.Trigger != sundial.TriggerSchedule {
				t.Errorf("lenient task: run of +%s is %s (%s), want every fire SUCCESS",
					r.ScheduledTime.Sub(start), r.Status, r.SkipReason)
			}
		}
	})
}

// TestNodeRetention: the housekeeping deletes nodes gone (LEFT or DEAD)
// for longer than the node retention, and keeps live nodes and nodes gone
// more recently.
func TestNodeRetention(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{NodeRetention: 2 * time.Minute, ClaimInterval: time.Second,
			PollInterval: 10 * time.Second, CallbackSweep: time.Minute})
		ctx := context.Background()
		register := func(id string) {
			t.Helper()
			if err := b.store.NodeRegister(ctx, &sundial.Node{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		nodeIDs := func() []string {
			t.Helper()
			nodes, err := b.store.NodeList(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, n := range nodes {
				ids = append(ids, n.ID)
			}
			slices.Sort(ids)
			return ids
		}
		// Two nodes gone at the start: one left, one declared dead.
		register("old-left")
		register("old-dead")
		if err := b.store.NodeLeave(ctx, "old-left"); err != nil {
			t.Fatal(err)
		}
		if dead, err := b.store.NodeReap(ctx, -time.Hour, time.Now()); err != nil || len(dead) != 1 {
			t.Fatalf("NodeReap = %v, %v", dead, err)
		}
		start := time.Now()
		b.start()
		defer b.stop(t)

		// The housekeeping runs every minute: at 2 min the old nodes have
		// been gone for 2 min, not longer.
		waitUntil(start.Add(2*time.Minute + 30*time.Second))
		if got, want := nodeIDs(), []string{"node-a", "old-dead", "old-left"}; !slices.Equal(got, want) {
			t.Fatalf("nodes at 2m30s = %v, want %v", got, want)
		}
		register("recent-left")
		if err := b.store.NodeLeave(ctx, "recent-left"); err != nil {
			t.Fatal(err)
		}
		waitUntil(start.Add(3*time.Minute + 30*time.Second))
		if got, want := nodeIDs(), []string{"node-a", "recent-left"}; !slices.Equal(got, want) {
			t.Fatalf("nodes at 3m30s = %v, want %v: the old nodes pruned, this one and the recent one kept", got, want)
		}
		waitUntil(start.Add(5*time.Minute + 30*time.Second))
		if got, want := nodeIDs(), []string{"node-a"}; !slices.Equal(got, want) {
			t.Fatalf("nodes at 5m30s = %v, want %v", got, want)
		}
	})
}

// TestAuditRetention: the housekeeping purges, every minute, the audit
// entries older than the audit retention, and keeps the newer ones.
func TestAuditRetention(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{AuditRetention: 10 * time.Minute, ClaimInterval: time.Second,
			PollInterval: 10 * time.Second, CallbackSweep: time.Minute})
		ctx := context.Background()
		now := time.Now()
		var es []*sundial.AuditEntry
		for _, age := range []time.Duration{20 * time.Minute, 11 * time.Minute, 5 * time.Minute} {
			es = append(es, &sundial.AuditEntry{At: now.Add(-age), Actor: "ci", Action: "task.create", Target: "task/1"})
		}
		if err := b.store.AuditInsert(ctx, es); err != nil {
			t.Fatal(err)
		}
		b.start()
		defer b.stop(t)
		waitUntil(now.Add(time.Minute + 30*time.Second))
		left, err := b.store.AuditList(ctx, sundial.AuditListParams{Limit: 10})
		if err != nil || len(left) != 1 || !left[0].At.Equal(es[2].At.Truncate(time.Microsecond)) {
			t.Fatalf("audit after the first purge = %d entries, %v; want the 5-minute-old one", len(left), err)
		}
		waitUntil(now.Add(6*time.Minute + 30*time.Second))
		if left, _ := b.store.AuditList(ctx, sundial.AuditListParams{Limit: 10}); len(left) != 0 {
			t.Fatalf("audit at 6m30s = %d entries, want none (the last one is 11m30s old)", len(left))
		}
	})
}

// records returns the log records with message msg, decoded.
func (b *bundle) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(b.logs.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// TestEndDrain: a stop begins the drain, which logs what is still in
// flight every DrainReport; EndDrain (a second stop signal) then ends it at
// once, as the drain timeout would: the call is cancelled and its run
// recorded INTERRUPTED with its attempt, and the node leaves.
func TestEndDrain(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{DrainTimeout: time.Hour})
		b.target.hold = 24 * time.Hour
		b.start()
		returned := false
		t.Cleanup(func() { // a failed test ends the drain too
			if !returned {
				b.sched.EndDrain()
				b.cancel()
				<-b.done
			}
		})
		start := time.Now()
		tk := b.addTask(t, "*/10 * * * * *", func(tk *sundial.Task) {
			tk.OverlapAction = sundial.OverlapParallel
			tk.TimeoutSeconds = 86400
		})
		waitUntil(start.Add(10*time.Second + 500*time.Millisecond)) // the fire at 10 s is in flight
		b.cancel()
		stopAt := time.Now()
		waitUntil(stopAt.Add(12 * time.Second)) // two progress lines, at 5 and 10 s
		progress := b.records(t, "draining: calls still in flight")
		if len(progress) != 2 {
			t.Fatalf("%d drain progress lines after 12 s, want 2 (every 5 s):\n%s", len(progress), b.logs)
		}
		rs := b.runs(t, tk.ID)
		if len(rs) == 0 || rs[0].Status != sundial.RunRunning {
			t.Fatalf("runs while draining = %v, want the first RUNNING", summarize(rs))
		}
		p := progress[1]
		if p["in_flight"] != 1.0 || p["queued"] != 0.0 || fmt.Sprint(p["run_ids"]) != fmt.Sprintf("[%d]", rs[0].ID) ||
			fmt.Sprint(p["task_ids"]) != fmt.Sprintf("[%d]", tk.ID) || p["component"] != "pool" {
			t.Errorf("progress line %v, want one call in flight: run %d of task %d", p, rs[0].ID, tk.ID)
		}
		select {
		case err := <-b.done:
			returned = true
			t.Fatalf("Run returned (%v) while a call was in flight and the drain timeout is an hour", err)
		default:
		}

		b.sched.EndDrain()
		err := <-b.done
		returned = true
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if took := time.Since(stopAt); took > 13*time.Second {
			t.Errorf("Run returned %s after the stop, want at once after EndDrain (12 s)", took)
		}
		rs = b.runs(t, tk.ID)
		if rs[0].Status != sundial.RunInterrupted || !strings.Contains(rs[0].Error, "stop at once") {
			t.Fatalf("cut-off run = %+v, want INTERRUPTED saying it was stopped at once", rs[0])
		}
		attempts, err := b.store.RunAttempts(context.Background(), rs[0].ID)
		if err != nil || len(attempts) != 1 || attempts[0].Status != sundial.RunInterrupted || attempts[0].NodeID != "node-a" {
			t.Fatalf("attempts of the cut-off run = %+v, %v; want one INTERRUPTED attempt of node-a", attempts, err)
		}
		for _, r := range rs[1:] {
			if r.NodeID != "" || r.Status != sundial.RunScheduled {
				t.Errorf("run %+v after the stop, want planned fires held by no node", r)
			}
		}
		if len(b.records(t, "stopping at once; cutting off calls in flight")) != 1 {
			t.Errorf("no line saying the drain was cut short:\n%s", b.logs)
		}
		nodes, err := b.store.NodeList(context.Background())
		if err != nil || len(nodes) != 1 || nodes[0].State != sundial.NodeLeft {
			t.Errorf("nodes after stop = %+v, %v; want this node LEFT", nodes, err)
		}
	})
}

// TestDisableStopsRetries: a run waiting for a retry when its task is
// disabled is cancelled, not delivered again.
func TestDisableStopsRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.target.status = "FAILED"
		b.start()
		start := time.Now()
		tk := b.addTask(t, "1 0 0 * * *", func(tk *sundial.Task) {
			tk.RetryPolicy = json.RawMessage(`{"max_attempts":3,"initial_backoff":"10s","jitter":"none"}`)
		})
		waitUntil(start.Add(3 * time.Second)) // the fire of 1 s failed; its retry is due at 11 s
		cur, err := b.store.TaskGet(context.Background(), tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		cur.Status, cur.NextFireTime = sundial.TaskDisabled, nil
		if err := b.store.TaskUpdate(context.Background(), cur, time.Now()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		b.stop(t)

		if calls := b.target.snapshot(); len(calls) != 1 {
			t.Errorf("%d deliveries, want only the first, before the task was disabled", len(calls))
		}
		rs := b.runs(t, tk.ID)
		if len(rs) != 1 || rs[0].Status != sundial.RunCanceled || rs[0].Error != sundial.DisabledRetryError {
			t.Errorf("runs %v, want the fire CANCELED (%q)", summarize(rs), sundial.DisabledRetryError)
		}
	})
}

// TestTriggerWhileStopped: a node that is not firing (stopping, or not yet
// started) refuses a manual trigger as unavailable rather than accepting a
// run it would not deliver.
func TestTriggerWhileStopped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		tk := b.addTask(t, "0 0 0 1 1 *", nil)
		b.start()
		synctest.Wait()
		b.stop(t)
		_, err := b.sched.Trigger(context.Background(), tk.ID, nil)
		if sundial.ErrorCode(err) != sundial.EUnavailable {
			t.Fatalf("Trigger on a stopped node = %v, want unavailable", err)
		}
		if rs := b.runs(t, tk.ID); len(rs) != 0 {
			t.Errorf("runs %v after a refused trigger, want none", summarize(rs))
		}
	})
}

// TestTaskStateSaved: the scheduler saves each task's health from the
// outcomes it records: a failing task's within a second of each failure,
// a healthy one's when first seen and then on stop, with the lag of every
// fire.
func TestTaskStateSaved(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.start()
		start := time.Now()
		ok := b.addTask(t, "* * * * * *", nil)
		failing := b.addTask(t, "* * * * * *", nil)
		b.target.mu.Lock()
		b.target.failTask = failing.ID
		b.target.mu.Unlock()
		// The first fire of each, at 1 s: ok's SUCCESS and failing's
		// FAILED; failing's next fires succeed.
		waitUntil(start.Add(1500 * time.Millisecond))
		b.target.mu.Lock()
		b.target.failTask = 0
		b.target.mu.Unlock()
		waitUntil(start.Add(1900 * time.Millisecond))
		states := func() map[int64]*sundial.TaskState {
			saved, _, err := b.store.TaskStates(context.Background(), []int64{ok.ID, failing.ID}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return saved
		}
		if st := states()[failing.ID]; st == nil || st.ConsecutiveFailures != 1 {
			t.Errorf("the failing task's state within a second of its failure: %+v", st)
		}
		waitUntil(start.Add(5500 * time.Millisecond))
		if st := states()[ok.ID]; st == nil || st.LastSuccessAt == nil || len(st.Lags) != 1 {
			t.Errorf("the healthy task's state: %+v, want its first fire saved", st)
		}
		b.stop(t)
		saved := states()
		if st := saved[ok.ID]; len(st.Lags) != 5 || st.Lags[0].Lag != 0 || st.ConsecutiveFailures != 0 {
			t.Errorf("the healthy task's state after the stop: %+v, want 5 fires without lag", st)
		}
		if st := saved[failing.ID]; st.ConsecutiveFailures != 0 || st.LastFailureAt == nil || st.LastSuccessAt == nil {
			t.Errorf("the task that failed once: %+v, want its failure ended by a success", st)
		}
	})
}
