package api

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/mysql"
	"github.com/sundialhq/sundial/store/postgres"
	"github.com/sundialhq/sundial/store/sqlite"
	"github.com/sundialhq/sundial/store/sqlite/sqlitetest"
	"github.com/sundialhq/sundial/store/storetest"
)

// Tests of what every backend must answer alike run on each of them:
// SQLite always, PostgreSQL and MySQL on the servers named by
// SUNDIAL_TEST_POSTGRES and SUNDIAL_TEST_MYSQL (skipped without them, but
// never under CI=true). Each test gets a database of its own.

// backends are the stores an API test can run on, by name. open returns a
// store and cut, which makes its database unusable: SQLite's store is
// closed, the servers are reached through a storetest.Proxy that cut cuts.
var backends = []struct {
	name string
	open func(t *testing.T) (st sundial.Store, cut func())
}{
	{"sqlite", openSQLite},
	{"postgres", openPostgres},
	{"mysql", openMySQL},
}

// onEveryBackend runs fn as a subtest on a fresh server of each backend.
func onEveryBackend(t *testing.T, fn func(t *testing.T, b *storeBundle)) {
	t.Helper()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			st, _ := be.open(t)
			fn(t, setupOn(t, st))
		})
	}
}

// serverEnv returns the variable name's value, skipping the test when it
// is not set (failing under CI).
func serverEnv(t *testing.T, name, example string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the tests on every backend (for example %s=%s)", name, name, example)
		}
		t.Skipf("set %s=%s to run this test on that backend", name, example)
	}
	return v
}

func randomName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "sundial_api_" + hex.EncodeToString(b)
}

func openSQLite(t *testing.T) (sundial.Store, func()) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlitetest.NewDB(t), sqlite.Options{})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, func() { _ = st.Close() }
}

// openPostgres opens a store in a schema of its own, dropped at the end.
func openPostgres(t *testing.T) (sundial.Store, func()) {
	t.Helper()
	base := serverEnv(t, "SUNDIAL_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	name := randomName()
	admin := func(ctx context.Context, stmt string) error {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, stmt)
		return err
	}
	if err := admin(t.Context(), "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("SUNDIAL_TEST_POSTGRES is not a URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	proxy := storetest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	st, err := postgres.Open(t.Context(), u.String(), postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, proxy.Cut
}

// openMySQL opens a store on a database of its own, dropped at the end.
func openMySQL(t *testing.T) (sundial.Store, func()) {
	t.Helper()
	base := serverEnv(t, "SUNDIAL_TEST_MYSQL", "root@tcp(127.0.0.1:3306)/test")
	cfg, err := gomysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("SUNDIAL_TEST_MYSQL: %v", err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	name := randomName()
	if _, err := admin.ExecContext(t.Context(), "CREATE DATABASE "+name); err != nil {
		admin.Close()
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE "+name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	proxy := storetest.NewProxy(t, cfg.Addr)
	cfg.Addr = proxy.Addr()
	st, err := mysql.Open(t.Context(), cfg.FormatDSN(), mysql.Options{MaxConns: 4})
	if err != nil {
		t.Fatalf("open mysql: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, proxy.Cut
}
