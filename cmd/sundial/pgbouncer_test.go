package main

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// pgBouncerDB makes a role and a schema of its own on the server of
// SUNDIAL_TEST_POSTGRES, both dropped at the end of t, and returns the
// --db value that reaches the schema through the PgBouncer of
// SUNDIAL_TEST_PGBOUNCER (transaction pooling mode, .ci/pgbouncer.ini) as
// that role, whose default search_path is the schema: PgBouncer refuses
// search_path as a startup parameter.
func pgBouncerDB(t *testing.T) string {
	bouncer := requireEnv(t, "SUNDIAL_TEST_PGBOUNCER", "postgres://postgres@127.0.0.1:6432/test?sslmode=disable")
	base := requireEnv(t, "SUNDIAL_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	name := "sundial_pgb_" + hex.EncodeToString(b)
	if _, err := db.Exec(fmt.Sprintf(`CREATE ROLE %[1]s LOGIN; CREATE SCHEMA %[1]s AUTHORIZATION %[1]s;
		ALTER ROLE %[1]s SET search_path = %[1]s`, name)); err != nil {
		t.Fatalf("create role and schema: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err == nil {
			_, _ = db.Exec(fmt.Sprintf(`DROP SCHEMA %[1]s CASCADE; DROP ROLE %[1]s`, name))
			db.Close()
		}
	})
	u, err := url.Parse(bouncer)
	if err != nil {
		t.Fatalf("SUNDIAL_TEST_PGBOUNCER is not a URL: %v", err)
	}
	u.User = url.User(name)
	q := u.Query()
	q.Set("default_query_exec_mode", "cache_describe")
	u.RawQuery = q.Encode()
	return u.String()
}

// TestClusterPgBouncer runs two nodes through PgBouncer in transaction
// pooling mode, as docs/deploy.md says to (no prepared statements in the
// URL, a direct db.listen_url for the live events): a task created on one
// node is streamed by the other, and every second of every task fires
// exactly once, across a graceful stop of one node.
func TestClusterPgBouncer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("cluster test")
	}
	db := pgBouncerDB(t)
	direct := os.Getenv("SUNDIAL_TEST_POSTGRES")
	bin := sundialBinary(t)
	const tasks = 10

	type fire struct {
		task string
		sec  int64
	}
	var mu sync.Mutex
	got := map[fire]int{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sched, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Sundial-Scheduled-Time"))
		mu.Lock()
		got[fire{r.Header.Get("X-Sundial-Task-Id"), sched.Unix()}]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()

	flags := []string{"--db.listen_url", direct}
	a, b := startProc(t, bin, db, flags...), startProc(t, bin, db, flags...)
	na, nb := &node{url: a.url}, &node{url: b.url}
	nb.waitReady(t)
	stream := openEvents(t, b.url, "?kinds=task.created")
	var ids []string
	for i := range tasks {
		var task taskJSON
		na.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"pgb%d","cron_expr":"* * * * * *",
			"target_url":%q,"overlap_action":"PARALLEL"}`, i, hook.URL), 201, &task)
		ids = append(ids, fmt.Sprint(task.ID))
	}
	e, _ := stream.next(t, 10*time.Second, func(e sundial.Event) bool { return e.Task.Name == "pgb0" })
	if e.NodeID != a.nodeID() {
		t.Errorf("node b streamed task.created from node %q, want node a's %q", e.NodeID, a.nodeID())
	}

	begin := time.Now()
	time.Sleep(5 * time.Second)
	a.stop(t) // its planned fires are handed back to b
	time.Sleep(5 * time.Second)
	end := time.Now()
	b.stop(t)

	mu.Lock()
	defer mu.Unlock()
	from, to := begin.Truncate(time.Second).Add(2*time.Second), end.Truncate(time.Second).Add(-2*time.Second)
	var problems []string
	for _, id := range ids {
		for sec := from.Unix(); sec <= to.Unix(); sec++ {
			if n := got[fire{id, sec}]; n != 1 {
				problems = append(problems, fmt.Sprintf("task %s second %s: %d deliveries", id, time.Unix(sec, 0).UTC().Format(time.TimeOnly), n))
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("want every second of every task delivered once from %s to %s:\n%s\nnode a:\n%s\nnode b:\n%s",
			from.UTC().Format(time.TimeOnly), to.UTC().Format(time.TimeOnly), strings.Join(problems, "\n"), tail(a.out.String(), 20), tail(b.out.String(), 20))
	}
}
