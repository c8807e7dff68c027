package sqlstore

import (
	"strings"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/label"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// runListOrder is RunList's ORDER BY: newest first by scheduled time, then
// by ID. The runs_scheduled and runs_task_scheduled indexes of each
// dialect hold the runs in this order (without and with a task), so that
// a page is a range of an index read backwards from the cursor, and stops
// at its limit.
const runListOrder = `scheduled_at DESC, id DESC`

// runFilter returns the conditions of RunList for f, joined by AND (empty
// for none), and their arguments, numbered from 1. A run's trigger,
// finished time and task's labels are conditions on the rows the order's
// index reads (no index holds them: an index on finished_at would be
// written by every outcome), so a page that matches few runs reads more
// of the index; the scheduled time bounds the range.
func runFilter(f sundial.RunListParams, ph sqlrow.Placeholder, labelOf labelFunc) (string, []any) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return ph(len(args))
	}
	if f.TaskID != 0 {
		where = append(where, `task_id = `+arg(f.TaskID))
	}
	if len(f.Status) > 0 {
		in := make([]string, len(f.Status))
		for i, st := range f.Status {
			in[i] = arg(string(st))
		}
		where = append(where, `status IN (`+strings.Join(in, ", ")+`)`)
	}
	if len(f.Trigger) > 0 {
		in := make([]string, len(f.Trigger))
		for i, tr := range f.Trigger {
			in[i] = arg(string(tr))
		}
		where = append(where, `trigger_type IN (`+strings.Join(in, ", ")+`)`)
	}
	if !f.From.IsZero() {
		where = append(where, `scheduled_at >= `+arg(sqlrow.Micros(f.From)))
	}
	if !f.To.IsZero() {
		where = append(where, `scheduled_at < `+arg(sqlrow.Micros(f.To)))
	}
	if !f.FinishedFrom.IsZero() {
		where = append(where, `finished_at >= `+arg(sqlrow.Micros(f.FinishedFrom)))
	}
	if !f.FinishedTo.IsZero() {
		where = append(where, `finished_at < `+arg(sqlrow.Micros(f.FinishedTo)))
	}
	if len(f.Selector) > 0 {
		// The tasks, live or deleted, by primary key from the runs' task_id.
		where = append(where, `task_id IN (SELECT t.id FROM tasks AS t WHERE `+
			selectorCond(f.Selector, func(key string) string { return labelOf("t.labels_json", key, arg) }, arg)+`)`)
	}
	if !f.ExcludePlannedAfter.IsZero() {
		where = append(where, `(status <> 'SCHEDULED' OR deliveries > 0 OR scheduled_at <= `+
			arg(sqlrow.Micros(f.ExcludePlannedAfter))+`)`)
	}
	if f.BeforeID > 0 {
		// The first term bounds the index range; the second leaves out
		// the runs at its edge that the previous page had.
		at := sqlrow.Micros(f.BeforeTime)
		where = append(where, `scheduled_at <= `+arg(at)+` AND (scheduled_at < `+arg(at)+` OR id < `+arg(f.BeforeID)+`)`)
	}
	return strings.Join(where, ` AND `), args
}

// labelFunc is Dialect.Label.
type labelFunc = func(col, key string, arg func(any) string) string

// selectorCond is the SQL condition that a row's labels meet every
// requirement of sel, with value(key) the expression of a label's value
// (NULL when the row has no such label), arguments bound with arg. != and
// notin hold for a row without the label, as in Kubernetes. Each call of
// value or arg binds its arguments next, so the text is built in order:
// "?" placeholders are numbered by where they stand.
func selectorCond(sel label.Selector, value func(key string) string, arg func(any) string) string {
	var b strings.Builder
	for i, r := range sel {
		if i > 0 {
			b.WriteString(` AND `)
		}
		switch r.Op {
		case label.Exists:
			b.WriteString(value(r.Key) + ` IS NOT NULL`)
		case label.DoesNotExist:
			b.WriteString(value(r.Key) + ` IS NULL`)
		case label.Equals, label.In:
			b.WriteString(value(r.Key) + ` IN (`)
			writeArgs(&b, r.Values, arg)
			b.WriteString(`)`)
		case label.NotEquals, label.NotIn:
			b.WriteString(`(` + value(r.Key) + ` IS NULL OR `)
			b.WriteString(value(r.Key) + ` NOT IN (`)
			writeArgs(&b, r.Values, arg)
			b.WriteString(`))`)
		default:
			b.WriteString(`1 = 0`)
		}
	}
	return b.String()
}

// writeArgs writes the placeholders of vs, bound with arg, separated by
// commas.
func writeArgs(b *strings.Builder, vs []string, arg func(any) string) {
	for i, v := range vs {
		if i > 0 {
			b.WriteString(`, `)
		}
		b.WriteString(arg(v))
	}
}
