package sqlite

import (
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// classify turns *err into sundial.EUnavailable when it means the database
// cannot be used now but may be later: the store is closed, or SQLite
// reports that the file is locked past the busy timeout, cannot be opened,
// read or written, is read-only or its disk is full. Every other error,
// domain errors and real faults (a constraint, a malformed statement, a
// corrupt file) alike, stays as it is. Every exported method defers it.
func (s *Store) classify(err *error) { sqlrow.Classify(err, s.closed.Load(), unavailable) }

// unavailable reports whether a driver error is one of SQLite's that
// means the file cannot be used now.
func unavailable(err error) bool {
	switch sqliteCode(err) & 0xff { // the primary result code
	case sqlite3.SQLITE_BUSY, // locked by another process past the busy timeout
		sqlite3.SQLITE_LOCKED,
		sqlite3.SQLITE_IOERR,    // the disk failed a read or a write
		sqlite3.SQLITE_FULL,     // the disk is full
		sqlite3.SQLITE_READONLY, // the file or its directory cannot be written
		sqlite3.SQLITE_CANTOPEN:
		return true
	}
	return false
}
