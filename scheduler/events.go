package scheduler

import (
	"time"

	"github.com/sundialhq/sundial"
)

// The live events (sundial.Event) of the changes of runs this node makes,
// handed to Config.Events by the component that made each change: a manual
// trigger's run (run.scheduled), admission's queued runs (run.queued), the
// pool's deliveries as each begins (run.started: a run committed RUNNING
// ahead of its instant starts at its instant), membership's redeliveries
// (run.retrying), and every outcome, whichever path recorded it, in the
// writer's record (run.waiting, run.retrying, run.interrupted,
// run.finished). A fire the planner plans has no event until it starts (or
// is queued, or skipped): a frequent task's fires are planned minutes
// ahead, many at a time, and unplanned again when the task changes. The
// changes a store makes inside another change (the queued runs a task's
// disabling skips, the runs of a node that stopped or died) have none of
// their own: see docs/design.md, "Live events".

// publishFunc hands events to Config.Events; it never blocks.
type publishFunc func(...sundial.Event)

// publishOrNone is f, or a function that drops the events when f is nil.
func publishOrNone(f func(...sundial.Event)) publishFunc {
	if f == nil {
		return func(...sundial.Event) {}
	}
	return f
}

// storedEvent is the event of run r of task t (nil: deleted) entering the
// status it has, as the store answered it, made by node.
func storedEvent(r *sundial.Run, t *sundial.Task, node string) sundial.Event {
	e := sundial.RunEvent(r, t, time.Now())
	e.NodeID = node
	return e
}

// startEvent is the event of delivery j beginning at started.
func startEvent(j job, started time.Time, node string) sundial.Event {
	r := j.run
	return sundial.Event{Kind: sundial.EventRunStarted, At: started, NodeID: node,
		Task: sundial.EventTask{ID: r.TaskID, Name: j.task.Name},
		Run: &sundial.EventRun{ID: r.ID, Status: sundial.RunRunning, Trigger: r.Trigger, ScheduledTime: r.ScheduledTime,
			Attempt: j.attempt, Delivery: j.deliveryNo(), StartedAt: &started}}
}

// outcomeEvent is the event of an outcome the store recorded: the run's
// new status (SCHEDULED again for a retry), with what the delivery that
// ended (if any) answered.
func outcomeEvent(o outcome, node string) sundial.Event {
	r := o.run
	status := o.status
	if o.retry {
		status = sundial.RunScheduled
	}
	e := sundial.Event{Kind: sundial.RunEventKind(status, o.retry), At: time.Now(), NodeID: node,
		Task: sundial.EventTask{ID: r.TaskID},
		Run: &sundial.EventRun{ID: r.ID, Status: status, Trigger: r.Trigger, ScheduledTime: r.ScheduledTime,
			Attempt: o.attempt, Delivery: o.delivery, HTTPStatus: o.httpStatus, Error: sundial.EventError(o.err)}}
	if o.task != nil {
		e.Task.Name = o.task.Name
	}
	if status == sundial.RunSkipped {
		e.Run.SkipReason, e.Run.MissedCount = r.SkipReason, r.MissedCount
	}
	if !o.started.IsZero() {
		started, finished := o.started, o.finished
		e.Run.StartedAt, e.Run.FinishedAt = &started, &finished
	} else if r.StartedAt != nil && status.Final() {
		e.Run.StartedAt = r.StartedAt
	}
	if e.Run.FinishedAt == nil && status.Final() {
		at := e.At
		if r.FinishedAt != nil {
			at = *r.FinishedAt
		}
		e.Run.FinishedAt = &at
	}
	if o.retry || status == sundial.RunWaitingCallback {
		due := o.dueAt
		e.Run.DueAt = &due
	}
	return e
}
