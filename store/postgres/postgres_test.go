package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/label"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
	"github.com/sundialhq/sundial/store/migrate"
	"github.com/sundialhq/sundial/store/storetest"
)

// envDSN names the variable that points the tests at a PostgreSQL server,
// for example postgres://root@127.0.0.1:5432/test?sslmode=disable. Each
// test works in a schema of its own, dropped when it ends.
const envDSN = "SUNDIAL_TEST_POSTGRES"

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { dropPooled() }))
}

// serverDSN returns the test server's DSN. Without one the test is
// skipped, except in CI, where the PostgreSQL tests must run.
func serverDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: CI must run the PostgreSQL tests", envDSN)
		}
		t.Skipf("set %s=postgres://... to run the PostgreSQL tests", envDSN)
	}
	return dsn
}

// newSchema creates an empty schema, dropped at the end of t, and returns
// a DSN whose connections work in it.
func newSchema(t testing.TB) string {
	t.Helper()
	dsn := serverDSN(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "sundial_test_" + hex.EncodeToString(b[:])
	admin := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := admin(t.Context(), `CREATE SCHEMA `+ident); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin(ctx, `DROP SCHEMA `+ident+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return withParam(t, dsn, "search_path", name)
}

// pooled holds the schemas of the conformance cases (emptySchema): free
// ones, migrated and emptied, and all of them, dropped when the tests end.
var pooled struct {
	sync.Mutex
	free, all []string
}

// emptySchema returns a DSN whose connections work in a migrated schema
// with no rows but its migration ledger, as a new schema is once Open has
// migrated it. Migrating one (every migration in its own transaction) is
// most of what a conformance case costs, so a case takes a schema an
// earlier case left, emptied when that case ended with every table's rows
// deleted and every sequence restarted (IDs begin at 1 again), or else a
// new one that Open migrates. A case that failed leaves its schema as it
// is, to be dropped with the others when the tests end. The migrations
// themselves are tested on new schemas (TestMigrate*).
func emptySchema(t *testing.T) string {
	t.Helper()
	dsn := serverDSN(t)
	pooled.Lock()
	var name string
	if n := len(pooled.free); n > 0 {
		name, pooled.free = pooled.free[n-1], pooled.free[:n-1]
	}
	pooled.Unlock()
	if name == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name = "sundial_test_" + hex.EncodeToString(b[:])
		if err := adminExec(t.Context(), dsn, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Fatalf("create schema: %v", err)
		}
		pooled.Lock()
		pooled.all = append(pooled.all, name)
		pooled.Unlock()
	}
	// Registered before the stores' Close, so it runs after it.
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := emptyOut(ctx, withParam(t, dsn, "search_path", name)); err != nil {
			t.Errorf("empty schema %s: %v", name, err)
			return
		}
		pooled.Lock()
		pooled.free = append(pooled.free, name)
		pooled.Unlock()
	})
	return withParam(t, dsn, "search_path", name)
}

// emptyOut deletes the rows of every table of the connection's schema but
// schema_migrations, a table before those its rows' foreign keys point to,
// and restarts the schema's sequences, in one transaction.
func emptyOut(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT c.relname, coalesce(array_agg(r.relname) FILTER (WHERE r.relname IS NOT NULL), '{}')
		FROM pg_class AS c
		LEFT JOIN pg_constraint AS f ON f.contype = 'f' AND f.conrelid = c.oid
		LEFT JOIN pg_class AS r ON r.oid = f.confrelid AND r.oid <> c.oid
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.relname <> 'schema_migrations'
		GROUP BY c.relname`)
	if err != nil {
		return err
	}
	refs := map[string][]string{} // table: the tables its foreign keys point to
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			var table string
			var to []string
			if err := rows.Scan(&table, &to); err != nil {
				return err
			}
			refs[table] = to
		}
		return rows.Err()
	}()
	if err != nil {
		return err
	}
	var b pgx.Batch
	// A table once no other table left points to it.
	for len(refs) > 0 {
		var next []string
		for table := range refs {
			pointed := false
			for other, to := range refs {
				pointed = pointed || (other != table && slices.Contains(to, table))
			}
			if !pointed {
				next = append(next, table)
			}
		}
		if len(next) == 0 {
			return fmt.Errorf("the foreign keys of %v go round", refs)
		}
		for _, table := range next {
			b.Queue(`DELETE FROM ` + pgx.Identifier{table}.Sanitize())
			delete(refs, table)
		}
	}
	b.Queue(`DO $$ DECLARE s text; BEGIN
		FOR s IN SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema() LOOP
			EXECUTE format('ALTER SEQUENCE %I RESTART', s);
		END LOOP; END $$`)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) // a no-op after Commit
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// dropPooled drops the schemas emptySchema made.
func dropPooled() {
	dsn := os.Getenv(envDSN)
	pooled.Lock()
	defer pooled.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range pooled.all {
		if err := adminExec(ctx, dsn, `DROP SCHEMA `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			fmt.Fprintf(os.Stderr, "drop schema %s: %v\n", name, err)
		}
	}
}

// adminExec runs sql on a connection of its own to dsn.
func adminExec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// withParam sets a connection parameter (a plain word) in a URL or
// key=value DSN.
func withParam(t testing.TB, dsn, key, value string) string {
	t.Helper()
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " " + key + "=" + value
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s is not a URL", envDSN)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// open opens a store on dsn, closed at the end of t.
func open(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(t.Context(), dsn, Options{MaxConns: 4})
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
	serverDSN(t)
	storetest.Run(t, storetest.Backend{Open: openNodes, LockRuns: holdRuns, AttemptRows: attemptRows, Exec: exec})
}

// attemptRows counts the rows of run_attempts of run runID.
func attemptRows(t *testing.T, s sundial.Store, runID int64) (n int) {
	t.Helper()
	if err := s.(*Store).pool.QueryRow(t.Context(), `SELECT count(*) FROM run_attempts WHERE run_id = $1`, runID).Scan(&n); err != nil {
		t.Fatalf("count the attempts of run %d: %v", runID, err)
	}
	return n
}

// exec runs query on s's database.
func exec(t *testing.T, s sundial.Store, query string) {
	t.Helper()
	if _, err := s.(*Store).pool.Exec(t.Context(), query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// openNodes opens nodes stores on a migrated, empty schema (emptySchema),
// each with a pool of its own, as the nodes of one cluster.
func openNodes(t *testing.T, nodes int) []sundial.Store {
	t.Helper()
	dsn := emptySchema(t)
	var stores []sundial.Store
	for range nodes {
		stores = append(stores, open(t, dsn))
	}
	return stores
}

// holdRuns locks the runs ids in a transaction of its own until release.
func holdRuns(t *testing.T, s sundial.Store, ids []int64) (release func()) {
	t.Helper()
	ctx := t.Context()
	tx, err := s.(*Store).pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `SELECT id FROM runs WHERE id = ANY($1) FOR UPDATE`, ids)
	if err != nil {
		tx.Rollback(context.Background())
		t.Fatal(err)
	}
	locked, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(locked) != len(ids) {
		tx.Rollback(context.Background())
		t.Fatalf("lock runs %v: %v, %v", ids, locked, err)
	}
	return func() {
		if err := tx.Rollback(context.Background()); err != nil {
			t.Errorf("release the runs' locks: %v", err)
		}
	}
}

// ledger returns schema_migrations as "version@applied_at ...".
func ledger(t *testing.T, s *Store) string {
	t.Helper()
	rows, err := s.pool.Query(t.Context(), `SELECT version, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	var b strings.Builder
	for rows.Next() {
		var v, at int64
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatalf("read schema_migrations: %v", err)
		}
		fmt.Fprintf(&b, "%d@%d ", v, at)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	return b.String()
}

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

// TestMigrateConcurrent starts several nodes on one empty schema at once:
// every Open succeeds and each migration is applied once.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	dsn := newSchema(t)
	const nodes = 4
	stores := make([]*Store, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { stores[i], errs[i] = Open(t.Context(), dsn, Options{MaxConns: 2}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
			continue
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if t.Failed() {
		t.FailNow()
	}
	s := stores[0]
	var got []int64
	rows, err := s.pool.Query(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	got, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	if want := migrationVersions(t); !slices.Equal(got, want) {
		t.Fatalf("schema_migrations = %v, want each of %v once", got, want)
	}
	before := ledger(t, s)
	for _, st := range stores {
		if err := st.Migrate(t.Context()); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
	}
	if after := ledger(t, s); after != before {
		t.Fatalf("schema_migrations changed by migrating again: %q, was %q", after, before)
	}
}

// TestMigrateRunPriority migrates a database with runs made before runs
// had a priority: the runs that may still be claimed or admitted (SCHEDULED,
// QUEUED) take their task's, the others keep 0, and the claim and planner
// indexes are in their new order.
func TestMigrateRunPriority(t *testing.T) {
	t.Parallel()
	dsn := newSchema(t)
	ctx := t.Context()
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	old := fstest.MapFS{}
	migs, err := migrate.Load(sub)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migs {
		if m.Version < 5 {
			old[m.Name] = &fstest.MapFile{Data: []byte(m.SQL)}
		}
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := migrate.Dialect{TxLock: lockMigrations, Placeholder: func(n int) string { return "$" + strconv.Itoa(n) }}
	if _, err := migrate.Up(ctx, db, old, d, nil); err != nil {
		t.Fatalf("migrate to 0004: %v", err)
	}
	// Tasks 1, 2, 3 of priorities 7, 0, -2; each with a run in each status.
	_, err = db.ExecContext(ctx, `
		INSERT INTO tasks (name, cron_expr, timezone, exec_type, http_method, target_url, timeout_seconds,
			concurrency_policy, max_queue, overlap_action, failure_action, catch_up_mode, catch_up_limit,
			callback_method, status, version, created_at, updated_at, priority)
		SELECT 't' || g, '* * * * * *', 'UTC', 'SYNC', 'POST', 'https://example.com', 0, 'QUEUE', 100,
			'ALLOW', 'RUN_NEW', 'NONE', 100, 'POST', 'ENABLED', 1, 0, 0, (ARRAY[7, 0, -2])[g]
		FROM generate_series(1, 3) AS g;
		INSERT INTO runs (task_id, fire_key, trigger_type, scheduled_at, due_at, status, node_id, idempotency_key,
			created_at, updated_at)
		SELECT t, s, 'SCHEDULE', 1, 1, s, '', 'k', 1, 1
		FROM generate_series(1, 3) AS t,
			unnest(ARRAY['SCHEDULED', 'QUEUED', 'RUNNING', 'SUCCESS', 'SKIPPED']) AS s`)
	if err != nil {
		t.Fatalf("fill tables: %v", err)
	}
	s := open(t, dsn)
	rows, err := s.pool.Query(ctx, `SELECT r.task_id || ' ' || r.status || ' ' || r.priority FROM runs AS r ORDER BY r.task_id, r.status`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1 QUEUED 7", "1 RUNNING 0", "1 SCHEDULED 7", "1 SKIPPED 0", "1 SUCCESS 0",
		"2 QUEUED 0", "2 RUNNING 0", "2 SCHEDULED 0", "2 SKIPPED 0", "2 SUCCESS 0",
		"3 QUEUED -2", "3 RUNNING 0", "3 SCHEDULED -2", "3 SKIPPED 0", "3 SUCCESS 0",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("runs after the migration (task status priority):\n%q\nwant\n%q", got, want)
	}
	for name, def := range map[string]string{
		"runs_unclaimed": "(due_at, priority DESC, id) WHERE ((status = 'SCHEDULED'::text) AND (node_id = ''::text))",
		"tasks_due":      "(next_fire_at, id) WHERE ((status = 'ENABLED'::text) AND (NOT deleted))",
	} {
		var got string
		if err := s.pool.QueryRow(ctx, `SELECT indexdef FROM pg_indexes
			WHERE schemaname = current_schema() AND indexname = $1`, name).Scan(&got); err != nil || !strings.HasSuffix(got, def) {
			t.Errorf("index %s = %q, %v; want ... %s", name, got, err, def)
		}
	}
}

// TestMigrateWaitsForLock holds the migration lock from another session,
// as a session lock (as Migrate took it before it took a transaction's):
// Open waits for it, and migrates once it is released.
func TestMigrateWaitsForLock(t *testing.T) {
	t.Parallel()
	dsn := newSchema(t)
	ctx := t.Context()
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey); err != nil {
		t.Fatalf("lock: %v", err)
	}
	locked := true
	defer func() {
		if locked {
			holder.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, migrateLockKey)
		}
	}()

	type result struct {
		s   *Store
		err error
	}
	done := make(chan result, 1)
	app := "sundial-test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	appDSN := withParam(t, dsn, "application_name", app)
	go func() {
		s, err := Open(ctx, appDSN, Options{MaxConns: 2})
		done <- result{s, err}
	}()

	// Wait until the server shows Open's session waiting for the lock
	// (other tests' sessions may be waiting for it too).
	waiting := func() bool {
		var n int
		err := holder.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND NOT l.granted AND l.classid::bigint = $1
				AND l.objid::bigint = $2 AND l.objsubid = 1 AND a.application_name = $3`,
			migrateLockKey>>32, migrateLockKey&0xffffffff, app).Scan(&n)
		return err == nil && n > 0
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for !waiting() {
		select {
		case r := <-done:
			if r.s != nil {
				r.s.Close()
			}
			t.Fatalf("Open returned while another session held the migration lock: %v", r.err)
		case <-deadline:
			t.Fatal("Open never waited for the migration lock")
		case <-tick.C:
		}
	}
	var tables int
	if err := holder.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("tables created while the lock was held: %d, %v", tables, err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, migrateLockKey); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	locked = false
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Open: %v", r.err)
		}
		defer r.s.Close()
		if got := ledger(t, r.s); got == "" {
			t.Fatal("nothing migrated")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Open did not finish after the lock was released")
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	if s, err := Open(ctx, "postgres://user:s3cret@%zz/db", Options{}); err == nil {
		s.Close()
		t.Fatal("Open with a malformed DSN: no error")
	} else if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the error reveals the password: %v", err)
	}
	// Nothing listens on port 1.
	if s, err := Open(ctx, "postgres://nobody@127.0.0.1:1/db?connect_timeout=5", Options{}); err == nil {
		s.Close()
		t.Fatal("Open without a server: no error")
	}
}

// newTask returns a valid task named name, due at next.
func newTask(t testing.TB, name string, next time.Time) *sundial.Task {
	t.Helper()
	tk := &sundial.Task{Name: name, CronExpr: "* * * * * *", TargetURL: "https://example.com"}
	if err := tk.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	tk.NextFireTime = &next
	return tk
}

// planUnowned plans, on tasks (made due at t0 first), perTask runs each
// that no node holds, due at t0 .. t0+perTask-1 s, and returns them. A
// batch number keeps their fire keys new.
func planUnowned(tb testing.TB, s *Store, tasks []int64, perTask, batch int, t0 time.Time) []*sundial.Run {
	tb.Helper()
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `UPDATE tasks SET next_fire_at = $1 WHERE id = ANY($2)`, sqlrow.Micros(t0), tasks); err != nil {
		tb.Fatal(err)
	}
	runs, err := s.PlanDue(ctx, t0, len(tasks), "", t0, func(tk *sundial.Task) sundial.Plan {
		var p sundial.Plan
		for i := range perTask {
			p.Runs = append(p.Runs, &sundial.Run{FireKey: fmt.Sprintf("b%d:%d", batch, i),
				ScheduledTime: t0.Add(time.Duration(i) * time.Second)})
		}
		return p
	})
	if err != nil || len(runs) != len(tasks)*perTask {
		tb.Fatalf("PlanDue: %d runs, %v; want %d", len(runs), err, len(tasks)*perTask)
	}
	return runs
}

// claimTasks creates n tasks, their priorities 0 to n-1, and returns their IDs.
func claimTasks(tb testing.TB, s *Store, n int) []int64 {
	tb.Helper()
	var ids []int64
	for i := range n {
		tk := newTask(tb, fmt.Sprintf("t%03d", i), time.Unix(0, 0))
		tk.Priority = i
		if err := storetest.CreateTask(context.Background(), s, tk, time.Now()); err != nil {
			tb.Fatalf("CreateTask: %v", err)
		}
		ids = append(ids, tk.ID)
	}
	return ids
}

// TestRunFinishBatchInOrder lists one run twice in a batch: the items apply
// as if one after another, as in SQLite.
func TestRunFinishBatchInOrder(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t))
	ctx := t.Context()
	now := time.Now()
	tk := newTask(t, "a", now)
	if err := storetest.CreateTask(ctx, s, tk, now); err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	r := &sundial.Run{TaskID: tk.ID, FireKey: "m:1", ScheduledTime: now}
	if err := s.RunInsert(ctx, r); err != nil {
		t.Fatalf("RunInsert: %v", err)
	}
	ok, err := s.RunStart(ctx, []sundial.RunStartParams{
		{ID: r.ID, Fence: r.Fence + 1, Attempt: 1, StartedAt: now}, // fenced off
		{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: now},     // starts
		{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: now},     // already started
	})
	if err != nil || fmt.Sprint(ok) != "[false true false]" {
		t.Fatalf("RunStart = %v, %v; want [false true false]", ok, err)
	}
	ok, err = s.RunFinish(ctx, []sundial.RunFinishParams{
		{ID: r.ID, Fence: r.Fence, Status: sundial.RunWaitingCallback, FinishedAt: now},
		{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess, FinishedAt: now},
		{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed, FinishedAt: now},
	})
	if err != nil || fmt.Sprint(ok) != "[true true false]" {
		t.Fatalf("RunFinish = %v, %v; want [true true false]", ok, err)
	}
	if got, err := s.RunGet(ctx, r.ID); err != nil || got.Status != sundial.RunSuccess {
		t.Fatalf("run after the batch: %v, %v; want SUCCESS", got, err)
	}
	// Only the first outcome ended the delivery's call.
	if as, err := s.RunAttempts(ctx, r.ID); err != nil || len(as) != 1 || as[0].Status != sundial.RunWaitingCallback {
		t.Fatalf("RunAttempts = %+v, %v; want one WAITING_CALLBACK attempt", as, err)
	}
}

// startedRun inserts a run of a new task held by node and starts it.
func startedRun(t *testing.T, s *Store, name, node string, now time.Time) *sundial.Run {
	t.Helper()
	ctx := t.Context()
	tk := newTask(t, name, now)
	if err := storetest.CreateTask(ctx, s, tk, now); err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	r := &sundial.Run{TaskID: tk.ID, FireKey: "m:1", ScheduledTime: now, NodeID: node}
	if err := s.RunInsert(ctx, r); err != nil {
		t.Fatalf("RunInsert: %v", err)
	}
	if ok, err := s.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: now}}); err != nil || !ok[0] {
		t.Fatalf("RunStart: %v %v", ok, err)
	}
	return r
}

// TestRunFinishAttemptRace: an outcome that waits for another one of the
// same run (a callback behind its call's WAITING_CALLBACK) sees the status
// that one left, not the status at its own start, so the delivery is
// recorded once. The conformance suite races the two outcomes on every
// backend (ClusterRunFinish); this test forces the interleaving that
// READ COMMITTED makes dangerous, by holding the call's statement open.
func TestRunFinishAttemptRace(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t))
	ctx := t.Context()
	now := time.Now()
	r := startedRun(t, s, "a", "node-a", now)

	// The call's outcome, in a transaction left open.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	us := sqlrow.Micros(now)
	rows, err := tx.Query(ctx, runFinishSQL, []int64{r.ID}, []int64{r.Fence}, []string{"WAITING_CALLBACK"},
		[]*int64{&us}, []*int64{&us}, []int32{202}, [][]byte{{}}, []string{""}, []int64{us},
		[]bool(nil), []*int64(nil), []*string(nil))
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil || len(ids) != 1 {
		t.Fatalf("WAITING_CALLBACK: %v, %v", ids, err)
	}
	var holder int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	// The callback's outcome waits for it.
	done := make(chan error, 1)
	go func() {
		ok, err := s.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
			FinishedAt: now, HTTPStatus: 500}})
		if err == nil && !ok[0] {
			err = fmt.Errorf("the callback's outcome was refused")
		}
		done <- err
	}()
	// Wait until the server shows the callback's outcome waiting for the
	// call's: a state inside the server, looked at every 10 ms.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		var waiting bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE $1::integer = ANY (pg_blocking_pids(pid)))`, holder).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the callback's outcome did not wait for the call's: %v", err)
		case <-deadline:
			t.Fatal("the callback's outcome never waited for the call's")
		case <-tick.C:
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("RunFinish: %v", err)
	}
	as, err := s.RunAttempts(ctx, r.ID)
	if err != nil || len(as) != 1 || as[0].Status != sundial.RunWaitingCallback || as[0].Delivery != 1 {
		t.Fatalf("RunAttempts = %+v, %v; want one WAITING_CALLBACK attempt", as, err)
	}
	if got, err := s.RunGet(ctx, r.ID); err != nil || got.Status != sundial.RunFailed {
		t.Fatalf("run = %+v, %v; want FAILED", got, err)
	}
}

// TestAttemptsReapAndPurge: NodeReap records the deliveries of a dead node
// as INTERRUPTED attempts of that node, and purging a run deletes its
// attempts.
func TestAttemptsReapAndPurge(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t))
	ctx := t.Context()
	now := time.Now()
	if err := s.NodeRegister(ctx, &sundial.Node{ID: "dead"}); err != nil {
		t.Fatal(err)
	}
	r := startedRun(t, s, "a", "dead", now)
	other := startedRun(t, s, "b", "alive", now)
	if _, err := s.pool.Exec(ctx, `UPDATE nodes SET heartbeat_at = 0`); err != nil {
		t.Fatal(err)
	}
	dead, err := s.NodeReap(ctx, time.Second, now.Add(time.Minute))
	if err != nil || len(dead) != 1 {
		t.Fatalf("NodeReap = %v, %v", dead, err)
	}
	as, err := s.RunAttempts(ctx, r.ID)
	if err != nil || len(as) != 1 {
		t.Fatalf("RunAttempts = %+v, %v; want one", as, err)
	}
	a := as[0]
	if a.RunID != r.ID || a.Delivery != 1 || a.NodeID != "dead" || a.Status != sundial.RunInterrupted ||
		!strings.Contains(a.Error, "declared dead") || a.StartedAt == nil || !a.StartedAt.Equal(sqlrow.Norm(now)) ||
		!a.FinishedAt.Equal(sqlrow.Norm(now.Add(time.Minute))) {
		t.Fatalf("attempt = %+v", a)
	}
	if as, err := s.RunAttempts(ctx, other.ID); err != nil || as == nil || len(as) != 0 {
		t.Fatalf("RunAttempts of a running run = %#v, %v; want an empty slice", as, err)
	}

	// Redelivery leaves no runs to redeliver: the run fails, and is purged.
	if _, _, err := s.RunRedeliver(ctx, "alive", 1, 10, now); err != nil {
		t.Fatalf("RunRedeliver: %v", err)
	}
	if n, err := s.RunPurge(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("RunPurge = %d, %v; want 1", n, err)
	}
	var left int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM run_attempts WHERE run_id = $1`, r.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d attempts left after the purge, %v", left, err)
	}
}

// TestBytesAndText: a response body keeps any bytes; text PostgreSQL
// cannot store is EInvalid in a task and cleaned in an error message.
func TestBytesAndText(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t))
	ctx := t.Context()
	now := time.Now()

	// Normalize refuses such a name too; the store must not rely on it.
	bad := newTask(t, "nul", now)
	bad.Name = "nul\x00name"
	if err := storetest.CreateTask(ctx, s, bad, now); sundial.ErrorCode(err) != sundial.EInvalid {
		t.Fatalf("CreateTask with a NUL in the name: %v, want %s", err, sundial.EInvalid)
	}

	tk := newTask(t, "a", now)
	if err := storetest.CreateTask(ctx, s, tk, now); err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	r := &sundial.Run{TaskID: tk.ID, FireKey: "m:1", ScheduledTime: now}
	if err := s.RunInsert(ctx, r); err != nil {
		t.Fatalf("RunInsert: %v", err)
	}
	if ok, err := s.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: now}}); err != nil || !ok[0] {
		t.Fatalf("RunStart: %v %v", ok, err)
	}
	body := "bin\x00\xff\xfe\x01ary"
	ok, err := s.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
		FinishedAt: now, HTTPStatus: 500, ResponseBody: body, Error: "bad \x00 byte \xff"}})
	if err != nil || !ok[0] {
		t.Fatalf("RunFinish: %v %v", ok, err)
	}
	got, err := s.RunGet(ctx, r.ID)
	if err != nil {
		t.Fatalf("RunGet: %v", err)
	}
	if got.ResponseBody != body {
		t.Fatalf("ResponseBody = %q, want %q", got.ResponseBody, body)
	}
	if got.Error != "bad \uFFFD byte \uFFFD" {
		t.Fatalf("Error = %q", got.Error)
	}
	as, err := s.RunAttempts(ctx, r.ID)
	if err != nil || len(as) != 1 || as[0].ResponseBody != body || as[0].Error != got.Error {
		t.Fatalf("RunAttempts = %+v, %v; want the run's body and error", as, err)
	}
}

// TestNodeClock: node times come from the server's clock, and a heartbeat
// moves on by it.
func TestNodeClock(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t))
	ctx := t.Context()
	n := &sundial.Node{ID: "n1"}
	if err := s.NodeRegister(ctx, n); err != nil {
		t.Fatalf("NodeRegister: %v", err)
	}
	var server int64
	if err := s.pool.QueryRow(ctx, `SELECT `+dbNow).Scan(&server); err != nil {
		t.Fatal(err)
	}
	if d := sqlrow.FromMicros(server).Sub(n.StartedAt); d < 0 || d > time.Minute {
		t.Fatalf("StartedAt %v is %v before the server's clock", n.StartedAt, d)
	}
	if err := s.NodeHeartbeat(ctx, n.ID); err != nil {
		t.Fatalf("NodeHeartbeat: %v", err)
	}
	nodes, err := s.NodeList(ctx)
	if err != nil || len(nodes) != 1 || !nodes[0].HeartbeatAt.After(nodes[0].StartedAt) {
		t.Fatalf("NodeList = %+v, %v; want a heartbeat after the start", nodes, err)
	}
	// A deadline of an hour by the server's clock keeps the node alive.
	if dead, err := s.NodeReap(ctx, time.Hour, time.Unix(0, 0)); err != nil || len(dead) != 0 {
		t.Fatalf("NodeReap(1h) = %v, %v; want none", dead, err)
	}
}

// TestRunIndexStatuses holds the condition of the partial index
// runs_created to the final statuses, the only runs its reader (RunPurge)
// asks for: a final status added without its migration would leave its
// runs out of the index and never purged through it.
func TestRunIndexStatuses(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t))
	var def string
	if err := s.pool.QueryRow(t.Context(), `SELECT indexdef FROM pg_indexes
		WHERE schemaname = current_schema() AND indexname = 'runs_created'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	for _, st := range sundial.RunStatuses() {
		if has := strings.Contains(def, "'"+string(st)+"'"); has != st.Final() {
			t.Errorf("runs_created holds %s: %t, want %t:\n%s", st, has, st.Final(), def)
		}
	}
}

// TestQueryPlans keeps the hot queries on their indexes, on tables with
// some history and fresh statistics: a plan that scans tasks or runs, or
// reaches a batch's runs through the status index, costs more as the
// tables grow, not as the work does.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t))
	ctx := t.Context()
	// 5,000 tasks of priorities -3 to 3, due from 1,000,000 on, and 5,000
	// more all due at 50,000,000 (a burst); 50,000 runs: a tenth each
	// SCHEDULED, RUNNING, SKIPPED and QUEUED, the rest SUCCESS. Then 100,000
	// finished runs (half of them SKIPPED records no node holds), 5,000
	// SCHEDULED runs no node holds all due at 199,000 (a burst) with
	// priorities 0 to 9, 1,000 more due from 200,001 on, and 100
	// WAITING_CALLBACK runs whose callbacks are due from 301,001 on; 3
	// nodes, one of them ALIVE; two attempts of each SUCCESS run.
	_, err := s.pool.Exec(ctx, `
		INSERT INTO tasks (name, cron_expr, timezone, exec_type, http_method, target_url, timeout_seconds,
			concurrency_policy, max_queue, overlap_action, failure_action, catch_up_mode, catch_up_limit,
			callback_method, status, version, created_at, updated_at, next_fire_at, priority)
		SELECT 't' || g, '* * * * * *', 'UTC', 'SYNC', 'POST', 'https://example.com', 0, 'QUEUE', 100,
			'ALLOW', 'RUN_NEW', 'NONE', 100, 'POST', 'ENABLED', 1, 0, 0,
			CASE WHEN g <= 5000 THEN g::bigint * 1000000 ELSE 50000000 END, g % 7 - 3
		FROM generate_series(1, 10000) AS g;
		INSERT INTO runs (task_id, fire_key, trigger_type, scheduled_at, due_at, status, node_id, idempotency_key,
			created_at, updated_at)
		SELECT 1 + g % 5000, 'k' || g, 'SCHEDULE', g, g, CASE g % 10 WHEN 0 THEN 'SCHEDULED' WHEN 1 THEN 'RUNNING'
			WHEN 2 THEN 'SKIPPED' WHEN 3 THEN 'QUEUED' ELSE 'SUCCESS' END, 'node-' || g % 3, 'k', g, g
		FROM generate_series(1, 50000) AS g;
		INSERT INTO runs (task_id, fire_key, trigger_type, scheduled_at, due_at, status, node_id, idempotency_key,
			created_at, updated_at)
		SELECT 1 + g % 5000, 'k' || g, 'SCHEDULE', g, g, CASE g % 2 WHEN 0 THEN 'SUCCESS' ELSE 'SKIPPED' END,
			CASE g % 2 WHEN 0 THEN 'node-' || g % 3 ELSE '' END, 'k', g, g
		FROM generate_series(50001, 150000) AS g;
		INSERT INTO runs (task_id, fire_key, trigger_type, scheduled_at, due_at, status, node_id, idempotency_key,
			created_at, updated_at, priority)
		SELECT 1 + g % 5000, 'k' || g, 'SCHEDULE', 199000, 199000, 'SCHEDULED', '', 'k', g, g, g % 10
		FROM generate_series(210001, 215000) AS g;
		INSERT INTO runs (task_id, fire_key, trigger_type, scheduled_at, due_at, status, node_id, idempotency_key,
			created_at, updated_at)
		SELECT 1 + g % 5000, 'k' || g, 'SCHEDULE', g, g, 'SCHEDULED', '', 'k', g, g
		FROM generate_series(200001, 201000) AS g;
		INSERT INTO runs (task_id, fire_key, trigger_type, scheduled_at, due_at, status, node_id, idempotency_key,
			created_at, updated_at)
		SELECT 1 + g % 5000, 'k' || g, 'SCHEDULE', g, g + 100000, 'WAITING_CALLBACK', 'node-0', 'k', g, g
		FROM generate_series(201001, 201100) AS g;
		INSERT INTO nodes (id, state, started_at, heartbeat_at)
		VALUES ('node-0', 'ALIVE', 0, 0), ('node-1', 'DEAD', 0, 0), ('node-2', 'LEFT', 0, 0);
		INSERT INTO run_attempts (run_id, delivery, node_id, status, started_at, finished_at)
		SELECT id, d, node_id, CASE d WHEN 1 THEN 'INTERRUPTED' ELSE status END, scheduled_at, scheduled_at
		FROM runs, generate_series(1, 2) AS d WHERE status = 'SUCCESS';
		ANALYZE tasks, runs, nodes, run_attempts`)
	if err != nil {
		t.Fatalf("fill tables: %v", err)
	}
	const n = 1000 // a batch
	var (
		ids, fences, times []int64
		ints               []int32
		texts, finals      []string
		nulls              []*int64
		bodies             [][]byte
		trues              []bool
		ends               []*string
	)
	for i := range int64(n) {
		ids, fences, times = append(ids, 1+i*10), append(fences, 1), append(times, i)
		ints, texts, finals = append(ints, 1), append(texts, ""), append(finals, "SUCCESS")
		nulls, bodies = append(nulls, nil), append(bodies, nil)
		completed := "COMPLETED"
		trues, ends = append(trues, true), append(ends, &completed)
	}
	// A rule's runs written back.
	writeBack := make([]*sundial.Run, n)
	for i := range writeBack {
		writeBack[i] = &sundial.Run{ID: ids[i], Status: sundial.RunScheduled}
	}
	// RunFinish's arrays of retries, due times and task ends, NULL when a
	// batch sets none.
	var (
		noRetry []bool
		noDue   []*int64
		noEnd   []*string
	)
	byName, byNameArgs := queries.TaskList(sundial.TaskListParams{Name: "t7"})
	byRequest, byRequestArgs := queries.TaskList(sundial.TaskListParams{RequestID: "r"})
	// RunList as GET /runs asks for it: fires planned ahead of now left
	// out, a page of 51, from the newest or after a cursor.
	now, mark := time.UnixMicro(150_000), time.UnixMicro(120_000)
	runList, runListArgs := queries.RunList(sundial.RunListParams{ExcludePlannedAfter: now, Limit: 51})
	runPage, runPageArgs := queries.RunList(sundial.RunListParams{ExcludePlannedAfter: now, BeforeTime: mark, BeforeID: 120_000,
		Limit: 51})
	taskRuns, taskRunsArgs := queries.RunList(sundial.RunListParams{TaskID: 10, ExcludePlannedAfter: now, Limit: 51})
	taskRunsPage, taskRunsPageArgs := queries.RunList(sundial.RunListParams{TaskID: 10, ExcludePlannedAfter: now,
		BeforeTime: mark, BeforeID: 120_000, Limit: 51})
	// The filters of a client's lists: a task's runs by statuses, trigger
	// and finished time; runs by the labels of their task. (Tasks by a
	// selector are read whole, as no index holds labels: an index on
	// tasks would be written by every advance of the planner, whose
	// update of next_fire_at is never HOT.)
	sel, err := label.Parse("team=payments,env!=prod")
	if err != nil {
		t.Fatal(err)
	}
	taskRunsFiltered, taskRunsFilteredArgs := queries.RunList(sundial.RunListParams{TaskID: 10, ExcludePlannedAfter: now,
		Status:  []sundial.RunStatus{sundial.RunFailed, sundial.RunTimeout, sundial.RunSuccess},
		Trigger: []sundial.Trigger{sundial.TriggerManual, sundial.TriggerSchedule}, FinishedFrom: mark, Limit: 51})
	runsBySelector, runsBySelectorArgs := queries.RunList(sundial.RunListParams{Selector: sel, ExcludePlannedAfter: now, Limit: 51})
	deadLetters, deadLettersArgs := queries.RunList(sundial.RunListParams{Status: sundial.DeadLetterStatuses(),
		ExcludePlannedAfter: now, Limit: 51})
	// The statements whose index reads the rows in their order, stopping
	// at the limit, with nothing sorted.
	inOrder := map[string]bool{"PlanDue": true, "PlanDue burst": true,
		"RunClaimDue idle": true, "RunClaimDue burst": true, "RunClaimDue": true,
		"RunList": true, "RunList page": true, "TaskStates last run": true, "TaskStateSave last success": true}
	for _, tc := range []struct {
		name  string
		sql   string
		args  []any
		use   string // an index the plan must use
		avoid string // an index it must not use, if not empty
	}{
		// The due tasks in the index's order (next_fire_at, id), the
		// burst's included: nothing sorted.
		{"PlanDue", planDueSQL, []any{100_000_000, 1000}, "tasks_due", ""},
		{"PlanDue burst", planDueSQL, []any{50_000_000, 500}, "tasks_due", ""},
		{"admit lock", admitLockSQL, []any{10}, "tasks_pkey", ""},
		{"admit pending", admitPendingSQL, []any{10}, "runs_task_status", "runs_status_node"},
		{"admit last effective", admitLastSQL, []any{10}, "runs_task_status", "runs_status_node"},
		{"admit skips", admitSkipsSQL, []any{10, 10}, "runs_task_status", "runs_status_node"},
		{"admit cancel lock", runsLockSQL, []any{ids[:3]}, "runs_pkey", "runs_status_node"},
		// A batch's runs by primary key, never through the status index.
		{"RunStart", runStartSQL, []any{ids, fences, ints, times, texts}, "runs_pkey", "runs_status_node"},
		{"RunFinish", runFinishSQL, []any{ids, fences, finals, nulls, nulls, ints, bodies, texts, times,
			noRetry, noDue, noEnd}, "runs_pkey", "runs_status_node"},
		{"RunFinish retry", runFinishSQL, []any{ids, fences, finals, nulls, nulls, ints, bodies, texts, times,
			trues, times, noEnd}, "runs_pkey", "runs_status_node"},
		{"RunFinish complete", runFinishCompleteSQL, []any{ids, fences, finals, nulls, nulls, ints, bodies,
			texts, times, noRetry, noDue, ends}, "runs_pkey", "runs_status_node"},
		{"RunPurge", runPurgeSQL, []any{40_000, 500}, "runs_created", ""},
		{"take back", taskRunsSQL, []any{10}, "runs_task_status", "runs_status_node"},
		{"release lock", releaseLockSQL, []any{[]string{"node-1"}}, "tasks_pkey", ""},
		{"release runs", releaseRunsSQL, []any{[]string{"node-1"}}, "runs_status_node", ""},
		// A rule's changes, by primary key.
		{"write back runs", runsWriteSQL, runsWriteArgs(writeBack), "runs_pkey", "runs_status_node"},
		{"delete runs", runsDeleteSQL, []any{ids}, "runs_pkey", "runs_status_node"},
		{"rewind tasks", tasksRewindSQL, []any{ids[:10], times[:10]}, "tasks_pkey", ""},
		{"unplan after rewind", runsUnplanAfterSQL, []any{ids[:10], times[:10]}, "runs_task_status", "runs_status_node"},
		// A run's attempts: its rows, and its own from its row.
		{"RunAttempts", queries.RunAttempts, []any{40, 40}, "run_attempts_run", ""},
		{"RunAttempts own", queries.RunAttempts, []any{40, 40}, "runs_pkey", ""},
		{"RunComplete latest attempt", runCompleteLatestSQL, []any{40, "SUCCESS", "", 1}, "run_attempts_run", ""},
		{"RunProgress", runCompleteReadSQL, []any{40}, "runs_pkey", ""},
		// Claims. An idle claim (nothing due), a claim in a burst (5,000
		// runs due at one instant) and a claim of 1,000 runs read the runs
		// no node holds only, in the index's order (due_at, priority DESC,
		// id): nothing sorted.
		{"RunClaimDue idle", claimDueSQL, []any{"node-0", 150_000, 1000, 1, 0, 0}, "runs_unclaimed", "runs_status_node"},
		{"RunClaimDue burst", claimDueSQL, []any{"node-0", 199_000, 250, 1, 0, 0}, "runs_unclaimed", "runs_status_node"},
		{"RunClaimDue", claimDueSQL, []any{"node-0", 300_000, 1000, 1, 0, 0}, "runs_unclaimed", "runs_status_node"},
		{"claim lock", runTasksLockSQL, []any{ids}, "tasks_pkey", ""},
		{"RunClaim", runsLockSQL, []any{ids}, "runs_pkey", "runs_status_node"},
		{"task end lock", taskEndLockSQL, []any{ids}, "tasks_pkey", ""},
		{"redeliver pick", redeliverPickSQL, []any{100}, "runs_status_node", ""},
		// INTERRUPTED runs are few, and all of them are being redelivered:
		// through the status index or the primary key.
		{"redeliver", redeliverLockSQL, []any{ids}, "runs_", ""},
		{"redeliver tasks", redeliverTasksSQL, []any{ids}, "tasks_pkey", ""},
		{"RunFindStuck", queries.RunFindStuck, []any{40_000, "node-0", 100}, "runs_status_node", ""},
		// What a node holds, or is asked to cancel, or runs long; and the
		// planned fires missed that a node holds: through the status index.
		{"RunsOwned", queries.RunsOwned, []any{"node-1"}, "runs_status_node", ""},
		{"RunCancelRequested", queries.RunCancelRequested, []any{"node-1"}, "runs_status_node", ""},
		{"RunLongRunning", queries.RunLongRunning, []any{40_000, 100}, "runs_status_node", ""},
		{"missed pick", missedPickSQL, []any{150_000, 100}, "runs_status_node", ""},
		// The callback sweep reads the waiting runs only, idle or not.
		{"RunCallbackExpired idle", callbackExpiredSQL, []any{300_000, 100}, "runs_waiting", "runs_status_node"},
		{"RunCallbackExpired", callbackExpiredSQL, []any{400_000, 100}, "runs_waiting", "runs_status_node"},
		{"RunUpcoming", queries.RunUpcoming, []any{10, 50}, "runs_task_status", "runs_status_node"},
		// A client's lists, by the index of their filter.
		{"TaskList by name", byName, byNameArgs, "tasks_name_live", ""},
		{"TaskList by request_id", byRequest, byRequestArgs, "tasks_request_live", ""},
		// Runs newest first by scheduled time, read backwards from an index
		// in that order: nothing sorted. (A task's runs too, once it has
		// more than a few pages of them; here each task has some 30, which
		// the planner rightly fetches and sorts.)
		{"RunList", runList, runListArgs, "runs_scheduled", ""},
		{"RunList page", runPage, runPageArgs, "runs_scheduled", ""},
		{"RunList of a task", taskRuns, taskRunsArgs, "runs_task_scheduled", ""},
		{"RunList page of a task", taskRunsPage, taskRunsPageArgs, "runs_task_scheduled", ""},
		{"RunList of a task, filtered", taskRunsFiltered, taskRunsFilteredArgs, "runs_task_", ""},
		// The dead letters of every task, their statuses given as
		// parameters: rare among the runs, read through an index.
		{"RunList of dead letters", deadLetters, deadLettersArgs, "runs_", ""},
		// Each task's latest run that ended, read backwards from now in
		// its range of runs_task_scheduled (the fires planned ahead are
		// past its start), stopping at the first: a page of 1,000 tasks.
		{"TaskStates last run", taskLastRunSQL, []any{ids, 150_000}, "runs_task_scheduled", "runs_task_status"},
		{"TaskStateSave first", taskStateFirstSQL, []any{ids, nulls, nulls, ints, nulls, texts, times}, "tasks_pkey", ""},
		{"TaskStateSave last success", lastSuccessSQL, []any{ids}, "runs_task_status", ""},
	} {
		// The sixth execution of a prepared statement may switch to a
		// generic plan: look at both.
		for i := range 7 {
			lines := explain(t, s, planSettings(tc.sql), "EXPLAIN "+tc.sql, tc.args...)
			if i != 0 && i != 6 {
				continue
			}
			plan := strings.Join(lines, "\n")
			if strings.Contains(plan, "Seq Scan on tasks") || strings.Contains(plan, "Seq Scan on runs") ||
				!strings.Contains(plan, tc.use) || (tc.avoid != "" && strings.Contains(plan, tc.avoid)) {
				t.Errorf("%s: want %s without a sequential scan or %q:\n%s", tc.name, tc.use, tc.avoid, plan)
			}
			if inOrder[tc.name] && !inIndexOrder(plan, tc.use) {
				t.Errorf("%s: want a limited scan of %s in its order, and no sort:\n%s", tc.name, tc.use, plan)
			}
		}
	}
	// Runs by the labels of their task: the tasks are read whole (no index
	// holds labels), the runs through an index, never a scan of runs.
	if plan := strings.Join(explain(t, s, planSettings(runsBySelector), "EXPLAIN "+runsBySelector, runsBySelectorArgs...), "\n"); strings.Contains(plan, "Seq Scan on runs") || !strings.Contains(plan, "using runs_") {
		t.Errorf("RunList by selector: want the runs through an index:\n%s", plan)
	}
	// RunClaimDue is not planned for its arguments: its generic plan, made
	// without knowing how many runs are due, must use runs_unclaimed too.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, indexOrderPlans); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `PREPARE claim_due (text, bigint, bigint, bigint, bigint, bigint) AS `+claimDueSQL); err != nil {
		t.Fatal(err)
	}
	for _, until := range []int{150_000, 300_000} {
		rows, err := tx.Query(ctx, fmt.Sprintf(`EXPLAIN EXECUTE claim_due ('node-0', %d, 1000, 1, 0, 0)`, until))
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if strings.Contains(plan, "Seq Scan on tasks") || strings.Contains(plan, "Seq Scan on runs") ||
			!strings.Contains(plan, "runs_unclaimed") || strings.Contains(plan, "runs_status_node") ||
			!inIndexOrder(plan, "runs_unclaimed") {
			t.Errorf("RunClaimDue's generic plan: want runs_unclaimed in its order without a sequential scan or a sort:\n%s", plan)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// Run, the claim in the burst and the plan of the burst's tasks read
	// their limit of index entries: the scan stops there, however many
	// rows are due. (The claim's changes are rolled back.)
	for _, tc := range []struct {
		name, sql, index string
		args             []any
		limit            int
	}{
		{"RunClaimDue burst", claimDueSQL, "runs_unclaimed", []any{"node-0", 199_000, 250, 1, 0, 0}, 250},
		{"PlanDue burst", planDueSQL, "tasks_due", []any{50_000_000, 500}, 500},
	} {
		lines := explain(t, s, planSettings(tc.sql), "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+tc.sql, tc.args...)
		plan := strings.Join(lines, "\n")
		read := -1
		for _, l := range lines {
			if strings.Contains(l, "Index Scan using "+tc.index) {
				if _, after, ok := strings.Cut(l, "(actual rows="); ok {
					read, _ = strconv.Atoi(strings.TrimRight(strings.Fields(after)[0], ")"))
				}
			}
		}
		if read != tc.limit || !inIndexOrder(plan, tc.index) {
			t.Errorf("%s: the scan of %s read %d rows, want %d and no sort:\n%s", tc.name, tc.index, read, tc.limit, plan)
		}
	}
}

// TestPlansStaleStatistics plans a burst of tasks created, and claims a
// burst of runs planned, since the tables were last analyzed, as happens
// until autovacuum comes by: the statistics show nothing due, and PlanDue
// and RunClaimDue must still read their index in its order and stop at
// their limit, not sort every due row (nor compile the statement: no JIT).
func TestPlansStaleStatistics(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t))
	ctx := t.Context()
	for _, q := range []string{
		`ALTER TABLE runs SET (autovacuum_enabled = false)`,
		`ALTER TABLE tasks SET (autovacuum_enabled = false)`,
		`ANALYZE tasks`,
		`INSERT INTO tasks (name, cron_expr, timezone, exec_type, http_method, target_url, timeout_seconds,
			concurrency_policy, max_queue, overlap_action, failure_action, catch_up_mode, catch_up_limit,
			callback_method, status, version, created_at, updated_at)
		SELECT 't' || g, '', 'UTC', 'SYNC', 'POST', 'https://example.com', 0, 'QUEUE', 100,
			'ALLOW', 'RUN_NEW', 'NONE', 100, 'POST', 'ENABLED', 1, 0, 0
		FROM generate_series(1, 1000) AS g`,
		`INSERT INTO runs (task_id, fire_key, trigger_type, scheduled_at, due_at, status, node_id, idempotency_key,
			created_at, updated_at)
		SELECT 1 + g % 1000, 'k' || g, 'SCHEDULE', g, g, 'SUCCESS', 'node-0', 'k', g, g
		FROM generate_series(1, 2000) AS g`,
		`ANALYZE runs`,
		// The bursts: 30,000 tasks due at one instant (none was due), and
		// 50,000 runs due at one instant, no node holding them (none was).
		`INSERT INTO tasks (name, cron_expr, timezone, exec_type, http_method, target_url, timeout_seconds,
			concurrency_policy, max_queue, overlap_action, failure_action, catch_up_mode, catch_up_limit,
			callback_method, status, version, created_at, updated_at, next_fire_at, run_at)
		SELECT 'b' || g, '', 'UTC', 'SYNC', 'POST', 'https://example.com', 0, 'QUEUE', 100,
			'ALLOW', 'RUN_NEW', 'NONE', 100, 'POST', 'ENABLED', 1, 0, 0, 100000, 100000
		FROM generate_series(1, 30000) AS g`,
		`INSERT INTO runs (task_id, fire_key, trigger_type, scheduled_at, due_at, status, node_id, idempotency_key,
			created_at, updated_at, priority)
		SELECT 1 + g % 1000, 'b' || g, 'SCHEDULE', 100000, 100000, 'SCHEDULED', '', 'k', g, g, g % 3
		FROM generate_series(1, 50000) AS g`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	for _, tc := range []struct {
		name, sql, index string
		args             []any
		limit            int
	}{
		{"PlanDue", planDueSQL, "tasks_due", []any{100_000, 500}, 500},
		{"RunClaimDue", claimDueSQL, "runs_unclaimed", []any{"node-0", 100_000, 250, 1, 0, 0}, 250},
	} {
		t.Logf("%s's plan without indexOrderPlans:\n%s", tc.name,
			strings.Join(explain(t, s, nil, "EXPLAIN "+tc.sql, tc.args...), "\n"))
		plan := strings.Join(explain(t, s, planSettings(tc.sql), "EXPLAIN (ANALYZE, TIMING OFF) "+tc.sql, tc.args...), "\n")
		if !inIndexOrder(plan, tc.index) || strings.Contains(plan, "JIT") ||
			!strings.Contains(plan, fmt.Sprintf("(actual rows=%d loops=1)", tc.limit)) {
			t.Errorf("%s with stale statistics: want %s read in its order, %d rows, no JIT:\n%s", tc.name, tc.index, tc.limit, plan)
		}
	}
	// RunStart finds a batch of the burst's runs by primary key, not
	// through the status index that the statistics think selective.
	var ids, fences, times []int64
	var attempts []int32
	var traces []string
	for i := range int64(250) {
		ids, fences, times = append(ids, 3001+i), append(fences, 1), append(times, 1)
		attempts, traces = append(attempts, 1), append(traces, "")
	}
	start := strings.Join(explain(t, s, []string{customPlans}, "EXPLAIN (ANALYZE, TIMING OFF) "+runStartSQL,
		ids, fences, attempts, times, traces), "\n")
	if strings.Contains(start, "runs_status_node") || !strings.Contains(start, "runs_pkey") ||
		!strings.Contains(start, "(actual rows=250 loops=1)") || strings.Contains(start, "loops=250") {
		t.Errorf("RunStart with stale statistics: want the runs by runs_pkey only:\n%s", start)
	}
	runs, _, err := s.RunClaimDue(ctx, "node-0", time.UnixMicro(100_000), 250, sundial.ClaimStartParams{})
	if err != nil || len(runs) != 250 {
		t.Fatalf("RunClaimDue: %d runs, %v", len(runs), err)
	}
	for i, r := range runs {
		if r.Priority != 2 || (i > 0 && r.ID <= runs[i-1].ID) {
			t.Fatalf("claim %d: run %d of priority %d after %d; want the burst's priority 2 runs by ID", i, r.ID, r.Priority, runs[max(i-1, 0)].ID)
		}
	}
}

// planSettings returns the statements that the adapter sends before sql
// in its transaction to set how it is planned.
func planSettings(sql string) []string {
	switch sql {
	case claimDueSQL:
		return []string{indexOrderPlans}
	case planDueSQL:
		return []string{customPlans, indexOrderPlans}
	}
	return nil
}

// explain runs the EXPLAIN statement q in a transaction, after the
// statements pre, rolls back, and returns its lines.
func explain(t *testing.T, s *Store, pre []string, q string, args ...any) []string {
	t.Helper()
	ctx := t.Context()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	for _, p := range pre {
		if _, err := tx.Exec(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	return lines
}

// inIndexOrder reports whether plan (EXPLAIN's text) reads index by an
// index scan (forwards or backwards) right under a Limit, with nothing
// between them but the lock of the rows: the scan yields the rows in the
// statement's order, sorts nothing, and stops at the limit. (What the
// statement then does with the rows it got may sort them.)
func inIndexOrder(plan, index string) bool {
	lines := strings.Split(plan, "\n")
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	for i, l := range lines {
		if !strings.Contains(l, "Index Scan using "+index+" ") && !strings.Contains(l, "Index Scan Backward using "+index+" ") {
			continue
		}
		depth := indent(l)
		for _, up := range slices.Backward(lines[:i]) {
			if indent(up) >= depth || (indent(up) > 0 && !strings.HasPrefix(strings.TrimSpace(up), "->")) {
				continue
			}
			depth = indent(up)
			switch node := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(up), "->")); {
			case strings.HasPrefix(node, "Limit"):
				return true
			case !strings.HasPrefix(node, "LockRows"):
				return false
			}
		}
	}
	return false
}

// TestCustomPlans: the batch statements, prepared once per connection, are
// planned for each batch's arguments, never with a generic plan.
func TestCustomPlans(t *testing.T) {
	t.Parallel()
	dsn := newSchema(t)
	s, err := Open(t.Context(), dsn, Options{MaxConns: 1}) // one session to look at
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := storetest.CreateTask(ctx, s, newTask(t, "a", time.Unix(0, 0)), time.Now()); err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	for i := range 8 { // a generic plan may be chosen from the sixth execution
		runs, err := s.PlanDue(ctx, time.Unix(100, 0), 10, "n", time.Now(), func(tk *sundial.Task) sundial.Plan {
			at := *tk.NextFireTime
			next := at.Add(time.Second)
			return sundial.Plan{Runs: []*sundial.Run{{FireKey: sundial.ScheduledFireKey(at), ScheduledTime: at}}, Next: &next}
		})
		if err != nil || len(runs) != 1 {
			t.Fatalf("PlanDue %d: %d runs, %v", i, len(runs), err)
		}
		r := runs[0]
		if ok, err := s.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: at0(i)}}); err != nil || !ok[0] {
			t.Fatalf("RunStart: %v %v", ok, err)
		}
		if ok, err := s.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess,
			FinishedAt: at0(i)}}); err != nil || !ok[0] {
			t.Fatalf("RunFinish: %v %v", ok, err)
		}
	}
	// The setting ends with each transaction.
	var mode string
	if err := s.pool.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode); err != nil || mode != "auto" {
		t.Fatalf("plan_cache_mode after the batches = %q, %v; want auto", mode, err)
	}
	for _, sql := range []string{planDueSQL, planNextSQL, runStartSQL, runFinishSQL} {
		var custom, generic int64
		if err := s.pool.QueryRow(ctx, `SELECT custom_plans, generic_plans FROM pg_prepared_statements
			WHERE statement = $1`, sql).Scan(&custom, &generic); err != nil {
			t.Fatalf("pg_prepared_statements: %v\n%s", err, sql)
		}
		if generic != 0 || custom < 8 {
			t.Fatalf("%d custom and %d generic plans, want only custom ones, for\n%s", custom, generic, sql)
		}
	}
}

func at0(sec int) time.Time { return time.Unix(int64(sec), 0) }

// BenchmarkTaskStates reads the states of 1,000 tasks per operation
// (storetest.BenchTaskStates).
func BenchmarkTaskStates(b *testing.B) {
	storetest.BenchTaskStates(b, open(b, newSchema(b)))
}

// BenchmarkTaskStateSave saves the states of 1,000 tasks per operation,
// their first ones and later ones (storetest.BenchTaskStateSave).
func BenchmarkTaskStateSave(b *testing.B) {
	storetest.BenchTaskStateSave(b, open(b, newSchema(b)))
}

// BenchmarkPlanDue plans 1,000 due tasks, one run each, per operation.
func BenchmarkPlanDue(b *testing.B) {
	storetest.BenchPlanDue(b, open(b, newSchema(b)))
}

// BenchmarkRunFinish records 1,000 outcomes in one batch per operation.
func BenchmarkRunFinish(b *testing.B) {
	ctx := context.Background()
	s := open(b, newSchema(b))
	tk := newTask(b, "t", time.Now())
	if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
		b.Fatal(err)
	}
	const n = 1000
	batch := 0
	// setup plans and starts n runs, outside the timer.
	setup := func() []sundial.RunFinishParams {
		b.StopTimer()
		defer b.StartTimer()
		_, err := s.pool.Exec(ctx, `UPDATE tasks SET next_fire_at = 0 WHERE id = $1`, tk.ID)
		if err != nil {
			b.Fatal(err)
		}
		runs, err := s.PlanDue(ctx, time.Unix(1, 0), 1, "node", time.Now(), func(t *sundial.Task) sundial.Plan {
			var p sundial.Plan
			for i := range n {
				p.Runs = append(p.Runs, &sundial.Run{FireKey: fmt.Sprintf("b%d:%d", batch, i), ScheduledTime: time.Now()})
			}
			return p
		})
		if err != nil || len(runs) != n {
			b.Fatalf("PlanDue: %d runs, %v", len(runs), err)
		}
		starts := make([]sundial.RunStartParams, n)
		fins := make([]sundial.RunFinishParams, n)
		for i, r := range runs {
			starts[i] = sundial.RunStartParams{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: time.Now()}
			fins[i] = sundial.RunFinishParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess, StartedAt: time.Now(),
				FinishedAt: time.Now(), HTTPStatus: 200, ResponseBody: `{"ok":true}`}
		}
		if ok, err := s.RunStart(ctx, starts); err != nil || !ok[n-1] {
			b.Fatalf("RunStart: %v", err)
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

// BenchmarkRunClaimDue claims 1,000 due runs no node holds, of 10 tasks,
// per operation ("1000"), and claims when nothing is due ("idle").
func BenchmarkRunClaimDue(b *testing.B) {
	ctx := context.Background()
	s := open(b, newSchema(b))
	tasks := claimTasks(b, s, 10)
	t0 := time.Unix(1_000_000, 0)
	until := t0.Add(time.Hour)
	batch := 0
	b.Run("1000", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			planUnowned(b, s, tasks, 100, batch, t0)
			batch++
			b.StartTimer()
			runs, ts, err := s.RunClaimDue(ctx, "node", until, 1000, sundial.ClaimStartParams{})
			if err != nil || len(runs) != 1000 || len(ts) != len(tasks) {
				b.Fatalf("RunClaimDue: %d runs, %d tasks, %v", len(runs), len(ts), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/run")
	})
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			runs, _, err := s.RunClaimDue(ctx, "node", until, 1000, sundial.ClaimStartParams{})
			if err != nil || len(runs) != 0 {
				b.Fatalf("RunClaimDue: %d runs, %v", len(runs), err)
			}
		}
	})
}

// BenchmarkBurst claims, starts and finishes 2,000 one-off fires per
// operation (storetest.BenchBurst).
func BenchmarkBurst(b *testing.B) {
	storetest.BenchBurst(b, open(b, newSchema(b)))
}

// TestAttemptsFollowRuns: deleting runs deletes their attempts (migration
// 0007's trigger, in place of the foreign key's cascade), whichever
// statement deletes them, and only theirs.
func TestAttemptsFollowRuns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, newSchema(t))
	tk := newTask(t, "t", time.Now())
	if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Three runs, each delivered twice: a retry, then a success. Three
	// attempt rows (the success is each run's own).
	var ids []int64
	for i := range 3 {
		r := &sundial.Run{TaskID: tk.ID, FireKey: fmt.Sprintf("f%d", i), ScheduledTime: time.Now()}
		if err := s.RunInsert(ctx, r); err != nil {
			t.Fatal(err)
		}
		for _, retry := range []bool{true, false} {
			if ok, err := s.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: time.Now()}}); err != nil || !ok[0] {
				t.Fatalf("RunStart: %v, %v", ok, err)
			}
			status := sundial.RunSuccess
			if retry {
				status = sundial.RunFailed
			}
			if ok, err := s.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: status,
				StartedAt: time.Now(), FinishedAt: time.Now(), HTTPStatus: 204, Retry: retry}}); err != nil || !ok[0] {
				t.Fatalf("RunFinish: %v, %v", ok, err)
			}
		}
		if as, err := s.RunAttempts(ctx, r.ID); err != nil || len(as) != 2 {
			t.Fatalf("RunAttempts = %v, %v; want 2", as, err)
		}
		ids = append(ids, r.ID)
	}
	attempts := func() (n int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM run_attempts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := attempts(); n != 3 {
		t.Fatalf("%d attempts recorded, want 3", n)
	}
	// One run deleted by hand, two by RunPurge.
	if _, err := s.pool.Exec(ctx, `DELETE FROM runs WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if n := attempts(); n != 2 {
		t.Fatalf("%d attempts after deleting one run, want 2", n)
	}
	if n, err := s.RunPurge(ctx, time.Now().Add(time.Hour), 100); err != nil || n != 2 {
		t.Fatalf("RunPurge = %d, %v; want 2", n, err)
	}
	if n := attempts(); n != 0 {
		t.Fatalf("%d attempts after purging their runs, want 0", n)
	}
}

// TestUnavailable: once the server cannot be reached (the connections a
// store holds reset, new ones refused), every method answers
// EUnavailable; errors that are the caller's stay what they are.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(newSchema(t))
	if err != nil || u.Host == "" {
		t.Fatalf("%s must be a postgres:// URL for this test", envDSN)
	}
	proxy := storetest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	storetest.RunUnavailable(t, open(t, u.String()), proxy.Cut)
}

// TestUnavailableClosed: a closed store answers EUnavailable.
func TestUnavailableClosed(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), newSchema(t), Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	storetest.RunUnavailable(t, s, func() { _ = s.Close() })
}

// TestUnavailableErrors: which of pgx's errors mean the server cannot be
// used now; the others, real faults among them, are not hidden as such.
func TestUnavailableErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", &pgconn.ConnectError{}, true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, true},
		{"starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"disk full", &pgconn.PgError{Code: "53100"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"read-only standby", &pgconn.PgError{Code: "25006"}, true},
		{"I/O error", &pgconn.PgError{Code: "58030"}, true},
		{"wrapped", fmt.Errorf("list tasks: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"cut short", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"undefined column", &pgconn.PgError{Code: "42703"}, false},
		{"query canceled", &pgconn.PgError{Code: "57014"}, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"context canceled", context.Canceled, false},
		{"no rows", pgx.ErrNoRows, false},
		{"anything else", errors.New("boom"), false},
	} {
		if got := unavailable(c.err); got != c.want {
			t.Errorf("%s: unavailable = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAttemptOnRunFinal: only a run that a delivery's outcome ended for
// good (a final status RunFinish reaches from RUNNING) keeps its attempt
// on its row (migration 0013's CHECK), whatever statement writes it.
func TestAttemptOnRunFinal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, newSchema(t))
	tk := newTask(t, "t", time.Now())
	if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
		t.Fatal(err)
	}
	r := &sundial.Run{TaskID: tk.ID, FireKey: "f", ScheduledTime: time.Now()}
	if err := s.RunInsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, st := range sundial.RunStatuses() {
		ok := st.Final() && slices.Contains(sundial.FinishFrom(st), sundial.RunRunning)
		_, err := s.pool.Exec(ctx, `UPDATE runs SET status = $1, attempt_on_run = true WHERE id = $2`, string(st), r.ID)
		if (err == nil) != ok {
			t.Errorf("a %s run with attempt_on_run: %v; want it refused: %v", st, err, !ok)
		}
		if _, err := s.pool.Exec(ctx, `UPDATE runs SET status = 'SCHEDULED', attempt_on_run = false WHERE id = $1`, r.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPoolBounds: MaxConns caps the connections open at once and
// MaxIdleConns those kept once they are released.
func TestPoolBounds(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), newSchema(t), Options{MaxConns: 3, MaxIdleConns: 1, ConnMaxLifetime: time.Hour, ConnMaxIdleTime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c := s.pool.Config(); c.MaxConns != 3 || c.MaxConnLifetime != time.Hour || c.MaxConnIdleTime != time.Minute {
		t.Fatalf("pool config: max %d, lifetime %s, idle time %s", c.MaxConns, c.MaxConnLifetime, c.MaxConnIdleTime)
	}
	ctx := t.Context()
	var held []*pgxpool.Conn
	for range 3 {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if c, err := s.pool.Acquire(short); err == nil {
		c.Release()
		t.Fatal("a fourth connection was acquired past MaxConns 3")
	}
	// The release hook runs apart from Release: one release at a time.
	for i, c := range held {
		c.Release()
		deadline := time.Now().Add(10 * time.Second)
		for s.pool.Stat().AcquiredConns() != int32(len(held)-1-i) {
			if time.Now().After(deadline) {
				t.Fatalf("release %d did not end", i+1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if st := s.pool.Stat(); st.TotalConns() != 1 || st.IdleConns() != 1 {
		t.Fatalf("after the releases: %d connections, %d idle; want 1 kept", st.TotalConns(), st.IdleConns())
	}
}

// envPgBouncer names the variable that points the tests at PgBouncer in
// transaction pooling mode in front of the server of SUNDIAL_TEST_POSTGRES,
// for example postgres://postgres@127.0.0.1:6432/test?sslmode=disable
// (.ci/pgbouncer.ini), passing every database name through to it.
const envPgBouncer = "SUNDIAL_TEST_PGBOUNCER"

// pgBouncerSchema makes a role and a schema of its own, both dropped at
// the end of t, and returns the DSN that reaches the schema through
// PgBouncer as that role, without prepared statements (which PgBouncer
// before 1.21 does not carry from one transaction to the next). PgBouncer
// refuses the search_path startup parameter: the role's default
// search_path names the schema instead.
func pgBouncerSchema(t testing.TB) string {
	t.Helper()
	bouncer := os.Getenv(envPgBouncer)
	if bouncer == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: CI must run the PostgreSQL tests through PgBouncer", envPgBouncer)
		}
		t.Skipf("set %s=postgres://...:6432/... to run the PostgreSQL tests through PgBouncer", envPgBouncer)
	}
	dsn := serverDSN(t)
	admin := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "sundial_pgb_" + hex.EncodeToString(b[:])
	ident := pgx.Identifier{name}.Sanitize()
	if err := admin(t.Context(), `CREATE ROLE `+ident+` LOGIN; CREATE SCHEMA `+ident+` AUTHORIZATION `+ident+
		`; ALTER ROLE `+ident+` SET search_path = `+ident); err != nil {
		t.Fatalf("create role and schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin(ctx, `DROP SCHEMA `+ident+` CASCADE; DROP ROLE `+ident); err != nil {
			t.Errorf("drop schema and role %s: %v", name, err)
		}
	})
	u, err := url.Parse(bouncer)
	if err != nil {
		t.Fatalf("%s is not a URL", envPgBouncer)
	}
	u.User = url.User(name)
	q := u.Query()
	q.Set("default_query_exec_mode", "cache_describe")
	u.RawQuery = q.Encode()
	return u.String()
}

// TestStorePgBouncer runs the conformance suite through PgBouncer in
// transaction pooling mode: nothing the store does needs a session of its
// own (prepared statements, session settings or locks).
func TestStorePgBouncer(t *testing.T) {
	t.Parallel()
	// PgBouncer answers.
	conn, err := pgx.Connect(t.Context(), pgBouncerSchema(t))
	if err != nil {
		t.Fatalf("connect through PgBouncer (%s): %v", envPgBouncer, err)
	}
	defer conn.Close(context.Background())
	storetest.Run(t, storetest.Backend{Open: func(t *testing.T, nodes int) []sundial.Store {
		t.Helper()
		dsn := pgBouncerSchema(t)
		var stores []sundial.Store
		for range nodes {
			stores = append(stores, open(t, dsn))
		}
		return stores
	}, LockRuns: holdRuns, AttemptRows: attemptRows, Exec: exec})
}

// TestPooledStatementsHint: an error of pgx's prepared statements behind a
// transaction pooler says what to set; other errors are left as they are.
func TestPooledStatementsHint(t *testing.T) {
	t.Parallel()
	for code, hint := range map[string]bool{"42P05": true, "26000": true, "23505": false} {
		err := pooledStatements(fmt.Errorf("migrate: %w", &pgconn.PgError{Code: code, Message: "m"}))
		if got := strings.Contains(err.Error(), "default_query_exec_mode=cache_describe"); got != hint || pgCode(err) != code {
			t.Errorf("%s: %v; want the hint %v and the code kept", code, err, hint)
		}
	}
}

// TestTaskStateSaveWaitsForFirst: a save of a task whose first state
// another node is writing meanwhile (its transaction made the row and is
// open) waits for it, then merges its change into the row the other
// committed, or, when the other rolled back, writes its own first state.
func TestTaskStateSaveWaitsForFirst(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			app := "sundial-test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			s := open(t, withParam(t, newSchema(t), "application_name", app))
			x, y := newTask(t, "x", at0(0)), newTask(t, "y", at0(0))
			for _, tk := range []*sundial.Task{x, y} {
				if err := storetest.CreateTask(ctx, s, tk, at0(0)); err != nil {
					t.Fatal(err)
				}
			}
			failure := func(id int64, sec int) *sundial.TaskState {
				st := &sundial.TaskState{TaskID: id}
				st.Record(sundial.RunFailed, at0(sec))
				return st
			}

			// The other node's save, x's first state, under way.
			other, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback(context.Background())
			first := sundial.FirstStates([]*sundial.TaskState{failure(x.ID, 10)}, at0(11))
			if _, err := other.Exec(ctx, taskStateFirstSQL, taskStateArgs(first)...); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				done <- s.TaskStateSave(ctx, []*sundial.TaskState{failure(x.ID, 20), failure(y.ID, 20)}, at0(21))
			}()

			// Wait until the server shows the save waiting for the other
			// transaction (asked outside it: a transaction sees the
			// server's activity as it was when it first looked).
			waiting := func() bool {
				var n int
				err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
					WHERE l.locktype = 'transactionid' AND NOT l.granted AND a.application_name = $1`, app).Scan(&n)
				return err == nil && n > 0
			}
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(20 * time.Second)
			for !waiting() {
				select {
				case err := <-done:
					t.Fatalf("TaskStateSave returned while another transaction was making the row: %v", err)
				case <-deadline:
					t.Fatal("TaskStateSave never waited for the other transaction")
				case <-tick.C:
				}
			}
			end := other.Rollback
			if commit {
				end = other.Commit
			}
			if err := end(ctx); err != nil {
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

			saved, _, err := s.TaskStates(ctx, []int64{x.ID, y.ID}, at0(30))
			if err != nil {
				t.Fatal(err)
			}
			want := sundial.TaskState{TaskID: x.ID, LastFailureAt: utcAt(20), ConsecutiveFailures: 1,
				FailingSince: utcAt(20), UpdatedAt: at0(21).UTC()}
			if commit {
				want.ConsecutiveFailures, want.FailingSince = 2, utcAt(10)
			}
			for _, tc := range []struct {
				got, want *sundial.TaskState
			}{
				{saved[x.ID], &want},
				{saved[y.ID], &sundial.TaskState{TaskID: y.ID, LastFailureAt: utcAt(20), ConsecutiveFailures: 1,
					FailingSince: utcAt(20), UpdatedAt: at0(21).UTC()}},
			} {
				if tc.got == nil || !reflect.DeepEqual(*tc.got, *tc.want) {
					t.Errorf("task %d: saved %+v, want %+v", tc.want.TaskID, tc.got, tc.want)
				}
			}
		})
	}
}

// utcAt is at0(sec), in UTC, as a store reads it.
func utcAt(sec int) *time.Time {
	t := at0(sec).UTC()
	return &t
}

// BenchmarkScanRunsTasks decodes 250 runs of one-off tasks with their
// tasks (scanRunsTasks), as a claim of a burst returns them, per
// operation: the rows are read from the database once, then replayed as
// pgx's rows would give them, so that the network and the server are
// not timed.
func BenchmarkScanRunsTasks(b *testing.B) {
	ctx := context.Background()
	s := open(b, newSchema(b))
	const n = 250
	var runIDs []int64
	for i := range n {
		name := fmt.Sprintf("oneoff-%03d", i)
		runAt := time.Now().Add(time.Hour)
		tk := &sundial.Task{Name: name, RunAt: &runAt, TargetURL: "https://example.com/hook", HTTPMethod: "POST",
			RequestID: name}
		if err := tk.Normalize(time.Now()); err != nil {
			b.Fatal(err)
		}
		if err := storetest.CreateTask(ctx, s, tk, time.Now()); err != nil {
			b.Fatal(err)
		}
		runIDs = append(runIDs, planUnowned(b, s, []int64{tk.ID}, 1, 0, time.Unix(1_000_000, 0))[0].ID)
	}
	// Started, as the claim of a burst returns them.
	if _, err := s.pool.Exec(ctx, `UPDATE runs SET status = 'RUNNING', started_at = due_at, deliveries = 1,
		attempt = 1, trace_id = md5(id::text), node_id = 'node' WHERE id = ANY($1)`, runIDs); err != nil {
		b.Fatal(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+qualified("c", sqlrow.RunCols)+`, `+qualified("t", sqlrow.TaskCols)+`
		FROM runs AS c JOIN tasks AS t ON t.id = c.task_id WHERE c.id = ANY($1)`, runIDs)
	if err != nil {
		b.Fatal(err)
	}
	replay := &replayRows{m: pgtype.NewMap(), fields: slices.Clone(rows.FieldDescriptions())}
	for rows.Next() {
		var row [][]byte
		for _, v := range rows.RawValues() {
			row = append(row, slices.Clone(v))
		}
		replay.rows = append(replay.rows, row)
	}
	if rows.Close(); rows.Err() != nil || len(replay.rows) != n {
		b.Fatalf("%d rows, %v", len(replay.rows), rows.Err())
	}
	b.ReportAllocs()
	for b.Loop() {
		replay.next, replay.plans, replay.types = 0, nil, nil
		runs, tasks, err := scanRunsTasks(replay)
		if err != nil || len(runs) != n || len(tasks) != n {
			b.Fatalf("scanRunsTasks: %d runs, %d tasks, %v", len(runs), len(tasks), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}

// replayRows gives rows read before as pgx's rows do: a plan of each
// column's scan made on the first row, made again where the destination's
// type changes.
type replayRows struct {
	pgx.Rows // the methods scanRunsTasks does not call
	m        *pgtype.Map
	fields   []pgconn.FieldDescription
	rows     [][][]byte
	next     int
	plans    []pgtype.ScanPlan
	types    []reflect.Type
}

func (r *replayRows) Next() bool          { r.next++; return r.next <= len(r.rows) }
func (r *replayRows) RawValues() [][]byte { return r.rows[r.next-1] }
func (r *replayRows) Err() error          { return nil }
func (r *replayRows) Close()              {}

func (r *replayRows) Scan(dest ...any) error {
	if r.plans == nil {
		r.plans, r.types = make([]pgtype.ScanPlan, len(dest)), make([]reflect.Type, len(dest))
	}
	for i, d := range dest {
		if d == nil {
			continue
		}
		if r.plans[i] == nil || r.types[i] != reflect.TypeOf(d) {
			r.plans[i], r.types[i] = r.m.PlanScan(r.fields[i].DataTypeOID, r.fields[i].Format, d), reflect.TypeOf(d)
		}
		if err := r.plans[i].Scan(r.rows[r.next-1][i], d); err != nil {
			return fmt.Errorf("column %s: %w", r.fields[i].Name, err)
		}
	}
	return nil
}
