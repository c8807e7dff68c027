package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// statsCols are node_stats' columns, in the order StatsSave binds them
// and StatsList reads them.
const statsCols = `node_id, minute, fires, scheduled_fires, succeeded, failed, skipped, canceled,
	lag, lag_max_us, updated_at`

// statsCounted are the columns a StatsSave of a row that exists replaces.
var statsCounted = []string{"fires", "scheduled_fires", "succeeded", "failed", "skipped", "canceled",
	"lag", "lag_max_us", "updated_at"}

// statsChunk is the most rows one statement of StatsSave writes: 11
// arguments each stay far below every database's limit of arguments.
const statsChunk = 500

// statsUpsert is the clause that makes StatsSave's INSERT replace the row
// of a (minute, node) that exists: MySQL's ON DUPLICATE KEY UPDATE, the
// others' ON CONFLICT DO UPDATE.
func (d *Dialect) statsUpsert() string {
	set := make([]string, len(statsCounted))
	for i, c := range statsCounted {
		if d.Upsert != "" {
			set[i] = c + ` = VALUES(` + c + `)`
		} else {
			set[i] = c + ` = excluded.` + c
		}
	}
	if d.Upsert != "" {
		return ` ` + d.Upsert + ` ` + strings.Join(set, ", ")
	}
	return ` ON CONFLICT (minute, node_id) DO UPDATE SET ` + strings.Join(set, ", ")
}

// StatsSave writes the rows ms, replacing those that exist, a statement
// per statsChunk rows.
func (p *Plain) StatsSave(ctx context.Context, ms []*sundial.StatsMinute) (err error) {
	defer p.classify(&err)
	upsert := p.q.d.statsUpsert()
	for len(ms) > 0 {
		n := min(len(ms), statsChunk)
		args := make([]any, 0, 11*n)
		for _, m := range ms[:n] {
			args = append(args, m.NodeID, sqlrow.Micros(m.Minute.Truncate(time.Minute)), m.Fires, m.ScheduledFires,
				m.Succeeded, m.Failed, m.Skipped, m.Canceled, encodeLag(m.Lag), m.LagMax.Microseconds(),
				sqlrow.Micros(m.UpdatedAt))
		}
		q := `INSERT INTO node_stats (` + statsCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)` +
			strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", n-1) + upsert
		if _, err := p.w.Exec(ctx, p.q.d.bind(q), args...); err != nil {
			return p.wrap(err, "save node stats (%d rows)", n)
		}
		ms = ms[n:]
	}
	return nil
}

// StatsList returns the rows of the minutes in [from, to), by minute then
// node.
func (p *Plain) StatsList(ctx context.Context, from, to time.Time) (_ []*sundial.StatsMinute, err error) {
	defer p.classify(&err)
	rows, err := p.r.Query(ctx, p.q.d.bind(`SELECT `+statsCols+` FROM node_stats
		WHERE minute >= ? AND minute < ? ORDER BY minute, node_id`), sqlrow.Micros(from), sqlrow.Micros(to))
	out, err := scanAll(rows, err, func(sc sqlrow.Scanner) (*sundial.StatsMinute, error) {
		var (
			m                       sundial.StatsMinute
			minute, lagMax, updated int64
			lag                     string
		)
		if err := sc.Scan(&m.NodeID, &minute, &m.Fires, &m.ScheduledFires, &m.Succeeded, &m.Failed,
			&m.Skipped, &m.Canceled, &lag, &lagMax, &updated); err != nil {
			return nil, err
		}
		m.Minute, m.UpdatedAt = sqlrow.FromMicros(minute), sqlrow.FromMicros(updated)
		m.LagMax = time.Duration(lagMax) * time.Microsecond
		if m.Lag, err = decodeLag(lag); err != nil {
			return nil, fmt.Errorf("node %s, minute %s: %w", m.NodeID, m.Minute.Format(time.RFC3339), err)
		}
		return &m, nil
	})
	if err != nil {
		return nil, p.wrap(err, "list node stats")
	}
	return out, nil
}

// StatsPurge deletes the rows of the minutes before before.
func (p *Plain) StatsPurge(ctx context.Context, before time.Time) (_ int, err error) {
	defer p.classify(&err)
	n, err := p.w.Exec(ctx, p.q.d.bind(`DELETE FROM node_stats WHERE minute < ?`), sqlrow.Micros(before))
	if err != nil {
		return 0, p.wrap(err, "purge node stats")
	}
	return int(n), nil
}

// encodeLag is a lag histogram as node_stats.lag holds it: its counts,
// comma-separated, the trailing zeros left out ("" for none).
func encodeLag(lag [sundial.StatsLagBuckets]int64) string {
	n := len(lag)
	for n > 0 && lag[n-1] == 0 {
		n--
	}
	var b strings.Builder
	for i, c := range lag[:n] {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(c, 10))
	}
	return b.String()
}

// decodeLag reads a histogram encodeLag wrote.
func decodeLag(s string) (lag [sundial.StatsLagBuckets]int64, err error) {
	if s == "" {
		return lag, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > len(lag) {
		return lag, fmt.Errorf("lag histogram of %d buckets, want at most %d", len(parts), len(lag))
	}
	for i, p := range parts {
		if lag[i], err = strconv.ParseInt(p, 10, 64); err != nil {
			return lag, fmt.Errorf("lag histogram %q: %w", s, err)
		}
	}
	return lag, nil
}
