package migrate_test

import (
	"database/sql"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	_ "modernc.org/sqlite"

	"github.com/sundialhq/sundial/store/migrate"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fsys    fstest.MapFS
		want    []int64
		wantErr bool
	}{
		{"ordered by number", fstest.MapFS{
			"0010_c.sql": file("c"), "0002_b.sql": file("b"), "0001_a.sql": file("a"), "README.md": file("x"),
		}, []int64{1, 2, 10}, false},
		{"empty", fstest.MapFS{}, nil, false},
		{"duplicate version", fstest.MapFS{"0001_a.sql": file("a"), "1_b.sql": file("b")}, nil, true},
		{"no underscore", fstest.MapFS{"0001.sql": file("a")}, nil, true},
		{"not a number", fstest.MapFS{"x_a.sql": file("a")}, nil, true},
		{"zero", fstest.MapFS{"0000_a.sql": file("a")}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			migs, err := migrate.Load(tc.fsys)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Load error = %v, want error %v", err, tc.wantErr)
			}
			var got []int64
			for _, m := range migs {
				got = append(got, m.Version)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("versions = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUp(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fsys := fstest.MapFS{
		"0001_a.sql": file("CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);"),
		"0002_b.sql": file("CREATE TABLE b (x INTEGER);"),
	}
	applied, err := migrate.Up(ctx, db, fsys, migrate.Dialect{}, nil)
	if err != nil || !slices.Equal(applied, []int64{1, 2}) {
		t.Fatalf("Up = %v, %v; want [1 2]", applied, err)
	}
	applied, err = migrate.Up(ctx, db, fsys, migrate.Dialect{}, nil)
	if err != nil || len(applied) != 0 {
		t.Fatalf("Up again = %v, %v; want nothing", applied, err)
	}

	// A failing migration rolls back entirely and stops the run.
	fsys["0003_bad.sql"] = file("CREATE TABLE c (x INTEGER); INSERT INTO nowhere VALUES (1);")
	fsys["0004_d.sql"] = file("CREATE TABLE d (x INTEGER);")
	if applied, err := migrate.Up(ctx, db, fsys, migrate.Dialect{}, nil); err == nil || len(applied) != 0 {
		t.Fatalf("Up with a bad migration = %v, %v; want an error", applied, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name IN ('c', 'd')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("tables of the failed run: %d, %v; want none", n, err)
	}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("schema_migrations rows = %d, %v; want 2", n, err)
	}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM a`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows of a = %d, %v; want 1: migration 1 ran more than once", n, err)
	}
}

// TestCheck: Check says whether a database has every migration, naming
// how many it lacks, or that it has no schema at all, and changes nothing.
func TestCheck(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fsys := fstest.MapFS{"0001_a.sql": file("CREATE TABLE a (x INTEGER);")}
	if err := migrate.Check(ctx, db, fsys); err == nil || !strings.Contains(err.Error(), "holds no schema") {
		t.Errorf("Check of an empty database = %v, want no schema", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("Check made %d tables (%v), want none", n, err)
	}
	if _, err := migrate.Up(ctx, db, fsys, migrate.Dialect{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := migrate.Check(ctx, db, fsys); err != nil {
		t.Errorf("Check of a current database = %v", err)
	}
	fsys["0002_b.sql"] = file("CREATE TABLE b (x INTEGER);")
	if err := migrate.Check(ctx, db, fsys); err == nil || !strings.Contains(err.Error(), "1 of 2 migrations not applied") {
		t.Errorf("Check with one migration pending = %v", err)
	}
}

// TestNewerSchema: a binary that knows fewer migrations than the database
// has recorded (a newer release migrated it; this node is one release
// behind, or rolled back) runs on it, saying which it does not know,
// unless a newer migration recorded in RequiresSetting that it is too old:
// then Up and Check refuse it, naming what it needs, and change nothing.
func TestNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	older := fstest.MapFS{
		"0001_a.sql": file("CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);"),
		"0002_b.sql": file("CREATE TABLE b (x INTEGER);"),
	}
	newer := fstest.MapFS{
		"0001_a.sql": older["0001_a.sql"],
		"0002_b.sql": older["0002_b.sql"],
		"0003_c.sql": file("ALTER TABLE b ADD COLUMN y INTEGER;"),
	}
	if _, err := migrate.Up(ctx, db, newer, migrate.Dialect{}, nil); err != nil {
		t.Fatal(err)
	}

	// An expand step: the older binary runs, and says so.
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	applied, err := migrate.Up(ctx, db, older, migrate.Dialect{}, log)
	if err != nil || len(applied) != 0 {
		t.Fatalf("older Up on a newer schema = %v, %v; want nothing applied and no error", applied, err)
	}
	if !strings.Contains(logs.String(), "does not know") || !strings.Contains(logs.String(), "version=3") {
		t.Errorf("older Up logged %q, want the unknown version 3 named", logs.String())
	}
	if err := migrate.Check(ctx, db, older); err != nil {
		t.Errorf("older Check on a newer schema = %v, want nil", err)
	}

	// A contract step that needs migration 3: the older binary refuses.
	if _, err := db.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES (?, '3')`, migrate.RequiresSetting); err != nil {
		t.Fatal(err)
	}
	want := "needs a Sundial that knows migration 3; this one knows up to 2"
	if applied, err := migrate.Up(ctx, db, older, migrate.Dialect{}, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("older Up past a contract step = %v, %v; want %q", applied, err, want)
	}
	if err := migrate.Check(ctx, db, older); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("older Check past a contract step = %v; want %q", err, want)
	}
	// The release that migrated it, and a newer one, run.
	newer["0004_d.sql"] = file("CREATE TABLE d (x INTEGER);")
	if applied, err := migrate.Up(ctx, db, newer, migrate.Dialect{}, nil); err != nil || !slices.Equal(applied, []int64{4}) {
		t.Errorf("newer Up = %v, %v; want [4]", applied, err)
	}
	delete(newer, "0004_d.sql")
	if applied, err := migrate.Up(ctx, db, newer, migrate.Dialect{}, nil); err != nil || len(applied) != 0 {
		t.Errorf("Up of the release that wrote the setting = %v, %v; want it to run", applied, err)
	}
}
