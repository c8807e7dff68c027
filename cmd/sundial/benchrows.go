package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial/bench"
)

// rowCounter reads the rows a bench's database has written so far, by
// "table.kind" (bench.RowSample).
type rowCounter struct {
	source string
	read   func(ctx context.Context) (map[string]int64, error)
	close  func()
}

// newRowCounter returns the counter of the bench's database: PostgreSQL's
// pg_stat_user_tables of the bench's schema; MySQL's
// information_schema.TABLE_STATISTICS of the bench's database when the
// server's userstat is on (MariaDB, Percona; with userstat, it is turned on
// for the run and back off after), the server-wide Handler_* counters
// otherwise; SQLite's counts of its writes, which each node exports on
// /metrics (rowsWrittenMetric). nil for a --server node.
func newRowCounter(ctx context.Context, backend, dsn string, nodes []string, userstat bool) (*rowCounter, error) {
	switch backend {
	case "postgres":
		return pgRowCounter(dsn)
	case "mysql":
		return mysqlRowCounter(ctx, dsn, userstat)
	case "sqlite":
		return metricsRowCounter(nodes), nil
	}
	return nil, nil
}

// pgRowCounter reads pg_stat_user_tables. Each backend adds its counts to
// what the view shows at the end of a transaction at least a second after
// it last did (or, idle, within 10 s): a reading lags the writes by up to
// about a second, which bench.AnalyzeRows averages out over a second of
// readings at each end. Each reading is a transaction of its own, so
// stats_fetch_consistency caches nothing between two.
func pgRowCounter(dsn string) (*rowCounter, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, err
	}
	schema := u.Query().Get("search_path")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return &rowCounter{
		source: "pg_stat_user_tables",
		read: func(ctx context.Context) (map[string]int64, error) {
			rows, err := db.QueryContext(ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_del
				FROM pg_stat_user_tables WHERE schemaname = $1`, schema)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			out := map[string]int64{}
			for rows.Next() {
				var table string
				var ins, upd, del int64
				if err := rows.Scan(&table, &ins, &upd, &del); err != nil {
					return nil, err
				}
				out[table+".inserted"], out[table+".updated"], out[table+".deleted"] = ins, upd, del
			}
			return out, rows.Err()
		},
		close: func() { db.Close() },
	}, nil
}

// mysqlRowCounter reads the rows changed in each table of the bench's
// database (TABLE_STATISTICS, which does not tell inserts, updates and
// deletes apart) when the server's userstat is on; with turnOn, it turns
// userstat on first, and back off when closed. Otherwise it reads the
// server's Handler_write, Handler_update and Handler_delete, which count
// every client's writes, and those to internal temporary tables.
func mysqlRowCounter(ctx context.Context, dsn string, turnOn bool) (*rowCounter, error) {
	driverDSN, err := mysqlDSN(dsn)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", driverDSN)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, err
	}
	database := strings.Trim(u.Path, "/")
	closeDB := func() { db.Close() }

	var on sql.NullBool
	if err := db.QueryRowContext(ctx, `SELECT @@GLOBAL.userstat`).Scan(&on); err != nil {
		on = sql.NullBool{} // no such variable: MySQL
		if turnOn {
			closeDB()
			return nil, fmt.Errorf("--userstat: the server has no userstat (MariaDB and Percona have): %w", err)
		}
	}
	if turnOn && !on.Bool {
		if _, err := db.ExecContext(ctx, `SET GLOBAL userstat = ON`); err != nil {
			closeDB()
			return nil, fmt.Errorf("--userstat: %w", err)
		}
		on.Bool = true
		closeDB = func() {
			_, _ = db.Exec(`SET GLOBAL userstat = OFF`)
			db.Close()
		}
	}
	if on.Bool {
		return &rowCounter{
			source: "information_schema.TABLE_STATISTICS",
			read: func(ctx context.Context) (map[string]int64, error) {
				rows, err := db.QueryContext(ctx, `SELECT TABLE_NAME, ROWS_CHANGED
					FROM information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = ?`, database)
				if err != nil {
					return nil, err
				}
				defer rows.Close()
				out := map[string]int64{}
				for rows.Next() {
					var table string
					var n int64
					if err := rows.Scan(&table, &n); err != nil {
						return nil, err
					}
					out[table+".changed"] = n
				}
				return out, rows.Err()
			},
			close: closeDB,
		}, nil
	}
	kinds := map[string]string{"Handler_write": "inserted", "Handler_update": "updated", "Handler_delete": "deleted"}
	return &rowCounter{
		source: "Handler_* of the whole server (every client's writes; --userstat counts the bench's tables)",
		read: func(ctx context.Context) (map[string]int64, error) {
			rows, err := db.QueryContext(ctx, `SHOW GLOBAL STATUS WHERE Variable_name IN
				('Handler_write', 'Handler_update', 'Handler_delete')`)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			out := map[string]int64{}
			for rows.Next() {
				var name string
				var v int64
				if err := rows.Scan(&name, &v); err != nil {
					return nil, err
				}
				out["server."+kinds[name]] = v
			}
			return out, rows.Err()
		},
		close: closeDB,
	}, nil
}

// rowsWrittenLine matches a sample of rowsWrittenMetric (labels in the
// order the exposition sorts them).
var rowsWrittenLine = regexp.MustCompile(`^` + rowsWrittenMetric + `\{op="(insert|update|delete)",table="([^"]+)"\} (\S+)$`)

// metricsRowCounter sums the rows the nodes' SQLite stores wrote, read from
// their /metrics.
func metricsRowCounter(nodes []string) *rowCounter {
	client := &http.Client{Timeout: 5 * time.Second}
	kinds := map[string]string{"insert": "inserted", "update": "updated", "delete": "deleted"}
	return &rowCounter{
		source: rowsWrittenMetric,
		read: func(ctx context.Context) (map[string]int64, error) {
			out := map[string]int64{} // by table.kind
			for _, n := range nodes {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, n+"/metrics", nil)
				if err != nil {
					return nil, err
				}
				resp, err := client.Do(req)
				if err != nil {
					return nil, err
				}
				m, err := parseRowsWritten(resp.Body)
				resp.Body.Close()
				if err != nil {
					return nil, fmt.Errorf("%s/metrics: %w", n, err)
				}
				for k, v := range m {
					table, op, _ := strings.Cut(k, ".")
					out[table+"."+kinds[op]] += v
				}
			}
			return out, nil
		},
		close: func() {},
	}
}

// parseRowsWritten reads the samples of rowsWrittenMetric in a Prometheus
// text exposition, by "table.op"; none is an error.
func parseRowsWritten(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := rowsWrittenLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, err
		}
		out[m[2]+"."+m[1]] = int64(v)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no " + rowsWrittenMetric)
	}
	return out, nil
}

// rowSampler reads a rowCounter and the target's count of deliveries
// together, every interval from from until to, in the background.
type rowSampler struct {
	samples []bench.RowSample
	err     error
	done    chan struct{} // closed when samples and err are final
}

func sampleRows(ctx context.Context, c *rowCounter, deliveries func() int64, from, to time.Time, interval time.Duration) *rowSampler {
	s := &rowSampler{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for at := from; !at.After(to); at = at.Add(interval) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(at)):
			}
			t0, d0 := time.Now(), deliveries()
			rows, err := c.read(ctx)
			t1, d1 := time.Now(), deliveries()
			if err != nil {
				s.err = err
				return
			}
			s.samples = append(s.samples, bench.RowSample{At: t0.Add(t1.Sub(t0) / 2), Rows: rows,
				Deliveries: float64(d0+d1) / 2})
		}
	}()
	return s
}

// wait returns the samples once the sampler is done.
func (s *rowSampler) wait() ([]bench.RowSample, error) {
	<-s.done
	return s.samples, s.err
}
