package mysql

import (
	"context"
	"fmt"
)

// SettingEnsure returns the value of a cluster-wide setting, storing value
// first when the setting has none. The first node to insert it decides:
// the INSERT leaves an existing row alone (ON DUPLICATE KEY UPDATE of
// nothing, where INSERT IGNORE would also turn other errors into
// warnings), and the read that follows, in READ COMMITTED, sees whichever
// row was committed first.
func (s *Store) SettingEnsure(ctx context.Context, name, value string) (_ string, err error) {
	defer s.classify(&err)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES (?, ?)
		ON DUPLICATE KEY UPDATE name = name`, name, value); err != nil {
		return "", fmt.Errorf("ensure setting %s: %w", name, err)
	}
	var got string
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&got); err != nil {
		return "", fmt.Errorf("ensure setting %s: %w", name, err)
	}
	return got, nil
}
