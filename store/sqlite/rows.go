package sqlite

import (
	"context"
	"database/sql/driver"
	"slices"
	"strings"
	"sync"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// TableRows is how many rows of one table the store's write connection
// inserted, updated and deleted (see Store.RowsWritten).
type TableRows struct {
	Table                      string
	Inserted, Updated, Deleted int64
}

// RowsWritten returns the rows the store's write connection has inserted,
// updated and deleted since Open, by table in the order of their names:
// what SQLite's pre-update hook reports, one call for each row a statement
// changes (a foreign key's cascade included), whether its transaction
// commits or not. Their sum is what SQLite's total_changes() counts on
// that connection. Only this process's writes are counted: another
// process writing the same file counts its own.
func (s *Store) RowsWritten() []TableRows { return s.rows.snapshot() }

// rowCounts counts the rows changed on the write connection, by table:
// the pre-update hook of every connection writeDriver opens adds to it.
type rowCounts struct {
	mu sync.Mutex
	n  map[string]*TableRows
}

// count is the pre-update hook: it runs on the write connection's
// goroutine, before the row changes.
func (c *rowCounts) count(d sqlite.SQLitePreUpdateData) {
	if d.DatabaseName != "main" {
		return // a temporary table
	}
	c.mu.Lock()
	t := c.n[d.TableName]
	if t == nil {
		if c.n == nil {
			c.n = map[string]*TableRows{}
		}
		t = &TableRows{Table: strings.Clone(d.TableName)}
		c.n[t.Table] = t
	}
	switch d.Op {
	case sqlite3.SQLITE_INSERT:
		t.Inserted++
	case sqlite3.SQLITE_UPDATE:
		t.Updated++
	case sqlite3.SQLITE_DELETE:
		t.Deleted++
	}
	c.mu.Unlock()
}

func (c *rowCounts) snapshot() []TableRows {
	c.mu.Lock()
	out := make([]TableRows, 0, len(c.n))
	for _, t := range c.n {
		out = append(out, *t)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b TableRows) int { return strings.Compare(a.Table, b.Table) })
	return out
}

// writeConnector opens the write connections: the driver's, through a
// Driver of the store's own, whose connection hook (not the package-level
// one, which every SQLite connection of the process runs) counts the rows
// each of them changes into rows.
type writeConnector struct {
	drv *sqlite.Driver
	dsn string
}

func newWriteConnector(dsn string, rows *rowCounts) *writeConnector {
	drv := &sqlite.Driver{}
	drv.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error {
		if h, ok := c.(sqlite.HookRegisterer); ok {
			h.RegisterPreUpdateHook(rows.count)
		}
		return nil
	})
	return &writeConnector{drv: drv, dsn: dsn}
}

func (c *writeConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c *writeConnector) Driver() driver.Driver                        { return c.drv }
