package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
	"github.com/sundialhq/sundial/store/internal/sqlstore"
	"github.com/sundialhq/sundial/store/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockKey is the advisory lock key Migrate takes: "Sundial" in
// ASCII. It is one key for the whole database, whatever the schema.
const migrateLockKey int64 = 0x53756e6469616c

// Options configure Open.
type Options struct {
	Logger *slog.Logger // nil: discard
	// MaxConns caps the connection pool; zero keeps the DSN's
	// pool_max_conns, or pgxpool's default (the larger of 4 and the number
	// of CPUs).
	MaxConns int
	// MaxIdleConns caps the connections kept open while idle: a
	// connection released while this many are idle is closed (releases at
	// the same instant may each keep theirs; ConnMaxIdleTime closes the
	// surplus). Zero: no cap but MaxConns.
	MaxIdleConns int
	// ConnMaxLifetime closes a connection this long after it was opened
	// (at its next release); zero keeps the DSN's pool_max_conn_lifetime,
	// or pgxpool's default (an hour).
	ConnMaxLifetime time.Duration
	// ConnMaxIdleTime closes a connection idle this long (pgxpool looks
	// every minute); zero keeps the DSN's pool_max_conn_idle_time, or
	// pgxpool's default (30 minutes).
	ConnMaxIdleTime time.Duration
	// ListenDSN is where the event relay LISTENs (see EventRelay): a
	// direct connection to the server when the DSN goes through a pooler
	// in transaction mode, which has no session to LISTEN on. Empty: the
	// DSN.
	ListenDSN string
	// Clock is the store's clock (nil: time.Now), for the times a Store
	// method records that its caller does not give (see sundial.Store).
	Clock func() time.Time
	// NoMigrate leaves the schema as it is: Open refuses a database whose
	// schema is not current (migrate.Check), changing nothing, instead of
	// migrating it.
	NoMigrate bool
}

// Store is a sundial.Store on a PostgreSQL database.
type Store struct {
	// Plain holds the plain methods.
	*sqlstore.Plain

	pool *pgxpool.Pool
	log  *slog.Logger
	// listen is the configuration of the event relay's connection.
	listen *pgx.ConnConfig
	clock  func() time.Time // Options.Clock
	// closed is set by Close: every error after it is EUnavailable.
	closed atomic.Bool
}

var _ sundial.Store = (*Store)(nil)

// Open connects to the database dsn names (a postgres:// URL or key=value
// string; pgx's pool settings and runtime parameters such as search_path
// are accepted), checks that it answers, and migrates it.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parser's message may quote the DSN, password included.
		return nil, errors.New("open postgres: the DSN is not a valid connection string")
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = int32(min(opts.MaxConns, 1<<30))
	}
	if opts.ConnMaxLifetime > 0 {
		cfg.MaxConnLifetime = opts.ConnMaxLifetime
	}
	if opts.ConnMaxIdleTime > 0 {
		cfg.MaxConnIdleTime = opts.ConnMaxIdleTime
	}
	// pgxpool keeps every released connection; past MaxIdleConns idle
	// ones, a released connection is closed instead.
	var pool *pgxpool.Pool
	if opts.MaxIdleConns > 0 {
		maxIdle := int32(min(opts.MaxIdleConns, 1<<30))
		cfg.AfterRelease = func(*pgx.Conn) bool { return pool.Stat().IdleConns() < maxIdle }
	}
	pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	s := &Store{pool: pool, log: opts.Logger.With("component", "store"), clock: opts.Clock, listen: cfg.ConnConfig}
	if opts.ListenDSN != "" {
		if s.listen, err = pgx.ParseConfig(opts.ListenDSN); err != nil {
			pool.Close()
			return nil, errors.New("open postgres: the listen DSN is not a valid connection string")
		}
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.Plain = sqlstore.New(poolDB{pool}, poolDB{pool}, queries, s.classify)
	if err := s.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if opts.NoMigrate {
		err = s.checkSchema(ctx)
	} else {
		err = s.Migrate(ctx)
	}
	if err != nil {
		pool.Close()
		return nil, pooledStatements(err)
	}
	return s, nil
}

// pooledStatements adds to err, when it says that a prepared statement
// was found where it should not be or not found where it should, what
// that means: a pooler in transaction mode lends each transaction another
// server session, and pgx's prepared statements do not follow.
func pooledStatements(err error) error {
	if c := pgCode(err); c == "42P05" || c == "26000" { // duplicate_prepared_statement, invalid_sql_statement_name
		return fmt.Errorf("%w (through a pooler in transaction mode, such as PgBouncer, "+
			"add default_query_exec_mode=cache_describe to the URL; see docs/deploy.md)", err)
	}
	return err
}

// checkSchema refuses a database whose schema is not current
// (migrate.Check), changing nothing.
func (s *Store) checkSchema(ctx context.Context) error {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	return migrate.Check(ctx, db, sub)
}

// Migrate applies the migrations the database has not had yet, each in a
// transaction that first takes an advisory lock, so that nodes starting at
// once apply each migration once. The lock ends with its transaction, so
// Migrate works through PgBouncer in transaction mode; it is the key a
// session lock of earlier versions took, so the two exclude each other
// during a rolling upgrade. It is idempotent; Open calls it, and so does
// `sundial migrate`.
func (s *Store) Migrate(ctx context.Context) (err error) {
	defer s.classify(&err)
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	d := migrate.Dialect{
		TxLock:      lockMigrations,
		Placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
	}
	if _, err := migrate.Up(ctx, db, sub, d, s.log); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// lockMigrations takes the migration lock until tx ends.
func lockMigrations(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey)
	return err
}

// Close releases the pool.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.pool.Close()
	return nil
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) (err error) {
	defer s.classify(&err)
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

// beginBatch returns a batch whose first statement begins a transaction,
// for inTx.
func beginBatch() *pgx.Batch {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{}) // READ COMMITTED, the server's default
	return b
}

// inTx sends b (made by beginBatch) in one round trip, runs fn in the
// transaction it began, and commits if both succeed.
func (s *Store) inTx(ctx context.Context, b *pgx.Batch, fn func(tx pgx.Tx) error) error {
	br := s.pool.SendBatch(ctx, b)
	tx := br.Tx()
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit; releases the connection
	if err := br.Close(); err != nil {
		return err
	}
	if fn != nil {
		if err := fn(tx); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// sendBatch sends b in one round trip and one implicit transaction, and
// runs its callbacks.
func sendBatch(ctx context.Context, q interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, b *pgx.Batch) error {
	return q.SendBatch(ctx, b).Close()
}

// customPlans makes the rest of the transaction plan each statement for its
// arguments. The batch statements join unnest(arrays) of one to thousands
// of elements; a generic plan assumes a few, and may rescan the unnest once
// per row it joins, quadratic in the batch. (The setting ends with the
// transaction, an implicit one included.)
const customPlans = `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`

// indexOrderPlans makes the rest of the transaction plan without a sort
// wherever another plan exists, and without JIT. PlanDue and RunClaimDue
// read their index (tasks_due, runs_unclaimed) in the order of their
// ORDER BY and stop at their LIMIT, whatever the statistics say. Right
// after a burst of tasks was created or of runs planned, before autovacuum
// has analyzed the table, the statistics still show few due rows, and the
// planner, expecting a handful, prefers a bitmap or runs_status_node scan
// and a sort of every due row: an on-disk sort of the whole burst for each
// batch of 500 or claim of 250. A sort with no alternative (the claim's of
// its runs by task) stays, at the cost enable_sort adds to it, which would
// otherwise make the server compile the statement (JIT) each time. (The
// settings end with the transaction, an implicit one included.)
const indexOrderPlans = `SELECT set_config('enable_sort', 'off', true), set_config('jit', 'off', true)`

// stmt is one statement of a batch that may be sent more than once (a
// pgx.Batch may not): its SQL, arguments, and what to do with its rows.
type stmt struct {
	sql  string
	args []any
	rows func(pgx.Rows) error
}

// batchOf returns a new batch of stmts, planned for their arguments
// (customPlans).
func batchOf(stmts []stmt) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(customPlans)
	for _, st := range stmts {
		q := b.Queue(st.sql, st.args...)
		if st.rows != nil {
			q.Query(st.rows)
		}
	}
	return b
}

// maxRetries is how often retry runs fn in all.
const maxRetries = 4

// retry runs fn again (up to maxRetries times in all) while it fails with
// a deadlock or serialisation failure: the server rolled the transaction
// back, so running it again is safe for fn without side effects.
func retry(ctx context.Context, fn func() error) error {
	var err error
	for range maxRetries {
		if err = fn(); !isRetryable(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// PostgreSQL error codes (SQLSTATE) the adapter acts on.
const (
	codeUniqueViolation      = "23505"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeNotInRepertoire      = "22021" // a NUL or invalid UTF-8 in text
	codeUntranslatable       = "22P05"
)

func pgCode(err error) string {
	if e, ok := errors.AsType[*pgconn.PgError](err); ok {
		return e.Code
	}
	return ""
}

func isRetryable(err error) bool {
	c := pgCode(err)
	return c == codeDeadlockDetected || c == codeSerializationFailure
}

// badText returns EInvalid for an error the server gives when a text value
// holds a NUL or invalid UTF-8, which SQLite stores but PostgreSQL refuses,
// and nil for any other error.
func badText(err error) *sundial.Error {
	if c := pgCode(err); c == codeNotInRepertoire || c == codeUntranslatable {
		return sundial.Errorf(sundial.EInvalid, "", "text contains a NUL character or invalid UTF-8")
	}
	return nil
}

// cleanText makes a diagnostic text (an error message, a reason) storable:
// NUL and invalid UTF-8 become U+FFFD.
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// dbNow is the server's clock in microseconds since the Unix epoch: the
// "database's clock" of node heartbeats. clock_timestamp() moves on within
// a transaction, unlike now().
const dbNow = `(extract(epoch from clock_timestamp()) * 1e6)::bigint`

// nullMicros is *t as a nullable time column holds it, nil for NULL: the
// form pgx binds in arrays.
func nullMicros(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := sqlrow.Micros(*t)
	return &v
}
