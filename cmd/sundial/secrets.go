package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/idtoken"
	"github.com/sundialhq/sundial/seal"
)

// secretsBox is the sealer of this node's task secrets: the key of
// secrets.key or secrets.key_file (or SUNDIAL_SECRETS_KEY), opening also
// what secrets.previous_keys sealed. With none, a single SQLite node keeps
// a key file beside its database (PATH.key, mode 0600), made on first
// start. A node on PostgreSQL or MySQL cannot make one, since every node
// of a cluster must share the key: it refuses to start when a node with a
// key has run on the database (the cluster's OIDC signing key, sealed
// with it, is there), saying how to set the key; otherwise it runs
// without a sealer (nil), and a task with a secret is refused.
func secretsBox(ctx context.Context, cfg *config, store sundial.Store, log *slog.Logger) (sundial.Sealer, error) {
	key, previous, err := configuredKeys(cfg)
	if err != nil {
		return nil, err
	}
	if key == nil {
		path, ok := sqliteKeyFile(cfg.DB.URL)
		if !ok {
			if _, sealed, err := store.SettingGet(ctx, idtoken.SettingName); err != nil {
				return nil, fmt.Errorf("read settings: %w", err)
			} else if sealed {
				return nil, errors.New("this node has no secrets key, and this database holds secrets sealed by nodes " +
					"that have one: set secrets.key, secrets.key_file or SUNDIAL_SECRETS_KEY to the cluster's key " +
					"(32 bytes in base64, the same on every node)")
			}
			log.Warn("no secrets key (secrets.key, secrets.key_file or SUNDIAL_SECRETS_KEY): tasks with secret headers, " +
				"credentials in target_url, a signing_secret or oidc are refused or fail until every node has the same key")
			return nil, nil
		}
		if key, err = seal.LoadOrCreateKeyFile(path); err != nil {
			return nil, fmt.Errorf("secrets key file %s: %w", path, err)
		}
		warnLooseKeyFile(log, path)
	} else if cfg.Secrets.Key == "" {
		warnLooseKeyFile(log, cfg.Secrets.KeyFile)
	}
	return seal.New(key, previous...)
}

// configuredKeys returns the key of secrets.key or secrets.key_file (or
// SUNDIAL_SECRETS_KEY), nil when none is set, and the keys of
// secrets.previous_keys.
func configuredKeys(cfg *config) (key []byte, previous [][]byte, err error) {
	switch {
	case cfg.Secrets.Key != "":
		key, err = seal.ParseKey(cfg.Secrets.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("secrets.key: %w", err)
		}
	case cfg.Secrets.KeyFile != "":
		raw, err := os.ReadFile(cfg.Secrets.KeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("secrets.key_file: %w", err)
		}
		if key, err = seal.ParseKey(string(raw)); err != nil {
			return nil, nil, fmt.Errorf("secrets.key_file %s: %w", cfg.Secrets.KeyFile, err)
		}
	}
	for i, k := range cfg.Secrets.PreviousKeys {
		p, err := seal.ParseKey(k)
		if err != nil {
			return nil, nil, fmt.Errorf("secrets.previous_keys: key %d: %w", i+1, err)
		}
		previous = append(previous, p)
	}
	return key, previous, nil
}

// sqliteKeyFile is where a single SQLite node keeps its key when none is
// configured: PATH.key beside the database sqlite:PATH. ok is false for
// another database.
func sqliteKeyFile(dsn string) (path string, ok bool) {
	db, ok := strings.CutPrefix(dsn, "sqlite:")
	if !ok {
		return "", false
	}
	return db + ".key", true
}

// warnLooseKeyFile warns when other users of the machine may read the
// secrets key file at path.
func warnLooseKeyFile(log *slog.Logger, path string) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("the secrets key file may be read by other users of this machine, who could open every sealed secret: chmod 600 it",
			"path", path, "mode", fmt.Sprintf("%#o", fi.Mode().Perm()))
	}
}

// configuredCallbackSecret is callback.secret, or the first line of
// callback.secret_file.
func configuredCallbackSecret(cfg *config) (string, error) {
	if cfg.Callback.SecretFile == "" {
		return cfg.Callback.Secret, nil
	}
	raw, err := os.ReadFile(cfg.Callback.SecretFile)
	if err != nil {
		return "", fmt.Errorf("callback.secret_file: %w", err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	line = strings.TrimSpace(line)
	if len(line) < 16 {
		return "", errors.New("callback.secret_file: the secret in it has fewer than 16 characters")
	}
	return line, nil
}
