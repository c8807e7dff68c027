package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// stmts are the hot statements, prepared once on the write connection.
// Inside a transaction on that connection, tx.StmtContext reuses them.
type stmts struct {
	runInsert, runStart, runFinish, planNext     *sql.Stmt
	admitRun, admitTask, admitPending, admitLast *sql.Stmt
	admitSkips, taskInsert, runUpdate            *sql.Stmt
	runRetry, completeTask, claimDue, attempts   *sql.Stmt
	all                                          []*sql.Stmt
}

func prepare(ctx context.Context, db *sql.DB) (*stmts, error) {
	st := &stmts{}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&st.runInsert, runInsertSQL},
		{&st.runStart, runStartSQL},
		{&st.runFinish, runFinishSQL},
		{&st.planNext, planNextSQL},
		{&st.admitRun, admitRunSQL},
		{&st.admitTask, admitTaskSQL},
		{&st.admitPending, admitPendingSQL},
		{&st.admitLast, admitLastSQL},
		{&st.admitSkips, admitSkipsSQL},
		{&st.runUpdate, sqlrow.RunUpdateSQL},
		{&st.taskInsert, taskInsertSQL},
		{&st.runRetry, runRetrySQL},
		{&st.completeTask, completeTaskSQL},
		{&st.claimDue, claimDueSQL},
		{&st.attempts, attemptFromRunSQL},
	} {
		s, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			st.close()
			return nil, fmt.Errorf("prepare %q: %w", p.sql, err)
		}
		*p.dst = s
		st.all = append(st.all, s)
	}
	return st, nil
}

// in returns a function that binds a prepared statement to tx.
func (st *stmts) in(ctx context.Context, tx *sql.Tx) func(*sql.Stmt) *sql.Stmt {
	return func(s *sql.Stmt) *sql.Stmt { return tx.StmtContext(ctx, s) }
}

func (st *stmts) close() error {
	var errs []error
	for _, s := range st.all {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
