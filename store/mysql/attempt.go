package mysql

import (
	"database/sql"
	"strings"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// attemptWriteCols are the columns an attempt is inserted with, in the
// order of attemptArgs.
const attemptWriteCols = sqlrow.AttemptCols

// attemptInsertSQL inserts n attempts in one statement.
func attemptInsertSQL(n int) string {
	one := "(" + placeholders(9) + ")"
	var b strings.Builder
	b.WriteString("INSERT INTO run_attempts (" + attemptWriteCols + ") VALUES ")
	b.Grow(n * (len(one) + 2))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	return b.String()
}

// attemptArgs appends the arguments of one attempt: body and error as they
// are stored in runs (bin, text).
func attemptArgs(args []any, runID int64, delivery int, nodeID string, status sundial.RunStatus, httpStatus int,
	errText string, body []byte, started, finished sql.NullInt64) []any {
	return append(args, runID, delivery, nodeID, string(status), httpStatus, errText, body, started, finished)
}
