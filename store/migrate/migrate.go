// Package migrate applies versioned SQL migrations. It owns what every SQL
// backend shares: the file naming (0001_init.sql, 0002_...), their order,
// the schema_migrations(version, applied_at) ledger, and applying each file
// in its own transaction together with its ledger row. A backend supplies
// its files as an fs.FS and, in a Dialect, how to lock out other migrators
// and how to run a script.
package migrate

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Migration is one versioned SQL script.
type Migration struct {
	Version int64  // the file name's leading number
	Name    string // the file name
	SQL     string
}

// Dialect is what a backend tells the runner about its database. The zero
// value suits a driver that takes several statements in one Exec, uses "?"
// placeholders, and whose write transactions already exclude each other
// (SQLite with BEGIN IMMEDIATE).
type Dialect struct {
	// Lock takes a lock that keeps other processes from migrating (for
	// example pg_advisory_lock or MySQL GET_LOCK) on conn, the connection
	// Up uses throughout, and returns the function that releases it.
	Lock func(ctx context.Context, conn *sql.Conn) (unlock func(context.Context) error, err error)
	// TxLock, instead of Lock, takes a lock that ends with the transaction
	// (pg_advisory_xact_lock) at the start of every transaction Up makes:
	// the one that creates schema_migrations and each migration's. It
	// holds no session state between statements, so it works through a
	// pooler that lends a server session per transaction (PgBouncer in
	// transaction mode).
	TxLock func(ctx context.Context, tx *sql.Tx) error
	// Exec runs one migration script inside tx. Nil runs it with one
	// tx.ExecContext call.
	Exec func(ctx context.Context, tx *sql.Tx, script string) error
	// Placeholder returns the n-th (from 1) bind parameter, for example
	// "$1". Nil means "?".
	Placeholder func(n int) string
}

func (d Dialect) ph(n int) string {
	if d.Placeholder == nil {
		return "?"
	}
	return d.Placeholder(n)
}

// Load reads the migrations at the root of fsys: every file named
// <version>_<name>.sql, ordered by version. Other files are ignored; two
// files with one version are an error.
func Load(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || path.Ext(name) != ".sql" {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migration %q: name is not <version>_<name>.sql", name)
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q: version %q is not a positive number", name, num)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return cmp.Compare(a.Version, b.Version) })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations %q and %q share version %d", out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}

// Up applies the migrations in fsys that db has not recorded yet, in version
// order, each in its own transaction with its schema_migrations row, and
// returns the versions it applied. Running it again applies nothing. A
// version recorded in the database but unknown to fsys (a newer binary
// migrated it) is logged and left alone, unless the database records in
// RequiresSetting a migration newer than fsys knows: then Up refuses,
// changing nothing.
func Up(ctx context.Context, db *sql.DB, fsys fs.FS, d Dialect, log *slog.Logger) ([]int64, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	migs, err := Load(fsys)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("get migration connection: %w", err)
	}
	defer conn.Close()
	if d.Lock != nil {
		unlock, err := d.Lock(ctx, conn)
		if err != nil {
			return nil, fmt.Errorf("lock migrations: %w", err)
		}
		defer func() {
			if err := unlock(context.WithoutCancel(ctx)); err != nil {
				log.Warn("unlock migrations", "err", err)
			}
		}()
	}
	if err := createLedger(ctx, conn, d); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	done, err := recorded(ctx, conn)
	if err != nil {
		return nil, err
	}
	unknown, err := newer(ctx, conn, migs, done)
	if err != nil {
		return nil, err
	}
	for _, v := range unknown {
		log.Warn("database has a migration this binary does not know", "version", v)
	}
	var applied []int64
	for _, m := range migs {
		if done[m.Version] {
			continue
		}
		ok, err := apply(ctx, conn, d, m)
		if err != nil {
			return applied, err
		}
		if ok {
			applied = append(applied, m.Version)
			log.Info("applied migration", "version", m.Version, "name", m.Name)
		}
	}
	return applied, nil
}

// Check returns nil when db has recorded every migration in fsys, and an
// error saying how many it has not otherwise (or that it holds no
// schema_migrations table: no schema at all), changing nothing. A command
// that must not change the schema (sundial secrets reseal) checks instead
// of migrating.
func Check(ctx context.Context, db *sql.DB, fsys fs.FS) error {
	migs, err := Load(fsys)
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("get a connection: %w", err)
	}
	defer conn.Close()
	done, err := recorded(ctx, conn)
	if err != nil {
		return fmt.Errorf("the database holds no schema of this version of Sundial (%w): run sundial migrate first", err)
	}
	if _, err := newer(ctx, conn, migs, done); err != nil {
		return err
	}
	pending := 0
	for _, m := range migs {
		if !done[m.Version] {
			pending++
		}
	}
	if pending > 0 {
		return fmt.Errorf("the database's schema is not current (%d of %d migrations not applied): run sundial migrate first",
			pending, len(migs))
	}
	return nil
}

// RequiresSetting is the row of the settings table (name, value) in which
// a migration that older releases cannot run beside (a contract step that
// drops, renames or retypes what they use; see docs/upgrading.md) records
// the newest migration a binary must know to run on the schema, as a
// decimal version. A binary that knows only older migrations refuses the
// database instead of failing on it later.
const RequiresSetting = "schema.requires"

// newer returns the versions db has recorded that migs does not hold (a
// newer binary applied them), in order. It fails when, among them, one
// recorded in RequiresSetting that this binary is too old for the schema.
// A newer schema without that row is one this binary runs on: an expand
// step.
func newer(ctx context.Context, conn *sql.Conn, migs []Migration, done map[int64]bool) ([]int64, error) {
	known := make(map[int64]bool, len(migs))
	var latest int64
	for _, m := range migs {
		known[m.Version] = true
		latest = max(latest, m.Version)
	}
	var unknown []int64
	for v := range done {
		if !known[v] {
			unknown = append(unknown, v)
		}
	}
	if len(unknown) == 0 {
		return nil, nil
	}
	slices.Sort(unknown)
	var value string
	// The name is a constant: written out, it needs no dialect's placeholder.
	err := conn.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = '`+RequiresSetting+`'`).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return unknown, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read setting %s: %w", RequiresSetting, err)
	}
	requires, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("setting %s: %q is not a migration version", RequiresSetting, value)
	}
	if requires > latest {
		return nil, fmt.Errorf("the database's schema was migrated by a newer Sundial that this version cannot run beside "+
			"(it needs a Sundial that knows migration %d; this one knows up to %d): run the release that migrated it, or a newer one",
			requires, latest)
	}
	return unknown, nil
}

func recorded(ctx context.Context, conn *sql.Conn) (map[int64]bool, error) {
	rows, err := conn.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	done := map[int64]bool{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		done[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return done, nil
}

// createLedger creates schema_migrations if it does not exist, under
// d.TxLock if there is one.
func createLedger(ctx context.Context, conn *sql.Conn, d Dialect) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if d.TxLock != nil {
		if err := d.TxLock(ctx, tx); err != nil {
			return fmt.Errorf("lock migrations: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version BIGINT NOT NULL PRIMARY KEY,
	applied_at BIGINT NOT NULL
)`); err != nil {
		return err
	}
	return tx.Commit()
}

// apply runs m in one transaction unless another process recorded it since
// Up looked, and reports whether it ran.
func apply(ctx context.Context, conn *sql.Conn, d Dialect, m Migration) (bool, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("begin migration %s: %w", m.Name, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if d.TxLock != nil {
		if err := d.TxLock(ctx, tx); err != nil {
			return false, fmt.Errorf("lock migrations: %w", err)
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM schema_migrations WHERE version = `+d.ph(1), m.Version).Scan(&n); err != nil {
		return false, fmt.Errorf("check migration %s: %w", m.Name, err)
	}
	if n > 0 {
		return false, nil
	}
	if d.Exec != nil {
		err = d.Exec(ctx, tx, m.SQL)
	} else {
		_, err = tx.ExecContext(ctx, m.SQL)
	}
	if err != nil {
		return false, fmt.Errorf("apply migration %s: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, applied_at) VALUES (`+d.ph(1)+`, `+d.ph(2)+`)`,
		m.Version, time.Now().UnixMicro()); err != nil {
		return false, fmt.Errorf("record migration %s: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit migration %s: %w", m.Name, err)
	}
	return true, nil
}
