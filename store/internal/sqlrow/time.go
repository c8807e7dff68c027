package sqlrow

import (
	"database/sql"
	"time"
)

// Time columns hold microseconds since the Unix epoch.

// Micros is t as a time column holds it.
func Micros(t time.Time) int64 { return t.UnixMicro() }

// FromMicros is the time a time column holds, in UTC.
func FromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

// Norm is t as the database gives it back: UTC, microseconds.
func Norm(t time.Time) time.Time { return FromMicros(Micros(t)) }

// NormZero is Norm of t, or the zero time for the zero time (which
// stands for none).
func NormZero(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return Norm(t)
}

// NormPtr is Norm of *t, or nil.
func NormPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := Norm(*t)
	return &n
}

// NullMicros is *t as a nullable time column holds it; nil is NULL.
func NullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: Micros(*t), Valid: true}
}

// TimePtr is the time a nullable time column holds, or nil for NULL.
func TimePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := FromMicros(v.Int64)
	return &t
}
