package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/sundialhq/sundial/store/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// MigrateLockTimeout is how long Migrate waits for another process that is
// migrating the same database.
const MigrateLockTimeout = 5 * time.Minute

// Migrate applies the migrations the database has not had yet. It is
// idempotent and safe when several nodes start at once: it holds the
// server's named lock sundial_migrate:<database> (GET_LOCK) on its
// connection for the whole run, so one node migrates and the others, once
// they get the lock, find the migrations recorded. MySQL commits DDL
// implicitly, so each migration's ledger row is committed right after its
// statements rather than with them; the statements are written to be run
// again should a migration fail half-way. Open calls Migrate.
func (s *Store) Migrate(ctx context.Context) (err error) {
	defer s.classify(&err)
	_, err = s.migrate(ctx)
	return err
}

// checkSchema refuses a database whose schema is not current
// (migrate.Check), changing nothing.
func (s *Store) checkSchema(ctx context.Context) error {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	return migrate.Check(ctx, s.db, sub)
}

// migrate is Migrate, reporting the versions this call applied.
func (s *Store) migrate(ctx context.Context) ([]int64, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	applied, err := migrate.Up(ctx, s.db, sub, migrate.Dialect{Lock: lockMigrations, Exec: execScript}, s.log)
	if err != nil {
		return applied, fmt.Errorf("migrate: %w", err)
	}
	return applied, nil
}

// lockMigrations takes the named lock of the connection's database on conn.
// Named locks are server-wide, so the name carries the database: migrations
// of other databases on the same server go on in parallel.
func lockMigrations(ctx context.Context, conn *sql.Conn) (func(context.Context) error, error) {
	var db sql.NullString
	if err := conn.QueryRowContext(ctx, `SELECT DATABASE()`).Scan(&db); err != nil {
		return nil, err
	}
	name := migrateLockName(db.String)
	timeout := MigrateLockTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(?, ?)`, name, max(int64(timeout.Seconds()), 0)).Scan(&got); err != nil {
		return nil, err
	}
	if !got.Valid || got.Int64 != 1 {
		return nil, fmt.Errorf("another process has held lock %q for %s", name, timeout)
	}
	return func(ctx context.Context) error {
		_, err := conn.ExecContext(ctx, `DO RELEASE_LOCK(?)`, name)
		return err
	}, nil
}

// migrateLockName is sundial_migrate:<db>, hashed when it would be longer
// than the 64 characters MySQL allows a lock name.
func migrateLockName(db string) string {
	name := "sundial_migrate:" + db
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(db))
		name = "sundial_migrate:" + hex.EncodeToString(sum[:16])
	}
	return name
}

// execScript runs a migration script one statement at a time: the DSN does
// not allow several statements in one call.
func execScript(ctx context.Context, tx *sql.Tx, script string) error {
	for _, stmt := range splitStatements(script) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%w\n%s", err, stmt)
		}
	}
	return nil
}

// splitStatements splits a script at the semicolons that end statements,
// leaving out comments (--, #, /* */) and skipping semicolons in quotes.
func splitStatements(script string) []string {
	var (
		out []string
		cur strings.Builder
	)
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for i := 0; i < len(script); i++ {
		c := script[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(script) {
				if script[j] == '\\' && c != '`' {
					j += 2
					continue
				}
				if script[j] == c {
					if j+1 < len(script) && script[j+1] == c { // a doubled quote
						j += 2
						continue
					}
					break
				}
				j++
			}
			j = min(j, len(script)-1)
			cur.WriteString(script[i : j+1])
			i = j
		case c == '#' || (c == '-' && strings.HasPrefix(script[i:], "--") &&
			(i+2 == len(script) || script[i+2] == ' ' || script[i+2] == '\t' || script[i+2] == '\n' || script[i+2] == '\r')):
			for i < len(script) && script[i] != '\n' {
				i++
			}
			cur.WriteByte('\n')
		case c == '/' && strings.HasPrefix(script[i:], "/*"):
			end := strings.Index(script[i+2:], "*/")
			if end < 0 {
				i = len(script)
			} else {
				i += 2 + end + 1
			}
			cur.WriteByte(' ')
		case c == ';':
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}
