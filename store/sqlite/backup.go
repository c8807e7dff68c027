package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database file at path to the file
// to, while nodes may be using it: VACUUM INTO on a read connection of its
// own, which reads one snapshot of the file (WAL lets the node write
// meanwhile) and writes it compacted, without its WAL. The copy is written
// beside to under a temporary name, synced, and then linked to to, so that
// to is never a partial copy; an existing to is an error unless force,
// and is then replaced. It returns the copy's size in bytes.
func Backup(ctx context.Context, path, to string, force bool) (int64, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, fmt.Errorf("database %s: %w", path, err)
	}
	if !force {
		if _, err := os.Lstat(to); err == nil {
			return 0, fmt.Errorf("%s exists: give --force to replace it", to)
		}
	}
	// VACUUM INTO writes into a file that does not exist or is empty.
	tmp, err := os.CreateTemp(filepath.Dir(to), filepath.Base(to)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("create the copy: %w", err)
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName) // after a failure, or the link
	if err := vacuumInto(ctx, path, tmpName); err != nil {
		return 0, err
	}
	f, err := os.Open(tmpName)
	if err != nil {
		return 0, err
	}
	err = f.Sync()
	fi, statErr := f.Stat()
	f.Close()
	if err = errors.Join(err, statErr); err != nil {
		return 0, fmt.Errorf("sync the copy: %w", err)
	}
	if force {
		err = os.Rename(tmpName, to)
	} else {
		err = os.Link(tmpName, to) // fails if to appeared meanwhile
	}
	if errors.Is(err, os.ErrExist) {
		return 0, fmt.Errorf("%s exists: give --force to replace it", to)
	} else if err != nil {
		return 0, fmt.Errorf("write %s: %w", to, err)
	}
	if d, err := os.Open(filepath.Dir(to)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return fi.Size(), nil
}

// vacuumInto copies the database at path into the empty file to, and
// checks the copy.
func vacuumInto(ctx context.Context, path, to string) error {
	// Not query_only, which refuses VACUUM INTO; the statement only reads
	// the database.
	db, err := sql.Open("sqlite", path+"?"+url.Values{"_pragma": {
		fmt.Sprintf("busy_timeout(%d)", DefaultBusyTimeout.Milliseconds())}}.Encode())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, to); err != nil {
		return fmt.Errorf("copy %s: %w", path, err)
	}
	cp, err := sql.Open("sqlite", dsn(to, DefaultBusyTimeout, true))
	if err != nil {
		return err
	}
	defer cp.Close()
	var check string
	if err := cp.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&check); err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	if check != "ok" {
		return fmt.Errorf("check the copy: %s", check)
	}
	return nil
}
