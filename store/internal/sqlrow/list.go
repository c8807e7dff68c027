package sqlrow

import "strings"

// Placeholder returns the parameter marker of the n-th argument (from 1)
// of a statement.
type Placeholder func(n int) string

// Question is SQLite's and MySQL's Placeholder: "?".
func Question(int) string { return "?" }

// Markers returns the markers of n arguments numbered from first,
// comma-separated ("?, ?", "$3, $4"), for an IN list.
func Markers(ph Placeholder, first, n int) string {
	m := make([]string, n)
	for i := range m {
		m[i] = ph(first + i)
	}
	return strings.Join(m, ", ")
}

// ClampLimit applies the list limits: 50 by default, at most 1000.
func ClampLimit(n int) int {
	switch {
	case n <= 0:
		return 50
	case n > 1000:
		return 1000
	}
	return n
}
