package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sundialhq/sundial/store/sqlite"
)

// rowsWrittenMetric is the name of the counter of the rows a node's SQLite
// database wrote (sqlite.Store.RowsWritten); bench precision reads it.
const rowsWrittenMetric = "sundial_db_rows_written_total"

// sqliteRows exports sqlite.Store.RowsWritten as rowsWrittenMetric, by
// table and op (insert, update, delete). PostgreSQL and MySQL count the
// rows written in their own statistics (pg_stat_user_tables,
// information_schema.TABLE_STATISTICS), which cover every node.
type sqliteRows struct {
	store *sqlite.Store
	desc  *prometheus.Desc
}

func newSQLiteRows(s *sqlite.Store) *sqliteRows {
	return &sqliteRows{store: s, desc: prometheus.NewDesc(rowsWrittenMetric,
		"Rows this node's SQLite database inserted, updated and deleted (foreign key cascades included), by table and op.",
		[]string{"table", "op"}, nil)}
}

func (c *sqliteRows) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *sqliteRows) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.store.RowsWritten() {
		for _, m := range []struct {
			op string
			n  int64
		}{{"insert", t.Inserted}, {"update", t.Updated}, {"delete", t.Deleted}} {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(m.n), t.Table, m.op)
		}
	}
}
