// Package sqlrow holds the pieces the SQL adapters share: the encoding of
// tasks and runs (times as microseconds, the defaults of a new run), list
// limits, the errors the adapters return, the status lists of their
// statements (rendered from the domain's predicates), and the plain writes
// of a rule's changes (a run written back, attempts, a task ended or
// rewound) in the form the database/sql adapters share. The methods they
// share whole are in sqlstore; each dialect's quirks, and the SQL of the
// hot paths, stay in the adapters.
package sqlrow

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/sundialhq/sundial"
)

// Scanner reads one row: *sql.Row, *sql.Rows and pgx.Row are Scanners.
type Scanner interface{ Scan(dest ...any) error }

// NotFound returns an ENotFound error for the client.
func NotFound(field, format string, args ...any) *sundial.Error {
	return sundial.Errorf(sundial.ENotFound, field, format, args...)
}

// Conflict returns an EConflict error for the client.
func Conflict(field, format string, args ...any) *sundial.Error {
	return sundial.Errorf(sundial.EConflict, field, format, args...)
}

// Wrap returns a *sundial.Error as it is, for the client, and wraps any
// other error with what was being done. It returns nil for nil.
func Wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*sundial.Error](err); ok {
		return err
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// Classify turns *err into sundial.EUnavailable when the database cannot
// be used now but may be later: the store is closed, or unavailable (the
// adapter's reading of its driver's errors) says so. Domain errors and
// every other fault (a constraint, a malformed statement) stay as they
// are. Every exported method of an adapter defers it.
func Classify(err *error, closed bool, unavailable func(error) bool) {
	if *err == nil {
		return
	}
	if _, ok := errors.AsType[*sundial.Error](*err); ok {
		return
	}
	if closed || unavailable(*err) {
		*err = sundial.Unavailable(*err)
	}
}

// Disconnected reports whether err says the server could not be reached,
// or the connection to it broke: a network error (refused, reset, timed
// out on the wire), or the connection closed in the middle of an exchange.
func Disconnected(err error) bool {
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// RequestConflict is the error of a task created with the request_id of a
// live task made by another request (or changed since it was made).
func RequestConflict(requestID string) *sundial.Error {
	return Conflict("request_id", "a task with request_id %q already exists and differs from this request "+
		"(another body, or the task was changed since): send the same body again, or another request_id", requestID)
}
