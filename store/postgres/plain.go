package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundialhq/sundial/store/internal/sqlrow"
	"github.com/sundialhq/sundial/store/internal/sqlstore"
)

// queries are the plain methods' statements in PostgreSQL's dialect.
var queries = sqlstore.NewQueries(sqlstore.Dialect{
	Placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
	// deleted = false is NOT deleted to the planner, which then matches
	// the partial indexes on live tasks.
	False: "false",
	True:  "true",
	// Case-sensitive and free of LIKE's wildcards.
	HasPrefix: func(col, p string, arg func(any) string) string {
		return `starts_with(` + col + `, ` + arg(p) + `)`
	},
	// lower() of the C collation folds A-Z only, as SQLite's does.
	Contains: func(col, s string, arg func(any) string) string {
		return `strpos(lower(` + col + ` COLLATE "C"), lower(` + arg(s) + ` COLLATE "C")) > 0`
	},
	Label: func(col, key string, arg func(any) string) string {
		return `(` + col + `::jsonb ->> ` + arg(key) + `::text)`
	},
	Err:       badTextOr,
	Duplicate: func(err error) bool { return pgCode(err) == codeUniqueViolation },
	ForUpdate: ` FOR UPDATE`,
})

// poolDB is the pool as the plain methods take it (sqlstore.DB).
type poolDB struct{ pool *pgxpool.Pool }

func (d poolDB) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (d poolDB) QueryRow(ctx context.Context, q string, args ...any) sqlrow.Scanner {
	return noRows{d.pool.QueryRow(ctx, q, args...)}
}

func (d poolDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	ct, err := d.pool.Exec(ctx, q, args...)
	return ct.RowsAffected(), err
}

// noRows is a pgx.Row whose Scan returns sql.ErrNoRows for no row, as
// sqlstore.DB's QueryRow does.
type noRows struct{ pgx.Row }

func (r noRows) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}

// InTx runs fn in one transaction of the pool (sqlstore.Txer).
func (d poolDB) InTx(ctx context.Context, fn func(sqlstore.DB) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return fn(txDB{tx}) })
}

// txDB is a pgx transaction as the plain methods take it.
type txDB struct{ tx pgx.Tx }

func (d txDB) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	rows, err := d.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (d txDB) QueryRow(ctx context.Context, q string, args ...any) sqlrow.Scanner {
	return noRows{d.tx.QueryRow(ctx, q, args...)}
}

func (d txDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	ct, err := d.tx.Exec(ctx, q, args...)
	return ct.RowsAffected(), err
}
