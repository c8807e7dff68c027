package scheduler

import (
	"context"
	"time"

	"github.com/sundialhq/sundial"
)

// Backfill makes the runs of the backfilled fires of task t at times
// (oldest first: sundial.Task.BackfillTimes): each SCHEDULED, due now and
// held by no node (sundial.BackfillRun), so that the claims of any node
// take them, oldest first, and admit them under the task's policies as
// they admit a scheduled fire. It returns the run made for each time, nil
// for a time that had a backfilled run already (another backfill of the
// same range made it meanwhile: the fire key is unique per task).
func (s *Scheduler) Backfill(ctx context.Context, t *sundial.Task, times []time.Time) ([]*sundial.Run, error) {
	if !s.Ready() {
		return nil, &sundial.Error{Code: sundial.EUnavailable,
			Message: "this node is stopping or has lost its cluster membership; try again shortly"}
	}
	runs := make([]*sundial.Run, len(times))
	made := false
	defer func() {
		if made {
			s.claimer.poke()
		}
	}()
	for i, at := range times {
		r := sundial.BackfillRun(t, at, time.Now())
		err := s.store.RunInsert(ctx, r)
		if sundial.ErrorCode(err) == sundial.EConflict {
			continue // backfilled already: the fire key is taken
		}
		if err != nil {
			return runs, err
		}
		runs[i], made = r, true
		s.publish(storedEvent(r, t, s.cfg.Node.ID))
	}
	return runs, nil
}
