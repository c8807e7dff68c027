package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// NodeRegister (see sundial.Store.NodeRegister): the database's clock is
// the server's.
func (s *Store) NodeRegister(ctx context.Context, n *sundial.Node) (err error) {
	defer s.classify(&err)
	if n.ID == "" {
		return sundial.Errorf(sundial.EInvalid, "id", "a node needs an ID")
	}
	var started int64
	err = s.pool.QueryRow(ctx, `INSERT INTO nodes (id, host, pid, address, state, started_at, heartbeat_at)
		SELECT $1, $2, $3, $4, 'ALIVE', c.now, c.now FROM (SELECT `+dbNow+` AS now) AS c
		ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, address = excluded.address,
			state = 'ALIVE', started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at
		RETURNING started_at`,
		n.ID, cleanText(n.Host), n.PID, cleanText(n.Address)).Scan(&started)
	if err != nil {
		return sqlrow.Wrap(badTextOr(err), "register node %s", n.ID)
	}
	n.State, n.StartedAt, n.HeartbeatAt = sundial.NodeAlive, sqlrow.FromMicros(started), sqlrow.FromMicros(started)
	return nil
}

// NodeHeartbeat (see sundial.Store.NodeHeartbeat) uses the server's clock.
func (s *Store) NodeHeartbeat(ctx context.Context, id string) (err error) {
	defer s.classify(&err)
	ct, err := s.pool.Exec(ctx, `UPDATE nodes SET heartbeat_at = `+dbNow+` WHERE id = $1 AND state = 'ALIVE'`, id)
	if err != nil {
		return sqlrow.Wrap(badTextOr(err), "heartbeat node %s", id)
	}
	if ct.RowsAffected() == 0 {
		return sqlrow.NotFound("", "node %s is not alive: it was declared dead or left", id)
	}
	return nil
}

// nodeReapSQL declares dead the ALIVE nodes whose heartbeat is older than
// $1 microseconds by the server's clock. SKIP LOCKED passes over a node
// another reaper is declaring dead (or that is renewing its heartbeat right
// now), so two reapers never release one node's runs twice.
const nodeReapSQL = `UPDATE nodes SET state = 'DEAD' WHERE id = ANY (ARRAY(
		SELECT id FROM nodes WHERE state = 'ALIVE' AND heartbeat_at < ` + dbNow + ` - $1
		ORDER BY id FOR UPDATE SKIP LOCKED))
	RETURNING id`

// NodeReap (see sundial.Store.NodeReap) judges heartbeats by the server's
// clock and releases every dead node's runs in one transaction; it returns
// the IDs in order.
func (s *Store) NodeReap(ctx context.Context, deadAfter time.Duration, now time.Time) (_ []string, err error) {
	defer s.classify(&err)
	now = sqlrow.Norm(now)
	var dead []string
	err = retry(ctx, func() error {
		dead = dead[:0]
		b := beginBatch()
		b.Queue(nodeReapSQL, deadAfter.Microseconds()).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					return err
				}
				dead = append(dead, id)
			}
			return rows.Err()
		})
		return s.inTx(ctx, b, func(tx pgx.Tx) error {
			if len(dead) == 0 {
				return nil
			}
			slices.Sort(dead)
			reasons := make(map[string]string, len(dead))
			for _, id := range dead {
				reasons[id] = fmt.Sprintf("node %s declared dead: no heartbeat for %s", id, deadAfter)
			}
			var runs []*sundial.Run
			rb := &pgx.Batch{}
			queueReleaseRead(rb, reasons, &runs)
			if err := sendBatch(ctx, tx, rb); err != nil {
				return err
			}
			return releaseWrite(ctx, tx, runs, reasons, now)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reap nodes: %w", err)
	}
	return dead, nil
}
