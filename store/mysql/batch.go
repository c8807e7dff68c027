package mysql

import (
	"strings"
)

// Batches are sent as one statement per chunk. A chunk holds at most
// batchRows rows and about batchBytes bytes of arguments, well under the
// servers' default max_allowed_packet (16 MiB on MariaDB, 64 MiB on MySQL 8)
// and the 65,535 placeholders of a prepared statement.
const (
	batchRows  = 500
	batchBytes = 4 << 20
)

// chunks splits n items, in order, into runs of consecutive indexes of at
// most batchRows items and about batchBytes of weight(i). When key is not
// nil, a chunk never holds two items with one key, so chunks applied in
// order have the effect of applying the items one by one.
func chunks(n int, weight func(i int) int, key func(i int) int64) [][]int {
	var (
		out  [][]int
		cur  []int
		size int
		seen = map[int64]bool{}
	)
	for i := range n {
		w := 64
		if weight != nil {
			w += weight(i)
		}
		dup := false
		if key != nil {
			dup = seen[key(i)]
		}
		if len(cur) > 0 && (len(cur) == batchRows || size+w > batchBytes || dup) {
			out = append(out, cur)
			cur, size = nil, 0
			clear(seen)
		}
		cur = append(cur, i)
		size += w
		if key != nil {
			seen[key(i)] = true
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// placeholders returns "?, ?, ?" with n marks.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// tuples returns n parenthesised groups of width marks: "(?, ?), (?, ?)".
func tuples(n, width int) string {
	one := "(" + placeholders(width) + ")"
	var b strings.Builder
	b.Grow(n * (len(one) + 2))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	return b.String()
}

// valuesTable returns a derived table of n rows with the named columns, all
// bound parameters, for joining a batch to a table in one statement:
// "SELECT ? AS a, ? AS b UNION ALL SELECT ?, ?". (MySQL's VALUES ROW() and
// MariaDB's VALUES () differ; UNION ALL works on both.)
func valuesTable(cols []string, n int) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("? AS ")
		b.WriteString(c)
	}
	rest := " UNION ALL SELECT " + placeholders(len(cols))
	for range n - 1 {
		b.WriteString(rest)
	}
	return b.String()
}

// joinValues returns the table reference of an UPDATE that changes rows of
// table (as alias) by primary key from a batch of n rows with the named
// columns, the first of which is "id": the batch is read first and each row
// found by primary key, whatever the statistics say.
func joinValues(table, alias string, cols []string, n int) string {
	return "(" + valuesTable(cols, n) + ") AS v STRAIGHT_JOIN " + table + " AS " + alias +
		" FORCE INDEX (PRIMARY) ON " + alias + ".id = v.id"
}
