package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// TaskGet returns a live task, or ENotFound.
func (p *Plain) TaskGet(ctx context.Context, id int64) (_ *sundial.Task, err error) {
	defer p.classify(&err)
	t, err := sqlrow.ScanTask(p.r.QueryRow(ctx, p.q.TaskGet, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("", "task %d not found", id)
	}
	if err != nil {
		return nil, p.wrap(err, "get task %d", id)
	}
	return t, nil
}

// TaskExists reports whether a task, live or deleted, has the ID id.
func (p *Plain) TaskExists(ctx context.Context, id int64) (_ bool, err error) {
	defer p.classify(&err)
	var one int
	err = p.r.QueryRow(ctx, p.q.TaskExists, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, p.wrap(err, "look up task %d", id)
	}
	return true, nil
}

// TaskList returns live tasks ordered by ID.
func (p *Plain) TaskList(ctx context.Context, f sundial.TaskListParams) (_ []*sundial.Task, err error) {
	defer p.classify(&err)
	q, args := p.q.TaskList(f)
	rows, err := p.r.Query(ctx, q, args...)
	out, err := scanAll(rows, err, sqlrow.ScanTask)
	if err != nil {
		return nil, p.wrap(err, "list tasks")
	}
	return out, nil
}

// SettingGet returns a setting's value, and whether it has one.
func (p *Plain) SettingGet(ctx context.Context, name string) (_ string, ok bool, err error) {
	defer p.classify(&err)
	var v string
	err = p.r.QueryRow(ctx, p.q.SettingGet, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, p.wrap(err, "get setting %s", name)
	}
	return v, true, nil
}

// RunGet returns a run, or ENotFound.
func (p *Plain) RunGet(ctx context.Context, id int64) (_ *sundial.Run, err error) {
	defer p.classify(&err)
	r, err := sqlrow.ScanRun(p.r.QueryRow(ctx, p.q.RunGet, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("", "run %d not found", id)
	}
	if err != nil {
		return nil, p.wrap(err, "get run %d", id)
	}
	return r, nil
}

// RunList returns runs newest first: by scheduled time, then ID.
func (p *Plain) RunList(ctx context.Context, f sundial.RunListParams) (_ []*sundial.Run, err error) {
	defer p.classify(&err)
	q, args := p.q.RunList(f)
	out, err := p.runs(ctx, q, args...)
	if err != nil {
		return nil, p.wrap(err, "list runs")
	}
	return out, nil
}

// RunAttempts returns the attempts recorded for a run, oldest first: the
// rows of run_attempts, then the run's own attempt if it has one
// (sundial.Run.OwnAttempt), in one statement; none (an empty slice) for a
// run that has none or does not exist.
func (p *Plain) RunAttempts(ctx context.Context, runID int64) (_ []*sundial.Attempt, err error) {
	defer p.classify(&err)
	rows, err := p.r.Query(ctx, p.q.RunAttempts, runID, runID)
	out, err := scanAll(rows, err, sqlrow.ScanAttempt)
	if err != nil {
		return nil, p.wrap(err, "list attempts of run %d", runID)
	}
	if out == nil {
		out = []*sundial.Attempt{}
	}
	return out, nil
}

// RunUpcoming returns up to limit (sqlrow.ClampLimit) upcoming runs of a
// task (SCHEDULED, never delivered), by scheduled time then ID.
func (p *Plain) RunUpcoming(ctx context.Context, taskID int64, limit int) (_ []*sundial.Run, err error) {
	defer p.classify(&err)
	out, err := p.runs(ctx, p.q.RunUpcoming, taskID, sqlrow.ClampLimit(limit))
	if err != nil {
		return nil, p.wrap(err, "list upcoming runs of task %d", taskID)
	}
	return out, nil
}

// RunQueuedNext returns the oldest (by scheduled time, then ID) QUEUED run
// of a task, or nil.
func (p *Plain) RunQueuedNext(ctx context.Context, taskID int64) (_ *sundial.Run, err error) {
	defer p.classify(&err)
	r, err := sqlrow.ScanRun(p.r.QueryRow(ctx, p.q.RunQueuedNext, taskID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, p.wrap(err, "get next queued run of task %d", taskID)
	}
	return r, nil
}

// RunsOwned returns the SCHEDULED, QUEUED and RUNNING runs owned by nodeID,
// by scheduled time.
func (p *Plain) RunsOwned(ctx context.Context, nodeID string) (_ []*sundial.Run, err error) {
	defer p.classify(&err)
	out, err := p.runs(ctx, p.q.RunsOwned, nodeID)
	if err != nil {
		return nil, p.wrap(err, "list runs of node %s", nodeID)
	}
	return out, nil
}

// RunCancelRequested returns, by ID, the RUNNING and WAITING_CALLBACK runs
// held by nodeID whose cancellation was requested.
func (p *Plain) RunCancelRequested(ctx context.Context, nodeID string) (_ []int64, err error) {
	defer p.classify(&err)
	rows, err := p.r.Query(ctx, p.q.RunCancelRequested, nodeID)
	ids, err := scanAll(rows, err, func(sc sqlrow.Scanner) (id int64, err error) { return id, sc.Scan(&id) })
	if err != nil {
		return nil, p.wrap(err, "list cancellations of node %s", nodeID)
	}
	return ids, nil
}

// RunFindStuck returns up to limit (sqlrow.ClampLimit) SCHEDULED runs due
// (due_at) before dueBefore that nodeID holds, that no node holds, or
// whose node is not ALIVE (including a node with no row in nodes), oldest
// (by due time, then ID) first. It takes no lock: the caller claims what
// it finds with RunClaim, whose fences settle any race.
func (p *Plain) RunFindStuck(ctx context.Context, nodeID string, dueBefore time.Time, limit int) (_ []*sundial.Run, err error) {
	defer p.classify(&err)
	out, err := p.runs(ctx, p.q.RunFindStuck, sqlrow.Micros(dueBefore), nodeID, sqlrow.ClampLimit(limit))
	if err != nil {
		return nil, p.wrap(err, "find stuck runs for node %s", nodeID)
	}
	return out, nil
}

// RunLongRunning returns up to limit (sqlrow.ClampLimit) RUNNING runs
// started at or before startedBefore, longest running first.
func (p *Plain) RunLongRunning(ctx context.Context, startedBefore time.Time, limit int) (_ []*sundial.Run, err error) {
	defer p.classify(&err)
	out, err := p.runs(ctx, p.q.RunLongRunning, sqlrow.Micros(startedBefore), sqlrow.ClampLimit(limit))
	if err != nil {
		return nil, p.wrap(err, "list long running runs")
	}
	return out, nil
}

// runs reads the runs a read statement returns.
func (p *Plain) runs(ctx context.Context, q string, args ...any) ([]*sundial.Run, error) {
	rows, err := p.r.Query(ctx, q, args...)
	return scanAll(rows, err, sqlrow.ScanRun)
}

// NodeLeave marks a node LEFT; an unknown node is ENotFound.
func (p *Plain) NodeLeave(ctx context.Context, id string) (err error) {
	defer p.classify(&err)
	n, err := p.w.Exec(ctx, p.q.NodeLeave, id)
	if err != nil {
		return p.wrap(err, "leave node %s", id)
	}
	if n == 0 {
		return sqlrow.NotFound("", "node %s not found", id)
	}
	return nil
}

// NodeList returns every node, newest (by start time) first.
func (p *Plain) NodeList(ctx context.Context) (_ []*sundial.Node, err error) {
	defer p.classify(&err)
	rows, err := p.r.Query(ctx, p.q.NodeList)
	out, err := scanAll(rows, err, scanNode)
	if err != nil {
		return nil, p.wrap(err, "list nodes")
	}
	return out, nil
}

func scanNode(sc sqlrow.Scanner) (*sundial.Node, error) {
	var (
		n           sundial.Node
		started, hb int64
	)
	if err := sc.Scan(&n.ID, &n.Host, &n.PID, &n.Address, &n.State, &started, &hb); err != nil {
		return nil, err
	}
	n.StartedAt, n.HeartbeatAt = sqlrow.FromMicros(started), sqlrow.FromMicros(hb)
	return &n, nil
}

// NodePrune deletes the LEFT and DEAD nodes whose last heartbeat is before
// before.
func (p *Plain) NodePrune(ctx context.Context, before time.Time) (_ int, err error) {
	defer p.classify(&err)
	n, err := p.w.Exec(ctx, p.q.NodePrune, sqlrow.Micros(before))
	if err != nil {
		return 0, p.wrap(err, "prune nodes")
	}
	return int(n), nil
}
