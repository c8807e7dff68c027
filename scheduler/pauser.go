package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sundialhq/sundial"
)

// pauseStore is what the pauser needs of the store.
type pauseStore interface {
	TaskGet(ctx context.Context, id int64) (*sundial.Task, error)
	TaskUpdate(ctx context.Context, t *sundial.Task, now time.Time) error
	RunList(ctx context.Context, f sundial.RunListParams) ([]*sundial.Run, error)
}

// pauseAttempts bounds the tries of a pause whose task changed meanwhile.
const pauseAttempts = 3

// pauser applies the tasks' pause_after_failures (sundial.AutoPause). The
// writer hands it every outcome it records (observe); for a run of a task
// with pause_after_failures that failed for good, it reads the task's
// latest runs that count from the database, which every node writes, and
// disables the task when they all failed, as a change of the task under
// its version: of two nodes that decide at once, one disables it and the
// other finds it disabled. A success costs nothing: it is not looked at.
type pauser struct {
	store pauseStore
	log   *slog.Logger
	// paused, when set, is told of each pause: the hook the alerting of
	// a pause plugs into (Config.OnAutoPause). It must not block long.
	paused func(sundial.AutoPaused)
	// changed is told of each task paused (the planner's poke).
	changed func()

	mu      sync.Mutex
	pending map[int64]bool // tasks to look at
	wake    chan struct{}
}

func newPauser(cfg Config, store pauseStore, log *slog.Logger) *pauser {
	return &pauser{store: store, log: log.With("component", "pauser"), paused: cfg.OnAutoPause,
		pending: map[int64]bool{}, wake: make(chan struct{}, 1)}
}

// observe takes an outcome the store has recorded: a run of a task with
// pause_after_failures that failed for good (a dead letter; not a retry,
// not a cancel) makes the pauser look at the task.
func (p *pauser) observe(o outcome) {
	if o.retry || !o.status.DeadLetter() || o.task == nil || o.task.PauseAfterFailures <= 0 {
		return
	}
	p.mu.Lock()
	p.pending[o.run.TaskID] = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run looks at the tasks handed to it until ctx is done.
func (p *pauser) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		}
		p.mu.Lock()
		ids := make([]int64, 0, len(p.pending))
		for id := range p.pending {
			ids = append(ids, id)
		}
		clear(p.pending)
		p.mu.Unlock()
		for _, id := range ids {
			if err := p.check(ctx, id); err != nil && ctx.Err() == nil {
				p.log.Error("auto-pause: check task", "task_id", id, "err", err)
			}
		}
	}
}

// check pauses task id if its latest runs say so.
func (p *pauser) check(ctx context.Context, id int64) error {
	for attempt := 1; ; attempt++ {
		t, err := p.store.TaskGet(ctx, id)
		if sundial.ErrorCode(err) == sundial.ENotFound {
			return nil
		}
		if err != nil {
			return err
		}
		if t.Status != sundial.TaskEnabled || t.PauseAfterFailures <= 0 {
			return nil
		}
		// The runs that ended since the task last changed: enabling it
		// again (or editing it) starts the count again.
		latest, err := p.store.RunList(ctx, sundial.RunListParams{TaskID: id, Status: sundial.AutoPauseCounted(),
			FinishedFrom: t.UpdatedAt, Limit: t.PauseAfterFailures})
		if err != nil {
			return err
		}
		reason, ok := sundial.AutoPause(t, latest)
		if !ok {
			return nil
		}
		now := time.Now()
		prev := *t
		t.Status = sundial.TaskDisabled
		if err := t.NoteDisabled(&prev, &reason, sundial.AutoPauseBy, now); err != nil {
			return err
		}
		t.NextFireTime = t.FirstFire(now)
		err = p.store.TaskUpdate(ctx, t, now)
		if sundial.ErrorCode(err) == sundial.EConflict && attempt < pauseAttempts {
			continue // changed meanwhile (another node paused it?): look again
		}
		if err != nil {
			return err
		}
		p.log.Warn("task paused after consecutive failures", "task_id", t.ID, "task_name", t.Name,
			"failures", t.PauseAfterFailures, "reason", reason)
		if p.changed != nil {
			p.changed()
		}
		if p.paused != nil {
			p.paused(sundial.AutoPaused{Task: t, Runs: latest[:t.PauseAfterFailures], At: now})
		}
		return nil
	}
}
