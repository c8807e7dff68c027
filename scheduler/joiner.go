package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sundialhq/sundial"
)

// joinStore is what the joiner needs of the store.
type joinStore interface {
	TaskList(ctx context.Context, f sundial.TaskListParams) ([]*sundial.Task, error)
	RunGet(ctx context.Context, id int64) (*sundial.Run, error)
	RunList(ctx context.Context, f sundial.RunListParams) ([]*sundial.Run, error)
	DepRecord(ctx context.Context, recs []sundial.DepRecordParams, now time.Time, decide sundial.JoinFunc) ([]*sundial.Run, error)
	DepExpire(ctx context.Context, now time.Time, limit int, decide sundial.JoinFunc) ([]*sundial.Run, error)
	DepPurge(ctx context.Context, before time.Time) (int, error)
}

// joinExpireBatch bounds the joins one deadline pass skips.
const joinExpireBatch = 100

// The sweep (see joiner): every joinSweepEvery a node reads the runs of
// each parent that ended since its last sweep, less joinSweepOverlap,
// and scheduled within joinSweepScheduled of now, and records those it
// did not record itself.
const (
	joinSweepEvery     = 30 * time.Second
	joinSweepOverlap   = time.Minute
	joinSweepScheduled = time.Hour
	joinSweepFirst     = 10 * time.Minute // how far back a node's first sweep looks
)

// joiner fires the children of tasks (sundial.Task.DependsOn; see
// dependency.go). It keeps an index of the tasks that have parents, by
// parent name, read from the store every DependencyRefresh and after a
// change of a task on this node (refresh). The writer hands it every
// outcome it records (observe): a final outcome of a run whose task has
// children makes it read the run as stored (its status, result and end)
// and record it on the join of each child (Store.DepRecord), whose rule
// (sundial.DecideJoin) makes the child's run when the join is satisfied.
// An outcome of a task without children costs a map lookup. Every
// DependencyRefresh it also skips the joins past their deadline
// (Store.DepExpire), and every hour purges the joins resolved longer
// ago than the run retention.
//
// Every joinSweepEvery it also sweeps: it reads the runs of each parent
// that ended lately and records those it has not recorded itself (a
// recorded outcome is recorded again as a no-op). So an outcome a node
// recorded just before it died, or recorded before it knew of a new
// child, still counts: the sweep of any node records it.
type joiner struct {
	store     joinStore
	log       *slog.Logger
	every     time.Duration
	retention time.Duration

	// made is told of each child run the joiner made (the claimer's
	// poke, the run's live event).
	made func(r *sundial.Run, t *sundial.Task)

	mu       sync.Mutex
	children map[string][]*sundial.Task // by parent name
	pending  []joinOutcome
	// recorded are the runs this node recorded, by the time it did, so
	// that its sweep passes over them; older ones are forgotten.
	recorded map[int64]time.Time
	swept    time.Time // when the last sweep began
	wake     chan struct{}
	reindex  chan struct{}
}

// joinOutcome is a parent's run that ended, to record.
type joinOutcome struct {
	task  *sundial.Task
	runID int64
}

func newJoiner(cfg Config, store joinStore, log *slog.Logger) *joiner {
	return &joiner{store: store, log: log.With("component", "joiner"), every: cfg.DependencyRefresh,
		retention: cfg.Retention, children: map[string][]*sundial.Task{}, recorded: map[int64]time.Time{},
		wake: make(chan struct{}, 1), reindex: make(chan struct{}, 1)}
}

// observe takes an outcome the store has recorded: a final one of a run
// whose task has children is recorded on their joins.
func (j *joiner) observe(o outcome) {
	if o.retry || !o.status.Final() || o.task == nil {
		return
	}
	j.mu.Lock()
	_, ok := j.children[o.task.Name]
	if ok {
		j.pending = append(j.pending, joinOutcome{task: o.task, runID: o.run.ID})
	}
	j.mu.Unlock()
	if ok {
		poke(j.wake)
	}
}

// refresh asks for the index to be read again: a task changed.
func (j *joiner) refresh() { poke(j.reindex) }

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Run records outcomes, reads the index and skips joins past their
// deadline until ctx is done.
func (j *joiner) Run(ctx context.Context) error {
	j.index(ctx)
	tick := time.NewTicker(j.every)
	defer tick.Stop()
	lastPurge := time.Now()
	lastSweep := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-j.wake:
			j.record(ctx)
		case <-j.reindex:
			j.index(ctx)
		case <-tick.C:
			j.index(ctx)
			j.expire(ctx)
			if time.Since(lastSweep) >= joinSweepEvery {
				lastSweep = time.Now()
				j.sweep(ctx)
			}
			if time.Since(lastPurge) >= time.Hour {
				lastPurge = time.Now()
				if _, err := j.store.DepPurge(ctx, time.Now().Add(-j.retention)); err != nil && ctx.Err() == nil {
					j.log.Error("purge joins", "err", err)
				}
			}
		}
	}
}

// index reads the tasks that have parents.
func (j *joiner) index(ctx context.Context) {
	children := map[string][]*sundial.Task{}
	var after int64
	for {
		page, err := j.store.TaskList(ctx, sundial.TaskListParams{HasParents: true, AfterID: after, Limit: 1000})
		if err != nil {
			if ctx.Err() == nil {
				j.log.Error("read the tasks with parents", "err", err)
			}
			return
		}
		for _, t := range page {
			for _, d := range t.DependsOn {
				children[d.Task] = append(children[d.Task], t)
			}
			after = t.ID
		}
		if len(page) < 1000 {
			break
		}
	}
	j.mu.Lock()
	j.children = children
	j.mu.Unlock()
}

// record records the outcomes handed to it on the joins of the children.
func (j *joiner) record(ctx context.Context) {
	j.mu.Lock()
	pending := j.pending
	j.pending = nil
	j.mu.Unlock()
	for _, o := range pending {
		r, err := j.store.RunGet(ctx, o.runID)
		if err != nil {
			if ctx.Err() == nil {
				j.log.Error("read a parent's run", "task_id", o.task.ID, "run_id", o.runID, "err", err)
			}
			continue
		}
		j.recordRun(ctx, o.task, r)
	}
}

// recordRun records the run r of the parent t, if it ended, on the joins
// of t's children.
func (j *joiner) recordRun(ctx context.Context, t *sundial.Task, r *sundial.Run) {
	if !r.Status.Final() {
		return // sent back for another delivery meanwhile
	}
	j.mu.Lock()
	children := j.children[t.Name]
	j.recorded[r.ID] = time.Now()
	j.mu.Unlock()
	p := sundial.ParentOutcomeOf(t, r)
	recs := make([]sundial.DepRecordParams, 0, len(children))
	for _, c := range children {
		recs = append(recs, sundial.DepRecordParams{ChildID: c.ID, LogicalTime: sundial.LogicalTime(r), Parent: p})
	}
	made, err := j.store.DepRecord(ctx, recs, time.Now(), sundial.DecideJoin)
	if err != nil && ctx.Err() == nil {
		j.log.Error("record a parent's run on its children's joins", "task_id", t.ID, "run_id", r.ID, "err", err)
		j.mu.Lock()
		delete(j.recorded, r.ID) // the next sweep tries again
		j.mu.Unlock()
	}
	j.told(made, children)
}

// sweep records the runs of the parents that ended since the last sweep
// (less an overlap) and that this node has not recorded.
func (j *joiner) sweep(ctx context.Context) {
	now := time.Now()
	since := now.Add(-joinSweepFirst)
	if !j.swept.IsZero() {
		since = j.swept.Add(-joinSweepOverlap)
	}
	j.swept = now
	j.mu.Lock()
	for id, at := range j.recorded {
		if at.Before(since) {
			delete(j.recorded, id)
		}
	}
	parents := make([]string, 0, len(j.children))
	for name := range j.children {
		parents = append(parents, name)
	}
	j.mu.Unlock()
	for _, name := range parents {
		ts, err := j.store.TaskList(ctx, sundial.TaskListParams{Name: name, Limit: 1})
		if err != nil || len(ts) == 0 {
			if err != nil && ctx.Err() == nil {
				j.log.Error("sweep: read a parent", "task_name", name, "err", err)
			}
			continue
		}
		runs, err := j.store.RunList(ctx, sundial.RunListParams{TaskID: ts[0].ID, Status: finalStatuses(),
			From: now.Add(-joinSweepScheduled), FinishedFrom: since, Limit: 1000})
		if err != nil {
			if ctx.Err() == nil {
				j.log.Error("sweep: read a parent's runs", "task_id", ts[0].ID, "err", err)
			}
			continue
		}
		for _, r := range runs {
			j.mu.Lock()
			_, done := j.recorded[r.ID]
			j.mu.Unlock()
			if !done {
				j.recordRun(ctx, ts[0], r)
			}
		}
	}
}

// finalStatuses are the statuses that end a run.
func finalStatuses() []sundial.RunStatus {
	var out []sundial.RunStatus
	for _, s := range sundial.RunStatuses() {
		if s.Final() {
			out = append(out, s)
		}
	}
	return out
}

// expire skips the joins past their deadline.
func (j *joiner) expire(ctx context.Context) {
	made, err := j.store.DepExpire(ctx, time.Now(), joinExpireBatch, sundial.DecideJoin)
	if err != nil && ctx.Err() == nil {
		j.log.Error("skip the joins past their deadline", "err", err)
	}
	j.mu.Lock()
	var all []*sundial.Task
	for _, cs := range j.children {
		all = append(all, cs...)
	}
	j.mu.Unlock()
	j.told(made, all)
}

// told logs the child runs made and hands them on.
func (j *joiner) told(made []*sundial.Run, children []*sundial.Task) {
	for _, r := range made {
		var t *sundial.Task
		for _, c := range children {
			if c.ID == r.TaskID {
				t = c
			}
		}
		j.log.Info("child fired by its parents", "task_id", r.TaskID, "run_id", r.ID, "status", r.Status,
			"skip_reason", r.SkipReason, "logical_time", r.ScheduledTime, "err_text", r.Error)
		if j.made != nil && t != nil {
			j.made(r, t)
		}
	}
}
