// Package sundial holds Sundial's domain: tasks, runs, their policies and
// state machine, the errors every layer shares, the Store contract that
// each database adapter implements, and every decision a store applies to
// the rows it reads (delivery.go, admission.go, cancel.go, release.go,
// takeback.go, oneoff.go), written once as pure functions. Adapters live in
// their own packages (store/sqlite, store/postgres, store/mysql, executor,
// scheduler, api); cmd/sundial wires them together.
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
	EForbidden    = "forbidden"    // a role too low, a Host not this node's, a cross-site request: 403
	ERateLimited  = "rate_limited" // a token's request rate is over its limit: 429 with Retry-After
	// EUnavailable: the database cannot be reached or cannot write (down,
	// connection lost, disk full, read-only, locked past the busy
	// timeout). Trying again later may succeed: 503 with Retry-After.
	EUnavailable = "unavailable"
	EInternal    = "internal" // anything else; the detail goes to the log only: 500
)

// EPrecondition is the code of a precondition that does not hold: the
// If-Match of a request, or the version a PATCH gives, names a version of
// the task that is not the current one: 412.
const EPrecondition = "precondition_failed"

// Error is an error meant for the client: a machine-readable code, a message
// that says what is wrong, the input field it concerns and the offending
// token within it, if any.
type Error struct {
	Code    string
	Message string
	Field   string
	Token   string
	// Err is the cause, for logs: never shown to the client.
	Err error
}

func (e *Error) Error() string {
	msg := e.Code + ": " + e.Message
	if e.Field != "" {
		msg = fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Unavailable returns the EUnavailable error of err, a driver's error that
// means the database cannot be reached or cannot write. Adapters classify
// their drivers' errors with it; err stays in the chain for the log.
func Unavailable(err error) *Error {
	return &Error{Code: EUnavailable, Message: "the database is unavailable; try again shortly", Err: err}
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
