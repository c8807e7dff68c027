package postgres

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// classify turns *err into sundial.EUnavailable when it means the database
// cannot be used now but may be later: the store is closed, the server
// cannot be reached or the connection to it broke, it is shutting down or
// starting, it is out of resources (disk full, too many connections), or
// it is a read-only standby. Every other error, domain errors and real
// faults (a constraint, a malformed statement) alike, stays as it is.
// Every exported method defers it.
func (s *Store) classify(err *error) { sqlrow.Classify(err, s.closed.Load(), unavailable) }

// unavailable reports whether a driver error means the server cannot be
// used now.
func unavailable(err error) bool {
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "53"), // insufficient resources: disk full, out of memory, too many connections
			pe.Code == "57P01",               // admin_shutdown
			pe.Code == "57P02",               // crash_shutdown
			pe.Code == "57P03",               // cannot_connect_now: starting up
			pe.Code == "25006",               // read_only_sql_transaction: a standby
			pe.Code == "58030":               // io_error
			return true
		}
		return false
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	return sqlrow.Disconnected(err)
}
