package main

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sundialhq/sundial/bench"
)

const benchUsage = `sundial bench precision [flags]`

// listenLine finds the API address in the line serve prints on start.
var listenLine = regexp.MustCompile(`listening on (http://\S+)`)

// runBench dispatches "sundial bench SCENARIO".
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErrorf("bench: missing scenario (usage: %s)", benchUsage)
	}
	switch args[0] {
	case "precision":
		return benchPrecision(ctx, args[1:], stdout, stderr)
	default:
		return usageErrorf("bench: unknown scenario %q (usage: %s)", args[0], benchUsage)
	}
}

// benchPrecision runs N tasks firing every second for a set time on one or
// more nodes and reports how late their fires reached a loopback target.
func benchPrecision(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sundial bench precision", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 1000, "tasks firing every second")
	duration := fs.Duration("duration", 10*time.Second, "measured time, after the warm-up")
	warmup := fs.Duration("warmup", 3*time.Second, "time before measuring")
	nodes := fs.Int("nodes", 1, "nodes to start")
	db := fs.String("db", "sqlite", "sqlite (a fresh file), or a postgres:// or mysql:// server, on which a fresh schema or database is made")
	shape := fs.String("shape", "aligned", "aligned: every task at the same whole second (* * * * * *); spread: @every 1s tasks created across one second")
	workers := fs.Int("workers", 16, "executor.worker_pool_size of each node")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageErrorf("bench precision: %v", err)
	}
	switch {
	case *tasks < 1 || *tasks > 100000:
		return usageErrorf("bench precision: --tasks %d: want from 1 to 100000", *tasks)
	case *duration < time.Second || *warmup < time.Second:
		return usageErrorf("bench precision: --duration and --warmup want at least 1s")
	case *nodes < 1 || *nodes > 16:
		return usageErrorf("bench precision: --nodes %d: want from 1 to 16", *nodes)
	case *shape != "aligned" && *shape != "spread":
		return usageErrorf("bench precision: --shape %q: want aligned or spread", *shape)
	}

	dsn, backend, cleanup, err := freshDatabase(*db)
	if err != nil {
		return err
	}
	defer cleanup()

	rec := &bench.Recorder{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	target := &http.Server{Handler: rec, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = target.Serve(ln) }()
	defer target.Close()
	targetURL := "http://" + ln.Addr().String() + "/hook"

	var procs []*benchNode
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for range *nodes {
		p, err := startBenchNode(dsn, *workers)
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	fmt.Fprintf(stderr, "bench: %d node(s) on %s, target %s; creating %d tasks\n", len(procs), backend, targetURL, *tasks)

	firsts, err := createBenchTasks(ctx, procs[0].url, targetURL, *tasks, *shape)
	if err != nil {
		return err
	}
	from := time.Now().Add(*warmup).Truncate(time.Second).Add(time.Second)
	to := from.Add(*duration)
	var expected []bench.Fire
	for task, first := range firsts {
		for at := first; at.Before(to); at = at.Add(time.Second) {
			if !at.Before(from) {
				expected = append(expected, bench.Fire{Task: task, Scheduled: at.UTC()})
			}
		}
	}
	// Progress every second until the window has closed and its last fires
	// had two seconds to arrive.
	end := to.Add(2 * time.Second)
	for now := time.Now(); now.Before(end); now = time.Now() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Second, end.Sub(now))):
		}
		phase := "warming up"
		if time.Now().After(from) {
			phase = fmt.Sprintf("measuring %.0f/%.0f s", min(time.Since(from), *duration).Seconds(), duration.Seconds())
		}
		fmt.Fprintf(stderr, "bench: %s, %d deliveries so far\n", phase, rec.Count())
	}

	r := bench.Analyze(expected, rec.Arrivals(), from, to)
	r.Scenario, r.Backend, r.Nodes, r.Tasks = "precision/"+*shape, backend, len(procs), *tasks
	for _, p := range procs {
		cpu, rss, err := bench.ReadProc(p.cmd.Process.Pid)
		if err != nil {
			fmt.Fprintf(stderr, "bench: node %s: %v\n", p.id, err)
			continue
		}
		r.NodeStats = append(r.NodeStats, bench.NodeStats{Node: p.id, PID: p.cmd.Process.Pid, CPUSeconds: cpu, PeakRSSBytes: rss})
	}
	if err := r.WriteTable(stdout); err != nil {
		return err
	}
	return r.WriteJSON(stdout)
}

// benchNode is one "sundial serve" process started by the bench.
type benchNode struct {
	cmd  *exec.Cmd
	url  string
	id   string
	done chan struct{}
}

func startBenchNode(dsn string, workers int) (*benchNode, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &benchNode{done: make(chan struct{})}
	p.cmd = exec.Command(exe, "serve", "--listen", "127.0.0.1:0", "--db", dsn, "--log.level", "error",
		"--executor.worker_pool_size", fmt.Sprint(workers))
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case line := <-lines:
		m := listenLine.FindStringSubmatch(line)
		if m == nil {
			p.stop()
			return nil, fmt.Errorf("node said %q, not where it listens", line)
		}
		p.url = m[1]
		if i := strings.Index(line, "(node "); i >= 0 {
			rest := line[i+len("(node "):]
			p.id = rest[:strings.IndexAny(rest, ", ")]
		}
		return p, nil
	case <-p.done:
		return nil, errors.New("node exited before listening")
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, errors.New("node did not start within 30 s")
	}
}

func (p *benchNode) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// createBenchTasks creates the tasks through the public API and returns
// each task's first fire by task ID. Spread tasks are created across one
// second, so their fires are spread over it.
func createBenchTasks(ctx context.Context, api, target string, n int, shape string) (map[string]time.Time, error) {
	expr := "* * * * * *"
	if shape == "spread" {
		expr = "@every 1s"
	}
	var (
		mu     sync.Mutex
		firsts = make(map[string]time.Time, n)
		errs   = make(chan error, n)
		wg     sync.WaitGroup
		sem    = make(chan struct{}, 8)
	)
	start := time.Now()
	for i := range n {
		if shape == "spread" {
			time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(n))))
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			body := fmt.Sprintf(`{"name":"bench-%d","cron_expr":%q,"http_method":"POST","target_url":%q,"overlap_action":"PARALLEL"}`,
				i, expr, target)
			req, err := http.NewRequestWithContext(ctx, "POST", api+"/api/v1/tasks", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			var t struct {
				ID           int64     `json:"id"`
				NextFireTime time.Time `json:"next_fire_time"`
			}
			if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&t) != nil {
				errs <- fmt.Errorf("create task %d: HTTP %d", i, resp.StatusCode)
				return
			}
			mu.Lock()
			firsts[fmt.Sprint(t.ID)] = t.NextFireTime
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return firsts, nil
}

// freshDatabase returns the --db value of a new, empty database of the
// chosen backend, its name, and a function that removes it: a temporary
// SQLite file, a new PostgreSQL schema, or a new MySQL database.
func freshDatabase(db string) (dsn, backend string, cleanup func(), err error) {
	name := "sundial_bench_" + randomSuffix()
	switch {
	case db == "sqlite":
		dir, err := os.MkdirTemp("", "sundial-bench")
		if err != nil {
			return "", "", nil, err
		}
		return "sqlite:" + filepath.Join(dir, "sundial.db"), "sqlite", func() { os.RemoveAll(dir) }, nil
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		conn, err := sql.Open("pgx", db)
		if err != nil {
			return "", "", nil, err
		}
		defer conn.Close()
		if _, err := conn.Exec("CREATE SCHEMA " + name); err != nil {
			return "", "", nil, fmt.Errorf("create schema: %w", err)
		}
		sep := "?"
		if strings.Contains(db, "?") {
			sep = "&"
		}
		return db + sep + "search_path=" + name, "postgres", func() {
			if c, err := sql.Open("pgx", db); err == nil {
				_, _ = c.Exec("DROP SCHEMA " + name + " CASCADE")
				c.Close()
			}
		}, nil
	case strings.HasPrefix(db, "mysql://"):
		driverDSN, err := mysqlDSN(db)
		if err != nil {
			return "", "", nil, usageErrorf("bench: --db: %v", err)
		}
		cfg, err := gomysql.ParseDSN(driverDSN)
		if err != nil {
			return "", "", nil, err
		}
		conn, err := sql.Open("mysql", driverDSN)
		if err != nil {
			return "", "", nil, err
		}
		defer conn.Close()
		if _, err := conn.Exec("CREATE DATABASE " + name); err != nil {
			return "", "", nil, fmt.Errorf("create database: %w", err)
		}
		user := cfg.User
		if cfg.Passwd != "" {
			user += ":" + cfg.Passwd
		}
		return fmt.Sprintf("mysql://%s@%s/%s", user, cfg.Addr, name), "mysql", func() {
			if c, err := sql.Open("mysql", driverDSN); err == nil {
				_, _ = c.Exec("DROP DATABASE " + name)
				c.Close()
			}
		}, nil
	default:
		return "", "", nil, usageErrorf("bench: --db %q: want sqlite, postgres://... or mysql://...", db)
	}
}

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}
