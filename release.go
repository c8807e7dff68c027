package sundial

import (
	"fmt"
	"strings"
	"time"
)

// What becomes of runs whose node gives them up: on its stop or death
// (Release), when they come too late to start (Unplan, UnplanMissed), and
// when a delivery cut off by a node's death is made again or not
// (Redeliver).

// Planned reports whether r is a fire its planner makes again if it is
// deleted: SCHEDULED, never delivered, and made by the planner
// (Trigger.Planned: not a manual or backfilled run, which no planner
// makes). Deleting it and rewinding its task (RunChanges.Rewind)
// hands it to the next planner pass, under its task's catch-up mode.
func (r *Run) Planned() bool {
	return r.Status == RunScheduled && r.Deliveries == 0 && r.Trigger.Planned()
}

// Missable reports whether RunUnplanMissed may delete r when it came too
// late to start: a Planned fire of the task's schedule (not a catch-up
// run, which is late by design), due before before.
func (r *Run) Missable(before time.Time) bool {
	return r.Planned() && r.Trigger == TriggerSchedule && r.DueAt.Before(before)
}

// ReleaseAction is what a release does to one run of the node that gives
// its runs up.
type ReleaseAction uint8

const (
	// ReleaseKeep leaves the run as it is: a QUEUED run (the queue is the
	// task's, drained by whichever node frees a slot), a WAITING_CALLBACK
	// run (its callback may come to any node), a final one.
	ReleaseKeep ReleaseAction = iota
	// ReleaseUnplan deletes a Planned fire and rewinds its task to it, so
	// that the next planner pass, on any node, plans it again.
	ReleaseUnplan
	// ReleaseHandBack gives a SCHEDULED run delivered before (waiting for
	// a retry, or redelivered), or a backfilled fire, back to no node, as
	// it is: no planner makes it again, and any node claims it when it is
	// due.
	ReleaseHandBack
	// ReleaseMisfire records a manual run never delivered, which no
	// planner makes again, as SKIPPED (MISFIRE), with the reason.
	ReleaseMisfire
	// ReleaseInterrupt makes a RUNNING run INTERRUPTED, with the reason
	// and a new fence (so that a late write of its former node is
	// refused), and records its delivery as an INTERRUPTED attempt of that
	// node. RunRedeliver then delivers it again, or fails it.
	ReleaseInterrupt
)

// ReleaseOf is what a release does to the run r of the node that held it.
func ReleaseOf(r *Run) ReleaseAction {
	switch {
	case r.Status == RunRunning:
		return ReleaseInterrupt
	case r.Status != RunScheduled:
		return ReleaseKeep
	case r.Deliveries > 0:
		return ReleaseHandBack
	case r.Trigger == TriggerManual:
		return ReleaseMisfire
	case !r.Trigger.Planned():
		// A backfilled fire: handed back as it is, any node claims it.
		return ReleaseHandBack
	}
	return ReleaseUnplan
}

// Release decides what becomes of the runs a node held when it gives them
// up at now, on its stop (RunRelease) or death (NodeReap), for the reason
// given: see ReleaseAction.
func Release(runs []*Run, reason string, now time.Time) RunChanges {
	var c RunChanges
	for _, r := range runs {
		switch ReleaseOf(r) {
		case ReleaseUnplan:
			c.unplan(r)
		case ReleaseHandBack:
			r.NodeID, r.UpdatedAt = "", now
			c.Update = append(c.Update, r)
		case ReleaseMisfire:
			r.Status, r.SkipReason, r.MissedCount, r.Error = RunSkipped, SkipMisfire, 1, reason
			r.FinishedAt, r.UpdatedAt = &now, now
			c.Update = append(c.Update, r)
		case ReleaseInterrupt:
			c.Attempts = append(c.Attempts, &Attempt{RunID: r.ID, Delivery: r.Deliveries, NodeID: r.NodeID,
				Status: RunInterrupted, Error: reason, StartedAt: copyTime(r.StartedAt), FinishedAt: now})
			r.Status, r.Error, r.FinishedAt, r.UpdatedAt = RunInterrupted, reason, &now, now
			r.Fence++
			c.Update = append(c.Update, r)
		}
	}
	return c
}

// UnplanMissed decides RunUnplanMissed: of runs (read under their locks,
// with their tasks, deleted ones too), each that is still Missable before
// before and that missed reports too late to start is missed. It is
// deleted, and its task rewound to it, so that the planner counts it with
// the fires it never planned, in one record. The planner counts every fire
// from a task's rewind point on, so a task is never rewound to a fire
// before one that was taken already: taken holds, per task, the latest
// scheduled time among its SCHEDULE runs later than its earliest missed
// run that are neither Planned nor a calendar's skip (a fire that went
// out, or was accounted for, while the earlier one waited: a claim that
// came late starts a fresh fire and leaves an older, missed one of the
// same task to the sweep). A missed run before that is decided on its own,
// at now, by its task's catch-up mode: under FULL it is due again at now,
// held by no node under a new fence, so that any node claims and delivers
// it late (its trigger, part of the fire's identity, stays SCHEDULE);
// otherwise it is recorded SKIPPED with reason MISFIRE.
func UnplanMissed(runs []*Run, tasks map[int64]*Task, before time.Time, taken map[int64]time.Time, now time.Time,
	missed func(*Run, *Task) bool) RunChanges {
	var c RunChanges
	for _, r := range runs {
		t := tasks[r.TaskID]
		if !r.Missable(before) || !missed(r, t) {
			continue
		}
		if at, ok := taken[r.TaskID]; !ok || !r.ScheduledTime.Before(at) {
			c.unplan(r)
			continue
		}
		if t != nil && t.CatchUpMode == CatchUpFull {
			r.DueAt, r.NodeID, r.UpdatedAt = now, "", now
			r.Fence++
		} else {
			r.Status, r.SkipReason, r.MissedCount = RunSkipped, SkipMisfire, 1
			r.Error = MissedBeforeTakenError
			r.FinishedAt, r.UpdatedAt = &now, now
		}
		c.Update = append(c.Update, r)
	}
	return c
}

// MissedBeforeTakenError is the Error of a fire recorded missed on its own
// by UnplanMissed: a later fire of its task had been taken already.
const MissedBeforeTakenError = "fire missed: it came too late to start, after a later fire of the task had started"

// RedeliveryRefused says why the INTERRUPTED run r is not delivered again
// (RunRedeliver), or "" if it is: its task was deleted (live is false), its
// cancellation was requested, or it has had maxDeliveries deliveries.
func RedeliveryRefused(r *Run, live bool, maxDeliveries int) string {
	switch {
	case !live:
		return "its task was deleted"
	case r.CancelRequested:
		return "its cancellation was requested"
	case r.Deliveries >= maxDeliveries:
		return fmt.Sprintf("no delivery left (%d of %d made)", r.Deliveries, maxDeliveries)
	}
	return ""
}

// RedeliveryError is the Error of an INTERRUPTED run that is not delivered
// again: the reason of its interruption, then why not.
func RedeliveryError(r *Run, why string) string {
	return strings.TrimPrefix(r.Error+"; "+why, "; ")
}

// Redeliver decides RunRedeliver for INTERRUPTED runs read under their
// locks, oldest first, with their tasks (deleted ones too; deleted says
// which are) at now. A run RedeliveryRefused refuses becomes FAILED,
// finished now, with its RedeliveryError, and a one-off task whose
// scheduled run it is fails with it (TaskEndOf). Up to limit of the others
// become SCHEDULED again, held by nodeID under a new fence, unfinished and
// due now, to be delivered again: they are returned in order. The rest
// stay for a later call.
func Redeliver(runs []*Run, tasks map[int64]*Task, deleted map[int64]bool, nodeID string,
	maxDeliveries, limit int, now time.Time) (again []*Run, c RunChanges) {
	for _, r := range runs {
		if r.Status != RunInterrupted {
			continue
		}
		t := tasks[r.TaskID]
		if why := RedeliveryRefused(r, t != nil && !deleted[r.TaskID], maxDeliveries); why != "" {
			r.Status, r.Error, r.FinishedAt, r.UpdatedAt = RunFailed, RedeliveryError(r, why), &now, now
			c.Update = append(c.Update, r)
			c.end(t, TaskEndOf(t, r, RunFailed), now)
			continue
		}
		if len(again) == limit {
			continue
		}
		r.Status, r.NodeID, r.FinishedAt, r.DueAt, r.UpdatedAt = RunScheduled, nodeID, nil, now, now
		r.Fence++
		c.Update = append(c.Update, r)
		again = append(again, r)
	}
	return again, c
}
