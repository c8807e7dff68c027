// Package sqlite implements sundial.Store on an embedded SQLite file (the
// pure-Go modernc.org/sqlite driver, no cgo): Sundial's single-node database.
// It owns the SQLite schema and its migrations (migrations/*.sql), the
// connection set-up, and the SQL behind every Store method.
//
// SQLite has one writer. The Store keeps two pools on the same file in WAL
// mode: a single write connection whose transactions begin IMMEDIATE, so
// writes are serialised in this process and locked against other processes
// from their first statement, and a pool of read-only connections that read
// concurrently with it. A write transaction therefore holds every task's
// lock at once, which is what PlanDue and RunAdmit need.
//
// Times are stored as BIGINT microseconds since the Unix epoch (UTC). The
// "database's clock" is this process's clock.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
	"github.com/sundialhq/sundial/store/internal/sqlstore"
	"github.com/sundialhq/sundial/store/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// DefaultBusyTimeout is how long a statement waits for another process's
// lock on the file when Options.BusyTimeout is zero.
const DefaultBusyTimeout = 5 * time.Second

// Options configure Open.
type Options struct {
	Logger *slog.Logger // nil: discard
	// BusyTimeout is how long a statement waits for a lock held by another
	// process (another Sundial, or `sundial migrate`).
	BusyTimeout time.Duration
	// ReadConns caps the read pool; zero: GOMAXPROCS, at least 4.
	ReadConns int
	// ReadIdleConns caps the read connections kept open while idle;
	// zero: ReadConns.
	ReadIdleConns int
	// Clock is the store's clock (nil: time.Now), for the times a Store
	// method records that its caller does not give (see sundial.Store).
	Clock func() time.Time
	// NoMigrate leaves the schema as it is: Open refuses a file that does
	// not exist or whose schema is not current (migrate.Check), changing
	// nothing, instead of making or migrating it.
	NoMigrate bool
}

// Store is a sundial.Store on one SQLite file.
type Store struct {
	// Plain holds the plain methods: reads on r, writes on w.
	*sqlstore.Plain

	w     *sql.DB // one connection; BEGIN IMMEDIATE
	r     *sql.DB // read-only connections
	log   *slog.Logger
	st    *stmts
	clock func() time.Time // Options.Clock, also the "database's clock" of node liveness
	rows  rowCounts        // the rows w changed (RowsWritten)
	// closed is set by Close: every error after it is EUnavailable.
	closed atomic.Bool
}

var _ sundial.Store = (*Store)(nil)

// Open opens the database file at path, creating it if needed, sets it up
// (WAL, synchronous=NORMAL, foreign keys, busy timeout) and migrates it.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || path == ":memory:" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open sqlite: %q is not a database file name", path)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = max(4, runtime.GOMAXPROCS(0))
	}
	s := &Store{log: opts.Logger.With("component", "store"), clock: opts.Clock}
	if s.clock == nil {
		s.clock = time.Now
	}

	if opts.NoMigrate {
		if err := checkSchema(ctx, path, opts.BusyTimeout); err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
	}
	// A new database file is made readable by its owner only; SQLite
	// gives its -wal and -shm files the database file's mode.
	// A file made before that, or by someone else, is left as it is, with
	// a warning when other users may read it.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	} else if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		s.log.Warn("the database file may be read by other users of this machine, who would find the run history, "+
			"the callback secret and the tokens' hashes in it (secrets are sealed): chmod 600 it",
			"path", path, "mode", fmt.Sprintf("%#o", fi.Mode().Perm()))
	}
	w := sql.OpenDB(newWriteConnector(dsn(path, opts.BusyTimeout, false), &s.rows))
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s.w = w
	// The write connection turns on WAL before any reader opens the file.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}

	r, err := sql.Open("sqlite", dsn(path, opts.BusyTimeout, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	r.SetMaxOpenConns(opts.ReadConns)
	if opts.ReadIdleConns <= 0 {
		opts.ReadIdleConns = opts.ReadConns
	}
	r.SetMaxIdleConns(min(opts.ReadIdleConns, opts.ReadConns))
	s.r = r
	s.Plain = sqlstore.New(sqlstore.SQL(r), sqlstore.SQL(w), queries, s.classify)

	if !opts.NoMigrate {
		if err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if s.st, err = prepare(ctx, w); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// queries are the plain methods' statements in SQLite's dialect.
var queries = sqlstore.NewQueries(sqlstore.Dialect{
	Placeholder: sqlrow.Question,
	False:       "0",
	True:        "1",
	// Case-sensitive and free of LIKE's wildcards.
	HasPrefix: func(col, p string, arg func(any) string) string {
		return `substr(` + col + `, 1, length(` + arg(p) + `)) = ` + arg(p)
	},
	Contains: func(col, s string, arg func(any) string) string {
		return `instr(lower(` + col + `), lower(` + arg(s) + `)) > 0`
	},
	// The label's JSON path, its key quoted: a key holds no '"'.
	Label: func(col, key string, arg func(any) string) string {
		return `json_extract(` + col + `, ` + arg(`$."`+key+`"`) + `)`
	},
	Duplicate: isUniqueViolation,
})

func dsn(path string, busy time.Duration, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Set("_txlock", "immediate")
	}
	return path + "?" + q.Encode()
}

// Migrate applies the migrations the database has not had yet. It is
// idempotent; Open calls it, and so does `sundial migrate`.
func (s *Store) Migrate(ctx context.Context) (err error) {
	defer s.classify(&err)
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// Each migration's transaction begins IMMEDIATE on the write pool, which
	// locks out other processes: no separate lock is needed.
	if _, err := migrate.Up(ctx, s.w, sub, migrate.Dialect{}, s.log); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// checkSchema refuses the file at path unless it exists and its schema is
// current, reading it on a query-only connection.
func checkSchema(ctx context.Context, path string, busy time.Duration) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", dsn(path, busy, true))
	if err != nil {
		return err
	}
	defer db.Close()
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	return migrate.Check(ctx, db, sub)
}

// Close releases the database.
func (s *Store) Close() error {
	s.closed.Store(true)
	var errs []error
	if s.st != nil {
		errs = append(errs, s.st.close())
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sqlite: %w", err)
	}
	return nil
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) (err error) {
	defer s.classify(&err)
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("ping sqlite: %w", err)
	}
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("ping sqlite: %w", err)
	}
	return nil
}

// write runs fn in one write transaction (BEGIN IMMEDIATE), committing if
// fn returns nil. fn must not touch s.w outside tx: its only connection is
// tx's.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// sqliteCode returns the extended result code of a driver error, or 0.
func sqliteCode(err error) int {
	if e, ok := errors.AsType[*sqlite.Error](err); ok {
		return e.Code()
	}
	return 0
}

func isUniqueViolation(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}
