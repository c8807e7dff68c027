package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/label"
	"github.com/sundialhq/sundial/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if migrated.dir != "" {
			os.RemoveAll(migrated.dir)
		}
	}))
}

// migrated is a database file that Open made and migrated, closed and
// never written again: the conformance cases start on copies of it
// (migratedCopy).
var migrated struct {
	once      sync.Once
	dir, path string
	err       error
}

// migratedCopy writes to path a copy of a database file that Open made and
// migrated and that has no rows but its migration ledger: what Open would
// make of a new file, byte for byte but the ledger's times. Migrating (every
// migration in a write transaction of its own, synced) is most of what a
// conformance case costs; copying the file is not. The migrations
// themselves are tested on new files (TestOpenExisting and the like).
func migratedCopy(t *testing.T, path string) {
	t.Helper()
	migrated.once.Do(func() {
		if migrated.dir, migrated.err = os.MkdirTemp("", "sundial-sqlite-test-"); migrated.err != nil {
			return
		}
		migrated.path = filepath.Join(migrated.dir, "migrated.db")
		s, err := Open(context.Background(), migrated.path, Options{})
		if err != nil {
			migrated.err = err
			return
		}
		// The last connection to close checkpoints the WAL into the
		// file and removes it: the file alone is the database.
		migrated.err = s.Close()
		if _, err := os.Stat(migrated.path + "-wal"); migrated.err == nil && err == nil {
			migrated.err = errors.New("the migrated database kept its WAL file")
		}
	})
	if migrated.err != nil {
		t.Fatalf("migrate a database to copy: %v", migrated.err)
	}
	b, err := os.ReadFile(migrated.path)
	if err != nil {
		t.Fatal(err)
	}
	// Owner only, as Open makes a new file.
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// open returns a store on a fresh database file, closed at the end of t.
func open(t testing.TB) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "sundial.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Backend{Open: openNodes, AttemptRows: attemptRows, Exec: exec})
}

// attemptRows counts the rows of run_attempts of run runID.
func attemptRows(t *testing.T, s sundial.Store, runID int64) (n int) {
	t.Helper()
	if err := s.(*Store).r.QueryRowContext(t.Context(), `SELECT count(*) FROM run_attempts WHERE run_id = ?`, runID).Scan(&n); err != nil {
		t.Fatalf("count the attempts of run %d: %v", runID, err)
	}
	return n
}

// exec runs query on s's database.
func exec(t *testing.T, s sundial.Store, query string) {
	t.Helper()
	if _, err := s.(*Store).w.ExecContext(t.Context(), query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// openNodes opens nodes stores on one new database file, a copy of a
// migrated one (migratedCopy), as that many processes would, closed at the
// end of t. Their writes wait for each other's (BEGIN IMMEDIATE): the busy timeout is long enough that a busy
// machine does not turn such a wait into EUnavailable.
func openNodes(t *testing.T, nodes int) []sundial.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sundial.db")
	migratedCopy(t, path)
	var stores []sundial.Store
	for range nodes {
		s, err := Open(t.Context(), path, Options{BusyTimeout: time.Minute})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		stores = append(stores, s)
	}
	return stores
}

func TestOpenExisting(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "sundial.db")
	ledger := func(s *Store) string {
		t.Helper()
		rows, err := s.r.QueryContext(ctx, `SELECT version, applied_at FROM schema_migrations ORDER BY version`)
		if err != nil {
			t.Fatalf("read schema_migrations: %v", err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var v, at int64
			if err := rows.Scan(&v, &at); err != nil {
				t.Fatalf("read schema_migrations: %v", err)
			}
			fmt.Fprintf(&b, "%d@%d ", v, at)
		}
		return b.String()
	}

	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	task := &sundial.Task{Name: "kept", CronExpr: "* * * * * *", TargetURL: "https://example.com"}
	if err := task.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := storetest.CreateTask(ctx, s, task, time.Now()); err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	first := ledger(s)
	if first == "" {
		t.Fatal("no migration recorded")
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open existing: %v", err)
	}
	defer s.Close()
	if again := ledger(s); again != first {
		t.Fatalf("schema_migrations changed on reopening: %q, was %q", again, first)
	}
	if _, err := s.TaskGet(ctx, task.ID); err != nil {
		t.Fatalf("TaskGet after reopening: %v", err)
	}
	var mode string
	if err := s.r.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
}

func TestOpenBadPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", ":memory:", "x.db?mode=ro"} {
		if s, err := Open(t.Context(), p, Options{}); err == nil {
			s.Close()
			t.Errorf("Open(%q): no error", p)
		}
	}
}

// TestQueryPlans keeps the hot queries on their indexes: a full scan of
// tasks or runs would make their cost grow with the table.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	s := open(t)
	for _, tc := range []struct {
		name string
		sql  string
		args []any
	}{
		{"PlanDue", planDueSQL, []any{1, 2}},
		{"admit pending", admitPendingSQL, []any{1, 2, 3}},
		{"admit last effective", admitLastSQL, []any{1, 2}},
		{"admit skips", admitSkipsSQL, []any{1, 2, 3, 4}},
		{"RunStart", runStartSQL, []any{1, 2, 3, 4, 5}},
		{"RunFinish", runFinishSQL, []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
		{"RunClaimDue probe", claimProbeSQL, []any{1}},
		{"RunClaimDue", claimDueSQL, []any{"n", 1, 2, 3, 4, 5}},
		{"tasks of runs", tasksOfSQL, []any{"[1,2]"}},
		{"RunUnplanMissed", missedSQL, []any{1, 2}},
		{"attempts of runs", attemptFromRunSQL, []any{"[1,2]"}},
		{"RunCallbackExpired", callbackExpiredSQL, []any{1, 2}},
		{"RunUpcoming", queries.RunUpcoming, []any{1, 2}},
		{"RunLongRunning", queries.RunLongRunning, []any{1, 2}},
		{"RunAttempts", queries.RunAttempts, []any{1, 1}},
		{"TaskSecretsList", queries.TaskSecretsList, []any{1, 2}},
		{"TaskCreateMany lookup", tasksByRequestSQL + ` IN (?, ?)`, []any{"r", "s"}},
	} {
		rows, err := s.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tc.sql, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, p := range plan {
			if strings.HasPrefix(p, "SCAN tasks") || strings.HasPrefix(p, "SCAN runs") ||
				strings.HasPrefix(p, "SCAN run_attempts") {
				t.Errorf("%s scans a table:\n%s", tc.name, strings.Join(plan, "\n"))
			}
		}
	}
}

// TestListPlans: the list queries a client makes read the index of their
// filter.
func TestListPlans(t *testing.T) {
	t.Parallel()
	s := open(t)
	type stmt struct {
		sql  string
		args []any
	}
	tasks := func(f sundial.TaskListParams) stmt { q, args := queries.TaskList(f); return stmt{q, args} }
	runs := func(f sundial.RunListParams) stmt { q, args := queries.RunList(f); return stmt{q, args} }
	now, at := time.Unix(1000, 0), time.Unix(900, 0)
	sel, err := label.Parse("team=payments,env!=prod")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		stmt stmt
		use  string // the plan's line for the table
	}{
		// The runs in RunList's order straight from an index: no sort.
		{"RunList", runs(sundial.RunListParams{}), "SCAN runs USING INDEX runs_scheduled"},
		{"RunList page", runs(sundial.RunListParams{ExcludePlannedAfter: now, BeforeTime: at, BeforeID: 5}),
			"SEARCH runs USING INDEX runs_scheduled (scheduled_at<?)"},
		{"RunList window", runs(sundial.RunListParams{From: at, To: now, ExcludePlannedAfter: now}),
			"SEARCH runs USING INDEX runs_scheduled (scheduled_at>? AND scheduled_at<?)"},
		{"RunList of a task", runs(sundial.RunListParams{TaskID: 3, ExcludePlannedAfter: now}),
			"SEARCH runs USING INDEX runs_task_scheduled (task_id=?)"},
		{"RunList page of a task", runs(sundial.RunListParams{TaskID: 3, ExcludePlannedAfter: now, BeforeTime: at, BeforeID: 5}),
			"SEARCH runs USING INDEX runs_task_scheduled (task_id=? AND scheduled_at<?)"},
		{"TaskList by name", tasks(sundial.TaskListParams{Name: "a"}), "SEARCH tasks USING INDEX tasks_name_live (name=?"},
		{"TaskList by request_id", tasks(sundial.TaskListParams{RequestID: "r"}),
			"SEARCH tasks USING INDEX tasks_request_live (request_id=?"},
		{"TaskList by biz_id", tasks(sundial.TaskListParams{BizID: "b"}), "SEARCH tasks USING INDEX tasks_biz (biz_id=?"},
		// A selector: the live tasks in id order, from the cursor.
		{"TaskList by selector", tasks(sundial.TaskListParams{Selector: sel, AfterID: 5}),
			"SEARCH tasks USING INTEGER PRIMARY KEY (rowid>?)"},
		// A trigger and a finished time filter the runs of the order's index.
		{"RunList by trigger and finished time", runs(sundial.RunListParams{Trigger: []sundial.Trigger{sundial.TriggerManual},
			FinishedFrom: at, FinishedTo: now, ExcludePlannedAfter: now}), "SCAN runs USING INDEX runs_scheduled"},
		{"RunList of a task by statuses and trigger", runs(sundial.RunListParams{TaskID: 3, ExcludePlannedAfter: now,
			Status: []sundial.RunStatus{sundial.RunFailed, sundial.RunTimeout}, Trigger: []sundial.Trigger{sundial.TriggerManual},
			FinishedFrom: at}), "SEARCH runs USING INDEX runs_task_scheduled (task_id=?)"},
		// Each task's latest run that ended: its range of
		// runs_task_scheduled read backwards from now, in its order.
		{"TaskStates last run", stmt{taskLastRunSQL, []any{"[1,2]", 5}},
			"SEARCH l USING INDEX runs_task_scheduled (task_id=? AND scheduled_at<?)"},
		{"TaskStateSave last success", stmt{lastSuccessSQL, []any{"[1,2]"}},
			"SEARCH l USING INDEX runs_task_status (task_id=? AND status=?)"},
	} {
		plan := strings.Join(queryPlan(t, s, tc.stmt.sql, tc.stmt.args...), "\n")
		if !strings.Contains(plan, tc.use) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: want %q and no sort in the plan:\n%s", tc.name, tc.use, plan)
		}
	}
	// The few tasks with parents, which the joiner reads every 2 s: a range
	// of tasks_children (their few rows sorted), not every task in id order.
	q := tasks(sundial.TaskListParams{HasParents: true, AfterID: 5})
	if plan := strings.Join(queryPlan(t, s, q.sql, q.args...), "\n"); !strings.Contains(plan, "SEARCH tasks USING INDEX tasks_children (join_mode=?") {
		t.Errorf("TaskList with parents: want a range of tasks_children:\n%s", plan)
	}
	// Runs by the labels of their task: the tasks are read whole (no index
	// holds labels), their runs through an index, never a scan of runs.
	q = runs(sundial.RunListParams{Selector: sel, ExcludePlannedAfter: now, BeforeTime: at, BeforeID: 5})
	plan := strings.Join(queryPlan(t, s, q.sql, q.args...), "\n")
	if strings.Contains(plan, "SCAN runs\n") || strings.HasSuffix(plan, "SCAN runs") || !strings.Contains(plan, "USING INDEX runs_") {
		t.Errorf("RunList by selector: want runs through an index:\n%s", plan)
	}
}

// queryPlan returns the lines of EXPLAIN QUERY PLAN for q.
func queryPlan(t *testing.T, s *Store, q string, args ...any) []string {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}

// BenchmarkTaskStates reads the states of 1,000 tasks per operation
// (storetest.BenchTaskStates).
func BenchmarkTaskStates(b *testing.B) {
	storetest.BenchTaskStates(b, open(b))
}

// BenchmarkTaskStateSave saves the states of 1,000 tasks per operation,
// their first ones and later ones (storetest.BenchTaskStateSave).
func BenchmarkTaskStateSave(b *testing.B) {
	storetest.BenchTaskStateSave(b, open(b))
}

// BenchmarkPlanDue plans 1,000 due tasks, one run each, per operation.
func BenchmarkPlanDue(b *testing.B) {
	storetest.BenchPlanDue(b, open(b))
}

// BenchmarkRunFinish records 1,000 outcomes in one batch per operation.
func BenchmarkRunFinish(b *testing.B) {
	ctx := context.Background()
	s := open(b)
	tk := &sundial.Task{Name: "t", CronExpr: "* * * * * *", TargetURL: "https://example.com"}
	if err := tk.Normalize(time.Now()); err != nil {
		b.Fatal(err)
	}
	if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
		b.Fatal(err)
	}
	const n = 1000
	batch := 0
	// setup inserts and starts n runs, outside the timer.
	setup := func() []sundial.RunFinishParams {
		b.StopTimer()
		defer b.StartTimer()
		starts := make([]sundial.RunStartParams, n)
		fins := make([]sundial.RunFinishParams, n)
		for i := range n {
			r := &sundial.Run{TaskID: tk.ID, FireKey: fmt.Sprintf("b%d:%d", batch, i), ScheduledTime: time.Now()}
			if err := s.RunInsert(ctx, r); err != nil {
				b.Fatal(err)
			}
			starts[i] = sundial.RunStartParams{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: time.Now()}
			fins[i] = sundial.RunFinishParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess, StartedAt: time.Now(),
				FinishedAt: time.Now(), HTTPStatus: 200, ResponseBody: `{"ok":true}`}
		}
		if _, err := s.RunStart(ctx, starts); err != nil {
			b.Fatal(err)
		}
		batch++
		return fins
	}
	for b.Loop() {
		fins := setup()
		ok, err := s.RunFinish(ctx, fins)
		if err != nil || !ok[n-1] {
			b.Fatalf("RunFinish: %v", err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/run")
}

// BenchmarkTaskCreateMany creates 1,000 tasks in one call per operation.
func BenchmarkTaskCreateMany(b *testing.B) {
	storetest.BenchTaskCreateMany(b, open(b))
}

// BenchmarkBurst claims, starts and finishes 2,000 one-off fires per
// operation (storetest.BenchBurst).
func BenchmarkBurst(b *testing.B) {
	storetest.BenchBurst(b, open(b))
}

// TestUnavailable: a closed store answers EUnavailable, and so does a
// write that waits for another process's lock past the busy timeout;
// errors that are the caller's stay what they are.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	t.Run("Closed", func(t *testing.T) {
		t.Parallel()
		s, err := Open(t.Context(), filepath.Join(t.TempDir(), "sundial.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		storetest.RunUnavailable(t, s, func() {
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	})
	t.Run("Locked", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "sundial.db")
		s, err := Open(ctx, path, Options{BusyTimeout: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		task := func(name string) *sundial.Task {
			tk := &sundial.Task{Name: name, CronExpr: "0 * * * * *", TargetURL: "https://example.com/hook"}
			if err := tk.Normalize(time.Now()); err != nil {
				t.Fatal(err)
			}
			return tk
		}
		// Another process holds the write lock.
		other, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = other.Close() })
		conn, err := other.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		err = storetest.CreateTask(ctx, s, task("while-locked"), time.Now())
		if e, ok := errors.AsType[*sundial.Error](err); !ok || e.Code != sundial.EUnavailable || sqliteCode(e.Err)&0xff != sqlite3.SQLITE_BUSY {
			t.Fatalf("CreateTask while another process writes = %v, want EUnavailable from SQLITE_BUSY", err)
		}
		// Reading goes on meanwhile (WAL).
		if _, err := s.TaskList(ctx, sundial.TaskListParams{Limit: 10}); err != nil {
			t.Fatalf("TaskList while another process writes: %v", err)
		}
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if err := storetest.CreateTask(ctx, s, task("after-the-lock"), time.Now()); err != nil {
			t.Fatalf("CreateTask after the lock: %v", err)
		}
	})
}

// TestClaimUndoneWhenTasksUnread: a claim whose tasks cannot be read
// claims nothing, rather than leaving runs claimed (or started) by a node
// that never learns of them.
func TestClaimUndoneWhenTasksUnread(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t)
	tk := &sundial.Task{Name: "t", CronExpr: "* * * * * *", TargetURL: "https://example.com"}
	if err := tk.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(-time.Second)
	r := &sundial.Run{TaskID: tk.ID, FireKey: "s:1", Trigger: sundial.TriggerSchedule, ScheduledTime: due, StartAhead: true}
	if err := s.RunInsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	// The tasks cannot be read any more: the claim's read of them fails.
	if _, err := s.w.ExecContext(ctx, `ALTER TABLE tasks RENAME TO tasks_unreadable`); err != nil {
		t.Fatal(err)
	}
	if runs, _, err := s.RunClaimDue(ctx, "node-a", time.Now(), 10,
		sundial.ClaimStartParams{By: time.Now(), FreshAfter: due.Add(-time.Minute)}); err == nil {
		t.Fatalf("RunClaimDue = %d runs, no error; want the failed read of their tasks", len(runs))
	}
	var node, status string
	if err := s.r.QueryRowContext(ctx, `SELECT node_id, status FROM runs WHERE id = ?`, r.ID).Scan(&node, &status); err != nil {
		t.Fatal(err)
	}
	if node != "" || status != string(sundial.RunScheduled) {
		t.Errorf("run after the failed claim: node %q, %s; want held by no node, SCHEDULED", node, status)
	}
}

// TestAttemptOnRunFinal: only a run that a delivery's outcome ended for
// good (a final status RunFinish reaches from RUNNING) keeps its attempt
// on its row (migration 0013's CHECK), whatever statement writes it.
func TestAttemptOnRunFinal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t)
	tk := &sundial.Task{Name: "t", CronExpr: "* * * * * *", TargetURL: "https://example.com"}
	if err := tk.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
		t.Fatal(err)
	}
	r := &sundial.Run{TaskID: tk.ID, FireKey: "f", ScheduledTime: time.Now()}
	if err := s.RunInsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, st := range sundial.RunStatuses() {
		ok := st.Final() && slices.Contains(sundial.FinishFrom(st), sundial.RunRunning)
		_, err := s.w.ExecContext(ctx, `UPDATE runs SET status = ?, attempt_on_run = TRUE WHERE id = ?`, string(st), r.ID)
		if (err == nil) != ok {
			t.Errorf("a %s run with attempt_on_run: %v; want it refused: %v", st, err, !ok)
		}
		if _, err := s.w.ExecContext(ctx, `UPDATE runs SET status = 'SCHEDULED', attempt_on_run = FALSE WHERE id = ?`, r.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRowsWritten holds RowsWritten to what each write did, table by
// table, and to SQLite's own total_changes() of the write connection.
func TestRowsWritten(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t)
	totalChanges := func() int64 {
		t.Helper()
		var n int64
		if err := s.w.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	counts := func() map[string]int64 {
		out := map[string]int64{}
		for _, r := range s.RowsWritten() {
			out[r.Table+".inserted"], out[r.Table+".updated"], out[r.Table+".deleted"] = r.Inserted, r.Updated, r.Deleted
		}
		return out
	}
	sum := func(m map[string]int64) (n int64) {
		for _, v := range m {
			n += v
		}
		return n
	}
	// The migrations wrote rows too (the ledger): counted like any.
	changes0, before := totalChanges(), counts()
	if sum(before) == 0 || sum(before) != changes0 {
		t.Fatalf("RowsWritten after Open = %v, total_changes() %d: want the migrations' rows, as many", before, changes0)
	}

	now := time.Now()
	var tasks []*sundial.Task
	for i := range 2 {
		tk := &sundial.Task{Name: fmt.Sprintf("t%d", i), CronExpr: "* * * * * *", TargetURL: "https://example.com"}
		if err := tk.Normalize(now); err != nil {
			t.Fatal(err)
		}
		tk.NextFireTime = tk.FirstFire(now)
		tasks = append(tasks, tk)
	}
	if _, err := s.TaskCreateMany(ctx, tasks, now); err != nil {
		t.Fatal(err)
	}
	// Each task gets three runs and a new next fire.
	if _, err := s.PlanDue(ctx, now.Add(time.Hour), 10, "", now, func(tk *sundial.Task) sundial.Plan {
		var p sundial.Plan
		for i := range 3 {
			at := tk.NextFireTime.Add(time.Duration(i) * time.Second)
			p.Runs = append(p.Runs, &sundial.Run{FireKey: sundial.ScheduledFireKey(at), Trigger: sundial.TriggerSchedule,
				ScheduledTime: at, Status: sundial.RunScheduled, Attempt: 1})
		}
		next := tk.NextFireTime.Add(3 * time.Second)
		p.Next = &next
		return p
	}); err != nil {
		t.Fatal(err)
	}
	// The delete of one task deletes its three planned runs.
	if err := s.TaskDelete(ctx, tasks[0].ID, now); err != nil {
		t.Fatal(err)
	}
	after := counts()
	want := map[string]int64{"tasks.inserted": 2, "runs.inserted": 6, "tasks.updated": 3, "runs.deleted": 3}
	got := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			got[k] = d
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows written = %v, want %v", got, want)
	}
	if d, c := sum(after)-sum(before), totalChanges()-changes0; d != c {
		t.Errorf("rows written sum to %d, total_changes() counted %d", d, c)
	}
}
