package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
	"github.com/sundialhq/sundial/store/internal/sqlstore"
)

// DefaultMaxConns caps the connection pool when Options.MaxConns is zero.
const DefaultMaxConns = 16

// DefaultConnMaxIdleTime closes idle connections when
// Options.ConnMaxIdleTime is zero.
const DefaultConnMaxIdleTime = 5 * time.Minute

// Options configure Open.
type Options struct {
	Logger   *slog.Logger // nil: discard
	MaxConns int          // open connections at most; zero: DefaultMaxConns
	// MaxIdleConns caps the connections kept open while idle; zero:
	// MaxConns.
	MaxIdleConns int
	// ConnMaxLifetime closes a connection this long after it was opened;
	// zero: never.
	ConnMaxLifetime time.Duration
	// ConnMaxIdleTime closes a connection idle this long; zero:
	// DefaultConnMaxIdleTime.
	ConnMaxIdleTime time.Duration
	// Clock is the store's clock (nil: time.Now), for the times a Store
	// method records that its caller does not give (see sundial.Store).
	Clock func() time.Time
	// NoMigrate leaves the schema as it is: Open refuses a database whose
	// schema is not current (migrate.Check), changing nothing, instead of
	// migrating it.
	NoMigrate bool
}

// Store is a sundial.Store on one MySQL or MariaDB database.
type Store struct {
	// Plain holds the plain methods.
	*sqlstore.Plain

	db    *sql.DB
	log   *slog.Logger
	clock func() time.Time // Options.Clock
	// closed is set by Close: every error after it is EUnavailable.
	closed atomic.Bool
}

var _ sundial.Store = (*Store)(nil)

// Open connects to the database dsn names (go-sql-driver form,
// user:pass@tcp(host:3306)/db?params), checks that the server is MySQL 8.0.1
// or MariaDB 10.6 or later, and migrates the database.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	s, err := connect(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	if opts.NoMigrate {
		err = s.checkSchema(ctx)
	} else {
		err = s.Migrate(ctx)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// connect opens the pool and checks the server, without migrating.
func connect(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("open mysql: the DSN names no database (user@tcp(host:3306)/db)")
	}
	cfg.ParseTime = false
	cfg.InterpolateParams = true
	cfg.ClientFoundRows = true
	cfg.MultiStatements = false
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["sql_mode"] = "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'"

	// The isolation variable is transaction_isolation on MySQL and
	// tx_isolation on MariaDB before 11.1: ask the server which it is.
	mariadb, err := probe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if mariadb {
		cfg.Params["tx_isolation"] = "'READ-COMMITTED'"
	} else {
		cfg.Params["transaction_isolation"] = "'READ-COMMITTED'"
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(opts.MaxConns)
	if opts.MaxIdleConns <= 0 {
		opts.MaxIdleConns = opts.MaxConns
	}
	db.SetMaxIdleConns(min(opts.MaxIdleConns, opts.MaxConns))
	if opts.ConnMaxIdleTime <= 0 {
		opts.ConnMaxIdleTime = DefaultConnMaxIdleTime
	}
	db.SetConnMaxIdleTime(opts.ConnMaxIdleTime)
	db.SetConnMaxLifetime(opts.ConnMaxLifetime)
	s := &Store{db: db, log: opts.Logger.With("component", "store"), clock: opts.Clock}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.Plain = sqlstore.New(sqlstore.SQL(db), sqlstore.SQL(db), queries, s.classify)
	var iso string
	if err := db.QueryRowContext(ctx, `SELECT @@`+isolationVar(mariadb)).Scan(&iso); err != nil {
		db.Close()
		return nil, fmt.Errorf("open mysql %s: %w", cfg.Addr, err)
	}
	if iso != "READ-COMMITTED" {
		db.Close()
		return nil, fmt.Errorf("open mysql %s: isolation is %s, not READ-COMMITTED", cfg.Addr, iso)
	}
	return s, nil
}

// queries are the plain methods' statements in MySQL's dialect.
var queries = sqlstore.NewQueries(sqlstore.Dialect{
	Placeholder: sqlrow.Question,
	False:       "0",
	True:        "1",
	Hint:        func(index string) string { return ` FORCE INDEX (` + index + `)` },
	ForUpdate:   ` FOR UPDATE`,
	Upsert:      `ON DUPLICATE KEY UPDATE`,
	// utf8mb4_bin pads: 'a' = 'a ' holds. The length term makes the match
	// exact, as on the other databases, and leaves the index to the =. A
	// live task's name and request_id are matched on the columns that
	// tasks_live_name and tasks_request_live index.
	Equal: func(col, v string, arg func(any) string) string {
		key := col
		if col == "name" || col == "request_id" {
			key = "live_" + col
		}
		return key + ` = ` + arg(v) + ` AND LENGTH(` + col + `) = LENGTH(` + arg(v) + `)`
	},
	// The length term makes the compare exact, as Equal's does.
	Same: func(col, v string, arg func(any) string) string {
		return col + ` = ` + arg(v) + ` AND LENGTH(` + col + `) = LENGTH(` + arg(v) + `)`
	},
	// Case-sensitive (utf8mb4_bin), wildcards escaped.
	HasPrefix: func(col, p string, arg func(any) string) string {
		return col + ` LIKE ` + arg(likePrefix(p)) + ` ESCAPE '!'`
	},
	Contains: func(col, s string, arg func(any) string) string {
		return `LOCATE(LOWER(` + arg(s) + `), LOWER(` + col + `)) > 0`
	},
	// The label's JSON path, its key quoted: a key holds no '"'. A task
	// made before labels existed has NULL: no label. The value compares
	// byte for byte (utf8mb4_bin): values are case-sensitive, and hold no
	// space for the collation's padding to ignore.
	Label: func(col, key string, arg func(any) string) string {
		return `JSON_UNQUOTE(JSON_EXTRACT(` + col + `, ` + arg(`$."`+key+`"`) + `)) COLLATE utf8mb4_bin`
	},
	Duplicate: isDup,
})

func isolationVar(mariadb bool) string {
	if mariadb {
		return "tx_isolation"
	}
	return "transaction_isolation"
}

// probe reports whether the server is MariaDB, and refuses servers without
// SKIP LOCKED.
func probe(ctx context.Context, cfg *mysql.Config) (mariadb bool, err error) {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return false, fmt.Errorf("open mysql: %w", err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var version string
	if err := db.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&version); err != nil {
		return false, fmt.Errorf("open mysql %s: %w", cfg.Addr, err)
	}
	mariadb = strings.Contains(strings.ToLower(version), "mariadb")
	major, minor, patch := parseVersion(version)
	switch {
	case mariadb && (major < 10 || major == 10 && minor < 6):
		return false, fmt.Errorf("open mysql %s: MariaDB %s has no SKIP LOCKED; Sundial needs 10.6 or later", cfg.Addr, version)
	case !mariadb && (major < 8 || major == 8 && minor == 0 && patch < 1):
		return false, fmt.Errorf("open mysql %s: MySQL %s has no SKIP LOCKED; Sundial needs 8.0.1 or later", cfg.Addr, version)
	}
	return mariadb, nil
}

// parseVersion reads the leading major.minor.patch of a server version such
// as "8.0.36" or "10.11.6-MariaDB-0+deb12u1".
func parseVersion(v string) (major, minor, patch int) {
	v, _, _ = strings.Cut(v, "-")
	parts := strings.SplitN(v, ".", 3)
	nums := []*int{&major, &minor, &patch}
	for i, p := range parts {
		n, _ := strconv.Atoi(p)
		*nums[i] = n
	}
	return major, minor, patch
}

// Close releases the database.
func (s *Store) Close() error {
	s.closed.Store(true)
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close mysql: %w", err)
	}
	return nil
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) (err error) {
	defer s.classify(&err)
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping mysql: %w", err)
	}
	return nil
}

// maxAttempts is how often write runs a transaction that hits a deadlock or
// a lock wait timeout.
const maxAttempts = 5

// write runs fn in one transaction, committing if fn returns nil. A
// deadlock or lock wait timeout rolls the transaction back and runs fn again
// (up to maxAttempts times, after a short random pause), so fn must set its
// results afresh on every call.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.writeOnce(ctx, fn)
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return err
		}
		s.log.Debug("retrying transaction", "attempt", attempt, "err", err)
		pause := time.Duration(attempt)*5*time.Millisecond + rand.N(5*time.Millisecond)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

func (s *Store) writeOnce(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
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

// MySQL error numbers.
const (
	errDupEntry        = 1062
	errLockWaitTimeout = 1205
	errDeadlock        = 1213
)

// errRetry asks write to run the transaction again.
var errRetry = errors.New("concurrent change: retry")

func errNumber(err error) uint16 {
	if e, ok := errors.AsType[*mysql.MySQLError](err); ok {
		return e.Number
	}
	return 0
}

func retryable(err error) bool {
	if errors.Is(err, errRetry) {
		return true
	}
	switch errNumber(err) {
	case errDeadlock, errLockWaitTimeout:
		return true
	}
	return false
}

func isDup(err error) bool { return errNumber(err) == errDupEntry }

// nowSQL is the server's clock in microseconds since the Unix epoch,
// independent of the session's time zone: the database's clock of node
// liveness (see sundial.Store).
const nowSQL = `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))`
