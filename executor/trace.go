package executor

import (
	"crypto/rand"
	"encoding/hex"
)

// NewTraceID returns a fresh W3C trace id: 32 lowercase hex characters from
// crypto/rand, never all zeros.
func NewTraceID() string {
	var b [16]byte
	randomNonZero(b[:])
	return hex.EncodeToString(b[:])
}

// appendSpanID appends a fresh W3C span (parent) id to dst: 16 lowercase
// hex characters from crypto/rand, never all zeros.
func appendSpanID(dst []byte) []byte {
	var b [8]byte
	randomNonZero(b[:])
	return hex.AppendEncode(dst, b[:])
}

// randomNonZero fills b with random bytes that are not all zero, as W3C
// Trace Context requires of trace and span ids.
func randomNonZero(b []byte) {
	for {
		rand.Read(b) // never fails since Go 1.24
		for _, c := range b {
			if c != 0 {
				return
			}
		}
	}
}

// validTraceID reports whether s is a usable W3C trace id: 32 lowercase hex
// characters, not all zeros.
func validTraceID(s string) bool {
	if len(s) != 32 {
		return false
	}
	nonZero := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '0':
		case '1' <= c && c <= '9', 'a' <= c && c <= 'f':
			nonZero = true
		default:
			return false
		}
	}
	return nonZero
}
