package scheduler

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// This file holds what happens to a run after its call: retries under the
// task's retry policy, the callback loop of ASYNC runs (callback, progress,
// deadline), and the end of one-off tasks.

// callbackURL is where the target of ASYNC run id reports its outcome.
func (s *Scheduler) callbackURL(id int64) string {
	return strings.TrimRight(s.cfg.CallbackURL, "/") + "/api/v1/runs/" + strconv.FormatInt(id, 10) + "/callback"
}

// callbackTimeout is how long an ASYNC run of t waits for its callback.
func (s *Scheduler) callbackTimeout(t *sundial.Task) time.Duration {
	if t.CallbackTimeout > 0 {
		return time.Duration(t.CallbackTimeout) * time.Second
	}
	return s.cfg.CallbackTimeout
}

// CallbackSecret returns the secret callback tokens are signed with.
func (s *Scheduler) CallbackSecret() []byte { return s.cfg.CallbackSecret }

// retryAt decides whether delivery number delivery of run r, which ended
// with status (and httpStatus), is retried under t's retry policy, and when.
// A callback's FAILED is the class callback_failed.
func (s *Scheduler) retryAt(t *sundial.Task, r *sundial.Run, delivery int, status sundial.RunStatus,
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
func (s *Scheduler) applyRetry(t *sundial.Task, r *sundial.Run, delivery int, fin *sundial.RunFinish, retryAfter time.Duration) {
	if fin.Status != sundial.RunSuccess {
		if at, ok := s.retryAt(t, r, delivery, fin.Status, fin.HTTPStatus, retryAfter, fin.FinishedAt); ok {
			fin.Retry, fin.DueAt = true, at
			return
		}
	}
	fin.CompleteTask = oneOffEnd(t, r, fin.Status)
}

// oneOffEnd is the status a one-off task takes when its scheduled run ends
// with status: COMPLETED after a success, FAILED otherwise; "" for any other
// run.
func oneOffEnd(t *sundial.Task, r *sundial.Run, status sundial.RunStatus) sundial.TaskStatus {
	if t == nil || !t.OneOff() || r.Trigger != sundial.TriggerSchedule || !status.Final() {
		return ""
	}
	if status == sundial.RunSuccess {
		return sundial.TaskCompleted
	}
	return sundial.TaskFailed
}

// queues reports whether t's fires wait in a queue for a free slot.
func queues(t *sundial.Task) bool {
	return t != nil && t.MaxConcurrency > 0 && t.ConcurrencyPolicy == sundial.ConcurrencyQueue
}

// slotFreed starts the oldest queued run of t (nil: a deleted task) after
// one of its active runs ended.
func (s *Scheduler) slotFreed(ctx context.Context, t *sundial.Task) {
	if queues(t) {
		s.startQueued(ctx, t)
	}
}

// callbackFailed stands for the HTTP status of a failure reported by a
// callback, for retryAt.
const callbackFailed = -1

// Complete ends the run of a callback whose token was issued for fence.
// A failure is retried when the task's retry policy has attempts left. A
// token of an earlier delivery, or a run already ended, is EConflict; the
// store applies both checks atomically.
func (s *Scheduler) Complete(ctx context.Context, r *sundial.Run, t *sundial.Task, fence int64, cb sundial.CallbackReport) (*sundial.Run, error) {
	if fence != r.Fence {
		return nil, superseded(r.ID)
	}
	now := time.Now()
	c := sundial.RunCompletion{ID: r.ID, Fence: fence, Status: cb.Status, Result: cb.Result,
		Error: cb.Failure(), Message: cb.Message, FinishedAt: now}
	if cb.Status == sundial.RunFailed && !cb.NoRetry && t != nil {
		if at, ok := s.retryAt(t, r, max(r.Deliveries, 1), sundial.RunFailed, callbackFailed, 0, now); ok {
			c.Retry, c.DueAt = true, at
		}
	}
	if !c.Retry {
		c.CompleteTask = oneOffEnd(t, r, cb.Status)
	}
	done, err := s.store.RunComplete(ctx, c)
	if err != nil {
		return nil, err
	}
	s.recordCompletion(done, t, c)
	s.slotFreed(ctx, t)
	return done, nil
}

// Progress saves what a long job reports about run r (its progress and a
// checkpoint to resume from) and extends the run's callback deadline.
func (s *Scheduler) Progress(ctx context.Context, r *sundial.Run, t *sundial.Task, fence int64, progress, checkpoint json.RawMessage) (*sundial.Run, error) {
	if fence != r.Fence {
		return nil, superseded(r.ID)
	}
	now := time.Now()
	p := sundial.RunProgress{ID: r.ID, Fence: fence, Progress: progress, Checkpoint: checkpoint, Now: now}
	if t != nil {
		p.DueAt = now.Add(s.callbackTimeout(t))
	}
	return s.store.RunProgress(ctx, p)
}

func superseded(id int64) error {
	return sundial.Errorf(sundial.EConflict, "fence",
		"run %d was delivered again since this token was issued: the callback is from a superseded delivery", id)
}

// recordCompletion records a run ended (or sent to retry) without a call
// of this node: a callback, an expired deadline, a cancel.
func (s *Scheduler) recordCompletion(r *sundial.Run, t *sundial.Task, c sundial.RunCompletion) {
	s.record(outcome{run: r, task: t, status: c.Status, retry: c.Retry, dueAt: c.DueAt, err: c.Error,
		trace: r.TraceID, attempt: r.Attempt, delivery: r.Deliveries})
}

// callbackLoop ends the ASYNC runs whose callback did not come in time:
// FAILED_TIMEOUT, or another delivery when the retry policy allows. Every
// node sweeps; the fence makes one of them win each run.
func (s *Scheduler) callbackLoop(ctx context.Context) {
	iv := s.cfg.CallbackSweep
	timer := time.NewTimer(iv)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if s.healthy.Load() {
			s.expireCallbacks(ctx)
		}
		timer.Reset(iv - iv/5 + time.Duration(randN(int64(iv/5)*2+1)))
	}
}

func (s *Scheduler) expireCallbacks(ctx context.Context) {
	const batch = 100
	for ctx.Err() == nil {
		now := time.Now()
		runs, tasks, err := s.store.RunCallbackExpired(ctx, now, batch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("find expired callbacks", "err", err)
			}
			return
		}
		for _, r := range runs {
			t := tasks[r.TaskID]
			c := sundial.RunCompletion{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailedTimeout,
				Error: "no callback before the deadline", FinishedAt: now}
			if t != nil {
				if at, ok := s.retryAt(t, r, max(r.Deliveries, 1), sundial.RunFailedTimeout, 0, 0, now); ok {
					c.Retry, c.DueAt = true, at
				} else {
					c.CompleteTask = oneOffEnd(t, r, sundial.RunFailedTimeout)
				}
			}
			done, err := s.store.RunComplete(ctx, c)
			if err != nil {
				if sundial.ErrorCode(err) != sundial.EConflict && ctx.Err() == nil {
					s.log.Error("expire callback", "run_id", r.ID, "err", err)
				}
				continue // ended meanwhile, by its callback or another node
			}
			s.recordCompletion(done, t, c)
			s.slotFreed(ctx, t)
		}
		if len(runs) < batch {
			return
		}
	}
}
