package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
	"github.com/sundialhq/sundial/store/internal/sqlstore"
)

// depTx is a transaction as the shared joins take it.
type depTx struct{ tx pgx.Tx }

func (d depTx) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	rows, err := d.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (d depTx) QueryRow(ctx context.Context, q string, args ...any) sqlrow.Scanner {
	return noRows{d.tx.QueryRow(ctx, q, args...)}
}

func (d depTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	ct, err := d.tx.Exec(ctx, q, args...)
	return ct.RowsAffected(), err
}

// InsertRun inserts a run of a live task at its priority, as RunInsert
// does (runInsertSQL), in the transaction.
func (d depTx) InsertRun(ctx context.Context, r *sundial.Run) (bool, error) {
	var a runArrays
	a.add(r)
	var priority, id *int64
	if err := d.tx.QueryRow(ctx, runInsertSQL, append(a.args(), r.TaskID)...).Scan(&priority, &id); err != nil {
		return false, badTextOr(err)
	}
	if priority == nil || id == nil {
		return false, nil
	}
	r.ID, r.Priority = *id, int(*priority)
	return true, nil
}

// depInTx runs fn in a READ COMMITTED transaction, retried on a deadlock or
// a serialisation failure.
func (s *Store) depInTx(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return retry(ctx, func() error {
		tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{})
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
		if err := fn(depTx{tx}); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
}

// DepRecord implements sundial.Store.DepRecord.
func (s *Store) DepRecord(ctx context.Context, recs []sundial.DepRecordParams, now time.Time, decide sundial.JoinFunc) ([]*sundial.Run, error) {
	return s.DepRecordIn(ctx, s.depInTx, recs, now, decide)
}

// DepExpire implements sundial.Store.DepExpire.
func (s *Store) DepExpire(ctx context.Context, now time.Time, limit int, decide sundial.JoinFunc) ([]*sundial.Run, error) {
	return s.DepExpireIn(ctx, s.depInTx, now, limit, decide)
}
