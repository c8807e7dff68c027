package sundial

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// The rules of one delivery of a run, from its start (RunStart, a claim
// that starts it) to its outcome (RunFinish, a callback's RunComplete) and
// the reports in between (RunProgress, RunCheckSend). Each store applies
// them; where a hot path's SQL expresses one for speed, the conformance
// suite (store/storetest) holds that SQL to the function here.

// CutResponseBody keeps at most MaxResponseBody bytes of a target's answer,
// not splitting a UTF-8 sequence: what a run and its attempt keep of it.
func CutResponseBody(b string) string {
	if len(b) <= MaxResponseBody {
		return b
	}
	n := MaxResponseBody
	for n > 0 && n > MaxResponseBody-utf8.UTFMax && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// StartDelivery starts the next delivery of r at at: RUNNING, attempt
// number attempt, the trace ID given, one more delivery, and nothing left on
// the run of the previous delivery's answer, error or callback message,
// which belong to that delivery's attempt; nor AttemptOnRun, which a run
// that may start never has (only a final run has it). Its UpdatedAt is the
// caller's to set.
func (r *Run) StartDelivery(attempt int, at time.Time, traceID string) {
	r.Status, r.Attempt, r.TraceID = RunRunning, attempt, traceID
	r.StartedAt = &at
	r.Deliveries++
	r.HTTPStatus, r.ResponseBody, r.Error, r.Message = 0, "", "", ""
	r.AttemptOnRun = false
}

// Applies reports whether the start s applies to r: r is SCHEDULED under
// s's fence.
func (s *RunStartParams) Applies(r *Run) bool { return r.Fence == s.Fence && r.Status == RunScheduled }

// Apply starts r as RunStart does (see StartDelivery), updated at its
// start.
func (s *RunStartParams) Apply(r *Run) {
	r.StartDelivery(s.Attempt, s.StartedAt, s.TraceID)
	r.UpdatedAt = s.StartedAt
}

// Unclaimed reports whether RunClaimDue may claim r by until: SCHEDULED,
// held by no node, and due at or before until.
func (r *Run) Unclaimed(until time.Time) bool {
	return r.Status == RunScheduled && r.NodeID == "" && !r.DueAt.After(until)
}

// ClaimFor gives r to nodeID at now, as a claim does (RunClaimDue,
// RunClaim): under a new fence, so that its former holder's writes are
// refused.
func (r *Run) ClaimFor(nodeID string, now time.Time) {
	r.NodeID, r.Fence, r.UpdatedAt = nodeID, r.Fence+1, now
}

// Claimable reports whether RunClaim may take over r named by ref: r is
// under ref's fence and still waits for admission.
func (ref RunRef) Claimable(r *Run) bool { return r.Fence == ref.Fence && r.Status.Waiting() }

// Starts reports whether a claim starts r at once: see ClaimStartParams.
func (c ClaimStartParams) Starts(r *Run) bool {
	return !c.By.IsZero() && !r.DueAt.After(c.By) &&
		(r.Deliveries > 0 || (r.StartAhead && !r.ScheduledTime.Before(c.FreshAfter)))
}

// Claim gives the unclaimed run r to nodeID at now (ClaimFor), and starts
// it when c Starts it, as RunStart would: attempt at least 1, started at
// the later of its due time and now, with traceID.
func (c ClaimStartParams) Claim(r *Run, nodeID string, now time.Time, traceID string) {
	start := c.Starts(r)
	r.ClaimFor(nodeID, now)
	if !start {
		return
	}
	at := r.DueAt
	if now.After(at) {
		at = now
	}
	r.StartDelivery(max(r.Attempt, 1), at, traceID)
}

// CheckSend is RunCheckSend's verdict on a run committed ahead under
// fence, found as r (nil: gone): send it if it is still RUNNING under that
// fence, unless its cancellation was requested.
func CheckSend(fence int64, r *Run) SendCheck {
	switch {
	case r == nil || r.Fence != fence || r.Status != RunRunning:
		return SendDrop
	case r.CancelRequested:
		return SendCancel
	}
	return SendGo
}

// FinishFrom returns the statuses from which a delivery's outcome with
// status to moves a run (RunFinish): RUNNING, WAITING_CALLBACK or both, by
// the state machine. It is empty for a status no outcome gives: SCHEDULED
// (a retry is an outcome with Retry), QUEUED, SKIPPED.
func FinishFrom(to RunStatus) []RunStatus {
	var from []RunStatus
	for _, f := range []RunStatus{RunRunning, RunWaitingCallback} {
		if finishes(f, to) {
			from = append(from, f)
		}
	}
	return from
}

// finishes reports whether an outcome with status to moves a run from
// status from.
func finishes(from, to RunStatus) bool {
	return from.Active() && to != RunScheduled && CanTransition(from, to)
}

// Check refuses an outcome no run may reach (EConflict: see FinishFrom),
// and a task end that is none (EInvalid: see CheckTaskEnd).
func (f *RunFinishParams) Check() error {
	if !finishes(RunRunning, f.Status) && !finishes(RunWaitingCallback, f.Status) {
		return Errorf(EConflict, "status", "run %d cannot finish as %q", f.ID, f.Status)
	}
	if f.CompleteTask != "" {
		return CheckTaskEnd(f.CompleteTask)
	}
	return nil
}

// Applies reports whether the outcome f applies to r: r is under f's fence,
// in a status f.Status is reached from.
func (f *RunFinishParams) Applies(r *Run) bool {
	return r.Fence == f.Fence && finishes(r.Status, f.Status)
}

// AttemptOnRun reports whether the outcome f of a RUNNING run's delivery
// ends the run for good: a final status (from RUNNING: SUCCESS, FAILED,
// TIMEOUT, CANCELED), no retry. The run then records that delivery's attempt
// itself (Run.AttemptOnRun, Run.OwnAttempt), and a store writes no
// attempt row for it: a fire delivered once writes none. Any other
// outcome (a retry, WAITING_CALLBACK, INTERRUPTED) leaves the run to
// change again, and its attempt is a row.
func (f *RunFinishParams) AttemptOnRun() bool { return !f.Retry && f.Status.Final() }

// Apply records the outcome f on r, to which it applies, as RunFinish does,
// with now as the time of an outcome without FinishedAt:
//   - the outcome's answer (cut to MaxResponseBody), error, start (when
//     given) and finish become the run's, updated at the finish;
//   - with Retry the run goes back to SCHEDULED, held by no node,
//     unfinished, due at DueAt (kept when zero), to be claimed by any node
//     when due; its fence stays, the next claim bumps it;
//   - a WAITING_CALLBACK outcome's DueAt (kept when zero) is the callback
//     deadline.
//
// It returns the attempt that records the delivery the outcome ends, with
// the outcome's status (a retry's included) and r's node before the retry:
// nil for the outcome of a WAITING_CALLBACK run (its callback), whose call
// was recorded when it was answered. When f.AttemptOnRun, the attempt is
// r's own (r.AttemptOnRun is set, and r.OwnAttempt returns it): the store
// keeps it on the run, not in a row.
func (f *RunFinishParams) Apply(r *Run, now time.Time) *Attempt {
	ended := now
	if !f.FinishedAt.IsZero() {
		ended = f.FinishedAt
	}
	was, node := r.Status, r.NodeID
	if !f.StartedAt.IsZero() {
		started := f.StartedAt
		r.StartedAt = &started
	}
	r.HTTPStatus, r.ResponseBody, r.Error, r.UpdatedAt = f.HTTPStatus, CutResponseBody(f.ResponseBody), f.Error, ended
	if (f.Retry || f.Status == RunWaitingCallback) && !f.DueAt.IsZero() {
		r.DueAt = f.DueAt
	}
	r.Status, r.FinishedAt = f.Status, nil
	if !f.FinishedAt.IsZero() {
		fin := f.FinishedAt
		r.FinishedAt = &fin
	}
	if f.Retry {
		r.Status, r.NodeID, r.FinishedAt = RunScheduled, "", nil
	}
	if was != RunRunning {
		return nil
	}
	r.AttemptOnRun = f.AttemptOnRun()
	return &Attempt{RunID: r.ID, Delivery: r.Deliveries, NodeID: node, Status: f.Status, HTTPStatus: f.HTTPStatus,
		Error: f.Error, ResponseBody: r.ResponseBody, StartedAt: copyTime(r.StartedAt), FinishedAt: ended}
}

// OwnAttempt is the attempt r records itself (AttemptOnRun): its last
// delivery, as its outcome left the run: numbered by its deliveries, with
// its node, status, answer, error and start, finished at its finish (the
// time of its outcome, UpdatedAt, when it has none). It is nil when r does
// not have AttemptOnRun. A store's RunAttempts reads the same columns.
func (r *Run) OwnAttempt() *Attempt {
	if !r.AttemptOnRun {
		return nil
	}
	ended := r.UpdatedAt
	if r.FinishedAt != nil {
		ended = *r.FinishedAt
	}
	return &Attempt{RunID: r.ID, Delivery: r.Deliveries, NodeID: r.NodeID, Status: r.Status, HTTPStatus: r.HTTPStatus,
		Error: r.Error, ResponseBody: r.ResponseBody, StartedAt: copyTime(r.StartedAt), FinishedAt: ended}
}

// CheckReport refuses a report on r from the delivery under fence (a
// callback, a progress report) that r no longer takes: one from another
// delivery (EConflict, field fence), or one when no delivery is under way
// (EConflict, field status).
func (r *Run) CheckReport(fence int64) error {
	switch {
	case r.Fence != fence:
		return Errorf(EConflict, "fence", "run %d was delivered again since: this callback is from a superseded delivery", r.ID)
	case r.Status.Active():
		return nil
	case r.Status.Final():
		return Errorf(EConflict, "status", "run %d is already %s", r.ID, r.Status)
	}
	return Errorf(EConflict, "status", "run %d is %s, not running or waiting for a callback", r.ID, r.Status)
}

// Check refuses a callback's outcome that does not end a run (EInvalid:
// SUCCESS, FAILED, FAILED_TIMEOUT or CANCELED do), and a task end that is
// none (see CheckTaskEnd).
func (c *RunCompleteParams) Check() error {
	switch c.Status {
	case RunSuccess, RunFailed, RunFailedTimeout, RunCanceled:
	default:
		return Errorf(EInvalid, "status",
			"run %d cannot be completed as %q: give SUCCESS, FAILED, FAILED_TIMEOUT or CANCELED", c.ID, c.Status)
	}
	if c.CompleteTask != "" {
		return CheckTaskEnd(c.CompleteTask)
	}
	return nil
}

// Apply records the callback's outcome c on r, a run that takes it (see
// CheckReport), as RunComplete does, with now as the time of an outcome
// without FinishedAt: r ends with c's status, finished then, or with Retry
// goes back to SCHEDULED (held by no node, unfinished, due at DueAt, kept
// when zero); either way it keeps c's error, result and message.
//
// The delivery's attempt takes the outcome. A RUNNING run's call had no
// answer recorded yet: its attempt is new (fresh is true), numbered by its
// deliveries, with its node and start. A WAITING_CALLBACK run's attempt was
// recorded when its call was answered: the latest attempt of the run takes
// the returned one's Status, Error and FinishedAt (fresh is false).
func (c *RunCompleteParams) Apply(r *Run, now time.Time) (a *Attempt, fresh bool) {
	ended := now
	if !c.FinishedAt.IsZero() {
		ended = c.FinishedAt
	}
	a = &Attempt{RunID: r.ID, Status: c.Status, Error: c.Error, FinishedAt: ended}
	if fresh = r.Status == RunRunning; fresh {
		a.Delivery, a.NodeID, a.StartedAt = r.Deliveries, r.NodeID, copyTime(r.StartedAt)
	}
	r.Error, r.Result, r.Message, r.UpdatedAt = c.Error, c.Result, c.Message, ended
	if c.Retry {
		r.Status, r.NodeID, r.FinishedAt = RunScheduled, "", nil
		if !c.DueAt.IsZero() {
			r.DueAt = c.DueAt
		}
		return a, fresh
	}
	r.Status, r.FinishedAt = c.Status, &ended
	return a, fresh
}

// Apply records the progress report p on r (see CheckReport), as
// RunProgress does, at now (p.Now, or the store's clock when p has none):
// its progress and checkpoint, each kept when p has none, and its callback
// deadline moved to p.DueAt when r is WAITING_CALLBACK and that is later.
func (p *RunProgressParams) Apply(r *Run, now time.Time) {
	if p.Progress != nil {
		r.Progress = p.Progress
	}
	if p.Checkpoint != nil {
		r.Checkpoint = p.Checkpoint
	}
	if r.Status == RunWaitingCallback && p.DueAt.After(r.DueAt) {
		r.DueAt = p.DueAt
	}
	r.UpdatedAt = now
}

// copyTime returns a copy of *t, or nil.
func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// String names the verdict, for logs and test failures.
func (c SendCheck) String() string {
	switch c {
	case SendDrop:
		return "drop"
	case SendGo:
		return "go"
	case SendCancel:
		return "cancel"
	}
	return fmt.Sprintf("SendCheck(%d)", uint8(c))
}
