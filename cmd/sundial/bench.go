package main

import (
	"bufio"
	"bytes"
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
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sundialhq/sundial/bench"
)

const benchUsage = `sundial bench precision|throughput|scale|failover [flags]`

// listenLine finds the API address in the line serve prints on start.
var listenLine = regexp.MustCompile(`listening on (https?://\S+)`)

// runBench dispatches "sundial bench SCENARIO".
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErrorf("bench: missing scenario (usage: %s)", benchUsage)
	}
	switch args[0] {
	case "precision":
		return benchPrecision(ctx, args[1:], stdout, stderr)
	case "throughput":
		return benchThroughput(ctx, args[1:], stdout, stderr)
	case "scale":
		return benchScale(ctx, args[1:], stdout, stderr)
	case "failover":
		return benchFailover(ctx, args[1:], stdout, stderr)
	default:
		return usageErrorf("bench: unknown scenario %q (usage: %s)", args[0], benchUsage)
	}
}

// rowsPeriod is the longest period of the steps in which a database's
// count of rows written moves in a steady run (bench.AnalyzeRows): the
// planner's default lookahead.
const rowsPeriod = 10 * time.Second

// benchPrecision runs N tasks firing every second for a set time on one or
// more nodes and reports how late their fires reached a loopback target.
func benchPrecision(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sundial bench precision", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 1000, "tasks firing every second")
	duration := fs.Duration("duration", 10*time.Second, "measured time, after the warm-up")
	warmup := fs.Duration("warmup", 30*time.Second, "time before measuring: the planner fills the plans of frequent tasks in short transactions over about the first 30 s (1,000 tasks), and its inserts would count in the rows per fire")
	nodes := fs.Int("nodes", 1, "nodes to start")
	db := fs.String("db", "sqlite", "sqlite (a fresh file), or a postgres:// or mysql:// server, on which a fresh schema or database is made")
	shape := fs.String("shape", "aligned", "aligned: every task at the same whole second (* * * * * *); spread: @every 1s tasks created across one second")
	workers := fs.Int("workers", 16, "executor.worker_pool_size of each node")
	server := fs.String("server", "", "the base URL of a node already running (http://127.0.0.1:8080) to measure instead of starting nodes; it must reach this machine's loopback")
	floor := fs.Bool("floor", true, "with --shape aligned, first measure the floor: the same burst sent by a bare net/http client to a target of its own (16, 64 and 256 workers, 3 bursts each), and report p99 over the best floor")
	userstat := fs.Bool("userstat", false, "MySQL: turn the server's userstat on for the run (SET GLOBAL; off again after), to count the rows written in the bench's own tables rather than the server's Handler_* counters")
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
	case *userstat && !strings.HasPrefix(*db, "mysql://"):
		return usageErrorf("bench precision: --userstat is for a mysql:// --db")
	}
	if err := checkServer(*server); err != nil {
		return usageErrorf("bench precision: %v", err)
	}

	if *shape == "aligned" {
		// The target is this process: its collector would otherwise
		// pause it in a burst now and then (bench.CollectBetweenBursts).
		defer bench.CollectBetweenBursts()()
	}
	var floorResults []bench.FloorResult
	if *floor && *shape == "aligned" {
		fmt.Fprintf(stderr, "bench: the floor: %d requests at once from a bare net/http client, %v workers\n", *tasks, bench.FloorWorkers)
		var err error
		if floorResults, err = bench.Floor(ctx, *tasks, bench.FloorWorkers, 3); err != nil {
			return err
		}
		for _, f := range floorResults {
			fmt.Fprintf(stderr, "bench: floor with %d workers: p99 %.2f ms\n", f.Workers, f.LagMS.P99)
		}
	}

	rec, targetURL, stopTarget, err := startTarget()
	if err != nil {
		return err
	}
	defer stopTarget()

	var (
		dsn, backend = "", "server"
		procs        []*benchNode
		api          = strings.TrimSuffix(*server, "/")
		dropDB       = func() {}
	)
	defer func() { // after the nodes stop
		if dropDB != nil {
			dropDB()
		}
	}()
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	if api == "" {
		dsn, backend, dropDB, err = freshDatabase(*db)
		if err != nil {
			return err
		}
		for range *nodes {
			p, err := startBenchNode(dsn, *workers)
			if err != nil {
				return err
			}
			procs = append(procs, p)
		}
		api = procs[0].url
	}
	fmt.Fprintf(stderr, "bench: %s, target %s; creating %d tasks\n", benchNodes(procs, backend, api), targetURL, *tasks)

	firsts, err := createBenchTasks(ctx, api, targetURL, *tasks, *shape)
	if err != nil {
		return err
	}
	if procs == nil {
		// The server outlives the bench: its tasks must not.
		defer deleteBenchTasks(api, firsts, stderr)
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
	// The rows the database wrote are read every 250 ms, each reading
	// paired with the deliveries received at its instant, from the
	// window's start to rowsGroup after its end; the readings of the first
	// and of the last rowsGroup give the rows written per delivery over
	// the window's length (bench.AnalyzeRows).
	rowsGroup := min(rowsPeriod, *duration)
	var sampler *rowSampler
	var nodeURLs []string
	for _, p := range procs {
		nodeURLs = append(nodeURLs, p.url)
	}
	counter, err := newRowCounter(ctx, backend, dsn, nodeURLs, *userstat)
	if err != nil {
		return err
	}
	if counter != nil {
		defer counter.close()
		sampler = sampleRows(ctx, counter, rec.Count, from, to.Add(rowsGroup), 250*time.Millisecond)
	}
	// Progress every second until the window has closed and its last fires
	// had two seconds to arrive, and the rows written were read.
	end := to.Add(2 * time.Second)
	if sampler != nil {
		end = to.Add(max(2*time.Second, rowsGroup+100*time.Millisecond))
	}
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
	r.Scenario, r.Backend, r.Nodes, r.Tasks = "precision/"+*shape, backend, max(len(procs), 1), *tasks
	r.SetFloor(floorResults)
	if sampler != nil {
		samples, err := sampler.wait()
		if err == nil {
			var rows bench.Rows
			if rows, err = bench.AnalyzeRows(counter.source, samples, rowsGroup); err == nil {
				r.Rows, r.RowsPerFire = &rows, rows.PerFire
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
		}
	}
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

// benchThroughput creates --tasks one-off tasks all due at the same whole
// second, --lead after the start, and measures how long the nodes take to
// deliver every one of them to a loopback target, and whether any was lost
// or delivered twice. It fails (after printing its report) when a fire was
// lost or delivered more than once.
func benchThroughput(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sundial bench throughput", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 100000, "one-off tasks, all due at the same instant")
	nodes := fs.Int("nodes", 1, "nodes to start")
	db := fs.String("db", "sqlite", "sqlite (a fresh file), or a postgres:// or mysql:// server, on which a fresh schema or database is made")
	workers := fs.Int("workers", 64, "executor.worker_pool_size of each node")
	lead := fs.Duration("lead", 60*time.Second, "the tasks are due this long after the start (rounded up to a whole second); creating them must finish before")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long after the due instant to wait for the last delivery")
	lookahead := fs.Duration("lookahead", 0, "scheduler.lookahead of each node; 0 leaves the node's default")
	server := fs.String("server", "", "the base URL of a node already running (http://127.0.0.1:8080) to measure instead of starting nodes; it must reach this machine's loopback")
	floor := fs.Bool("floor", false, "PostgreSQL: first measure the durable floor: the same burst claimed 250 at a time, delivered by --workers senders and recorded by a bare pgx program with no scheduler, in a schema of its own; report the nodes' rate over its rate")
	floorIndexes := fs.Bool("floor-indexes", false, "with --floor, give the durable floor's table the indexes of Sundial's runs table too, to see what they cost a burst")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageErrorf("bench throughput: %v", err)
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("bench throughput: unexpected argument %q", fs.Arg(0))
	case *tasks < 1 || *tasks > 1_000_000:
		return usageErrorf("bench throughput: --tasks %d: want from 1 to 1000000", *tasks)
	case *nodes < 1 || *nodes > 16:
		return usageErrorf("bench throughput: --nodes %d: want from 1 to 16", *nodes)
	case *workers < 1:
		return usageErrorf("bench throughput: --workers %d: want at least 1", *workers)
	case *lead < time.Second || *timeout < time.Second:
		return usageErrorf("bench throughput: --lead and --timeout want at least 1s")
	case *lookahead < 0:
		return usageErrorf("bench throughput: --lookahead %s: want 0 or more", *lookahead)
	case *floor && *server != "":
		return usageErrorf("bench throughput: --floor: only for a postgres:// --db, not with --server")
	case *floorIndexes && !*floor:
		return usageErrorf("bench throughput: --floor-indexes: only with --floor")
	case *floor && !isPostgres(*db):
		return usageErrorf("bench throughput: --floor: only for a postgres:// --db (the durable floor is a pgx program), not %q", redact(*db))
	}
	if err := checkServer(*server); err != nil {
		return usageErrorf("bench throughput: %v", err)
	}

	// The durable floor, before the nodes start, on the same server.
	var durable *bench.DurableFloorResult
	if *floor {
		fmt.Fprintf(stderr, "bench: the durable floor: %d jobs at once, claimed, delivered and recorded by a bare pgx program, %d senders\n", *tasks, *workers)
		f, err := bench.DurableFloor(ctx, bench.DurableFloorConfig{DSN: *db, Tasks: *tasks, Senders: *workers, Timeout: *timeout, Progress: stderr,
			RunsIndexes: *floorIndexes})
		if err != nil {
			return fmt.Errorf("bench throughput: %w", err)
		}
		durable = &f
	}

	rec, targetURL, stopTarget, err := startTarget()
	if err != nil {
		return err
	}
	defer stopTarget()

	backend := "server"
	var procs []*benchNode
	dropDB := func() {}
	defer func() { // after the nodes stop
		if dropDB != nil {
			dropDB()
		}
	}()
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	apis := []string{strings.TrimSuffix(*server, "/")}
	if *server == "" {
		dsn, be, cleanup, err := freshDatabase(*db)
		if err != nil {
			return err
		}
		dropDB, backend, apis = cleanup, be, nil
		var extra []string
		if *lookahead > 0 {
			extra = append(extra, "--scheduler.lookahead", lookahead.String())
		}
		for range *nodes {
			p, err := startBenchNode(dsn, *workers, extra...)
			if err != nil {
				return err
			}
			procs = append(procs, p)
			apis = append(apis, p.url)
		}
	}

	createCPU := make([]float64, len(procs))
	r, err := runBurst(ctx, burstConfig{
		apis: apis, target: targetURL, tasks: *tasks, lead: *lead, timeout: *timeout, progress: stderr,
		created: func() {
			for i, p := range procs {
				createCPU[i], _, _ = bench.ReadProc(p.cmd.Process.Pid)
			}
		},
		banner: fmt.Sprintf("%s, target %s", benchNodes(procs, backend, apis[0]), targetURL),
	}, rec)
	if err != nil {
		return err
	}
	r.Scenario, r.Backend, r.Nodes = "throughput", backend, len(apis)
	r.SetDurableFloor(durable)
	for i, p := range procs {
		cpu, rss, err := bench.ReadProc(p.cmd.Process.Pid)
		if err != nil {
			fmt.Fprintf(stderr, "bench: node %s: %v\n", p.id, err)
			continue
		}
		r.NodeStats = append(r.NodeStats, bench.NodeStats{Node: p.id, PID: p.cmd.Process.Pid, CPUSeconds: cpu,
			PeakRSSBytes: rss, CreateCPUSeconds: createCPU[i]})
	}
	if err := r.WriteTable(stdout); err != nil {
		return err
	}
	if err := r.WriteJSON(stdout); err != nil {
		return err
	}
	if r.Lost > 0 || r.Duplicates > 0 {
		return fmt.Errorf("bench throughput: %d of %d fires lost, %d duplicate deliveries", r.Lost, r.Expected, r.Duplicates)
	}
	return nil
}

// burstConfig describes one burst: tasks one-off tasks created through the
// APIs (in turn), all due at one whole second lead from now, delivering to
// target.
type burstConfig struct {
	apis     []string
	target   string
	tasks    int
	lead     time.Duration
	timeout  time.Duration // wait for the last delivery, from the due instant
	progress io.Writer     // a line a second
	banner   string        // said first on progress
	created  func()        // called once every task is created, if set
}

// burstSettle is how long a burst keeps listening after every fire
// arrived, for duplicates.
const burstSettle = 2 * time.Second

// runBurst creates the tasks of a burst, waits until every fire reached
// rec (or the timeout passed) and a little more for duplicates, and
// accounts for them. It fails if creating the tasks did not finish before
// their due instant. The report's scenario, backend, nodes and node stats
// are left to the caller.
func runBurst(ctx context.Context, cfg burstConfig, rec *bench.Recorder) (bench.Report, error) {
	start := time.Now()
	due := start.Add(cfg.lead).Truncate(time.Second).Add(time.Second).UTC()
	fmt.Fprintf(cfg.progress, "bench: %s; creating %d one-off tasks due at %s (in %.0f s)\n",
		cfg.banner, cfg.tasks, due.Format(time.RFC3339), time.Until(due).Seconds())
	ids, err := createOneOffTasks(ctx, cfg.apis, cfg.target, cfg.tasks, due, cfg.progress)
	if err != nil {
		return bench.Report{}, err
	}
	createTime := time.Since(start)
	if !time.Now().Before(due) {
		return bench.Report{}, fmt.Errorf("bench throughput: creating %d tasks took %.1f s, past their due instant: raise --lead (%s)",
			cfg.tasks, createTime.Seconds(), cfg.lead)
	}
	if cfg.created != nil {
		cfg.created()
	}
	fmt.Fprintf(cfg.progress, "bench: created %d tasks in %.1f s; due in %.1f s\n", cfg.tasks, createTime.Seconds(), time.Until(due).Seconds())

	expected := make([]bench.Fire, len(ids))
	want := make(map[bench.Fire]bool, len(ids))
	for i, id := range ids {
		expected[i] = bench.Fire{Task: id, Scheduled: due}
		want[expected[i]] = true
	}
	// distinct counts the expected fires that arrived at least once.
	distinct := func() int {
		seen := make(map[bench.Fire]bool, len(want))
		for _, a := range rec.Arrivals() {
			if f := (bench.Fire{Task: a.Task, Scheduled: a.Scheduled.UTC()}); want[f] {
				seen[f] = true
			}
		}
		return len(seen)
	}

	giveUp := due.Add(cfg.timeout)
	var all time.Time // when every fire had arrived
	var last int64
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return bench.Report{}, ctx.Err()
		case <-tick.C:
		}
		now, n := time.Now(), rec.Count()
		if now.Before(due) {
			fmt.Fprintf(cfg.progress, "bench: due in %.0f s, %d delivered so far\n", due.Sub(now).Seconds(), n)
		} else {
			fmt.Fprintf(cfg.progress, "bench: %.0f s after the due instant, %d/%d delivered so far (%+d)\n",
				now.Sub(due).Seconds(), n, cfg.tasks, n-last)
		}
		last = n
		if all.IsZero() && n >= int64(cfg.tasks) && distinct() == cfg.tasks {
			all = now
		}
		if !all.IsZero() && now.Sub(all) >= burstSettle {
			break
		}
		if now.After(giveUp) {
			fmt.Fprintf(cfg.progress, "bench: gave up %s after the due instant (--timeout) with %d of %d fires delivered\n",
				cfg.timeout, distinct(), cfg.tasks)
			break
		}
	}
	r := bench.AnalyzeBurst(expected, rec.Arrivals(), due)
	r.Tasks, r.CreateSeconds = cfg.tasks, createTime.Seconds()
	return r, nil
}

// Creating the tasks of a burst: batches of createBatch tasks (the most
// POST /api/v1/tasks:batch takes), createParallel requests at a time.
const (
	createBatch    = 1000
	createParallel = 4
)

// createOneOffTasks creates n one-off tasks due at due, calling target,
// through POST /api/v1/tasks:batch of the APIs in turn, and returns their
// IDs. It reports progress every second and stops at the due instant.
// A batch that fails on the way (a network error, a 5xx) is sent again:
// its tasks carry request IDs, so that creates none twice.
func createOneOffTasks(ctx context.Context, apis []string, target string, n int, due time.Time, progress io.Writer) ([]string, error) {
	ctx, cancel := context.WithDeadline(ctx, due)
	defer cancel()
	batches := (n + createBatch - 1) / createBatch
	ids := make([][]string, batches)
	var (
		created  atomic.Int64
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
		next     = make(chan int)
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for range min(createParallel, batches) {
		wg.Go(func() {
			for b := range next {
				lo, hi := b*createBatch, min(n, (b+1)*createBatch)
				got, err := postTaskBatch(ctx, apis[b%len(apis)], target, lo, hi, due)
				if err != nil {
					fail(err)
					continue
				}
				ids[b] = got
				created.Add(int64(hi - lo))
			}
		})
	}
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				fmt.Fprintf(progress, "bench: created %d/%d tasks, due in %.0f s\n", created.Load(), n, time.Until(due).Seconds())
			}
		}
	}()
feed:
	for b := range batches {
		select {
		case next <- b:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(stopProgress)
	<-progressDone
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		if errors.Is(firstErr, context.DeadlineExceeded) && !time.Now().Before(due) {
			return nil, fmt.Errorf("bench throughput: only %d of %d tasks created by their due instant: raise --lead", created.Load(), n)
		}
		return nil, firstErr
	}
	all := make([]string, 0, n)
	for _, b := range ids {
		all = append(all, b...)
	}
	return all, nil
}

// oneOffTask is a task of a burst, as POST /api/v1/tasks:batch takes it.
type oneOffTask struct {
	Name       string `json:"name"`
	RunAt      string `json:"run_at"`
	TargetURL  string `json:"target_url"`
	HTTPMethod string `json:"http_method"`
	RequestID  string `json:"request_id"`
}

// postTaskBatch creates tasks lo to hi (excluded) of a burst in one batch
// and returns their IDs in order, trying again up to three times when the
// request fails on the way or with a 5xx.
func postTaskBatch(ctx context.Context, api, target string, lo, hi int, due time.Time) ([]string, error) {
	tasks := make([]oneOffTask, 0, hi-lo)
	runAt := due.UTC().Format(time.RFC3339Nano)
	for i := lo; i < hi; i++ {
		name := fmt.Sprintf("b-%d", i)
		tasks = append(tasks, oneOffTask{Name: name, RunAt: runAt, TargetURL: target, HTTPMethod: "POST", RequestID: name})
	}
	body, err := json.Marshal(struct {
		Tasks []oneOffTask `json:"tasks"`
	}{tasks})
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		ids, retry, err := postTaskBatchOnce(ctx, api, body, hi-lo)
		if err == nil {
			return ids, nil
		}
		if !retry || attempt == 3 || ctx.Err() != nil {
			return nil, fmt.Errorf("create tasks %d to %d: %w", lo, hi-1, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("create tasks %d to %d: %w", lo, hi-1, err)
		case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
		}
	}
}

// postTaskBatchOnce sends one batch; retry says whether sending it again
// may help.
func postTaskBatchOnce(ctx context.Context, api string, body []byte, n int) (ids []string, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, "POST", api+"/api/v1/tasks:batch", bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, true, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests,
			fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	var out struct {
		Items []struct {
			Status int `json:"status"`
			Task   *struct {
				ID int64 `json:"id"`
			} `json:"task"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, true, fmt.Errorf("decode the answer: %w", err)
	}
	if len(out.Items) != n {
		return nil, false, fmt.Errorf("answer has %d items for %d tasks", len(out.Items), n)
	}
	ids = make([]string, n)
	for i, it := range out.Items {
		// 200: created by an earlier try of this batch, found by its
		// request_id.
		if (it.Status != http.StatusCreated && it.Status != http.StatusOK) || it.Task == nil || it.Task.ID == 0 {
			return nil, false, fmt.Errorf("item %d: status %d, no task", i, it.Status)
		}
		ids[i] = strconv.FormatInt(it.Task.ID, 10)
	}
	return ids, false, nil
}

// startTarget starts the loopback HTTP target every scenario delivers to:
// a Recorder of each request, at targetURL.
func startTarget() (rec *bench.Recorder, targetURL string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	rec = &bench.Recorder{}
	return rec, "http://" + ln.Addr().String() + "/hook", rec.Serve(ln), nil
}

// checkServer checks --server: empty, or the http(s) base URL of a node.
func checkServer(server string) error {
	if server == "" {
		return nil
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--server %q: want the base URL of a running node, such as http://127.0.0.1:8080", server)
	}
	return nil
}

// benchNodes says what is measured: the nodes started, or the server.
func benchNodes(procs []*benchNode, backend, api string) string {
	if procs == nil {
		return "the node at " + api
	}
	return fmt.Sprintf("%d node(s) on %s", len(procs), backend)
}

// deleteBenchTasks deletes the tasks the bench created on a server it did
// not start, saying on progress which it could not.
func deleteBenchTasks(api string, tasks map[string]time.Time, progress io.Writer) {
	failed := 0
	for id := range tasks {
		req, err := http.NewRequest(http.MethodDelete, api+"/api/v1/tasks/"+id, nil)
		if err != nil {
			failed++
			continue
		}
		// Not a web page's request (see docs/security.md).
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			failed++
			continue
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(progress, "bench: %d of the %d tasks created on %s could not be deleted\n", failed, len(tasks), api)
	}
}

// benchNode is one "sundial serve" process started by the bench.
type benchNode struct {
	cmd  *exec.Cmd
	url  string
	id   string
	done chan struct{}
}

// startBenchNode starts "sundial serve" on dsn with workers delivery
// workers; extra are more serve flags (--scheduler.lookahead 30s).
func startBenchNode(dsn string, workers int, extra ...string) (*benchNode, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &benchNode{done: make(chan struct{})}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--db", dsn, "--log.level", "error",
		"--executor.worker_pool_size", fmt.Sprint(workers)}, extra...)
	p.cmd = exec.Command(exe, args...)
	p.cmd.SysProcAttr = benchNodeAttr()
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
	case isPostgres(db):
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
