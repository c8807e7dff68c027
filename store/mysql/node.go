package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// NodeRegister implements sundial.Store.NodeRegister.
// MySQL's own: ON DUPLICATE KEY UPDATE, at the server's clock (nowSQL).
func (s *Store) NodeRegister(ctx context.Context, n *sundial.Node) (err error) {
	defer s.classify(&err)
	if n.ID == "" {
		return sundial.Errorf(sundial.EInvalid, "id", "a node needs an ID")
	}
	var now int64
	if err := s.db.QueryRowContext(ctx, `SELECT `+nowSQL).Scan(&now); err != nil {
		return fmt.Errorf("register node %s: %w", n.ID, err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO nodes (id, host, pid, address, state, started_at, heartbeat_at)
		VALUES (?, ?, ?, ?, 'ALIVE', ?, ?)
		ON DUPLICATE KEY UPDATE host = ?, pid = ?, address = ?, state = 'ALIVE', started_at = ?, heartbeat_at = ?`,
		n.ID, n.Host, n.PID, n.Address, now, now,
		n.Host, n.PID, n.Address, now, now)
	if err != nil {
		return fmt.Errorf("register node %s: %w", n.ID, err)
	}
	n.State, n.StartedAt, n.HeartbeatAt = sundial.NodeAlive, sqlrow.FromMicros(now), sqlrow.FromMicros(now)
	return nil
}

// NodeHeartbeat implements sundial.Store.NodeHeartbeat.
// MySQL's own: the heartbeat is the server's clock (nowSQL).
func (s *Store) NodeHeartbeat(ctx context.Context, id string) (err error) {
	defer s.classify(&err)
	res, err := s.db.ExecContext(ctx, `UPDATE nodes SET heartbeat_at = `+nowSQL+` WHERE id = ? AND state = 'ALIVE'`, id)
	if err != nil {
		return fmt.Errorf("heartbeat node %s: %w", id, err)
	}
	// clientFoundRows: a heartbeat in the same microsecond still counts.
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("heartbeat node %s: %w", id, err)
	} else if n == 0 {
		return sqlrow.NotFound("", "node %s is not alive: it was declared dead or left", id)
	}
	return nil
}

// NodeReap (see sundial.Store.NodeReap) returns the IDs in order. The dead
// nodes' rows stay locked until the release commits: a concurrent reaper
// waits, then finds them DEAD, and a late heartbeat finds them no longer
// ALIVE.
func (s *Store) NodeReap(ctx context.Context, deadAfter time.Duration, now time.Time) (_ []string, err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	var dead []string
	err = s.write(ctx, func(tx *sql.Tx) error {
		dead = nil
		rows, err := tx.QueryContext(ctx, `SELECT id FROM nodes
			WHERE state = 'ALIVE' AND heartbeat_at < `+nowSQL+` - (?) ORDER BY id FOR UPDATE`,
			deadAfter.Microseconds())
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			dead = append(dead, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range dead {
			if _, err := tx.ExecContext(ctx, `UPDATE nodes SET state = 'DEAD' WHERE id = ?`, id); err != nil {
				return err
			}
			reason := fmt.Sprintf("node %s declared dead: no heartbeat for %s", id, deadAfter)
			if err := release(ctx, tx, id, reason, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reap nodes: %w", err)
	}
	return dead, nil
}
