// Package sundial holds Sundial's domain: tasks, runs, their policies and
// state machine, the errors every layer shares, and the Store contract that
// each database adapter implements. Adapters live in their own packages
// (store/sqlite, executor, scheduler, api); cmd/sundial wires them together.
package sundial

import (
	"errors"
	"fmt"
)

// Error codes. Each maps to one HTTP status in the api package.
const (
	EInvalid      = "invalid"      // the input is malformed or breaks a rule: 400
	ENotFound     = "not_found"    // no such task or run: 404
	EConflict     = "conflict"     // name taken, stale version, illegal state change: 409
	ETooLarge     = "too_large"    // the request body is over the limit: 413
	EUnsupported  = "unsupported"  // wrong content type: 415
	EUnauthorized = "unauthorized" // missing or wrong credentials: 401
	EInternal     = "internal"     // anything else; the detail goes to the log only: 500
)

// Error is an error meant for the client: a machine-readable code, a message
// that says what is wrong, the input field it concerns and the offending
// token within it, if any.
type Error struct {
	Code    string
	Message string
	Field   string
	Token   string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return e.Code + ": " + e.Message
}

// Errorf returns an *Error with a formatted message.
func Errorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the *Error in err's chain, or EInternal.
func ErrorCode(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the client message of the *Error in err's chain, or a
// generic one that reveals nothing of an internal failure.
func ErrorMessage(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Message
	}
	return "internal error"
}
