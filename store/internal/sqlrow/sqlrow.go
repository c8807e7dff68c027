// Package sqlrow holds the encoding of tasks and runs shared by the SQL
// adapters: times as microseconds, the defaults of a new run, list filters,
// and the errors the adapters return. SQL statements and each dialect's
// quirks stay in the adapters.
package sqlrow

import (
	"errors"
	"fmt"

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
