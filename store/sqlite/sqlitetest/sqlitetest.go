// Package sqlitetest gives tests new SQLite database files that are
// already migrated: copies of one file that sqlite.Open made and migrated
// once per test binary. Migrating a file (every migration in a synced write
// transaction of its own) costs a test far more than copying one; the
// migrations themselves are store/sqlite's to test, on new files.
package sqlitetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sundialhq/sundial/store/sqlite"
)

var migrated struct {
	once sync.Once
	data []byte
	err  error
}

// NewDB returns the path of a new database file in a directory of t's
// own: a copy of one that sqlite.Open made and migrated and that has no
// rows but its migration ledger, which is what sqlite.Open would make of
// a new file but for the times in that ledger.
func NewDB(t testing.TB) string {
	t.Helper()
	migrated.once.Do(func() { migrated.data, migrated.err = migrate() })
	if migrated.err != nil {
		t.Fatalf("migrate a database to copy: %v", migrated.err)
	}
	path := filepath.Join(t.TempDir(), "sundial.db")
	// Owner only, as sqlite.Open makes a new file.
	if err := os.WriteFile(path, migrated.data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// migrate makes and migrates a database file and returns its bytes.
func migrate() ([]byte, error) {
	dir, err := os.MkdirTemp("", "sundial-sqlitetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sundial.db")
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	// The last connection to close checkpoints the WAL into the file and
	// removes it: the file alone is the database.
	if err := s.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, errors.New("the migrated database kept its WAL file")
	}
	return os.ReadFile(path)
}
