package main

import (
	"bufio"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// The cluster tests run real "sundial serve" processes on one PostgreSQL
// or MySQL database and kill them with SIGKILL. They need a database
// server: SUNDIAL_TEST_POSTGRES / SUNDIAL_TEST_MYSQL (skipped without, but
// never under CI=true).

func requireEnv(t testing.TB, name, example string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the cluster tests (for example %s=%s)", name, name, example)
		}
		t.Skipf("set %s=%s to run this test against a real server", name, example)
	}
	return v
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// sundialBinary builds the command once for the cluster tests.
func sundialBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sundial-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "sundial")
		out, err := exec.Command(goTool(t), "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// goTool finds the go command on PATH, to build the binary under test.
func goTool(t *testing.T) string {
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	return p
}

func randomName(prefix string) string {
	b := make([]byte, 5)
	_, _ = crand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// freshPostgres makes a schema of its own on the server of
// SUNDIAL_TEST_POSTGRES and returns the --db value that uses it.
func freshPostgres(t testing.TB) string {
	base := requireEnv(t, "SUNDIAL_TEST_POSTGRES", "postgres://root@127.0.0.1:5432/test?sslmode=disable")
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := randomName("cluster_")
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

// freshMySQL makes a database of its own on the server of
// SUNDIAL_TEST_MYSQL and returns the --db value that uses it.
func freshMySQL(t testing.TB) string {
	base := requireEnv(t, "SUNDIAL_TEST_MYSQL", "root@tcp(127.0.0.1:3306)/test")
	cfg, err := gomysql.ParseDSN(base)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := randomName("cluster_")
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", base)
		if err == nil {
			_, _ = db.Exec("DROP DATABASE " + name)
			db.Close()
		}
	})
	user := cfg.User
	if cfg.Passwd != "" {
		user += ":" + cfg.Passwd
	}
	return fmt.Sprintf("mysql://%s@%s/%s", user, cfg.Addr, name)
}

// proc is one "sundial serve" process.
type proc struct {
	cmd  *exec.Cmd
	url  string
	out  *lockedBuffer
	done chan struct{}
}

// startProc starts a "sundial serve" process on db; extra flags come after
// the defaults and override them (--log.level info).
func startProc(t *testing.T, bin, db string, extra ...string) *proc {
	t.Helper()
	p := &proc{out: &lockedBuffer{}, done: make(chan struct{})}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--db", db, "--log.level", "warn"}, extra...)
	p.cmd = exec.Command(bin, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUNDIAL_") {
			env = append(env, kv)
		}
	}
	p.cmd.Env = env
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(p.out, line)
			if m := listenLine.FindStringSubmatch(line); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	select {
	case p.url = <-urls:
	case <-p.done:
		t.Fatalf("sundial exited before listening:\n%s", p.out)
	case <-time.After(20 * time.Second):
		p.kill()
		t.Fatalf("sundial did not start:\n%s", p.out)
	}
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits for the process to exit.
func (p *proc) stop(t *testing.T) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		t.Errorf("sundial did not stop on SIGTERM:\n%s", p.out)
		p.kill()
	}
}

// nodeID reads the node's identity from its first output line.
func (p *proc) nodeID() string {
	s := p.out.String()
	if i := strings.Index(s, "(node "); i >= 0 {
		rest := s[i+len("(node "):]
		return rest[:strings.IndexAny(rest, ", ")]
	}
	return ""
}

// arrival is one delivery the cluster hook received.
type arrival struct {
	task      string
	scheduled time.Time
	at        time.Time
	key       string
	node      string
	delivery  string
	completed bool // answered with the caller still there (not cut off)
}

func TestClusterPostgresKills(t *testing.T) {
	t.Parallel()
	clusterKills(t, freshPostgres(t))
}

func TestClusterMySQLKills(t *testing.T) {
	t.Parallel()
	clusterKills(t, freshMySQL(t))
}

// clusterKills runs three nodes with tasks firing every second, kills one
// node with SIGKILL every ~8 s (starting a new one in its place), and
// checks that no fire is lost, that a fire is delivered twice only if it
// was in flight at a kill (and then with the same Idempotency-Key), and
// that each task's fires resume on the others within 5 s of a kill.
func clusterKills(t *testing.T, db string) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	bin := sundialBinary(t)
	const tasks, kills = 20, 4

	// A quarter of the tasks call a slow endpoint (3 s), so that every kill
	// cuts off calls in flight and their takeover is exercised.
	const hold = 3 * time.Second
	var mu sync.Mutex
	var got []arrival
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sched, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Sundial-Scheduled-Time"))
		a := arrival{task: r.Header.Get("X-Sundial-Task-Id"), scheduled: sched, at: time.Now(),
			key: r.Header.Get("Idempotency-Key"), node: r.Header.Get("X-Sundial-Node"),
			delivery: r.Header.Get("X-Sundial-Delivery")}
		if r.URL.Path == "/slow" {
			select {
			case <-time.After(hold):
			case <-r.Context().Done():
			}
		}
		a.completed = r.Context().Err() == nil
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()

	// A kill every 7-9 s can cut the same 3 s call off again and again: a
	// delivery is exposed for the 5 s it takes to declare its node dead plus
	// the call. scheduler.max_deliveries (3 by default) would then fail the
	// fire on purpose; this test is about losing none, so it allows more.
	flags := []string{"--scheduler.max_deliveries", "10"}
	nodes := []*proc{startProc(t, bin, db, flags...), startProc(t, bin, db, flags...), startProc(t, bin, db, flags...)}
	n0 := &node{url: nodes[0].url}
	for i := range tasks {
		target := hook.URL + "/fast"
		if i%4 == 0 {
			target = hook.URL + "/slow"
		}
		n0.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"c%d","cron_expr":"* * * * * *",
			"target_url":%q,"overlap_action":"PARALLEL","timeout_seconds":10}`, i, target), 201, nil)
	}
	begin := time.Now()
	type kill struct {
		at   time.Time
		node string
	}
	var killed []kill
	r := rand.New(rand.NewPCG(uint64(begin.UnixNano()), 7))
	for range kills {
		time.Sleep(7*time.Second + time.Duration(r.IntN(2000))*time.Millisecond)
		i := r.IntN(len(nodes))
		victim := nodes[i]
		id := victim.nodeID()
		killed = append(killed, kill{time.Now(), id})
		victim.kill()
		t.Logf("killed %s at +%s", id, time.Since(begin).Round(time.Millisecond))
		nodes[i] = startProc(t, bin, db, flags...)
	}
	// Leave time for the last victim to be declared dead (5 s) and its cut
	// off deliveries to be made again.
	time.Sleep(12 * time.Second)
	end := time.Now()
	for _, p := range nodes {
		p.stop(t)
	}

	mu.Lock()
	defer mu.Unlock()
	from, to := begin.Truncate(time.Second).Add(3*time.Second), end.Add(-10*time.Second).Truncate(time.Second)
	type fire struct {
		task string
		sec  int64
	}
	byFire := map[fire][]arrival{}
	share := map[string]int{}
	for _, a := range got {
		if a.scheduled.Before(from) || !a.scheduled.Before(to) {
			continue
		}
		f := fire{a.task, a.scheduled.Unix()}
		byFire[f] = append(byFire[f], a)
		share[a.node]++
	}
	taskIDs := map[string]bool{}
	for f := range byFire {
		taskIDs[f.task] = true
	}
	if len(taskIDs) != tasks {
		t.Fatalf("deliveries for %d tasks, want %d", len(taskIDs), tasks)
	}
	lost, dups, cut := 0, 0, 0
	for task := range taskIDs {
		for sec := from.Unix(); sec < to.Unix(); sec++ {
			as := byFire[fire{task, sec}]
			done := 0
			for _, a := range as {
				if a.completed {
					done++
				} else {
					cut++
				}
			}
			if done == 0 {
				lost++
				t.Errorf("fire of task %s at %s was never delivered to the end (%d cut off)",
					task, time.Unix(sec, 0).UTC().Format(time.TimeOnly), len(as))
				continue
			}
			if len(as) == 1 {
				continue
			}
			dups++
			// More than once only if cut off or in flight at a kill, by the
			// killed node, and always with the same key. A killed node's
			// deliveries were all sent before its kill, but the target
			// stamps one when its handler runs, which may come after: one
			// stamped after the kill was in flight at it.
			slices.SortFunc(as, func(a, b arrival) int { return a.at.Compare(b.at) })
			for _, a := range as[:len(as)-1] {
				inFlight := false
				for _, k := range killed {
					if a.node == k.node && k.at.Sub(a.at) < hold+2*time.Second {
						inFlight = true
					}
				}
				if !inFlight {
					t.Errorf("fire of task %s at %d delivered %d times; the delivery at %s by %s was not in flight at a kill",
						task, sec, len(as), a.at.Format(time.StampMilli), a.node)
				}
			}
			for _, a := range as {
				if a.key != as[0].key {
					t.Errorf("fire %s@%d delivered with keys %q and %q", task, sec, as[0].key, a.key)
				}
			}
		}
	}
	// Resume: after each kill, every task fires again within 5 s.
	for _, k := range killed {
		for task := range taskIDs {
			resumed := false
			for sec := k.at.Unix() + 1; sec < k.at.Unix()+6 && !resumed; sec++ {
				for _, a := range byFire[fire{task, sec}] {
					if a.at.Sub(k.at) <= 5*time.Second {
						resumed = true
					}
				}
			}
			if !resumed && k.at.Add(6*time.Second).Before(to) {
				t.Errorf("task %s did not fire within 5 s of the kill at %s", task, k.at.Format(time.StampMilli))
			}
		}
	}
	var lags []time.Duration
	for _, as := range byFire {
		for _, a := range as {
			lags = append(lags, a.at.Sub(a.scheduled))
		}
	}
	slices.Sort(lags)
	t.Logf("%d fires in %s..%s: %d lost, %d delivered more than once (%d deliveries cut off by kills); lag p50 %s p99 %s max %s; share by node %v",
		len(byFire), from.Format(time.TimeOnly), to.Format(time.TimeOnly), lost, dups, cut,
		lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)*99/100].Round(time.Millisecond),
		lags[len(lags)-1].Round(time.Millisecond), share)
	if t.Failed() {
		for _, p := range nodes {
			t.Logf("node output:\n%s", tail(p.out.String(), 40))
		}
	}
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	return strings.Join(parts[max(0, len(parts)-lines):], "\n")
}
