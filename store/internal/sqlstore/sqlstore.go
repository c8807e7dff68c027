// Package sqlstore holds the Store methods the SQL adapters share: the
// plain reads and writes (a task, a run or a node by ID, the lists, the
// sweeps of nodes that are gone) whose SQL differs between the databases
// only in what a Dialect says. It owns their statements (Queries) and the
// seam they run through (DB). The hot paths (planning, claiming, starting,
// finishing, admitting, the pre-send check) keep hand-tuned SQL in each
// adapter.
package sqlstore

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// DB is what the plain methods need of a database: a *sql.DB through SQL,
// or a pgx pool through the PostgreSQL adapter's wrapper.
type DB interface {
	// Query runs a statement that returns rows.
	Query(ctx context.Context, q string, args ...any) (Rows, error)
	// QueryRow runs a statement that returns at most one row; its Scan
	// returns sql.ErrNoRows for none.
	QueryRow(ctx context.Context, q string, args ...any) sqlrow.Scanner
	// Exec runs a statement and returns the number of rows it changed.
	Exec(ctx context.Context, q string, args ...any) (int64, error)
}

// Rows are the rows of a query: *sql.Rows (through SQL) and pgx.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// SQL is a database/sql handle as a DB.
func SQL(db *sql.DB) DB { return sqlDB{db} }

// SQLTx is a database/sql transaction as a DB.
func SQLTx(tx *sql.Tx) DB { return sqlDB{tx} }

// sqlHandle is what *sql.DB and *sql.Tx share.
type sqlHandle interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

type sqlDB struct{ db sqlHandle }

func (d sqlDB) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (d sqlDB) QueryRow(ctx context.Context, q string, args ...any) sqlrow.Scanner {
	return d.db.QueryRowContext(ctx, q, args...)
}

func (d sqlDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := d.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// sqlRows are *sql.Rows as Rows: the error of Close is that of Err.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// Dialect is what sets a database's SQL apart in the plain statements.
type Dialect struct {
	// Placeholder marks the arguments: the statements are written with
	// "?", numbered for a database that numbers them.
	Placeholder sqlrow.Placeholder
	// False and True are the literals a boolean column (deleted,
	// cancel_requested) is compared with: 0 and 1, or false and true.
	False, True string
	// Hint returns what follows a table's name to make the database read
	// it through the named index, where its optimizer left alone would
	// scan or sort (each use says why): MySQL's FORCE INDEX. Nil for none.
	Hint func(index string) string
	// Equal returns the condition that the text column col holds v
	// exactly, v bound with arg. Nil: col = v AND col <> '', whose
	// literal term lets a partial index of the non-empty values serve it.
	Equal func(col, v string, arg func(any) string) string
	// Same returns the condition that the text column col holds v
	// exactly, whatever v is (empty, or ending in spaces), v bound with
	// arg: the compare of a compare-and-swap. Nil: col = v, which is
	// exact where text compares byte for byte without padding.
	Same func(col, v string, arg func(any) string) string
	// HasPrefix returns the condition that the text column col starts
	// with p, case-sensitive and with no wildcard, p bound with arg.
	HasPrefix func(col, p string, arg func(any) string) string
	// Contains returns the condition that the text column col holds s,
	// letters A-Z matching in either case and no wildcard, s bound with
	// arg.
	Contains func(col, s string, arg func(any) string) string
	// Label returns the expression of the value of the label key (its
	// JSON path bound with arg) in the task row's labels_json column (col,
	// which may be qualified): the value as text, NULL when the task has
	// no such label. Selectors compare it (see selectorCond).
	Label func(col, key string, arg func(any) string) string
	// Err returns the *sundial.Error of a driver error that the client's
	// input caused (PostgreSQL's refusal of text it cannot hold), or err
	// as it is. Nil: every error as it is.
	Err func(err error) error
	// Duplicate reports whether err is the refusal of a row that a unique
	// index already holds. Nil: none is recognised.
	Duplicate func(err error) bool
	// ForUpdate follows a SELECT that locks the rows it reads for the
	// rest of the transaction: " FOR UPDATE"; "" where a write
	// transaction holds the whole database (SQLite).
	ForUpdate string
	// Upsert, when set, begins the clause of an INSERT that leaves a row
	// a unique key already holds alone, followed by a no-op assignment:
	// MySQL's "ON DUPLICATE KEY UPDATE". "": ON CONFLICT DO NOTHING.
	Upsert string
}

// bind numbers the "?" of q as the dialect marks arguments.
func (d *Dialect) bind(q string) string {
	if d.Placeholder(1) == "?" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c != '?' {
			b.WriteRune(c)
			continue
		}
		n++
		b.WriteString(d.Placeholder(n))
	}
	return b.String()
}

// hint is Hint of index, or nothing.
func (d *Dialect) hint(index string) string {
	if d.Hint == nil {
		return ""
	}
	return d.Hint(index)
}

// Plain is the plain methods of a sundial.Store, for an adapter to embed.
// Each classifies its error as the adapter does (classify).
type Plain struct {
	r, w     DB
	q        *Queries
	tq       tokenQueries
	dq       depQueries
	cq       calendarQueries
	classify func(*error)
}

// New returns the plain methods on the databases r (for reads) and w (for
// writes; the same as r but for SQLite, whose writer is one connection),
// with the statements q and the adapter's error classification.
func New(r, w DB, q *Queries, classify func(*error)) *Plain {
	return &Plain{r: r, w: w, q: q, tq: newTokenQueries(q.d), dq: newDepQueries(q.d), cq: newCalendarQueries(q.d), classify: classify}
}

// wrap is sqlrow.Wrap of the dialect's reading of err.
func (p *Plain) wrap(err error, format string, args ...any) error {
	if err != nil && p.q.d.Err != nil {
		err = p.q.d.Err(err)
	}
	return sqlrow.Wrap(err, format, args...)
}

// scanAll reads the rows a query returned with scan, and closes them. It
// passes on the query's error.
func scanAll[T any](rows Rows, err error, scan func(sqlrow.Scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Txer is a DB that can run statements in one transaction: the few plain
// methods that write more than one row at once (the alerts' incidents and
// their notifications) need it.
type Txer interface {
	// InTx runs fn on a DB of one transaction, committed when fn returns
	// nil and rolled back otherwise.
	InTx(ctx context.Context, fn func(DB) error) error
}

// InTx runs fn in a database/sql transaction; on a DB that is one
// already (SQLTx), in it.
func (d sqlDB) InTx(ctx context.Context, fn func(DB) error) error {
	db, ok := d.db.(*sql.DB)
	if !ok {
		return fn(d)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(sqlDB{tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
