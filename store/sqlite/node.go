package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// NodeRegister (see sundial.Store.NodeRegister): the database's clock is
// this process's.
// SQLite's own: an ON CONFLICT upsert at this process's clock.
func (s *Store) NodeRegister(ctx context.Context, n *sundial.Node) (err error) {
	defer s.classify(&err)
	if n.ID == "" {
		return sundial.Errorf(sundial.EInvalid, "id", "a node needs an ID")
	}
	now := sqlrow.Norm(s.clock())
	_, err = s.w.ExecContext(ctx, `INSERT INTO nodes (id, host, pid, address, state, started_at, heartbeat_at)
		VALUES (?1, ?2, ?3, ?4, 'ALIVE', ?5, ?5)
		ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, address = excluded.address,
			state = 'ALIVE', started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`,
		n.ID, n.Host, n.PID, n.Address, sqlrow.Micros(now))
	if err != nil {
		return fmt.Errorf("register node %s: %w", n.ID, err)
	}
	n.State, n.StartedAt, n.HeartbeatAt = sundial.NodeAlive, now, now
	return nil
}

// NodeHeartbeat implements sundial.Store.NodeHeartbeat.
// SQLite's own, as NodeRegister: the database's clock is this process's.
func (s *Store) NodeHeartbeat(ctx context.Context, id string) (err error) {
	defer s.classify(&err)
	res, err := s.w.ExecContext(ctx, `UPDATE nodes SET heartbeat_at = ? WHERE id = ? AND state = 'ALIVE'`,
		sqlrow.Micros(s.clock()), id)
	if err != nil {
		return fmt.Errorf("heartbeat node %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("heartbeat node %s: %w", id, err)
	} else if n == 0 {
		return sqlrow.NotFound("", "node %s is not alive: it was declared dead or left", id)
	}
	return nil
}

// NodeReap (see sundial.Store.NodeReap) releases each dead node's runs as
// RunRelease does, in the same write transaction; it returns the IDs in
// order.
// SQLite's own: the clock is this process's, and the write transaction
// stands for the row locks of the other databases.
func (s *Store) NodeReap(ctx context.Context, deadAfter time.Duration, now time.Time) (_ []string, err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	var dead []string
	err = s.write(ctx, func(tx *sql.Tx) error {
		dead = dead[:0]
		cutoff := sqlrow.Micros(s.clock()) - deadAfter.Microseconds()
		rows, err := tx.QueryContext(ctx, `SELECT id FROM nodes
			WHERE state = 'ALIVE' AND heartbeat_at < ? ORDER BY id`, cutoff)
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
			if err := s.release(ctx, tx, id, reason, now); err != nil {
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
