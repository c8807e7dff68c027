package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// runAttemptsSQL reads a run's attempts through run_attempts_run, oldest
// first (sqlrow.AttemptsSQL with PostgreSQL's placeholder).
const runAttemptsSQL = `SELECT ` + sqlrow.AttemptCols + ` FROM run_attempts WHERE run_id = $1 ORDER BY id`

// RunAttempts returns the attempts recorded for a run, oldest first: none
// (an empty slice) for a run that has none or does not exist. RunFinish
// and the release of a node's runs (RunRelease, NodeReap) record them.
func (s *Store) RunAttempts(ctx context.Context, runID int64) (_ []*sundial.Attempt, err error) {
	defer s.classify(&err)
	rows, err := s.pool.Query(ctx, runAttemptsSQL, runID)
	if err == nil {
		var out []*sundial.Attempt
		if out, err = scanAttempts(rows); err == nil {
			return out, nil
		}
	}
	return nil, fmt.Errorf("list attempts of run %d: %w", runID, err)
}

func scanAttempts(rows pgx.Rows) ([]*sundial.Attempt, error) {
	defer rows.Close()
	out := []*sundial.Attempt{}
	for rows.Next() {
		a, err := sqlrow.ScanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
