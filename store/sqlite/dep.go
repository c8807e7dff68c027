package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlstore"
)

// depTx is a write transaction as the shared joins take it.
type depTx struct {
	sqlstore.DB
	tx *sql.Tx
	s  *Store
}

// InsertRun inserts a run of a live task, at its priority, as RunInsert.
func (d depTx) InsertRun(ctx context.Context, r *sundial.Run) (bool, error) {
	err := d.tx.QueryRowContext(ctx, `SELECT priority FROM tasks WHERE id = ? AND deleted = 0`, r.TaskID).Scan(&r.Priority)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return insertRun(ctx, d.tx.StmtContext(ctx, d.s.st.runInsert), r)
}

// depInTx runs fn in a write transaction, which holds the whole database.
func (s *Store) depInTx(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return s.write(ctx, func(tx *sql.Tx) error { return fn(depTx{DB: sqlstore.SQLTx(tx), tx: tx, s: s}) })
}

// DepRecord implements sundial.Store.DepRecord.
func (s *Store) DepRecord(ctx context.Context, recs []sundial.DepRecordParams, now time.Time, decide sundial.JoinFunc) ([]*sundial.Run, error) {
	return s.DepRecordIn(ctx, s.depInTx, recs, now, decide)
}

// DepExpire implements sundial.Store.DepExpire.
func (s *Store) DepExpire(ctx context.Context, now time.Time, limit int, decide sundial.JoinFunc) ([]*sundial.Run, error) {
	return s.DepExpireIn(ctx, s.depInTx, now, limit, decide)
}
