package scheduler

import "github.com/sundialhq/sundial"

// Admit applies a task's policies to a run whose time has come, in the order
// of seed 001 section 5: overlap, then failure (which fixes the attempt
// number), then concurrency. It is pure: the store calls it with the task's
// state read under the task's lock and applies the result.
//
// A manual trigger is subject to the concurrency policy only, as seed 001
// says; a QUEUED run coming back when a slot may have freed has been through
// the policies already and only waits for the slot.
func Admit(s sundial.AdmitState) sundial.Admission {
	t, r := s.Task, s.Run
	if r.Status == sundial.RunQueued {
		if t.MaxConcurrency > 0 && s.Active >= t.MaxConcurrency {
			return sundial.Admission{Status: sundial.RunQueued, Attempt: r.Attempt}
		}
		return sundial.Admission{Status: sundial.RunRunning, Attempt: r.Attempt}
	}
	if r.Trigger == sundial.TriggerManual {
		return concurrency(s, sundial.Admission{Status: sundial.RunRunning, Attempt: 1}, false)
	}

	last := s.LastEffective
	failedPrev := last != nil && last.Status.Failure()
	nextAttempt := 1
	if failedPrev {
		nextAttempt = last.Attempt + 1
	}

	// Overlap: an earlier run is still pending or running.
	var a sundial.Admission
	ignoreConcurrency := false
	if len(s.Pending) > 0 {
		switch t.OverlapAction {
		case sundial.OverlapSkip:
			return skip(sundial.SkipOverlap, nextAttempt)
		case sundial.OverlapCancelPrev:
			for _, p := range s.Pending {
				if p.Status.Active() {
					a.Cancel = append(a.Cancel, p.ID)
				}
			}
		case sundial.OverlapParallel:
			ignoreConcurrency = true
		}
	}

	// Failure: the last effective run failed.
	a.Attempt = 1
	if failedPrev {
		switch t.FailureAction {
		case sundial.FailureSkip:
			if !skippedAfterFailure(s) {
				d := skip(sundial.SkipFailure, last.Attempt+1)
				d.Cancel = a.Cancel
				return d
			}
			a.Attempt = last.Attempt + 2
		case sundial.FailureRetry:
			a.Attempt = last.Attempt + 1
		case sundial.FailureRunNew:
			a.Attempt = 1
		}
	}
	a.Status = sundial.RunRunning
	return concurrency(s, a, ignoreConcurrency)
}

// concurrency applies max_concurrency and its policy to a decision to run.
// Runs being cancelled by the same decision no longer count as active.
// Under QUEUE the queue is first in, first out: while runs wait in it, a new
// fire joins them even if a slot is free (the oldest queued run takes it).
func concurrency(s sundial.AdmitState, a sundial.Admission, ignore bool) sundial.Admission {
	t := s.Task
	active := s.Active - len(a.Cancel)
	queueAhead := t.ConcurrencyPolicy == sundial.ConcurrencyQueue && s.Queued > 0
	if ignore || t.MaxConcurrency <= 0 || (active < t.MaxConcurrency && !queueAhead) {
		return a
	}
	switch t.ConcurrencyPolicy {
	case sundial.ConcurrencySkip:
		a.Status, a.SkipReason = sundial.RunSkipped, sundial.SkipConcurrency
	case sundial.ConcurrencyQueue:
		if s.Queued >= t.MaxQueue {
			a.Status, a.SkipReason = sundial.RunSkipped, sundial.SkipQueueFull
		} else {
			a.Status = sundial.RunQueued
		}
	}
	return a
}

// skippedAfterFailure reports whether a skip has already been recorded for
// the last failure, with its attempt raised (seed 001: the SKIP failure
// action skips once, then runs with attempt previous + 2).
func skippedAfterFailure(s sundial.AdmitState) bool {
	want := s.LastEffective.Attempt + 1
	for _, r := range s.SkipsSinceLast {
		switch r.SkipReason {
		case sundial.SkipFailure, sundial.SkipConcurrency, sundial.SkipOverlap:
			if r.Attempt == want {
				return true
			}
		}
	}
	return false
}

func skip(reason sundial.SkipReason, attempt int) sundial.Admission {
	return sundial.Admission{Status: sundial.RunSkipped, SkipReason: reason, Attempt: attempt}
}

// unconstrained reports whether the policies of t can only ever say "run,
// attempt 1" for a scheduled fire: no overlap or failure handling and no
// concurrency limit. Such fires skip the admission transaction and are
// committed as RUNNING just ahead of their instant.
func unconstrained(t *sundial.Task) bool {
	if t.FailureAction != sundial.FailureRunNew {
		return false
	}
	switch t.OverlapAction {
	case sundial.OverlapParallel:
		return true
	case sundial.OverlapAllow:
		return t.MaxConcurrency <= 0 || t.ConcurrencyPolicy == sundial.ConcurrencyParallel
	}
	return false
}

// queues reports whether t's fires wait in a queue for a free slot (nil: a
// deleted task, which queues nothing).
func queues(t *sundial.Task) bool {
	return t != nil && t.MaxConcurrency > 0 && t.ConcurrencyPolicy == sundial.ConcurrencyQueue
}
