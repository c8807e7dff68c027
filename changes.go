package sundial

import (
	"slices"
	"time"
)

// RunChanges are the writes a rule decides for runs that a store read under
// their locks (Release, Unplan, Redeliver, Cancel, TakeBack, ...), for the
// store to make in the same transaction. The rule changed the runs it
// lists in Update in place; the store writes them back as they are.
type RunChanges struct {
	// Delete are runs to delete: planned fires unplanned (see Rewind),
	// fires taken back before they were sent.
	Delete []*Run
	// Update are runs to write back as the rule left them.
	Update []*Run
	// Attempts are deliveries that ended, to record.
	Attempts []*Attempt
	// Rewind holds, per task, the earliest fire among the runs deleted as
	// unplanned: the task's NextFireTime moves back to it when that is
	// earlier (Task.Rewind), so that the planner plans those fires again.
	// The task's later fires still Planned (never delivered) are deleted
	// with it (RewoundAway), so that the planner plans the task anew from
	// there: a fire it counts as missed is then never also a run planned
	// before (a frequent task is planned up to minutes ahead; see
	// Store.PlanDue).
	Rewind map[int64]time.Time
	// Ends are tasks that end with a run (Task.End), each once.
	Ends []TaskEnd
}

// RewoundAway reports whether the store deletes r, a run not in Delete,
// with its task's rewind: r is Planned and later than the fire its task is
// rewound to.
func (c RunChanges) RewoundAway(r *Run) bool {
	at, ok := c.Rewind[r.TaskID]
	return ok && r.Planned() && r.ScheduledTime.After(at)
}

// TaskEnd ends a task with a run (Task.End): with Status, at At.
type TaskEnd struct {
	TaskID int64
	Status TaskStatus
	At     time.Time
}

// Empty reports whether c writes nothing.
func (c *RunChanges) Empty() bool {
	return len(c.Delete) == 0 && len(c.Update) == 0 && len(c.Attempts) == 0 && len(c.Rewind) == 0 && len(c.Ends) == 0
}

// DeleteIDs returns the IDs of the runs to delete, in order.
func (c *RunChanges) DeleteIDs() []int64 {
	ids := make([]int64, len(c.Delete))
	for i, r := range c.Delete {
		ids[i] = r.ID
	}
	return ids
}

// Add adds the changes o to c, as if one rule had decided both: a task is
// rewound to the earliest fire of either, and ended once.
func (c *RunChanges) Add(o RunChanges) {
	c.Delete = append(c.Delete, o.Delete...)
	c.Update = append(c.Update, o.Update...)
	c.Attempts = append(c.Attempts, o.Attempts...)
	for task, at := range o.Rewind {
		if c.Rewind == nil {
			c.Rewind = map[int64]time.Time{}
		}
		if cur, ok := c.Rewind[task]; !ok || at.Before(cur) {
			c.Rewind[task] = at
		}
	}
	for _, e := range o.Ends {
		if !slices.ContainsFunc(c.Ends, func(d TaskEnd) bool { return d.TaskID == e.TaskID }) {
			c.Ends = append(c.Ends, e)
		}
	}
}

// unplan deletes the planned fire r and rewinds its task to it.
func (c *RunChanges) unplan(r *Run) {
	c.Delete = append(c.Delete, r)
	if c.Rewind == nil {
		c.Rewind = map[int64]time.Time{}
	}
	if at, ok := c.Rewind[r.TaskID]; !ok || r.ScheduledTime.Before(at) {
		c.Rewind[r.TaskID] = r.ScheduledTime
	}
}

// end ends task t with status at at if it is Endable, once: a later end of
// the same task would find it ended.
func (c *RunChanges) end(t *Task, status TaskStatus, at time.Time) {
	if status == "" || t == nil || !t.Endable() {
		return
	}
	for _, e := range c.Ends {
		if e.TaskID == t.ID {
			return
		}
	}
	c.Ends = append(c.Ends, TaskEnd{TaskID: t.ID, Status: status, At: at})
}
