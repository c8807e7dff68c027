package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/storetest"
)

// TestBackup copies a database while tasks are being created in it: the
// copy opens as a current database and holds the tasks created before the
// backup began and a gapless run of those created during it; an existing
// file is refused unless forced.
func TestBackup(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "sundial.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	create := func(i int) error {
		tk := &sundial.Task{Name: fmt.Sprintf("t%05d", i), CronExpr: "* * * * * *", TargetURL: "https://example.com"}
		if err := tk.Normalize(time.Now()); err != nil {
			return err
		}
		return storetest.CreateTask(ctx, s, tk, time.Now())
	}
	const before = 50
	for i := range before {
		if err := create(i); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := before; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := create(i); err != nil {
				t.Error(err)
				return
			}
		}
	})
	to := filepath.Join(dir, "copy.db")
	size, err := Backup(ctx, path, to, false)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if fi, err := os.Stat(to); err != nil || fi.Size() != size || fi.Mode().Perm() != 0o600 {
		t.Fatalf("copy: %v, %v; want %d bytes, mode 0600", fi, err, size)
	}

	cp, err := Open(ctx, to, Options{NoMigrate: true})
	if err != nil {
		t.Fatalf("open the copy: %v", err)
	}
	var n, lo, hi int64
	if err := cp.r.QueryRowContext(ctx, `SELECT count(*), min(id), max(id) FROM tasks`).Scan(&n, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	cp.Close()
	if n < before || hi-lo+1 != n {
		t.Errorf("the copy holds %d tasks, ids %d to %d; want at least %d and no gap", n, lo, hi, before)
	}

	if _, err := Backup(ctx, path, to, false); err == nil || !strings.Contains(err.Error(), "exists: give --force") {
		t.Errorf("Backup onto the copy = %v, want a refusal naming --force", err)
	}
	if _, err := Backup(ctx, path, to, true); err != nil {
		t.Errorf("Backup with force: %v", err)
	}
	if _, err := Backup(ctx, filepath.Join(dir, "none.db"), filepath.Join(dir, "x.db"), false); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Backup of a missing database = %v, want not exist", err)
	}
	if _, err := Backup(ctx, path, filepath.Join(dir, "no", "such", "dir.db"), false); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Backup into a missing directory = %v, want not exist", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*.tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// TestLitestreamSettings holds the settings docs/deploy.md promises
// Litestream: WAL, SQLite's own passive checkpoints every 1000 pages (no
// other checkpoint is ever run), and a busy timeout for the moments
// Litestream holds the file's locks.
func TestLitestreamSettings(t *testing.T) {
	t.Parallel()
	s := open(t)
	for _, db := range []*sql.DB{s.w, s.r} {
		var mode string
		var pages, busy int
		if err := db.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(t.Context(), `PRAGMA wal_autocheckpoint`).Scan(&pages); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(t.Context(), `PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || pages != 1000 || busy != int(DefaultBusyTimeout.Milliseconds()) {
			t.Errorf("journal_mode %s, wal_autocheckpoint %d, busy_timeout %d ms; want wal, 1000, %d",
				mode, pages, busy, DefaultBusyTimeout.Milliseconds())
		}
	}
}
