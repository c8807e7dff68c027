package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// runAttemptsSQL reads a run's attempts through run_attempts_run, oldest
// first.
const runAttemptsSQL = `SELECT run_id, delivery, node_id, status, http_status, error, response_body,
		started_at, finished_at
	FROM run_attempts WHERE run_id = $1 ORDER BY id`

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
		var (
			a        sundial.Attempt
			status   string
			body     []byte
			started  *int64
			finished int64
		)
		if err := rows.Scan(&a.RunID, &a.Delivery, &a.NodeID, &status, &a.HTTPStatus, &a.Error, &body,
			&started, &finished); err != nil {
			return nil, err
		}
		a.Status = sundial.RunStatus(status)
		a.ResponseBody = string(body)
		a.StartedAt = timePtr(started)
		a.FinishedAt = sqlrow.FromMicros(finished)
		out = append(out, &a)
	}
	return out, rows.Err()
}
