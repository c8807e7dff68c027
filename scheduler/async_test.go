package scheduler_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
	"github.com/sundialhq/sundial/scheduler"
	"github.com/sundialhq/sundial/store/sqlite"
	"github.com/sundialhq/sundial/store/sqlite/sqlitetest"
)

// scripted is a target whose answer to each delivery a test decides.
type scripted struct {
	mu     sync.Mutex
	calls  []executor.Request
	answer func(n int, req executor.Request) executor.Outcome // n counts deliveries from 1
}

func (s *scripted) Deliver(ctx context.Context, req executor.Request) executor.Outcome {
	s.mu.Lock()
	s.calls = append(s.calls, req)
	n, answer := len(s.calls), s.answer
	s.mu.Unlock()
	out := executor.Outcome{Status: "SUCCESS", HTTPStatus: 200}
	if answer != nil {
		out = answer(n, req)
	}
	out.Started, out.Finished = time.Now(), time.Now()
	return out
}

func (s *scripted) snapshot() []executor.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func failWith(code int) executor.Outcome {
	return executor.Outcome{Status: "FAILED", HTTPStatus: code, Error: "HTTP error"}
}

type asyncBundle struct {
	store  *sqlite.Store
	target *scripted
	sched  *scheduler.Scheduler
	cancel context.CancelFunc
	done   chan error
}

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func setupScripted(t *testing.T, answer func(int, executor.Request) executor.Outcome) *asyncBundle {
	t.Helper()
	return startScripted(t, scheduler.Config{CallbackSecret: testSecret, CallbackURL: "http://sundial.test"}, answer)
}

// startScripted opens a fresh database and runs a scheduler with cfg (node
// "node-a" unless cfg names one) and a scripted target until the test ends.
func startScripted(t *testing.T, cfg scheduler.Config, answer func(int, executor.Request) executor.Outcome) *asyncBundle {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlitetest.NewDB(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if cfg.Node.ID == "" {
		cfg.Node = sundial.Node{ID: "node-a"}
	}
	b := &asyncBundle{store: st, target: &scripted{answer: answer}}
	b.sched, err = scheduler.New(cfg, st, b.target, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan error, 1)
	go func() { b.done <- b.sched.Run(ctx) }()
	t.Cleanup(func() {
		b.cancel()
		<-b.done
	})
	return b
}

// oneOff creates a one-off task due in delay seconds.
func (b *asyncBundle) oneOff(t *testing.T, delay int, mod func(*sundial.Task)) *sundial.Task {
	t.Helper()
	tk := &sundial.Task{TargetURL: "http://127.0.0.1:9/hook", DelaySeconds: &delay}
	if mod != nil {
		mod(tk)
	}
	now := time.Now()
	if err := tk.Normalize(now); err != nil {
		t.Fatal(err)
	}
	tk.NextFireTime = tk.FirstFire(now)
	if _, err := b.store.TaskCreateMany(context.Background(), []*sundial.Task{tk}, now); err != nil {
		t.Fatal(err)
	}
	b.sched.Poke()
	return tk
}

func (b *asyncBundle) onlyRun(t *testing.T, taskID int64) *sundial.Run {
	t.Helper()
	rs, err := b.store.RunList(context.Background(), sundial.RunListParams{TaskID: taskID})
	if err != nil || len(rs) != 1 {
		t.Fatalf("runs of task %d: %v, %v; want one", taskID, rs, err)
	}
	return rs[0]
}

func (b *asyncBundle) taskStatus(t *testing.T, id int64) sundial.TaskStatus {
	t.Helper()
	tk, err := b.store.TaskGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tk.Status
}

func retryPolicy(p string) func(*sundial.Task) {
	return func(tk *sundial.Task) { tk.RetryPolicy = json.RawMessage(p) }
}

func TestRetryBackoff(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupScripted(t, func(n int, _ executor.Request) executor.Outcome {
			if n < 3 {
				return failWith(503)
			}
			return executor.Outcome{Status: "SUCCESS", HTTPStatus: 200}
		})
		start := time.Now()
		tk := b.oneOff(t, 1, retryPolicy(`{"max_attempts": 3, "initial_backoff": "2s", "multiplier": 3, "jitter": "none"}`))
		time.Sleep(30 * time.Second)

		calls := b.target.snapshot()
		if len(calls) != 3 {
			t.Fatalf("%d deliveries, want 3", len(calls))
		}
		// Due at 1s; retried 2s, then 6s after each failure.
		for i, c := range calls {
			if got := c.Vars.ScheduledTime; !got.Equal(start.Add(time.Second)) {
				t.Errorf("delivery %d: scheduled time %s, want the fire's %s", i+1, got, start.Add(time.Second))
			}
			if c.Vars.Delivery != i+1 || c.Vars.IdempotencyKey != calls[0].Vars.IdempotencyKey {
				t.Errorf("delivery %d: delivery number %d, key %q; want %d and the first delivery's key",
					i+1, c.Vars.Delivery, c.Vars.IdempotencyKey, i+1)
			}
		}
		r := b.onlyRun(t, tk.ID)
		if r.Status != sundial.RunSuccess || r.Deliveries != 3 {
			t.Errorf("run: %s after %d deliveries, want SUCCESS after 3", r.Status, r.Deliveries)
		}
		attempts, err := b.store.RunAttempts(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []sundial.RunStatus
		var at []time.Duration
		for _, a := range attempts {
			got = append(got, a.Status)
			at = append(at, a.StartedAt.Sub(start))
		}
		if !slices.Equal(got, []sundial.RunStatus{sundial.RunFailed, sundial.RunFailed, sundial.RunSuccess}) {
			t.Errorf("attempts %v, want FAILED, FAILED, SUCCESS", got)
		}
		if !slices.Equal(at, []time.Duration{time.Second, 3 * time.Second, 9 * time.Second}) {
			t.Errorf("attempts started at %v after the start, want 1s, 3s, 9s", at)
		}
		if st := b.taskStatus(t, tk.ID); st != sundial.TaskCompleted {
			t.Errorf("one-off task is %s after its fire succeeded, want COMPLETED", st)
		}
	})
}

func TestRetryPolicyLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		policy     string
		answer     executor.Outcome
		deliveries int
		gaps       []time.Duration // between deliveries
	}{
		{"exhausted", `{"max_attempts": 3, "initial_backoff": "1s", "jitter": "none"}`, failWith(500), 3,
			[]time.Duration{time.Second, 2 * time.Second}},
		{"4xx is final", `{"max_attempts": 5}`, failWith(404), 1, nil},
		{"4xx when listed", `{"max_attempts": 2, "initial_backoff": "1s", "jitter": "none", "retry_on": ["4xx"]}`,
			failWith(404), 2, []time.Duration{time.Second}},
		{"connection error", `{"max_attempts": 2, "initial_backoff": "1s", "jitter": "none"}`,
			executor.Outcome{Status: "FAILED", Error: "connection refused"}, 2, []time.Duration{time.Second}},
		{"timeout", `{"max_attempts": 2, "initial_backoff": "1s", "jitter": "none"}`,
			executor.Outcome{Status: "TIMEOUT", Error: "timed out"}, 2, []time.Duration{time.Second}},
		{"retry-after within max_backoff", `{"max_attempts": 2, "initial_backoff": "1s", "max_backoff": "20s", "jitter": "none"}`,
			executor.Outcome{Status: "FAILED", HTTPStatus: 429, RetryAfter: 12 * time.Second}, 2, []time.Duration{12 * time.Second}},
		{"retry-after capped", `{"max_attempts": 2, "initial_backoff": "1s", "max_backoff": "5s", "jitter": "none"}`,
			executor.Outcome{Status: "FAILED", HTTPStatus: 503, RetryAfter: time.Hour}, 2, []time.Duration{5 * time.Second}},
		{"no policy", `{}`, failWith(503), 1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := setupScripted(t, func(int, executor.Request) executor.Outcome { return c.answer })
				tk := b.oneOff(t, 1, retryPolicy(c.policy))
				time.Sleep(time.Minute)
				r := b.onlyRun(t, tk.ID)
				if r.Deliveries != c.deliveries || !r.Status.Final() || r.Status == sundial.RunSuccess {
					t.Errorf("run %s after %d deliveries, want a failure after %d", r.Status, r.Deliveries, c.deliveries)
				}
				attempts, err := b.store.RunAttempts(context.Background(), r.ID)
				if err != nil || len(attempts) != c.deliveries {
					t.Fatalf("attempts %d (%v), want %d", len(attempts), err, c.deliveries)
				}
				var gaps []time.Duration
				for i := 1; i < len(attempts); i++ {
					gaps = append(gaps, attempts[i].StartedAt.Sub(attempts[i-1].FinishedAt))
				}
				if !slices.Equal(gaps, c.gaps) {
					t.Errorf("gaps between deliveries %v, want %v", gaps, c.gaps)
				}
				if st := b.taskStatus(t, tk.ID); st != sundial.TaskFailed {
					t.Errorf("one-off task %s after its fire failed for good, want FAILED", st)
				}
			})
		})
	}
}

// TestRetryJitterBounds runs many retries with full jitter on the fake
// clock: every wait is within [0, backoff].
func TestRetryJitterBounds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupScripted(t, func(int, executor.Request) executor.Outcome { return failWith(503) })
		var tasks []*sundial.Task
		for range 20 {
			tasks = append(tasks, b.oneOff(t, 1, retryPolicy(`{"max_attempts": 4, "initial_backoff": "4s", "multiplier": 2, "jitter": "equal"}`)))
		}
		time.Sleep(2 * time.Minute)
		distinct := map[time.Duration]bool{}
		for _, tk := range tasks {
			r := b.onlyRun(t, tk.ID)
			attempts, err := b.store.RunAttempts(context.Background(), r.ID)
			if err != nil || len(attempts) != 4 {
				t.Fatalf("task %d: %d attempts (%v), want 4", tk.ID, len(attempts), err)
			}
			for i := 1; i < 4; i++ {
				full := 4 * time.Second << (i - 1)
				gap := attempts[i].StartedAt.Sub(attempts[i-1].FinishedAt)
				// Equal jitter: half the backoff, plus up to the other half
				// (the dispatcher works in microseconds).
				if gap < full/2 || gap > full+time.Millisecond {
					t.Errorf("task %d retry %d after %s, want within [%s, %s]", tk.ID, i, gap, full/2, full)
				}
				distinct[gap] = true
			}
		}
		if len(distinct) < 10 {
			t.Errorf("only %d distinct waits over 60 retries: not jittered", len(distinct))
		}
	})
}

func asyncTask(timeout int, policy string) func(*sundial.Task) {
	return func(tk *sundial.Task) {
		tk.ExecType = sundial.ExecAsync
		tk.CallbackTimeout = timeout
		tk.RetryPolicy = json.RawMessage(policy)
	}
}

func TestAsyncCallback(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupScripted(t, nil)
		tk := b.oneOff(t, 1, asyncTask(60, `{}`))
		time.Sleep(2 * time.Second)
		calls := b.target.snapshot()
		if len(calls) != 1 {
			t.Fatalf("%d deliveries, want 1", len(calls))
		}
		v := calls[0].Vars
		r := b.onlyRun(t, tk.ID)
		if v.CallbackURL != "http://sundial.test/api/v1/runs/"+strconv.FormatInt(r.ID, 10)+"/callback" {
			t.Errorf("callback URL %q", v.CallbackURL)
		}
		fence, ok := sundial.VerifyCallbackToken(testSecret, r.ID, v.CallbackToken)
		if !ok || fence != r.Fence {
			t.Fatalf("token %q: fence %d ok %v, want the run's fence %d", v.CallbackToken, fence, ok, r.Fence)
		}
		if r.Status != sundial.RunWaitingCallback || !r.DueAt.Equal(r.StartedAt.Add(time.Minute)) {
			t.Fatalf("run %s due %s, want WAITING_CALLBACK due a minute after its start %s", r.Status, r.DueAt, r.StartedAt)
		}
		if st := b.taskStatus(t, tk.ID); st != sundial.TaskEnabled {
			t.Errorf("task %s while its run waits, want ENABLED", st)
		}
		done, err := b.sched.Complete(context.Background(), r, tk, fence, sundial.CallbackReport{
			Status: sundial.RunSuccess, Result: json.RawMessage(`{"rows":12}`)})
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if done.Status != sundial.RunSuccess || string(done.Result) != `{"rows":12}` {
			t.Errorf("run after callback: %s result %s", done.Status, done.Result)
		}
		// A replay of the same callback changes nothing.
		if _, err := b.sched.Complete(context.Background(), r, tk, fence, sundial.CallbackReport{Status: sundial.RunFailed}); sundial.ErrorCode(err) != sundial.EConflict {
			t.Errorf("replayed callback: %v, want EConflict", err)
		}
		if got := b.onlyRun(t, tk.ID); got.Status != sundial.RunSuccess {
			t.Errorf("run after replay: %s, want SUCCESS", got.Status)
		}
		if st := b.taskStatus(t, tk.ID); st != sundial.TaskCompleted {
			t.Errorf("task %s, want COMPLETED", st)
		}
	})
}

// TestAsyncTimeoutRetryCheckpoint: no callback comes in time, the run is
// delivered again with the checkpoint saved by the first delivery, and the
// first delivery's token is refused as superseded.
func TestAsyncTimeoutRetryCheckpoint(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupScripted(t, nil)
		tk := b.oneOff(t, 1, asyncTask(10, `{"max_attempts": 2, "initial_backoff": "3s", "jitter": "none"}`))
		time.Sleep(2 * time.Second)
		r := b.onlyRun(t, tk.ID)
		first := b.target.snapshot()[0].Vars
		fence1, _ := sundial.VerifyCallbackToken(testSecret, r.ID, first.CallbackToken)
		if first.Checkpoint != nil {
			t.Errorf("first delivery carries checkpoint %s", first.Checkpoint)
		}
		time.Sleep(5 * time.Second)
		// Progress moves the deadline: 10s from now, not from the start.
		if _, err := b.sched.Progress(context.Background(), r, tk, fence1, json.RawMessage(`{"pct":40}`),
			json.RawMessage(`{"page":3}`)); err != nil {
			t.Fatalf("Progress: %v", err)
		}
		reported := time.Now()
		time.Sleep(8 * time.Second) // past the first deadline, before the extended one
		if got := b.onlyRun(t, tk.ID); got.Status != sundial.RunWaitingCallback {
			t.Fatalf("run %s before its extended deadline, want WAITING_CALLBACK", got.Status)
		}
		time.Sleep(10 * time.Second) // the extended deadline (+ sweep) and the 3s backoff
		calls := b.target.snapshot()
		if len(calls) != 2 {
			t.Fatalf("%d deliveries, want 2", len(calls))
		}
		second := calls[1].Vars
		if string(second.Checkpoint) != `{"page":3}` || second.Delivery != 2 || second.IdempotencyKey != first.IdempotencyKey {
			t.Errorf("second delivery: checkpoint %s, delivery %d, key %q", second.Checkpoint, second.Delivery, second.IdempotencyKey)
		}
		attempts, _ := b.store.RunAttempts(context.Background(), r.ID)
		if len(attempts) < 1 || attempts[0].Status != sundial.RunFailedTimeout {
			t.Errorf("first attempt %+v, want FAILED_TIMEOUT", attempts)
		}
		if gap := attempts[0].FinishedAt.Sub(reported); gap < 10*time.Second || gap > 12*time.Second {
			t.Errorf("deadline passed %s after the progress report, want about 10s", gap)
		}
		now := b.onlyRun(t, tk.ID)
		if _, err := b.sched.Complete(context.Background(), now, tk, fence1, sundial.CallbackReport{Status: sundial.RunSuccess}); sundial.ErrorCode(err) != sundial.EConflict {
			t.Errorf("callback of the superseded delivery: %v, want EConflict", err)
		}
		fence2, _ := sundial.VerifyCallbackToken(testSecret, r.ID, second.CallbackToken)
		if fence2 == fence1 {
			t.Fatal("second delivery has the first one's fence")
		}
		done, err := b.sched.Complete(context.Background(), now, tk, fence2, sundial.CallbackReport{Status: sundial.RunFailed, Message: "disk full"})
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if done.Status != sundial.RunFailed || done.Error != "disk full" {
			t.Errorf("run %s %q after a FAILED callback with no attempts left, want FAILED", done.Status, done.Error)
		}
		if st := b.taskStatus(t, tk.ID); st != sundial.TaskFailed {
			t.Errorf("task %s, want FAILED", st)
		}
	})
}

// TestCallbackBeforeAnswer: the target calls back before its call's
// answer is recorded; the run ends with the callback's outcome.
func TestCallbackBeforeAnswer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			b     *asyncBundle
			tk    *sundial.Task
			cbErr error
		)
		bb := setupScripted(t, func(_ int, req executor.Request) executor.Outcome {
			mu.Lock()
			defer mu.Unlock()
			r, err := b.store.RunGet(context.Background(), req.Vars.RunID)
			if err == nil {
				fence, _ := sundial.VerifyCallbackToken(testSecret, r.ID, req.Vars.CallbackToken)
				_, cbErr = b.sched.Complete(context.Background(), r, tk, fence, sundial.CallbackReport{Status: sundial.RunSuccess})
			}
			return executor.Outcome{Status: "SUCCESS", HTTPStatus: 202}
		})
		mu.Lock()
		b = bb
		tk = b.oneOff(t, 1, asyncTask(60, `{}`))
		mu.Unlock()
		time.Sleep(3 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		if cbErr != nil {
			t.Fatalf("callback during the call: %v", cbErr)
		}
		r := b.onlyRun(t, tk.ID)
		if r.Status != sundial.RunSuccess {
			t.Errorf("run %s, want SUCCESS", r.Status)
		}
		attempts, _ := b.store.RunAttempts(context.Background(), r.ID)
		if len(attempts) != 1 || attempts[0].Status != sundial.RunSuccess {
			t.Errorf("attempts %+v, want one SUCCESS", attempts)
		}
	})
}

// TestLookaheadEdit plans an hour ahead: the task's upcoming runs are
// visible before they fire, an edit replaces them at once, and disabling
// removes them; no fire of the old schedule is sent after the edit.
// Slower loops than the defaults (nothing here is timed closer than a
// second): ten minutes pass in a few hundred turns of them.
func TestLookaheadEdit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := startScripted(t, scheduler.Config{Lookahead: time.Hour, MaxRunsPerTask: 1000,
			PollInterval: 10 * time.Second, ClaimInterval: time.Second, HeartbeatInterval: 20 * time.Second,
			DeadAfter: time.Minute, DependencyRefresh: time.Minute, CallbackSweep: time.Minute, CancelPoll: time.Minute}, nil)
		st, s, tg, ctx := b.store, b.sched, b.target, context.Background()

		start := time.Now()
		tk := &sundial.Task{Name: "every-minute", CronExpr: "0 * * * * *", TargetURL: "http://127.0.0.1:9/"}
		if err := tk.Normalize(start); err != nil {
			t.Fatal(err)
		}
		tk.NextFireTime = tk.FirstFire(start)
		if _, err := st.TaskCreateMany(ctx, []*sundial.Task{tk}, start); err != nil {
			t.Fatal(err)
		}
		s.Poke()
		time.Sleep(time.Second)
		up, err := st.RunUpcoming(ctx, tk.ID, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(up) != 60 || !up[0].ScheduledTime.Equal(start.Add(time.Minute)) {
			t.Fatalf("%d upcoming runs, first %v; want the 60 of the next hour from %v", len(up), up[0].ScheduledTime, start.Add(time.Minute))
		}

		// Every 90 seconds instead, from now: the old runs go at once.
		time.Sleep(30 * time.Second)
		now := time.Now()
		tk.CronExpr = "@every 90s"
		if err := tk.Normalize(now); err != nil {
			t.Fatal(err)
		}
		tk.NextFireTime = tk.FirstFire(now)
		if err := st.TaskUpdate(ctx, tk, now); err != nil {
			t.Fatal(err)
		}
		up, _ = st.RunUpcoming(ctx, tk.ID, 1000)
		if len(up) != 0 {
			t.Errorf("%d upcoming runs right after the edit, want none", len(up))
		}
		s.Poke()
		time.Sleep(time.Second)
		up, _ = st.RunUpcoming(ctx, tk.ID, 1000)
		if len(up) != 40 {
			t.Errorf("%d upcoming runs after replanning, want 40 (an hour of 90 s)", len(up))
		}
		time.Sleep(5 * time.Minute)
		for _, c := range tg.snapshot() {
			if sec := c.Vars.ScheduledTime.Sub(start); sec > 31*time.Second && sec%time.Minute == 0 && (sec-31*time.Second)%(90*time.Second) != 0 {
				t.Errorf("fire of the old schedule at +%s after the edit", sec)
			}
		}
		if n := len(tg.snapshot()); n != 3 {
			t.Errorf("%d fires in 5 minutes of the new schedule, want 3", n)
		}

		// Disabling removes the upcoming runs; nothing fires after.
		tk2, _ := st.TaskGet(ctx, tk.ID)
		tk2.Status = sundial.TaskDisabled
		tk2.NextFireTime = nil
		if err := st.TaskUpdate(ctx, tk2, time.Now()); err != nil {
			t.Fatal(err)
		}
		before := len(tg.snapshot())
		up, _ = st.RunUpcoming(ctx, tk.ID, 1000)
		if len(up) != 0 {
			t.Errorf("%d upcoming runs after disabling, want none", len(up))
		}
		time.Sleep(3 * time.Minute)
		if n := len(tg.snapshot()); n != before {
			t.Errorf("%d fires after the task was disabled", n-before)
		}
	})
}

// TestEditJustBeforeFire changes a task every second after its next fire
// was committed RUNNING ahead (300 ms before it), and checks that the
// committed fire never goes out under the old definition when the change
// came more than sundial.SendMargin before it: an edit's fire goes to the
// new target, a disable or a delete sends nothing, and a cancel records
// the run CANCELED unsent. A change within the margin lets the fire go as
// it was.
func TestEditJustBeforeFire(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sb := startScripted(t, scheduler.Config{}, nil)
		st, s, tg, ctx := sb.store, sb.sched, sb.target, context.Background()

		create := func(name, url string) *sundial.Task {
			t.Helper()
			now := time.Now()
			tk := &sundial.Task{Name: name, CronExpr: "* * * * * *", TargetURL: url}
			if err := tk.Normalize(now); err != nil {
				t.Fatal(err)
			}
			tk.NextFireTime = tk.FirstFire(now)
			if _, err := st.TaskCreateMany(ctx, []*sundial.Task{tk}, now); err != nil {
				t.Fatal(err)
			}
			s.Poke()
			return tk
		}
		change := func(id int64, mod func(*sundial.Task)) {
			t.Helper()
			now := time.Now()
			tk, err := st.TaskGet(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			mod(tk)
			if err := tk.Normalize(now); err != nil {
				t.Fatal(err)
			}
			tk.NextFireTime = nil
			if tk.Status == sundial.TaskEnabled {
				tk.NextFireTime = tk.FirstFire(now)
			}
			if err := st.TaskUpdate(ctx, tk, now); err != nil {
				t.Fatal(err)
			}
			s.Poke()
		}
		// before sleeps until ahead before the next whole second, and
		// returns that second.
		before := func(ahead time.Duration) time.Time {
			next := time.Now().Truncate(time.Second).Add(time.Second)
			if time.Until(next) <= ahead {
				next = next.Add(time.Second)
			}
			time.Sleep(time.Until(next.Add(-ahead)))
			return next
		}
		// noneFrom fails the test for any delivery of task id scheduled at
		// or after from.
		noneFrom := func(id int64, from time.Time, after string) {
			t.Helper()
			for _, c := range tg.snapshot() {
				if c.Vars.TaskID == id && !c.Vars.ScheduledTime.Before(from) {
					t.Errorf("fire at %v sent after the task was %s 150 ms before %v", c.Vars.ScheduledTime, after, from)
				}
			}
		}
		// sentAt lists the URLs of the deliveries of task id scheduled at.
		sentAt := func(id int64, at time.Time) []string {
			var urls []string
			for _, c := range tg.snapshot() {
				if c.Vars.TaskID == id && c.Vars.ScheduledTime.Equal(at) {
					urls = append(urls, c.URL)
				}
			}
			return urls
		}

		a := create("edited", "http://127.0.0.1:9/old")
		time.Sleep(3 * time.Second)
		if len(sentAt(a.ID, time.Now().Truncate(time.Second).Add(-time.Second))) != 1 {
			t.Fatalf("the task does not fire every second: %d deliveries", len(tg.snapshot()))
		}

		// An edit 150 ms before a fire: the fire goes to the new target.
		fire := before(150 * time.Millisecond)
		change(a.ID, func(tk *sundial.Task) { tk.TargetURL = "http://127.0.0.1:9/new" })
		time.Sleep(time.Until(fire.Add(500 * time.Millisecond)))
		if got := sentAt(a.ID, fire); !slices.Equal(got, []string{"http://127.0.0.1:9/new"}) {
			t.Errorf("fire at %v after an edit 150 ms before it went to %v, want the new target once", fire, got)
		}

		// An edit 40 ms before a fire, within the margin: that fire goes
		// as it was, the next one to the newer target.
		fire = before(40 * time.Millisecond)
		change(a.ID, func(tk *sundial.Task) { tk.TargetURL = "http://127.0.0.1:9/newer" })
		time.Sleep(time.Until(fire.Add(1500 * time.Millisecond)))
		if got := sentAt(a.ID, fire); !slices.Equal(got, []string{"http://127.0.0.1:9/new"}) {
			t.Errorf("fire at %v after an edit 40 ms before it went to %v, want the previous target once", fire, got)
		}
		if got := sentAt(a.ID, fire.Add(time.Second)); !slices.Equal(got, []string{"http://127.0.0.1:9/newer"}) {
			t.Errorf("fire at %v went to %v, want the newer target once", fire.Add(time.Second), got)
		}

		// A disable 150 ms before a fire: nothing more goes out.
		fire = before(150 * time.Millisecond)
		change(a.ID, func(tk *sundial.Task) { tk.Status = sundial.TaskDisabled })
		time.Sleep(3 * time.Second)
		noneFrom(a.ID, fire, "disabled")

		// A delete 150 ms before a fire: nothing more goes out.
		b := create("deleted", "http://127.0.0.1:9/b")
		time.Sleep(2 * time.Second)
		fire = before(150 * time.Millisecond)
		if err := st.TaskDelete(ctx, b.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		noneFrom(b.ID, fire, "deleted")

		// A cancel of the committed run 150 ms before its fire: recorded
		// CANCELED, never sent.
		c := create("canceled", "http://127.0.0.1:9/c")
		time.Sleep(2 * time.Second)
		fire = before(150 * time.Millisecond)
		runs, err := st.RunList(ctx, sundial.RunListParams{TaskID: c.ID, Status: []sundial.RunStatus{sundial.RunRunning}})
		if err != nil || len(runs) != 1 || !runs[0].ScheduledTime.Equal(fire) {
			t.Fatalf("RUNNING runs of task %d 150 ms before %v: %v, %v; want its committed fire", c.ID, fire, runs, err)
		}
		if _, err := s.Cancel(ctx, runs[0].ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(fire.Add(500 * time.Millisecond)))
		if got := sentAt(c.ID, fire); len(got) != 0 {
			t.Errorf("the fire at %v was sent after it was canceled 150 ms before", fire)
		}
		r, err := st.RunGet(ctx, runs[0].ID)
		if err != nil || r.Status != sundial.RunCanceled {
			t.Errorf("the run canceled before its fire is %v, %v; want CANCELED", r, err)
		}
	})
}
