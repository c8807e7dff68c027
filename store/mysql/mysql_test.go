package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/label"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
	"github.com/sundialhq/sundial/store/migrate"
	"github.com/sundialhq/sundial/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { dropPooled() }))
}

// testDSN returns the server the tests use, from SUNDIAL_TEST_MYSQL. Without
// it the tests are skipped, except in CI, where they must run.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("SUNDIAL_TEST_MYSQL")
	if dsn == "" {
		const msg = "set SUNDIAL_TEST_MYSQL=user@tcp(host:3306)/db to run the MySQL tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dsn
}

// createDB creates a database of its own for t, dropped at its end, and
// returns the DSN that names it.
func createDB(t testing.TB) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(testDSN(t))
	if err != nil {
		t.Fatalf("SUNDIAL_TEST_MYSQL: %v", err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8)
	rand.Read(b)
	name := "sundial_test_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		admin.Close()
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE "+name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// open returns a store on a fresh database, closed and dropped at the end
// of t.
func open(t testing.TB) *Store {
	t.Helper()
	return openDSN(t, createDB(t))
}

func openDSN(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, Options{MaxConns: 8})
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
	testDSN(t)
	storetest.Run(t, storetest.Backend{Open: openNodes, LockRuns: holdRuns, AttemptRows: attemptRows, Exec: exec})
}

// attemptRows counts the rows of run_attempts of run runID.
func attemptRows(t *testing.T, s sundial.Store, runID int64) (n int) {
	t.Helper()
	if err := s.(*Store).db.QueryRowContext(t.Context(), `SELECT count(*) FROM run_attempts WHERE run_id = ?`, runID).Scan(&n); err != nil {
		t.Fatalf("count the attempts of run %d: %v", runID, err)
	}
	return n
}

// exec runs query on s's database.
func exec(t *testing.T, s sundial.Store, query string) {
	t.Helper()
	if _, err := s.(*Store).db.ExecContext(t.Context(), query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// pooled holds the databases of the conformance cases (emptyDB): free
// ones, migrated and emptied, and all of them, dropped when the tests end.
var pooled struct {
	sync.Mutex
	free, all []string
}

// emptyDB returns the DSN of a migrated database with no rows but its
// migration ledger, as a new database is once Open has migrated it.
// Migrating one (DDL that the server commits statement by statement) is
// most of what a conformance case costs, so a case takes a database an
// earlier case left, emptied when that case ended (every table but
// schema_migrations truncated, which also starts its AUTO_INCREMENT at 1
// again), or else a new one that Open migrates. A case that failed leaves
// its database as it is, to be dropped with the others when the tests end.
// The migrations themselves are tested on new databases (TestMigrate*).
func emptyDB(t *testing.T) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(testDSN(t))
	if err != nil {
		t.Fatalf("SUNDIAL_TEST_MYSQL: %v", err)
	}
	var name string
	pooled.Lock()
	if n := len(pooled.free); n > 0 {
		name, pooled.free = pooled.free[n-1], pooled.free[:n-1]
	}
	pooled.Unlock()
	if name == "" {
		b := make([]byte, 8)
		rand.Read(b)
		name = "sundial_test_" + hex.EncodeToString(b)
		if err := adminExec(t.Context(), cfg.FormatDSN(), "CREATE DATABASE "+name); err != nil {
			t.Fatalf("create database: %v", err)
		}
		pooled.Lock()
		pooled.all = append(pooled.all, name)
		pooled.Unlock()
	}
	cfg.DBName = name
	dsn := cfg.FormatDSN()
	// Registered before the stores' Close, so it runs after it.
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := emptyOut(ctx, dsn); err != nil {
			t.Errorf("empty database %s: %v", name, err)
			return
		}
		pooled.Lock()
		pooled.free = append(pooled.free, name)
		pooled.Unlock()
	})
	return dsn
}

// emptyOut truncates every table of dsn's database but schema_migrations.
func emptyOut(ctx context.Context, dsn string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tables, err := strs(conn.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'`))
	if err != nil {
		return err
	}
	// The foreign keys point only to tables truncated here too.
	if _, err := conn.ExecContext(ctx, `SET FOREIGN_KEY_CHECKS = 0`); err != nil {
		return err
	}
	for _, table := range tables {
		if _, err := conn.ExecContext(ctx, "TRUNCATE TABLE `"+table+"`"); err != nil {
			return err
		}
	}
	return nil
}

// strs reads the one text column of rows.
func strs(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// dropPooled drops the databases emptyDB made.
func dropPooled() {
	pooled.Lock()
	defer pooled.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range pooled.all {
		if err := adminExec(ctx, os.Getenv("SUNDIAL_TEST_MYSQL"), "DROP DATABASE "+name); err != nil {
			fmt.Fprintf(os.Stderr, "drop database %s: %v\n", name, err)
		}
	}
}

// adminExec runs query on a connection of its own to dsn.
func adminExec(ctx context.Context, dsn, query string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, query)
	return err
}

// openNodes opens nodes stores on a migrated, empty database (emptyDB),
// each with a pool of its own, as the nodes of one cluster.
func openNodes(t *testing.T, nodes int) []sundial.Store {
	t.Helper()
	dsn := emptyDB(t)
	var stores []sundial.Store
	for range nodes {
		stores = append(stores, openDSN(t, dsn))
	}
	return stores
}

// holdRuns locks the runs ids in a transaction of its own until release.
func holdRuns(t *testing.T, s sundial.Store, ids []int64) (release func()) {
	t.Helper()
	ctx := t.Context()
	tx, err := s.(*Store).db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// By primary key: MariaDB's ORDER BY ... LIMIT ... FOR UPDATE would
	// lock every row the sort reads.
	locked, err := int64s(tx.QueryContext(ctx, `SELECT id FROM runs FORCE INDEX (PRIMARY)
		WHERE id IN (`+placeholders(len(ids))+`) FOR UPDATE`, int64Args(ids)...))
	if err != nil || len(locked) != len(ids) {
		tx.Rollback()
		t.Fatalf("lock runs %v: %v, %v", ids, locked, err)
	}
	return func() {
		if err := tx.Rollback(); err != nil {
			t.Errorf("release the runs' locks: %v", err)
		}
	}
}

// TestRunInsertWidth keeps runInsertSQL's tuples as wide as the columns
// and arguments of a run.
func TestRunInsertWidth(t *testing.T) {
	cols := strings.Count(sqlrow.RunWriteCols, ",") + 1
	if n := len(runInsertArgs(nil, &sundial.Run{})); n != runInsertWidth || cols != runInsertWidth ||
		len(sqlrow.RunWriteArgs(&sundial.Run{})) != runInsertWidth {
		t.Fatalf("runInsertWidth = %d; runInsertArgs gives %d values, RunWriteCols has %d columns", runInsertWidth, n, cols)
	}
}

func TestOpenBadDSN(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"not a dsn", "root@tcp(127.0.0.1:3306)/"} {
		if s, err := Open(t.Context(), dsn, Options{}); err == nil {
			s.Close()
			t.Errorf("Open(%q): no error", dsn)
		}
	}
}

// migrationVersions returns the versions of the embedded migrations, in
// order.
func migrationVersions(t *testing.T) []int64 {
	t.Helper()
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	migs, err := migrate.Load(sub)
	if err != nil {
		t.Fatal(err)
	}
	var vs []int64
	for _, m := range migs {
		vs = append(vs, m.Version)
	}
	return vs
}

// TestMigrateConcurrent starts several nodes on one new database at once:
// every one succeeds, and each migration is applied exactly once.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	dsn := createDB(t)
	ctx := t.Context()
	const nodes = 4
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		mu      sync.Mutex
		applied []int64
		errs    = make([]error, nodes)
	)
	for i := range nodes {
		s, err := connect(ctx, dsn, Options{})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer s.Close()
		wg.Go(func() {
			<-start
			v, err := s.migrate(ctx)
			errs[i] = err
			mu.Lock()
			applied = append(applied, v...)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrator %d: %v", i, err)
		}
	}
	slices.Sort(applied)
	want := migrationVersions(t)
	if !slices.Equal(applied, want) {
		t.Fatalf("versions applied by %d concurrent migrators = %v, want %v", nodes, applied, want)
	}
	s := openDSN(t, dsn) // migrates again: nothing to do
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(want) {
		t.Fatalf("schema_migrations rows = %d, %v; want %d", n, err, len(want))
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name IN ('tasks', 'runs', 'nodes', 'run_attempts', 'settings')`).Scan(&n); err != nil || n != 5 {
		t.Fatalf("tables = %d, %v; want 5", n, err)
	}
}

// TestBytes: a response body is kept byte for byte, UTF-8 or not; an error
// message, stored as utf8mb4 text, has invalid bytes replaced.
func TestBytes(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := t.Context()
	tk := &sundial.Task{Name: "t", CronExpr: "* * * * * *", TargetURL: "https://example.com"}
	if err := tk.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
		t.Fatal(err)
	}
	r := &sundial.Run{TaskID: tk.ID, FireKey: "m:1", ScheduledTime: time.Now()}
	if err := s.RunInsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: time.Now()}}); err != nil || !ok[0] {
		t.Fatalf("RunStart: %v %v", ok, err)
	}
	body := "\x00\xff\xfe'\\ \u00e9\U0001F600 \xc3"
	ok, err := s.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
		FinishedAt: time.Now(), ResponseBody: body, Error: "bad \xff byte"}})
	if err != nil || !ok[0] {
		t.Fatalf("RunFinish: %v %v", ok, err)
	}
	got, err := s.RunGet(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ResponseBody != body || got.Error != "bad \uFFFD byte" {
		t.Fatalf("body %q, error %q; want %q, %q", got.ResponseBody, got.Error, body, "bad \uFFFD byte")
	}
	atts, err := s.RunAttempts(ctx, r.ID)
	if err != nil || len(atts) != 1 {
		t.Fatalf("RunAttempts = %v, %v; want 1", atts, err)
	}
	if atts[0].ResponseBody != body || atts[0].Error != "bad \uFFFD byte" {
		t.Fatalf("attempt body %q, error %q; want %q, %q", atts[0].ResponseBody, atts[0].Error, body, "bad \uFFFD byte")
	}
}

// TestLabelsNull: a task made before labels existed, or by a node older
// than migration 0015, has NULL labels_json (MySQL takes no default on a
// TEXT column): it has no labels, and selectors treat it so.
func TestLabelsNull(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := t.Context()
	tk := &sundial.Task{Name: "old", CronExpr: "* * * * * *", TargetURL: "https://example.com",
		Labels: map[string]string{"team": "payments"}}
	if err := tk.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE tasks SET labels_json = NULL WHERE id = ?`, tk.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.TaskGet(ctx, tk.ID)
	if err != nil || got.Labels == nil || len(got.Labels) != 0 {
		t.Fatalf("TaskGet = %+v, %v; want no labels", got, err)
	}
	for text, want := range map[string]int{"team": 0, "!team": 1, "team!=payments": 1, "team notin (x)": 1, "team=payments": 0} {
		sel, err := label.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		ts, err := s.TaskList(ctx, sundial.TaskListParams{Selector: sel})
		if err != nil || len(ts) != want {
			t.Errorf("TaskList %s = %d tasks, %v; want %d", text, len(ts), err, want)
		}
	}
}

// TestQueryPlans keeps the hot queries on their indexes: a full scan of
// tasks or runs would make their cost grow with the table.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := t.Context()
	// Enough rows, in every status, for the optimizer's statistics to mean
	// something.
	var tasks []int64
	for i := range 20 {
		tk := &sundial.Task{Name: fmt.Sprintf("t%d", i), CronExpr: "* * * * * *", TargetURL: "https://example.com"}
		if err := tk.Normalize(time.Now()); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			tk.NextFireTime = ptr(time.Unix(int64(i), 0))
		}
		if i == 3 {
			tk.RequestID = "r"
		}
		if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, tk.ID)
	}
	var args []any
	const runs = 2000
	for i := range runs {
		r := &sundial.Run{TaskID: tasks[i%len(tasks)], FireKey: fmt.Sprintf("s:%d", i), ScheduledTime: time.Unix(int64(i), 0),
			NodeID: fmt.Sprintf("node-%d", i%3)}
		if err := prepareNew(r, time.Now()); err != nil {
			t.Fatal(err)
		}
		r.Status = allStatuses[i%len(allStatuses)]
		r.Priority = i % 5
		args = runInsertArgs(args, r)
	}
	if _, err := s.db.ExecContext(ctx, runInsertSQL(runs), args...); err != nil {
		t.Fatal(err)
	}
	// Runs no node holds: a burst of burst runs due at one instant, at
	// several priorities, and as many planned runs due after it, one a
	// second, as a long lookahead makes.
	const burst, burstAt, plannedAt = 500, 5000, 10_000
	var unowned []*sundial.Run
	for i := range 2 * burst {
		at := time.Unix(burstAt, 0)
		if i >= burst {
			at = time.Unix(int64(plannedAt+i), 0)
		}
		r := &sundial.Run{TaskID: tasks[i%len(tasks)], FireKey: fmt.Sprintf("u:%d", i), ScheduledTime: at, Priority: i % 7}
		if err := prepareNew(r, time.Now()); err != nil {
			t.Fatal(err)
		}
		unowned = append(unowned, r)
	}
	insertRuns(t, s, unowned)
	// Three attempts of every run.
	if _, err := s.db.ExecContext(ctx, `INSERT INTO run_attempts (`+attemptWriteCols+`)
		SELECT r.id, d.n, r.node_id, 'FAILED', 500, 'e', '', r.scheduled_at, r.scheduled_at + 1
		FROM runs r CROSS JOIN (SELECT 1 AS n UNION ALL SELECT 2 UNION ALL SELECT 3) AS d`); err != nil {
		t.Fatal(err)
	}
	// The final runs keep their last attempt on their rows.
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET attempt_on_run = 1
		WHERE status IN `+sqlrow.Statuses(sundial.RunStatus.Final)); err != nil {
		t.Fatal(err)
	}
	var ownAttempt int64
	if err := s.db.QueryRowContext(ctx, `SELECT MIN(id) FROM runs WHERE attempt_on_run = 1`).Scan(&ownAttempt); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `ANALYZE TABLE tasks, runs, nodes, run_attempts`); err != nil {
		t.Fatal(err)
	}
	byName, byNameArgs := queries.TaskList(sundial.TaskListParams{Name: "t3"})
	byRequest, byRequestArgs := queries.TaskList(sundial.TaskListParams{RequestID: "r"})
	// RunList as GET /runs asks for it: fires planned ahead of now left
	// out, a page of 51, from the newest or after a cursor.
	now, mark := time.Unix(burstAt, 0), time.Unix(1000, 0)
	runList, runListArgs := queries.RunList(sundial.RunListParams{ExcludePlannedAfter: now, Limit: 51})
	runPage, runPageArgs := queries.RunList(sundial.RunListParams{ExcludePlannedAfter: now, BeforeTime: mark, BeforeID: 1000,
		Limit: 51})
	taskRuns, taskRunsArgs := queries.RunList(sundial.RunListParams{TaskID: tasks[3], ExcludePlannedAfter: now, Limit: 51})
	taskRunsPage, taskRunsPageArgs := queries.RunList(sundial.RunListParams{TaskID: tasks[3], ExcludePlannedAfter: now,
		BeforeTime: mark, BeforeID: 1000, Limit: 51})
	// The filters of a client's lists: runs by statuses, trigger and
	// finished time, of a task or not; tasks by a selector, in id order
	// from a cursor; runs by the labels of their task, whose tasks are read
	// whole (no index holds labels).
	sel, err := label.Parse("team=payments,env!=prod")
	if err != nil {
		t.Fatal(err)
	}
	filters := sundial.RunListParams{ExcludePlannedAfter: now, Status: []sundial.RunStatus{sundial.RunFailed, sundial.RunSuccess},
		Trigger: []sundial.Trigger{sundial.TriggerManual, sundial.TriggerSchedule}, FinishedFrom: mark, Limit: 51}
	runFilters, runFiltersArgs := queries.RunList(filters)
	filters.TaskID = tasks[3]
	taskRunFilters, taskRunFiltersArgs := queries.RunList(filters)
	bySelector, bySelectorArgs := queries.TaskList(sundial.TaskListParams{Selector: sel, AfterID: 2, Limit: 51})
	runsBySelector, runsBySelectorArgs := queries.RunList(sundial.RunListParams{Selector: sel, ExcludePlannedAfter: now, Limit: 51})
	lastArgs := make([]any, 2*len(lastStatuses))
	for i := range lastArgs {
		lastArgs[i] = 1
	}
	for _, tc := range []struct {
		name string
		sql  string
		args []any
	}{
		{"PlanDue candidates", fmt.Sprintf(planCandidatesSQL, ""), []any{1 << 50, 10}},
		{"PlanDue candidates (next round)", fmt.Sprintf(planCandidatesSQL, planAfterSQL), []any{1 << 50, 2, 2, 3, 10}},
		{"PlanDue lock", fmt.Sprintf(planLockSQL, "1, 2, 3"), []any{1}},
		{"runs by key", `SELECT id FROM runs WHERE (task_id, fire_key) IN ((1, 'a'), (2, 'b'))`, nil},
		{"admit pending", admitPendingSQL, []any{1, 2, 1, 3, 3, 2}},
		{"admit last effective", admitLastSQL, lastArgs},
		{"admit skips", admitSkipsSQL, []any{1, 2, 2, 3, 4}},
		{"RunStart", runStartSQL(2), []any{1, 1, 1, 1, "t", 2, 1, 1, 1, "t"}},
		{"RunFinish", runFinishSQL(2), []any{1, "RUNNING", "SUCCESS", "n", 1, 1, 1, 200, []byte("x"), "", 1, true,
			2, "RUNNING", "SUCCESS", "n", 1, 1, 1, 200, []byte("x"), "", 1, true}},
		{"RunFinish (retry)", runFinishSQL(2), []any{1, "RUNNING", "SCHEDULED", "", 7, 1, nil, 500,
			[]byte("x"), "", 1, false, 2, "WAITING_CALLBACK", "SUCCESS", "n", 1, 1, 1, 200, []byte("x"), "", 1, false}},
		{"write back runs", runsWriteSQL(2), runWriteArgs(runWriteArgs(nil, &sundial.Run{ID: 1}), &sundial.Run{ID: 2})},
		{"complete tasks", completeTaskSQL(2), []any{1, "FAILED", 5, 2, "COMPLETED", nil}},
		{"RunCallbackExpired", callbackExpiredSQL, []any{int64(1) << 60, 10}},
		{"RunUpcoming", queries.RunUpcoming, []any{1, 10}},
		{"TaskCreateMany request IDs", `SELECT id FROM tasks FORCE INDEX (tasks_request_live)
			WHERE live_request_id IN ('a', 'b')`, nil},
		{"TaskCreateMany names", `SELECT id, live_name FROM tasks FORCE INDEX (tasks_live_name)
			WHERE live_name IN ('a', 'b')`, nil},
		{"TaskList by biz_id", `SELECT id FROM tasks WHERE deleted = 0 AND id > 0 AND biz_id = 'b' ORDER BY id LIMIT 10`, nil},
		{"TaskList by name", byName, byNameArgs},
		{"TaskList by request_id", byRequest, byRequestArgs},
		{"RunList", runList, runListArgs},
		{"RunList page", runPage, runPageArgs},
		{"RunList of a task", taskRuns, taskRunsArgs},
		{"RunList page of a task", taskRunsPage, taskRunsPageArgs},
		{"RunList filtered", runFilters, runFiltersArgs},
		{"RunList filtered of a task", taskRunFilters, taskRunFiltersArgs},
		{"RunList by selector", runsBySelector, runsBySelectorArgs},
		{"TaskList by selector", bySelector, bySelectorArgs},
		{"NodeReap", `SELECT id FROM nodes WHERE state = 'ALIVE' AND heartbeat_at < 5`, nil},
		{"NodePrune", `DELETE FROM nodes WHERE state IN ('LEFT', 'DEAD') AND heartbeat_at < 5`, nil},
		{"RunQueuedNext", `SELECT id FROM runs FORCE INDEX (runs_task_status)
			WHERE task_id = 1 AND status = 'QUEUED' ORDER BY scheduled_at, id LIMIT 1`, nil},
		{"RunsOwned", `SELECT id FROM runs WHERE status IN ('SCHEDULED', 'QUEUED', 'RUNNING') AND node_id = 'node-1'`, nil},
		{"RunPurge", `DELETE FROM runs WHERE created_at < 5 AND status IN ('SUCCESS', 'SKIPPED')
			ORDER BY created_at, id LIMIT 10`, nil},
		{"release rewind", `UPDATE ` + joinValues("tasks", "t", []string{"id", "rewind_at"}, 2) + `
			SET t.next_fire_at = v.rewind_at`, []any{1, 2, 3, 4}},
		{"RunClaimDue candidates (idle)", fmt.Sprintf(claimCandidatesSQL, ""), []any{sqlrow.Micros(time.Unix(burstAt-1, 0)), 250}},
		{"RunClaimDue candidates (burst)", fmt.Sprintf(claimCandidatesSQL, ""), []any{sqlrow.Micros(time.Unix(plannedAt, 0)), 250}},
		{"RunClaimDue candidates (all)", fmt.Sprintf(claimCandidatesSQL, ""), []any{int64(1) << 60, 250}},
		{"RunClaimDue candidates (next round)", fmt.Sprintf(claimCandidatesSQL, claimAfterSQL),
			[]any{sqlrow.Micros(time.Unix(plannedAt, 0)), sqlrow.Micros(time.Unix(burstAt, 0)),
				sqlrow.Micros(time.Unix(burstAt, 0)), 3, 3, 4, 250}},
		{"RunClaimDue lock", fmt.Sprintf(claimLockSQL, "1, 2, 3"), []any{3}},
		{"RunClaimDue set", fmt.Sprintf(claimSetSQL, "1, 2, 3", `status = 'SCHEDULED' AND node_id = ''`), []any{"n", 1}},
		{"RunClaimDue start", claimStartSQL(2), []any{1, 1, 5, "a", 2, 1, 5, "b", "n", 3}},
		{"RunRedeliver candidates", fmt.Sprintf(redeliverCandidatesSQL, redeliverAfterSQL), []any{1, 1, 2, 10}},
		{"RunFindStuck", queries.RunFindStuck, []any{int64(1) << 60, "node-1", 10}},
		{"RunCancelRequested", queries.RunCancelRequested, []any{"node-1"}},
		{"RunAttempts", queries.RunAttempts, []any{ownAttempt, ownAttempt}},
		{"release tasks", releaseTasksSQL, []any{"node-1"}},
		{"release lock", releaseRunsSQL, []any{"node-1"}},
		{"take back", taskRunsSQL, []any{1}},
		{"RunCheckSend", `SELECT id, fence, status, cancel_requested FROM runs WHERE id IN (1, 2, 3)`, nil},
		{"TaskStates last run", taskLastRunSQL(2), []any{tasks[1], sqlrow.Micros(now), tasks[2], sqlrow.Micros(now)}},
		{"TaskStates", `SELECT task_id FROM task_state FORCE INDEX (PRIMARY) WHERE task_id IN (1, 2)`, nil},
		{"TaskStateSave first", taskStateFirstSQL(2), []any{tasks[1], nil, nil, 0, nil, "", 5, tasks[2], nil, nil, 0, nil, "", 5}},
		{"TaskStateSave lock", taskStateLockSQL(2), []any{tasks[1], tasks[2]}},
		{"TaskStateSave last success", lastSuccessSQL(2), []any{tasks[1], tasks[2]}},
	} {
		q := tc.sql
		if i := strings.Index(q, "FOR UPDATE"); i >= 0 {
			q = q[:i]
		}
		rows, err := s.db.QueryContext(ctx, "EXPLAIN "+q, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cols, _ := rows.Columns()
		var plan []string
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			row := map[string]string{}
			for i, c := range cols {
				row[c] = vals[i].String
			}
			plan = append(plan, fmt.Sprint(row))
			if (row["table"] == "tasks" || row["table"] == "runs" || row["table"] == "r" || row["table"] == "t" ||
				row["table"] == "nodes" || row["table"] == "n" || row["table"] == "run_attempts") && row["type"] == "ALL" &&
				!(tc.name == "RunList by selector" && row["table"] == "t") {
				t.Errorf("%s scans a table: %v", tc.name, row)
			}
			// The claim's and the planner's candidates: a range of their
			// index in its order (no sort), read from the index alone.
			if strings.HasPrefix(tc.name, "RunClaimDue candidates") && (row["table"] != "runs" ||
				row["key"] != "runs_claim" || row["type"] != "range" ||
				strings.Contains(row["Extra"], "filesort") || !strings.Contains(row["Extra"], "Using index")) {
				t.Errorf("%s reads runs without a covering range of runs_claim in order: %v", tc.name, row)
			}
			if strings.HasPrefix(tc.name, "PlanDue candidates") && (row["table"] != "tasks" ||
				row["key"] != "tasks_due" || row["type"] != "range" ||
				strings.Contains(row["Extra"], "filesort") || !strings.Contains(row["Extra"], "Using index")) {
				t.Errorf("%s reads tasks without a covering range of tasks_due in order: %v", tc.name, row)
			}
			// A run's attempts: its rows through run_attempts_run, its own
			// from its row by primary key; the few of them sorted.
			if tc.name == "RunAttempts" && row["table"] == "run_attempts" && (row["key"] != "run_attempts_run" ||
				row["type"] != "ref") {
				t.Errorf("%s reads run_attempts without run_attempts_run: %v", tc.name, row)
			}
			if tc.name == "RunAttempts" && row["table"] == "runs" && (row["key"] != "PRIMARY" || row["type"] != "const") {
				t.Errorf("%s reads runs without their primary key: %v", tc.name, row)
			}
			if tc.name == "release interrupt lock" && row["key"] != "runs_claim" {
				t.Errorf("%s reads runs without runs_claim: %v", tc.name, row)
			}
			if tc.name == "RunCallbackExpired" && (row["key"] != "runs_waiting" || row["type"] != "range" ||
				strings.Contains(row["Extra"], "filesort")) {
				t.Errorf("%s reads runs without a range of runs_waiting in order: %v", tc.name, row)
			}
			if tc.name == "RunUpcoming" && strings.Contains(row["Extra"], "filesort") {
				t.Errorf("%s sorts: %v", tc.name, row)
			}
			// Each task's latest run that ended: a range of
			// runs_task_scheduled on both task and time, in its order.
			if tc.name == "TaskStates last run" && row["table"] == "runs" && (row["key"] != "runs_task_scheduled" ||
				row["type"] != "range" || row["key_len"] != "16" || strings.Contains(row["Extra"], "filesort")) {
				t.Errorf("%s reads runs without a range of runs_task_scheduled on task and time: %v", tc.name, row)
			}
			if tc.name == "TaskStateSave last success" && row["table"] == "runs" && (row["key"] != "runs_task_status" ||
				strings.Contains(row["Extra"], "filesort")) {
				t.Errorf("%s reads runs without runs_task_status in order: %v", tc.name, row)
			}
			if tc.name == "TaskList by biz_id" && row["key"] != "tasks_biz" {
				t.Errorf("%s reads tasks without tasks_biz: %v", tc.name, row)
			}
			// Runs newest first by scheduled time, read backwards from an
			// index in that order: nothing sorted.
			if tc.name == "RunList filtered of a task" {
				// A task's runs of some statuses, through the ranges of
				// the task's index, or its runs in order.
				if row["key"] != "runs_task_status" && row["key"] != "runs_task_scheduled" {
					t.Errorf("%s reads runs without the task's index: %v", tc.name, row)
				}
			} else if strings.HasPrefix(tc.name, "RunList") && row["table"] == "runs" {
				key := "runs_scheduled"
				if strings.HasSuffix(tc.name, "of a task") {
					key = "runs_task_scheduled"
				}
				if row["key"] != key || strings.Contains(row["Extra"], "filesort") {
					t.Errorf("%s reads runs without %s in order: %v", tc.name, key, row)
				}
			}
			if tc.name == "TaskList by selector" && (row["key"] != "PRIMARY" || strings.Contains(row["Extra"], "filesort")) {
				t.Errorf("%s reads tasks without their primary key in order: %v", tc.name, row)
			}
			if tc.name == "TaskList by name" && row["key"] != "tasks_live_name" {
				t.Errorf("%s reads tasks without tasks_live_name: %v", tc.name, row)
			}
			if tc.name == "TaskList by request_id" && row["key"] != "tasks_request_live" {
				t.Errorf("%s reads tasks without tasks_request_live: %v", tc.name, row)
			}
		}
		rows.Close()
		if p := strings.Join(plan, "\n"); tc.name == "RunAttempts" &&
			(!strings.Contains(p, "table:run_attempts") || !strings.Contains(p, "table:runs")) {
			t.Errorf("%s reads neither run_attempts nor runs:\n%s", tc.name, p)
		}
		t.Logf("%s:\n%s", tc.name, strings.Join(plan, "\n"))
	}

	// What the plans promise, counted: an idle claim (no unowned due run
	// among the thousands of runs) reads next to no index entry and no row.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reads := func() int64 {
		t.Helper()
		rows, err := conn.QueryContext(ctx, `SHOW SESSION STATUS LIKE 'Handler_read%'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var sum int64
		for rows.Next() {
			var (
				name string
				v    int64
			)
			if err := rows.Scan(&name, &v); err != nil {
				t.Fatal(err)
			}
			sum += v
		}
		return sum
	}
	// candidates reads the claim's candidates due at until, and how many
	// index entries or rows that read.
	candidates := func(until time.Time, limit int) ([]claimCand, int64) {
		t.Helper()
		r0 := reads()
		r1 := reads() // what SHOW STATUS itself reads
		got, err := claimCandidates(ctx, conn, sqlrow.Micros(until), nil, limit)
		if err != nil {
			t.Fatal(err)
		}
		r2 := reads()
		return got, (r2 - r1) - (r1 - r0)
	}
	total := runs + 2*burst
	got, n := candidates(time.Unix(burstAt-1, 0), 1000)
	if len(got) != 0 {
		t.Fatalf("idle claim candidates = %v; want none", got)
	}
	if n > 5 {
		t.Errorf("an idle claim over %d runs (%d planned, not due) read %d index entries or rows; want next to none",
			total, burst, n)
	} else {
		t.Logf("an idle claim over %d runs (%d planned, not due) read %d index entries or rows", total, burst, n)
	}
	// A claim in the burst reads its limit of entries, the most urgent:
	// all due at the burst's instant, highest priority first, then by ID.
	const limit = 50
	got, n = candidates(time.Unix(plannedAt+2*burst, 0), limit)
	if len(got) != limit {
		t.Fatalf("burst claim candidates = %d; want %d", len(got), limit)
	}
	for i, c := range got {
		if c.at != sqlrow.Micros(time.Unix(burstAt, 0)) || c.prio != 6 {
			t.Fatalf("candidate %d = %+v; want due at the burst, priority 6", i, c)
		}
		if i > 0 && got[i-1].id >= c.id {
			t.Fatalf("candidates %+v then %+v: not by ID", got[i-1], c)
		}
	}
	if n > limit+5 {
		t.Errorf("a claim of %d in a burst of %d read %d index entries or rows; want about %d", limit, burst, n, limit)
	} else {
		t.Logf("a claim of %d in a burst of %d read %d index entries or rows", limit, burst, n)
	}
}

var allStatuses = []sundial.RunStatus{
	sundial.RunScheduled, sundial.RunQueued, sundial.RunRunning, sundial.RunWaitingCallback,
	sundial.RunSuccess, sundial.RunFailed, sundial.RunTimeout, sundial.RunFailedTimeout,
	sundial.RunCanceled, sundial.RunSkipped, sundial.RunInterrupted,
}

func ptr[T any](v T) *T { return &v }

func TestSplitStatements(t *testing.T) {
	t.Parallel()
	got := splitStatements("-- a comment; still\nCREATE TABLE a (x TEXT DEFAULT 'a;b'); # another;\n" +
		"/* block; */ INSERT INTO a VALUES ('it''s; \\' ok');\n\n;  ")
	want := []string{"CREATE TABLE a (x TEXT DEFAULT 'a;b')", "INSERT INTO a VALUES ('it''s; \\' ok')"}
	if !slices.Equal(got, want) {
		t.Fatalf("splitStatements = %q, want %q", got, want)
	}
}

func TestChunks(t *testing.T) {
	t.Parallel()
	ids := []int64{1, 2, 1, 3, 2, 2}
	got := chunks(len(ids), nil, func(i int) int64 { return ids[i] })
	if fmt.Sprint(got) != "[[0 1] [2 3 4] [5]]" {
		t.Fatalf("chunks = %v", got)
	}
	if got := chunks(batchRows+1, nil, nil); len(got) != 2 || len(got[0]) != batchRows {
		t.Fatalf("chunks of %d = %d chunks", batchRows+1, len(got))
	}
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
	// setup plans and starts n runs, outside the timer.
	setup := func() []sundial.RunFinishParams {
		b.StopTimer()
		defer b.StartTimer()
		if _, err := s.db.ExecContext(ctx, `UPDATE tasks SET next_fire_at = ? WHERE id = ?`,
			sqlrow.Micros(time.Unix(int64(batch*n), 0)), tk.ID); err != nil {
			b.Fatal(err)
		}
		left := n
		var runs []*sundial.Run
		for left > 0 {
			rs, err := s.PlanDue(ctx, time.Unix(1_900_000_000, 0), 1, "node", time.Now(), func(t *sundial.Task) sundial.Plan {
				var p sundial.Plan
				at := *t.NextFireTime
				for range left {
					p.Runs = append(p.Runs, &sundial.Run{FireKey: sundial.ScheduledFireKey(at), ScheduledTime: at})
					at = at.Add(time.Second)
				}
				p.Next = &at
				return p
			})
			if err != nil {
				b.Fatal(err)
			}
			runs = append(runs, rs...)
			left -= len(rs)
		}
		starts := make([]sundial.RunStartParams, n)
		fins := make([]sundial.RunFinishParams, n)
		for i, r := range runs {
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

// seedClaimable creates tasks tasks (priorities 0 to 4) and n SCHEDULED runs
// that no node holds, with their task's priority, spread over the tasks
// (one run of each task due at each second from t0 on), and returns the
// runs' IDs. Rows are inserted directly, many per statement.
func seedClaimable(t testing.TB, s *Store, tasks, n int, t0 time.Time) []int64 {
	t.Helper()
	ctx := context.Background()
	var (
		tids  []int64
		prios []int
	)
	for i := range tasks {
		tk := &sundial.Task{Name: fmt.Sprintf("claim-%d", i), CronExpr: "* * * * * *", TargetURL: "https://example.com",
			Priority: i % 5}
		if err := tk.Normalize(time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := storetest.CreateTask(ctx, s, tk, t0); err != nil {
			t.Fatal(err)
		}
		tids = append(tids, tk.ID)
		prios = append(prios, tk.Priority)
	}
	var rs []*sundial.Run
	for i := range n {
		at := t0.Add(time.Duration(i/tasks) * time.Second)
		r := &sundial.Run{TaskID: tids[i%tasks], FireKey: sundial.ScheduledFireKey(at), ScheduledTime: at,
			Priority: prios[i%tasks]}
		if err := prepareNew(r, t0); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	insertRuns(t, s, rs)
	ids, err := int64s(s.db.QueryContext(ctx, `SELECT id FROM runs WHERE task_id IN (`+
		placeholders(len(tids))+`) ORDER BY id`, int64Args(tids)...))
	if err != nil || len(ids) != n {
		t.Fatalf("seeded runs = %d, %v; want %d", len(ids), err, n)
	}
	return ids
}

// insertRuns inserts prepared runs, many per statement.
func insertRuns(t testing.TB, s *Store, rs []*sundial.Run) {
	t.Helper()
	for part := range slices.Chunk(rs, batchRows) {
		var args []any
		for _, r := range part {
			args = runInsertArgs(args, r)
		}
		if _, err := s.db.ExecContext(context.Background(), runInsertSQL(len(part)), args...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigrationsRerun runs every migration again on a migrated database, as
// after a migration that failed half-way: nothing fails and the schema is
// the same.
func TestMigrationsRerun(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := t.Context()
	indexes := func() string {
		t.Helper()
		rows, err := s.db.QueryContext(ctx, `SELECT table_name, index_name, seq_in_index, column_name
			FROM information_schema.statistics WHERE table_schema = DATABASE()
			ORDER BY table_name, index_name, seq_in_index`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var tbl, idx, col string
			var seq int
			if err := rows.Scan(&tbl, &idx, &seq, &col); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s.%s.%d.%s", tbl, idx, seq, col))
		}
		return strings.Join(out, " ")
	}
	foreignKeys := func() string {
		t.Helper()
		rows, err := s.db.QueryContext(ctx, `SELECT table_name, constraint_name, referenced_table_name, delete_rule
			FROM information_schema.referential_constraints WHERE constraint_schema = DATABASE()
			ORDER BY table_name, constraint_name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var tbl, name, ref, del string
			if err := rows.Scan(&tbl, &name, &ref, &del); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s.%s->%s(%s)", tbl, name, ref, del))
		}
		return strings.Join(out, " ")
	}
	before, beforeFK := indexes(), foreignKeys()
	if !strings.Contains(before, "runs.runs_claim.1.status runs.runs_claim.2.node_id runs.runs_claim.3.due_at "+
		"runs.runs_claim.4.priority runs.runs_claim.5.id runs.runs_created") ||
		!strings.Contains(before, "tasks.tasks_due.1.status tasks.tasks_due.2.deleted tasks.tasks_due.3.next_fire_at "+
			"tasks.tasks_due.4.id tasks.tasks_live_name") ||
		strings.Contains(before, "runs_status_node") || !strings.Contains(before, "runs.runs_waiting.1.waiting_due") ||
		!strings.Contains(before, "tasks.tasks_request_live.1.live_request_id") ||
		!strings.Contains(before, "run_attempts.run_attempts_run.1.run_id run_attempts.run_attempts_run.2.id") {
		t.Fatalf("indexes after Open: %s", before)
	}
	if !strings.Contains(beforeFK, "run_attempts.run_attempts_run_fk->runs(CASCADE)") {
		t.Fatalf("foreign keys after Open: %s", beforeFK)
	}
	files, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		script, err := migrationFiles.ReadFile("migrations/" + f.Name())
		if err != nil {
			t.Fatal(err)
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := execScript(ctx, tx, string(script)); err != nil {
			tx.Rollback()
			t.Fatalf("%s again: %v", f.Name(), err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if after := indexes(); after != before {
		t.Fatalf("indexes after running the migrations again:\n%s\nwant\n%s", after, before)
	}
	if after := foreignKeys(); after != beforeFK {
		t.Fatalf("foreign keys after running the migrations again:\n%s\nwant\n%s", after, beforeFK)
	}
}

// BenchmarkRunClaimDue claims 1,000 unowned due runs (of 20 tasks) per
// operation, in a table that also holds 20,000 finished runs.
func BenchmarkRunClaimDue(b *testing.B) {
	ctx := context.Background()
	s := open(b)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 1000
	seedHistory(b, s, 20_000, t0)
	seedClaimable(b, s, 20, n, t0)
	until := t0.Add(time.Hour)
	for b.Loop() {
		b.StopTimer()
		if _, err := s.db.ExecContext(ctx, `UPDATE runs SET node_id = '', fence = 1 WHERE status = 'SCHEDULED'`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		runs, _, err := s.RunClaimDue(ctx, "node", until, n, sundial.ClaimStartParams{})
		if err != nil || len(runs) != n {
			b.Fatalf("RunClaimDue: %d runs, %v", len(runs), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/run")
}

// BenchmarkRunClaimDueIdle is the call every node makes every 50 ms when
// nothing is due: 20,000 finished runs, none to claim.
func BenchmarkRunClaimDueIdle(b *testing.B) {
	ctx := context.Background()
	s := open(b)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	seedHistory(b, s, 20_000, t0)
	for b.Loop() {
		runs, _, err := s.RunClaimDue(ctx, "node", t0.Add(time.Hour), 1000, sundial.ClaimStartParams{})
		if err != nil || len(runs) != 0 {
			b.Fatalf("RunClaimDue: %d runs, %v", len(runs), err)
		}
	}
}

// seedHistory inserts n finished runs of one task.
func seedHistory(t testing.TB, s *Store, n int, t0 time.Time) {
	t.Helper()
	tk := &sundial.Task{Name: "history", CronExpr: "* * * * * *", TargetURL: "https://example.com"}
	if err := tk.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := storetest.CreateTask(context.Background(), s, tk, t0); err != nil {
		t.Fatal(err)
	}
	var rs []*sundial.Run
	for i := range n {
		at := t0.Add(-time.Duration(i+1) * time.Second)
		r := &sundial.Run{TaskID: tk.ID, FireKey: sundial.ScheduledFireKey(at), ScheduledTime: at, NodeID: "node"}
		if err := prepareNew(r, t0); err != nil {
			t.Fatal(err)
		}
		r.Status = sundial.RunSuccess
		if i%10 == 0 {
			r.Status = sundial.RunSkipped
			r.NodeID = ""
		}
		r.FinishedAt = &at
		rs = append(rs, r)
	}
	insertRuns(t, s, rs)
	if _, err := s.db.ExecContext(context.Background(), `ANALYZE TABLE tasks, runs`); err != nil {
		t.Fatal(err)
	}
}

// TestAttempts covers what the conformance case does not: NodeReap records
// the deliveries it cuts off, a batch that finishes one run twice records
// one attempt (the second outcome is its callback's), and purging a run
// deletes its attempts.
func TestAttempts(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := t.Context()
	tk := &sundial.Task{Name: "t", CronExpr: "* * * * * *", TargetURL: "https://example.com"}
	if err := tk.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	started := func(key, node string) *sundial.Run {
		t.Helper()
		r := &sundial.Run{TaskID: tk.ID, FireKey: key, Trigger: sundial.TriggerManual, ScheduledTime: t0, NodeID: node}
		if err := s.RunInsert(ctx, r); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: t0}}); err != nil || !ok[0] {
			t.Fatalf("RunStart: %v %v", ok, err)
		}
		return r
	}

	// NodeReap.
	if err := s.NodeRegister(ctx, &sundial.Node{ID: "dead"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE nodes SET heartbeat_at = 0 WHERE id = 'dead'`); err != nil {
		t.Fatal(err)
	}
	reaped := []*sundial.Run{started("m:1", "dead"), started("m:2", "dead")}
	other := started("m:3", "alive")
	now := t0.Add(time.Minute)
	if dead, err := s.NodeReap(ctx, time.Minute, now); err != nil || !slices.Equal(dead, []string{"dead"}) {
		t.Fatalf("NodeReap = %v, %v", dead, err)
	}
	for _, r := range reaped {
		atts, err := s.RunAttempts(ctx, r.ID)
		if err != nil || len(atts) != 1 {
			t.Fatalf("attempts of reaped run %d = %v, %v; want 1", r.ID, atts, err)
		}
		a := atts[0]
		if a.RunID != r.ID || a.Delivery != 1 || a.NodeID != "dead" || a.Status != sundial.RunInterrupted ||
			!strings.Contains(a.Error, "declared dead") || a.StartedAt == nil || !a.StartedAt.Equal(t0) ||
			!a.FinishedAt.Equal(now) || a.HTTPStatus != 0 || a.ResponseBody != "" {
			t.Errorf("attempt of reaped run %d = %+v", r.ID, a)
		}
		if got, err := s.RunGet(ctx, r.ID); err != nil || got.Status != sundial.RunInterrupted || got.Fence != r.Fence+1 {
			t.Errorf("reaped run = %+v, %v", got, err)
		}
	}
	if atts, err := s.RunAttempts(ctx, other.ID); err != nil || len(atts) != 0 || atts == nil {
		t.Fatalf("attempts of a live node's run = %#v, %v; want an empty slice", atts, err)
	}

	// One batch: RUNNING -> WAITING_CALLBACK, then its callback -> SUCCESS.
	ok, err := s.RunFinish(ctx, []sundial.RunFinishParams{
		{ID: other.ID, Fence: other.Fence, Status: sundial.RunWaitingCallback, StartedAt: t0, FinishedAt: t0.Add(time.Second),
			HTTPStatus: 202, ResponseBody: "accepted"},
		{ID: other.ID, Fence: other.Fence, Status: sundial.RunSuccess, FinishedAt: t0.Add(2 * time.Second)},
	})
	if err != nil || !ok[0] || !ok[1] {
		t.Fatalf("RunFinish = %v, %v", ok, err)
	}
	atts, err := s.RunAttempts(ctx, other.ID)
	if err != nil || len(atts) != 1 {
		t.Fatalf("attempts = %v, %v; want 1", atts, err)
	}
	if a := atts[0]; a.Status != sundial.RunWaitingCallback || a.NodeID != "alive" || a.Delivery != 1 ||
		a.HTTPStatus != 202 || a.ResponseBody != "accepted" || !a.FinishedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("attempt = %+v", a)
	}

	// RunPurge takes the attempts with the run.
	if n, err := s.RunPurge(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("RunPurge = %d, %v; want 1", n, err)
	}
	var left int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM run_attempts WHERE run_id = ?`, other.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("attempts of the purged run = %d, %v; want 0", left, err)
	}
}

// TestMigrateDueAt upgrades a database holding runs to 0004: every run is
// due at its scheduled time, a WAITING_CALLBACK run is in runs_waiting, and
// running 0004 again changes nothing.
func TestMigrateDueAt(t *testing.T) {
	t.Parallel()
	dsn := createDB(t)
	ctx := t.Context()
	s, err := connect(ctx, dsn, Options{})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer s.Close()
	script := func(name string) {
		t.Helper()
		b, err := migrationFiles.ReadFile("migrations/" + name)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := execScript(ctx, tx, string(b)); err != nil {
			tx.Rollback()
			t.Fatalf("%s: %v", name, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"0001_init.sql", "0002_claim.sql", "0003_attempts.sql"} {
		script(name)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO tasks (name, cron_expr, timezone, exec_type, http_method,
		target_url, headers_json, body_template, timeout_seconds, retry_policy_json, concurrency_policy, max_queue,
		overlap_action, failure_action, catch_up_mode, catch_up_limit, callback_method, status, version, created_at,
		updated_at) VALUES ('t', '* * * * * *', 'UTC', 'SYNC', 'GET', 'https://example.com', '{}', '', 0, '{}',
		'PARALLEL', 100, 'ALLOW', 'CONTINUE', 'ONE', 100, 'POST', 'ENABLED', 1, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO runs (task_id, fire_key, trigger_type, scheduled_at, status,
		response_body, error, idempotency_key, created_at, updated_at)
		VALUES (1, 's:1', 'SCHEDULE', 1000000, 'SCHEDULED', '', '', '', 1, 1),
			(1, 's:2', 'SCHEDULE', 2000000, 'WAITING_CALLBACK', '', '', '', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		script("0004_async.sql")
		rows, err := s.db.QueryContext(ctx, `SELECT fire_key, due_at, COALESCE(waiting_due, -1) FROM runs ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var (
				key      string
				due, wai int64
			)
			if err := rows.Scan(&key, &due, &wai); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprint(key, " ", due, " ", wai))
		}
		rows.Close()
		if want := "[s:1 1000000 -1 s:2 2000000 2000000]"; fmt.Sprint(got) != want {
			t.Fatalf("runs after 0004 = %v, want %s", got, want)
		}
	}
}

// TestMigratePriority upgrades a database holding runs to 0005: the runs
// still to be delivered take their task's priority, finished runs keep 0,
// runs_claim keeps priority descending, and running 0005 again changes
// nothing.
func TestMigratePriority(t *testing.T) {
	t.Parallel()
	dsn := createDB(t)
	ctx := t.Context()
	s, err := connect(ctx, dsn, Options{})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer s.Close()
	script := func(name string) {
		t.Helper()
		b, err := migrationFiles.ReadFile("migrations/" + name)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := execScript(ctx, tx, string(b)); err != nil {
			tx.Rollback()
			t.Fatalf("%s: %v", name, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"0001_init.sql", "0002_claim.sql", "0003_attempts.sql", "0004_async.sql"} {
		script(name)
	}
	for _, name := range []string{"hi", "lo"} {
		prio := map[string]int{"hi": 7, "lo": -2}[name]
		if _, err := s.db.ExecContext(ctx, `INSERT INTO tasks (name, cron_expr, timezone, exec_type, http_method,
			target_url, headers_json, body_template, timeout_seconds, retry_policy_json, concurrency_policy, max_queue,
			overlap_action, failure_action, catch_up_mode, catch_up_limit, callback_method, status, version, created_at,
			updated_at, priority) VALUES (?, '* * * * * *', 'UTC', 'SYNC', 'GET', 'https://example.com', '{}', '', 0, '{}',
			'PARALLEL', 100, 'ALLOW', 'CONTINUE', 'ONE', 100, 'POST', 'ENABLED', 1, 1, 1, ?)`, name, prio); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO runs (task_id, fire_key, trigger_type, scheduled_at, status,
		response_body, error, idempotency_key, created_at, updated_at, due_at)
		VALUES (1, 's:1', 'SCHEDULE', 1, 'SCHEDULED', '', '', '', 1, 1, 1),
			(1, 's:2', 'SCHEDULE', 2, 'QUEUED', '', '', '', 1, 1, 2),
			(1, 's:3', 'SCHEDULE', 3, 'SUCCESS', '', '', '', 1, 1, 3),
			(2, 's:1', 'SCHEDULE', 1, 'SCHEDULED', '', '', '', 1, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		script("0005_run_priority.sql")
		rows, err := s.db.QueryContext(ctx, `SELECT task_id, fire_key, priority FROM runs ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var (
				task int64
				key  string
				prio int
			)
			if err := rows.Scan(&task, &key, &prio); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprint(task, " ", key, " ", prio))
		}
		rows.Close()
		if want := "[1 s:1 7 1 s:2 7 1 s:3 0 2 s:1 -2]"; fmt.Sprint(got) != want {
			t.Fatalf("runs after 0005 = %v, want %s", got, want)
		}
	}
	var version string
	if err := s.db.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	var coll sql.NullString
	if err := s.db.QueryRowContext(ctx, `SELECT collation FROM information_schema.statistics
		WHERE table_schema = DATABASE() AND table_name = 'runs' AND index_name = 'runs_claim' AND column_name = 'priority'`).
		Scan(&coll); err != nil {
		t.Fatal(err)
	}
	// MariaDB before 10.8 accepts DESC and ignores it.
	if coll.String != "D" && !mariaDBBefore108(version) {
		t.Fatalf("runs_claim.priority has collation %q on %s; want D (descending)", coll.String, version)
	}
	t.Logf("runs_claim.priority collation %q on %s", coll.String, version)
}

// mariaDBBefore108 reports whether VERSION() names a MariaDB before 10.8.
func mariaDBBefore108(version string) bool {
	if !strings.Contains(version, "MariaDB") {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major < 10 || (major == 10 && minor < 8)
}

// BenchmarkBurst claims, starts and finishes 2,000 one-off fires per
// operation (storetest.BenchBurst).
func BenchmarkBurst(b *testing.B) {
	storetest.BenchBurst(b, open(b))
}

// TestUnavailable: once the server cannot be reached (the connections a
// store holds reset, new ones refused), every method answers
// EUnavailable; errors that are the caller's stay what they are.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	cfg, err := mysql.ParseDSN(createDB(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := storetest.NewProxy(t, cfg.Addr)
	cfg.Addr = proxy.Addr()
	storetest.RunUnavailable(t, openDSN(t, cfg.FormatDSN()), proxy.Cut)
}

// TestUnavailableClosed: a closed store answers EUnavailable.
func TestUnavailableClosed(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), createDB(t), Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	storetest.RunUnavailable(t, s, func() { _ = s.Close() })
}

// TestUnavailableErrors: which of the driver's errors mean the server
// cannot be used now; the others, real faults among them, are not hidden
// as such.
func TestUnavailableErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"bad connection", driver.ErrBadConn, true},
		{"server gone", mysql.ErrInvalidConn, true},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"server shutdown", &mysql.MySQLError{Number: 1053}, true},
		{"too many connections", &mysql.MySQLError{Number: 1040}, true},
		{"disk full", &mysql.MySQLError{Number: 1021}, true},
		{"table full", &mysql.MySQLError{Number: 1114}, true},
		{"read-only", &mysql.MySQLError{Number: 1290}, true},
		{"read-only mode", &mysql.MySQLError{Number: 1836}, true},
		{"connection killed", &mysql.MySQLError{Number: 1927}, true},
		{"wrapped", fmt.Errorf("list tasks: %w", &mysql.MySQLError{Number: 1053}), true},
		{"duplicate key", &mysql.MySQLError{Number: 1062}, false},
		{"syntax error", &mysql.MySQLError{Number: 1064}, false},
		{"unknown column", &mysql.MySQLError{Number: 1054}, false},
		{"deadlock", &mysql.MySQLError{Number: 1213}, false},
		{"context canceled", context.Canceled, false},
		{"no rows", sql.ErrNoRows, false},
		{"anything else", errors.New("boom"), false},
	} {
		if got := unavailable(c.err); got != c.want {
			t.Errorf("%s: unavailable = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPoolBounds: MaxConns caps the connections open at once and
// MaxIdleConns those kept once they are released.
func TestPoolBounds(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, createDB(t), Options{MaxConns: 3, MaxIdleConns: 1, ConnMaxLifetime: time.Hour, ConnMaxIdleTime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var held []*sql.Conn
	for range 3 {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if c, err := s.db.Conn(short); err == nil {
		c.Close()
		t.Fatal("a fourth connection was taken past MaxConns 3")
	}
	for _, c := range held {
		c.Close()
	}
	if st := s.db.Stats(); st.MaxOpenConnections != 3 || st.OpenConnections != 1 || st.Idle != 1 {
		t.Fatalf("after the releases: %+v; want 3 at most, 1 kept idle", st)
	}
}

// TestTaskStateSaveRowMadeMeanwhile: another node makes the row of a task
// whose first state a save writes, either while the save locks the rows
// there (it waits, then merges into the row) or after the save went past
// the task (its first state's insert meets a duplicate key, and the
// transaction runs again to merge into the row).
func TestTaskStateSaveRowMadeMeanwhile(t *testing.T) {
	t.Parallel()
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after=%v", after), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := open(t)
			var x, z *sundial.Task
			for _, p := range []**sundial.Task{&x, &z} {
				tk := &sundial.Task{Name: fmt.Sprintf("t%p", p), CronExpr: "* * * * * *", TargetURL: "https://example.com"}
				if err := tk.Normalize(time.Now()); err != nil {
					t.Fatal(err)
				}
				if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
					t.Fatal(err)
				}
				*p = tk
			}
			at := func(sec int) time.Time { return time.Unix(int64(sec), 0).UTC() }
			failure := func(id int64, sec int) *sundial.TaskState {
				st := &sundial.TaskState{TaskID: id}
				st.Record(sundial.RunFailed, at(sec))
				return st
			}
			// z (after x in task order) has a row.
			if err := s.TaskStateSave(ctx, []*sundial.TaskState{failure(z.ID, 5)}, at(6)); err != nil {
				t.Fatal(err)
			}

			// The other node: its transaction holds z's row (the save,
			// which passed x, waits there) or makes x's (the save waits
			// at x).
			other, err := s.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback()
			makeX := func() {
				first := sundial.FirstStates([]*sundial.TaskState{failure(x.ID, 10)}, at(11))
				if _, err := other.ExecContext(ctx, taskStateFirstSQL(1), taskStateWriteArgs(first)...); err != nil {
					t.Fatal(err)
				}
			}
			if after {
				if _, err := other.ExecContext(ctx, `SELECT task_id FROM task_state WHERE task_id = ? FOR UPDATE`, z.ID); err != nil {
					t.Fatal(err)
				}
			} else {
				makeX()
			}
			done := make(chan error, 1)
			go func() {
				done <- s.TaskStateSave(ctx, []*sundial.TaskState{failure(x.ID, 20), failure(z.ID, 20)}, at(21))
			}()
			// Wait until the server shows the save locking the rows there,
			// which it cannot end before the other transaction does.
			// (MariaDB's information_schema.innodb_trx does not list a
			// transaction that only waits to lock rows.)
			waiting := func() bool {
				var n int
				err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.processlist
					WHERE db = DATABASE() AND info LIKE 'SELECT s.task_id%FOR UPDATE'`).Scan(&n)
				return err == nil && n > 0
			}
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(20 * time.Second)
			for !waiting() {
				select {
				case err := <-done:
					t.Fatalf("TaskStateSave returned while another transaction held a row: %v", err)
				case <-deadline:
					t.Fatal("TaskStateSave never waited for the other transaction")
				case <-tick.C:
				}
			}
			if after {
				makeX()
			}
			if err := other.Commit(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("TaskStateSave: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("TaskStateSave did not end after the other transaction did")
			}

			saved, _, err := s.TaskStates(ctx, []int64{x.ID, z.ID}, at(30))
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				id    int64
				since int
			}{{x.ID, 10}, {z.ID, 5}} {
				st := saved[tc.id]
				if st == nil || st.ConsecutiveFailures != 2 || !st.FailingSince.Equal(at(tc.since)) ||
					!st.LastFailureAt.Equal(at(20)) || !st.UpdatedAt.Equal(at(21)) {
					t.Errorf("task %d: saved %+v, want 2 failures in a row since %d s, the last at 20 s", tc.id, st, tc.since)
				}
			}
		})
	}
}
