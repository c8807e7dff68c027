package sundial

import "testing"

// takeBackRuns are a task's runs as a change finds them, with the send
// cutoff at ts(1): each case of TakeBackOnUpdate and TakeBackOnDelete.
func takeBackRuns() map[string]*Run {
	committed := func(id int64, at int, mods ...func(*Run)) *Run {
		return aRun(RunRunning, append([]func(*Run){func(r *Run) {
			r.ID, r.ScheduledTime, r.DueAt, r.StartedAt, r.Deliveries = id, ts(at), ts(at), tp(at), 1
		}}, mods...)...)
	}
	return map[string]*Run{
		"planned":      aRun(RunScheduled, func(r *Run) { r.ID, r.NodeID = 1, "" }),
		"planned held": aRun(RunScheduled, func(r *Run) { r.ID = 2 }),
		"ahead":        committed(3, 5),
		"sending":      committed(4, 1), // at the cutoff: on its way
		"sent":         committed(5, -5),
		"redelivery":   committed(6, 5, func(r *Run) { r.Deliveries = 2 }),
		"manual ahead": committed(7, 5, func(r *Run) { r.Trigger = TriggerManual }),
		"retry held":   aRun(RunScheduled, func(r *Run) { r.ID, r.Deliveries, r.NodeID = 8, 1, "node-b" }),
		"retry free":   aRun(RunScheduled, func(r *Run) { r.ID, r.Deliveries, r.NodeID = 9, 1, "" }),
		"manual":       aRun(RunScheduled, func(r *Run) { r.ID, r.Trigger = 10, TriggerManual }),
		"queued":       aRun(RunQueued, func(r *Run) { r.ID = 11 }),
		"queued same":  aRun(RunQueued, func(r *Run) { r.ID, r.Priority = 12, 5 }),
	}
}

func TestTakeBackOnUpdate(t *testing.T) {
	cut, now := ts(1), ts(0)
	priority := func(r *Run) { r.Priority = 5 }
	handBack := func(deliveries int) func(r *Run) {
		return func(r *Run) {
			r.Status, r.NodeID, r.Fence, r.Deliveries, r.UpdatedAt = RunScheduled, "", 4, deliveries, now
			r.Priority = 5
		}
	}
	for _, enabled := range []bool{true, false} {
		tk := &Task{ID: 1, CronExpr: "* * * * * *", Priority: 5, Status: TaskEnabled}
		if !enabled {
			tk.Status = TaskDisabled
		}
		runs := takeBackRuns()
		before := takeBackRuns()
		var list []*Run
		for _, r := range runs {
			list = append(list, r)
		}
		c := TakeBackOnUpdate(tk, list, cut, now)

		deleted := map[int64]bool{}
		for _, r := range c.Delete {
			deleted[r.ID] = true
		}
		updated := map[int64]bool{}
		for _, r := range c.Update {
			updated[r.ID] = true
		}
		cancelled := func(r *Run) {
			r.Status, r.Error, r.FinishedAt, r.UpdatedAt = RunCanceled, DisabledRetryError, &now, now
		}
		skipped := func(r *Run) {
			r.Status, r.SkipReason, r.Error, r.FinishedAt, r.UpdatedAt = RunSkipped, SkipDisabled, DisabledQueuedError, &now, now
		}
		want := map[string][]func(*Run){
			"planned": nil, "planned held": nil, "ahead": nil, // deleted
			"sending": {}, "sent": {},
			"redelivery":   {handBack(1)},
			"manual ahead": {handBack(0)},
			"retry held":   {handBack(1)},
			"retry free":   {priority},
			"manual":       {priority},
			"queued":       {priority},
			"queued same":  {},
		}
		if !enabled {
			want["redelivery"] = append(want["redelivery"], cancelled)
			want["retry held"] = append(want["retry held"], cancelled)
			want["retry free"] = append(want["retry free"], cancelled)
			want["queued"] = append(want["queued"], skipped)
			want["queued same"] = append(want["queued same"], skipped)
		}
		for name, mods := range want {
			r := runs[name]
			if mods == nil {
				if !deleted[r.ID] {
					t.Errorf("enabled %v: %s not deleted", enabled, name)
				}
				continue
			}
			w := before[name]
			for _, m := range mods {
				m(w)
			}
			eqRunRule(t, name, r, w)
			if updated[r.ID] != (len(mods) > 0) {
				t.Errorf("enabled %v: %s updated %v, want %v", enabled, name, updated[r.ID], len(mods) > 0)
			}
		}
		if len(c.Delete) != 3 {
			t.Errorf("enabled %v: deleted %d runs, want 3", enabled, len(c.Delete))
		}
	}
}

func TestTakeBackOnDelete(t *testing.T) {
	cut, now := ts(1), ts(0)
	runs := takeBackRuns()
	before := takeBackRuns()
	var list []*Run
	for _, r := range runs {
		list = append(list, r)
	}
	c := TakeBackOnDelete(list, cut, now)
	gone := map[string]bool{"planned": true, "planned held": true, "ahead": true, "manual": true}
	deleted := map[int64]bool{}
	for _, r := range c.Delete {
		deleted[r.ID] = true
	}
	for name, r := range runs {
		w := before[name]
		switch {
		case gone[name]:
			if !deleted[r.ID] {
				t.Errorf("%s not deleted", name)
			}
			continue
		case name == "sending" || name == "sent":
		default:
			if w.Status == RunRunning {
				w.Deliveries--
			}
			w.Status, w.Error, w.FinishedAt, w.UpdatedAt = RunCanceled, DeletedTaskError, &now, now
		}
		eqRunRule(t, name, r, w)
	}
	if len(c.Delete) != len(gone) || len(c.Update) != 6 {
		t.Errorf("deleted %d, updated %d; want %d and 6", len(c.Delete), len(c.Update), len(gone))
	}
}
