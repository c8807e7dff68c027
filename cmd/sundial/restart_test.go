package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// TestClusterDatabaseRestart restarts the database server under a running
// cluster of three nodes: the nodes recover by themselves and every fire is
// delivered (the outage is shorter than the misfire threshold, so nothing
// falls to the catch-up mode). It is destructive, so it runs only when
// SUNDIAL_TEST_DB_RESTART=1, with the shell command that restarts each
// server in SUNDIAL_TEST_POSTGRES_RESTART / SUNDIAL_TEST_MYSQL_RESTART;
// .ci/run runs it on its own, after the other tests.
func TestClusterDatabaseRestart(t *testing.T) {
	if os.Getenv("SUNDIAL_TEST_DB_RESTART") != "1" {
		t.Skip("restarts the database server: set SUNDIAL_TEST_DB_RESTART=1 and SUNDIAL_TEST_POSTGRES_RESTART / SUNDIAL_TEST_MYSQL_RESTART")
	}
	for _, c := range []struct {
		name, restartEnv string
		fresh            func(testing.TB) string
	}{
		{"postgres", "SUNDIAL_TEST_POSTGRES_RESTART", freshPostgres},
		{"mysql", "SUNDIAL_TEST_MYSQL_RESTART", freshMySQL},
	} {
		t.Run(c.name, func(t *testing.T) {
			restart := os.Getenv(c.restartEnv)
			if restart == "" {
				t.Fatalf("%s is not set", c.restartEnv)
			}
			databaseRestart(t, c.fresh(t), restart)
		})
	}
}

func databaseRestart(t *testing.T, db, restart string) {
	bin := sundialBinary(t)
	const tasks = 10
	var mu sync.Mutex
	got := map[string]map[int64]int{} // task -> scheduled second -> deliveries
	last := time.Time{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sched, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Sundial-Scheduled-Time"))
		task := r.Header.Get("X-Sundial-Task-Id")
		mu.Lock()
		if got[task] == nil {
			got[task] = map[int64]int{}
		}
		got[task][sched.Unix()]++
		last = time.Now()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()

	nodes := []*proc{startProc(t, bin, db), startProc(t, bin, db), startProc(t, bin, db)}
	n0 := &node{url: nodes[0].url}
	for i := range tasks {
		n0.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"r%d","cron_expr":"* * * * * *",
			"target_url":%q,"overlap_action":"PARALLEL"}`, i, hook.URL), 201, nil)
	}
	begin := time.Now()
	time.Sleep(5 * time.Second)
	down := time.Now()
	if out, err := exec.Command("sh", "-c", restart).CombinedOutput(); err != nil {
		t.Fatalf("restart the database: %v\n%s", err, out)
	}
	t.Logf("database restarted in %s", time.Since(down).Round(time.Millisecond))

	// The nodes recover by themselves: every one answers ready again.
	deadline := time.Now().Add(60 * time.Second)
	for _, p := range nodes {
		for {
			resp, err := http.Get(p.url + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s not ready a minute after the restart:\n%s", p.url, tail(p.out.String(), 30))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	recovered := time.Now()
	t.Logf("all nodes ready %s after the restart began", recovered.Sub(down).Round(time.Millisecond))
	time.Sleep(15 * time.Second) // fires after the restart, and late ones from the outage
	end := time.Now()
	for _, p := range nodes {
		p.stop(t)
	}

	mu.Lock()
	defer mu.Unlock()
	if time.Since(last) > 20*time.Second {
		t.Fatalf("no delivery since %s", last)
	}
	from, to := begin.Truncate(time.Second).Add(2*time.Second), end.Add(-5*time.Second).Truncate(time.Second)
	lost, twice := 0, 0
	for task, secs := range got {
		for sec := from.Unix(); sec < to.Unix(); sec++ {
			switch n := secs[sec]; {
			case n == 0:
				lost++
				t.Errorf("task %s: fire at %s never delivered", task, time.Unix(sec, 0).UTC().Format(time.TimeOnly))
			case n > 1:
				twice++
			}
		}
	}
	if len(got) != tasks {
		t.Errorf("deliveries for %d tasks, want %d", len(got), tasks)
	}
	t.Logf("fires %s..%s: %d lost, %d delivered more than once (in flight when the database went away)",
		from.Format(time.TimeOnly), to.Format(time.TimeOnly), lost, twice)
	if t.Failed() {
		for _, p := range nodes {
			t.Logf("node output:\n%s", tail(p.out.String(), 30))
		}
	}
}
