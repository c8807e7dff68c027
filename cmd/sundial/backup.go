package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sundialhq/sundial/store/sqlite"
)

// runBackup writes a consistent copy of a SQLite database, which a node may
// be using, to the file --to names (sqlite.Backup), and copies the
// database's secrets key file beside it, so that a node started on the copy
// opens the secrets sealed in it.
func runBackup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var to *string
	var force *bool
	cfg, err := loadConfigWith("backup", args, getenv, stderr, func(fs *flag.FlagSet) {
		to = fs.String("to", "", "")
		force = fs.Bool("force", false, "")
	})
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *to == "" {
		return usageErrorf("backup: --to FILE is required: the file to write the copy to")
	}
	path, ok := strings.CutPrefix(cfg.DB.URL, "sqlite:")
	if !ok {
		return usageErrorf("backup: db %s: only a SQLite database is backed up by sundial backup; "+
			"use pg_dump or mysqldump (or the server's own backups) for PostgreSQL and MySQL", redact(cfg.DB.URL))
	}
	key, _ := sqliteKeyFile(cfg.DB.URL)
	if _, err := os.Stat(key); err == nil && !*force {
		if _, err := os.Lstat(*to + ".key"); err == nil {
			return fmt.Errorf("backup: %s exists: give --force to replace it", *to+".key")
		}
	}
	size, err := sqlite.Backup(ctx, path, *to, *force)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "Backed up %s to %s (%d bytes)\n", path, *to, size)
	copied, err := copyKeyFile(key, *to+".key", *force)
	if err != nil {
		return fmt.Errorf("backup: the secrets key file: %w", err)
	}
	if copied {
		fmt.Fprintf(stdout, "Copied its secrets key file %s to %s: keep it with the copy, and as secret\n", key, *to+".key")
	}
	return nil
}

// copyKeyFile copies the key file from to to (mode 0600), refusing an
// existing to unless force; copied is false when from does not exist.
func copyKeyFile(from, to string, force bool) (copied bool, err error) {
	data, err := os.ReadFile(from)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(to, flags, 0o600)
	if errors.Is(err, os.ErrExist) {
		return false, fmt.Errorf("%s exists: give --force to replace it", to)
	} else if err != nil {
		return false, err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err == nil, err
}
