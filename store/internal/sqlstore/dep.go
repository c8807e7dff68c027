package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// Tx is an adapter's write transaction as the shared transactional methods
// (the joins of dependencies) take it: its statements, and the adapter's
// own insert of a run.
type Tx interface {
	DB
	// InsertRun inserts r (prepared: sqlrow.PrepareNew) at its task's
	// priority, as the adapter's RunInsert does inside its transaction,
	// and sets its ID. It reports false, inserting nothing, when the task
	// is not live or already has a run with r's fire key.
	InsertRun(ctx context.Context, r *sundial.Run) (bool, error)
}

// InTx runs fn in one write transaction of the adapter, retried as the
// adapter retries its transactions (deadlocks, serialisation failures).
type InTx func(ctx context.Context, fn func(tx Tx) error) error

// depCols are the columns of a join, in the order of scanJoin.
const depCols = `child_id, logical_at, state, deadline_at, parents_json, run_id, created_at, updated_at`

// depQueries are the statements of the joins, in a dialect.
type depQueries struct {
	// make makes the join's row (WAITING, no parents) unless it exists;
	// lock reads and locks it.
	make, lock string
	// write writes a join back; drop deletes a join that recorded nothing.
	write, drop string
	// get reads a join; due reads the WAITING joins whose deadline passed,
	// oldest first, from dep_joins_waiting.
	get, due string
	// runByKey reads the ID of a task's run with a fire key.
	runByKey string
	// purge deletes the resolved joins not written since a time.
	purge string
}

func newDepQueries(d Dialect) depQueries {
	b := d.bind
	ignore := ` ON CONFLICT DO NOTHING`
	if d.Upsert != "" {
		ignore = ` ` + d.Upsert + ` child_id = child_id`
	}
	return depQueries{
		make: b(`INSERT INTO dep_joins (` + depCols + `) VALUES (?, ?, 'WAITING', 0, '[]', NULL, ?, ?)` + ignore),
		lock: b(`SELECT ` + depCols + ` FROM dep_joins WHERE child_id = ? AND logical_at = ?` + d.ForUpdate),
		write: b(`UPDATE dep_joins SET state = ?, deadline_at = ?, parents_json = ?, run_id = ?, updated_at = ?
			WHERE child_id = ? AND logical_at = ?`),
		drop: b(`DELETE FROM dep_joins WHERE child_id = ? AND logical_at = ?`),
		get:  b(`SELECT ` + depCols + ` FROM dep_joins WHERE child_id = ? AND logical_at = ?`),
		due: b(`SELECT child_id, logical_at FROM dep_joins` + d.hint("dep_joins_waiting") + `
			WHERE state = 'WAITING' AND deadline_at > 0 AND deadline_at <= ? ORDER BY deadline_at LIMIT ?`),
		runByKey: b(`SELECT id FROM runs WHERE task_id = ? AND fire_key = ?`),
		purge:    b(`DELETE FROM dep_joins WHERE state <> 'WAITING' AND updated_at < ?`),
	}
}

// scanJoin reads a row of depCols.
func scanJoin(sc sqlrow.Scanner) (*sundial.DepJoin, error) {
	var (
		j                                   sundial.DepJoin
		logical, deadline, created, updated int64
		state, parents                      string
		run                                 sql.NullInt64
	)
	if err := sc.Scan(&j.ChildID, &logical, &state, &deadline, &parents, &run, &created, &updated); err != nil {
		return nil, err
	}
	j.LogicalTime, j.State = sqlrow.FromMicros(logical), sundial.JoinState(state)
	if deadline > 0 {
		j.DeadlineAt = sqlrow.FromMicros(deadline)
	}
	j.RunID, j.CreatedAt, j.UpdatedAt = run.Int64, sqlrow.FromMicros(created), sqlrow.FromMicros(updated)
	if err := json.Unmarshal([]byte(parents), &j.Parents); err != nil {
		return nil, fmt.Errorf("decode the parents of join (%d, %d): %w", j.ChildID, logical, err)
	}
	return &j, nil
}

// DepRecordIn records parents' outcomes on their children's joins (see
// sundial.Store.DepRecord): a transaction per outcome, through tx.
func (p *Plain) DepRecordIn(ctx context.Context, tx InTx, recs []sundial.DepRecordParams, now time.Time, decide sundial.JoinFunc) (_ []*sundial.Run, err error) {
	defer p.classify(&err)
	now = sqlrow.Norm(now)
	var made []*sundial.Run
	for _, rec := range recs {
		rec.Parent.FinishedAt = sqlrow.Norm(rec.Parent.FinishedAt)
		var run *sundial.Run
		err := tx(ctx, func(tx Tx) error {
			run = nil
			if _, err := tx.Exec(ctx, p.dq.make, rec.ChildID, sqlrow.Micros(rec.LogicalTime), sqlrow.Micros(now), sqlrow.Micros(now)); err != nil {
				return err
			}
			var err error
			run, err = p.decideJoin(ctx, tx, rec.ChildID, rec.LogicalTime, &rec.Parent, now, decide)
			return err
		})
		if err != nil {
			return made, p.wrap(err, "record the outcome of run %d for task %d", rec.Parent.RunID, rec.ChildID)
		}
		if run != nil {
			made = append(made, run)
		}
	}
	return made, nil
}

// DepExpireIn applies the join deadline (see sundial.Store.DepExpire).
func (p *Plain) DepExpireIn(ctx context.Context, tx InTx, now time.Time, limit int, decide sundial.JoinFunc) (_ []*sundial.Run, err error) {
	defer p.classify(&err)
	now = sqlrow.Norm(now)
	type key struct{ child, logical int64 }
	rows, err := p.w.Query(ctx, p.dq.due, sqlrow.Micros(now), sqlrow.ClampLimit(limit))
	keys, err := scanAll(rows, err, func(sc sqlrow.Scanner) (key, error) {
		var k key
		return k, sc.Scan(&k.child, &k.logical)
	})
	if err != nil {
		return nil, p.wrap(err, "read the joins past their deadline")
	}
	var made []*sundial.Run
	for _, k := range keys {
		var run *sundial.Run
		err := tx(ctx, func(tx Tx) error {
			var err error
			run, err = p.decideJoin(ctx, tx, k.child, sqlrow.FromMicros(k.logical), nil, now, decide)
			return err
		})
		if err != nil {
			return made, p.wrap(err, "expire the join of task %d", k.child)
		}
		if run != nil {
			made = append(made, run)
		}
	}
	return made, nil
}

// decideJoin locks the join (child, logical), reads the child, calls
// decide and writes what it returned. It returns the run it inserted.
func (p *Plain) decideJoin(ctx context.Context, tx Tx, child int64, logical time.Time, par *sundial.ParentOutcome, now time.Time, decide sundial.JoinFunc) (*sundial.Run, error) {
	j, err := scanJoin(tx.QueryRow(ctx, p.dq.lock, child, sqlrow.Micros(logical)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // purged, or expired by another node
	}
	if err != nil {
		return nil, err
	}
	t, err := sqlrow.ScanTask(tx.QueryRow(ctx, p.q.TaskGet, child))
	if errors.Is(err, sql.ErrNoRows) {
		t, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	run, changed := decide(t, j, par, now)
	if len(j.Parents) == 0 && j.State == sundial.JoinWaiting {
		// Nothing recorded: the row made for this call goes.
		_, err := tx.Exec(ctx, p.dq.drop, child, sqlrow.Micros(logical))
		return nil, err
	}
	if run != nil {
		if err := sqlrow.PrepareNew(run, now); err != nil {
			return nil, err
		}
		ok, err := tx.InsertRun(ctx, run)
		if err != nil {
			return nil, err
		}
		if !ok {
			// The fire key is taken (the join was purged and made
			// again), or the child is gone: the join records the run
			// that has the key, if any.
			var id int64
			err := tx.QueryRow(ctx, p.dq.runByKey, child, run.FireKey).Scan(&id)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, err
			}
			j.RunID, run = id, nil
		} else {
			j.RunID = run.ID
		}
		changed = true
	}
	if !changed {
		return nil, nil
	}
	parents, err := json.Marshal(j.Parents)
	if err != nil {
		return nil, err
	}
	var deadline int64
	if !j.DeadlineAt.IsZero() {
		deadline = sqlrow.Micros(j.DeadlineAt)
	}
	_, err = tx.Exec(ctx, p.dq.write, string(j.State), deadline, string(parents), sqlrow.NullID(j.RunID), sqlrow.Micros(now),
		child, sqlrow.Micros(logical))
	return run, err
}

// DepJoinGet returns a join, or ENotFound.
func (p *Plain) DepJoinGet(ctx context.Context, child int64, logical time.Time) (_ *sundial.DepJoin, err error) {
	defer p.classify(&err)
	j, err := scanJoin(p.r.QueryRow(ctx, p.dq.get, child, sqlrow.Micros(sqlrow.Norm(logical))))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("", "task %d has no join at %s", child, logical.UTC().Format(time.RFC3339))
	}
	if err != nil {
		return nil, p.wrap(err, "get the join of task %d", child)
	}
	return j, nil
}

// DepPurge deletes the joins resolved (not WAITING) and not written since
// before, and reports how many it deleted.
func (p *Plain) DepPurge(ctx context.Context, before time.Time) (_ int, err error) {
	defer p.classify(&err)
	n, err := p.w.Exec(ctx, p.dq.purge, sqlrow.Micros(before))
	if err != nil {
		return 0, p.wrap(err, "purge joins")
	}
	return int(n), nil
}
