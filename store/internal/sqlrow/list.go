package sqlrow

import (
	"strings"

	"github.com/sundialhq/sundial"
)

// Placeholder returns the parameter marker of the n-th argument (from 1)
// of a statement.
type Placeholder func(n int) string

// Question is SQLite's and MySQL's Placeholder: "?".
func Question(int) string { return "?" }

// RunFilter returns the conditions of RunList for f, joined by AND (empty
// for none), and their arguments, numbered from 1.
func RunFilter(f sundial.RunFilter, ph Placeholder) (string, []any) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, arg any) {
		args = append(args, arg)
		where = append(where, cond+" "+ph(len(args)))
	}
	if f.TaskID != 0 {
		add(`task_id =`, f.TaskID)
	}
	if f.Status != "" {
		add(`status =`, string(f.Status))
	}
	if !f.From.IsZero() {
		add(`scheduled_at >=`, Micros(f.From))
	}
	if !f.To.IsZero() {
		add(`scheduled_at <`, Micros(f.To))
	}
	if f.BeforeID > 0 {
		add(`id <`, f.BeforeID)
	}
	return strings.Join(where, ` AND `), args
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
