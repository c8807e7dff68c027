package scheduler

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// This file holds what happens to a run after its call: retries under the
// task's retry policy, the callback loop of ASYNC runs (callback, progress,
// deadline), and the end of one-off tasks.

// callbackStore is what the callbacks component needs of the store.
type callbackStore interface {
	RunComplete(ctx context.Context, c sundial.RunCompleteParams) (*sundial.Run, error)
	RunProgress(ctx context.Context, p sundial.RunProgressParams) (*sundial.Run, error)
	RunCallbackExpired(ctx context.Context, now time.Time, limit int) ([]*sundial.Run, map[int64]*sundial.Task, error)
}

// callbacks ends ASYNC runs: by their callback (complete), by a cancel
// (cancel), or by their deadline (the sweep of its Run, on every node, the
// fence making one of them win each run); it saves their progress and
// extends their deadline (progress). A failure is retried when the task's
// retry policy allows.
type callbacks struct {
	store callbackStore
	log   *slog.Logger

	async asyncTerms
	sweep time.Duration // how often expired deadlines are looked for

	// healthy reports whether this node holds its membership.
	healthy func() bool
	// record logs and counts an outcome the store recorded.
	record func(outcome)
	// slotFreed starts the oldest queued run of a task whose run ended.
	slotFreed func(ctx context.Context, t *sundial.Task)
}

func newCallbacks(cfg Config, store callbackStore, log *slog.Logger) *callbacks {
	return &callbacks{store: store, log: log.With("component", "callbacks"), async: newAsyncTerms(cfg),
		sweep: cfg.CallbackSweep}
}

// asyncTerms are what an ASYNC delivery tells its target about the
// callback: where to call, with what token, and by when.
type asyncTerms struct {
	baseURL     string
	secret      []byte
	defaultWait time.Duration // of tasks without callback_timeout_sec
}

func newAsyncTerms(cfg Config) asyncTerms {
	return asyncTerms{baseURL: strings.TrimRight(cfg.CallbackURL, "/"), secret: cfg.CallbackSecret,
		defaultWait: cfg.CallbackTimeout}
}

// url is where the target of ASYNC run id reports its outcome.
func (a asyncTerms) url(id int64) string {
	return a.baseURL + "/api/v1/runs/" + strconv.FormatInt(id, 10) + "/callback"
}

// token is the callback token of the delivery of run id under fence.
func (a asyncTerms) token(id, fence int64) string { return sundial.CallbackToken(a.secret, id, fence) }

// timeout is how long an ASYNC run of t waits for its callback.
func (a asyncTerms) timeout(t *sundial.Task) time.Duration {
	if t.CallbackTimeout > 0 {
		return time.Duration(t.CallbackTimeout) * time.Second
	}
	return a.defaultWait
}

// retryAt decides whether delivery number delivery of run r, which ended
// with status (and httpStatus), is retried under t's retry policy, and when.
// A callback's FAILED is the class callback_failed.
func retryAt(t *sundial.Task, r *sundial.Run, delivery int, status sundial.RunStatus,
	httpStatus int, retryAfter time.Duration, ended time.Time) (time.Time, bool) {
	if r.CancelRequested {
		return time.Time{}, false
	}
	p := t.RetryPolicyOf()
	retryable := p.Retryable(status, httpStatus)
	if status == sundial.RunFailed && httpStatus == callbackFailed {
		retryable = p.RetriesOn(sundial.RetryOnCallback)
	}
	if delivery >= p.MaxAttempts || !retryable {
		return time.Time{}, false
	}
	return ended.Add(p.Backoff(delivery, retryAfter, randN)), true
}

// applyRetry turns the outcome of a delivery that failed into a retry when
// the task's policy allows one, and otherwise ends a one-off task with its
// run.
func applyRetry(t *sundial.Task, r *sundial.Run, delivery int, fin *sundial.RunFinishParams, retryAfter time.Duration) {
	if fin.Status != sundial.RunSuccess {
		if at, ok := retryAt(t, r, delivery, fin.Status, fin.HTTPStatus, retryAfter, fin.FinishedAt); ok {
			fin.Retry, fin.DueAt = true, at
			return
		}
	}
	fin.CompleteTask = sundial.TaskEndOf(t, r, fin.Status)
}

// callbackFailed stands for the HTTP status of a failure reported by a
// callback, for retryAt.
const callbackFailed = -1

// complete serves Scheduler.Complete.
func (c *callbacks) complete(ctx context.Context, r *sundial.Run, t *sundial.Task, fence int64, cb sundial.CallbackReport) (*sundial.Run, error) {
	if fence != r.Fence {
		return nil, superseded(r.ID)
	}
	now := time.Now()
	comp := sundial.RunCompleteParams{ID: r.ID, Fence: fence, Status: cb.Status, Result: cb.Result,
		Error: cb.Failure(), Message: cb.Message, FinishedAt: now}
	if cb.Status == sundial.RunFailed && !cb.NoRetry && t != nil {
		if at, ok := retryAt(t, r, max(r.Deliveries, 1), sundial.RunFailed, callbackFailed, 0, now); ok {
			comp.Retry, comp.DueAt = true, at
		}
	}
	if !comp.Retry {
		comp.CompleteTask = sundial.TaskEndOf(t, r, cb.Status)
	}
	return c.end(ctx, t, comp)
}

// cancel ends, CANCELED, a run waiting for its callback: no call is in
// flight, the wait ends here. t is nil for a deleted task.
func (c *callbacks) cancel(ctx context.Context, r *sundial.Run, t *sundial.Task) (*sundial.Run, error) {
	comp := sundial.RunCompleteParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunCanceled,
		Error: errCanceled.Error(), FinishedAt: time.Now(), CompleteTask: sundial.TaskEndOf(t, r, sundial.RunCanceled)}
	return c.end(ctx, t, comp)
}

// end applies a completion, records it, and starts the task's oldest
// queued run: its slot has freed.
func (c *callbacks) end(ctx context.Context, t *sundial.Task, comp sundial.RunCompleteParams) (*sundial.Run, error) {
	done, err := c.store.RunComplete(ctx, comp)
	if err != nil {
		return nil, err
	}
	c.recordCompletion(done, t, comp)
	c.slotFreed(ctx, t)
	return done, nil
}

// progress serves Scheduler.Progress.
func (c *callbacks) progress(ctx context.Context, r *sundial.Run, t *sundial.Task, fence int64, progress, checkpoint json.RawMessage) (*sundial.Run, error) {
	if fence != r.Fence {
		return nil, superseded(r.ID)
	}
	now := time.Now()
	p := sundial.RunProgressParams{ID: r.ID, Fence: fence, Progress: progress, Checkpoint: checkpoint, Now: now}
	if t != nil {
		p.DueAt = now.Add(c.async.timeout(t))
	}
	return c.store.RunProgress(ctx, p)
}

func superseded(id int64) error {
	return sundial.Errorf(sundial.EConflict, "fence",
		"run %d was delivered again since this token was issued: the callback is from a superseded delivery", id)
}

// recordCompletion records a run ended (or sent to retry) without a call
// of this node: a callback, an expired deadline, a cancel.
func (c *callbacks) recordCompletion(r *sundial.Run, t *sundial.Task, comp sundial.RunCompleteParams) {
	c.record(outcome{run: r, task: t, status: comp.Status, retry: comp.Retry, dueAt: comp.DueAt, err: comp.Error,
		trace: r.TraceID, attempt: r.Attempt, delivery: r.Deliveries})
}

// Run ends the ASYNC runs whose callback did not come in time, every
// callback sweep (jittered), until ctx is done: FAILED_TIMEOUT, or another
// delivery when the retry policy allows. Every node sweeps; the fence
// makes one of them win each run.
func (c *callbacks) Run(ctx context.Context) error {
	iv := c.sweep
	timer := time.NewTimer(iv)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		if c.healthy() {
			c.expireCallbacks(ctx)
		}
		timer.Reset(iv - iv/5 + time.Duration(randN(int64(iv/5)*2+1)))
	}
}

func (c *callbacks) expireCallbacks(ctx context.Context) {
	const batch = 100
	for ctx.Err() == nil {
		now := time.Now()
		runs, tasks, err := c.store.RunCallbackExpired(ctx, now, batch)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Error("find expired callbacks", "err", err)
			}
			return
		}
		for _, r := range runs {
			t := tasks[r.TaskID]
			comp := sundial.RunCompleteParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailedTimeout,
				Error: "no callback before the deadline", FinishedAt: now}
			if t != nil {
				if at, ok := retryAt(t, r, max(r.Deliveries, 1), sundial.RunFailedTimeout, 0, 0, now); ok {
					comp.Retry, comp.DueAt = true, at
				} else {
					comp.CompleteTask = sundial.TaskEndOf(t, r, sundial.RunFailedTimeout)
				}
			}
			done, err := c.store.RunComplete(ctx, comp)
			if err != nil {
				if sundial.ErrorCode(err) != sundial.EConflict && ctx.Err() == nil {
					c.log.Error("expire callback", "run_id", r.ID, "err", err)
				}
				continue // ended meanwhile, by its callback or another node
			}
			c.recordCompletion(done, t, comp)
			c.slotFreed(ctx, t)
		}
		if len(runs) < batch {
			return
		}
	}
}
