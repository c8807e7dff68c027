package mysql

import (
	"database/sql/driver"
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// classify turns *err into sundial.EUnavailable when it means the database
// cannot be used now but may be later: the store is closed, the server
// cannot be reached or the connection to it broke (bad connection, server
// gone), it is shutting down, out of connections or disk, or read-only.
// Every other error, domain errors and real faults (a constraint, a
// malformed statement) alike, stays as it is. Every exported method
// defers it.
func (s *Store) classify(err *error) { sqlrow.Classify(err, s.closed.Load(), unavailable) }

// MySQL and MariaDB error numbers that mean the server cannot be used now.
var unavailableNumbers = map[uint16]bool{
	1021: true, // ER_DISK_FULL
	1040: true, // ER_CON_COUNT_ERROR: too many connections
	1053: true, // ER_SERVER_SHUTDOWN
	1114: true, // ER_RECORD_FILE_FULL: the table is full
	1290: true, // ER_OPTION_PREVENTS_STATEMENT: --read-only
	1836: true, // ER_READ_ONLY_MODE
	1927: true, // ER_CONNECTION_KILLED (MariaDB)
	4031: true, // ER_CLIENT_INTERACTION_TIMEOUT: disconnected by the server
}

// unavailable reports whether a driver error means the server cannot be
// used now.
func unavailable(err error) bool {
	if me, ok := errors.AsType[*mysql.MySQLError](err); ok {
		return unavailableNumbers[me.Number]
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) {
		return true // the connection broke, or the server has gone away
	}
	return sqlrow.Disconnected(err)
}
