package sqlstore

import (
	"strings"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// runListOrder is RunList's ORDER BY: newest first by scheduled time, then
// by ID. The runs_scheduled and runs_task_scheduled indexes of each
// dialect hold the runs in this order (without and with a task), so that
// a page is a range of an index read backwards from the cursor, and stops
// at its limit.
const runListOrder = `scheduled_at DESC, id DESC`

// runFilter returns the conditions of RunList for f, joined by AND (empty
// for none), and their arguments, numbered from 1.
func runFilter(f sundial.RunListParams, ph sqlrow.Placeholder) (string, []any) {
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
	if !f.From.IsZero() {
		where = append(where, `scheduled_at >= `+arg(sqlrow.Micros(f.From)))
	}
	if !f.To.IsZero() {
		where = append(where, `scheduled_at < `+arg(sqlrow.Micros(f.To)))
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
