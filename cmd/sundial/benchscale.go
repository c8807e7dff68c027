package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/sundialhq/sundial/bench"
)

// scaleReport is what "sundial bench scale" measured, for one number of
// stored tasks.
type scaleReport struct {
	Kind           string            `json:"kind"` // cron, or oneoff
	Tasks          int               `json:"tasks"`
	Minutely       int               `json:"minutely_tasks"` // oneoff: the tasks due in the idle window
	CreateSeconds  float64           `json:"create_seconds"`
	StartupSeconds float64           `json:"startup_seconds"` // process start to /readyz 200, with the tasks stored
	RSSBytes       int64             `json:"rss_bytes"`       // peak resident memory of the restarted node
	IdleCPU        float64           `json:"idle_cpu_per_second"`
	IdleSeconds    float64           `json:"idle_seconds"`
	Fires          int               `json:"fires_expected"`
	Received       int               `json:"fires_received"`
	Lost           int               `json:"lost"`
	Duplicates     int               `json:"duplicates"`
	LagMS          bench.Percentiles `json:"lag_ms"`
}

// benchScale stores many cron tasks (or, with --oneoff, one-off tasks due
// days ahead) and measures what holding them costs: how long a node takes
// to start with them, its memory, and its CPU per second while only a few
// of them fire, against the same measured with a thousand tasks.
func benchScale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sundial bench scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 1_000_000, "tasks stored: the --minutely ones fire every minute, 90% of the rest hourly, 10% daily (--oneoff: the rest are due in 1 to 30 days)")
	baseline := fs.Int("baseline", 1000, "tasks of the comparison run (0: none)")
	minutely := fs.Int("minutely", 100, "tasks firing every minute (--oneoff: due once each, spread over the idle window), whose lag is measured")
	oneoff := fs.Bool("oneoff", false, "store one-off tasks due in 1 to 30 days instead of cron tasks (the --minutely ones are due in the idle window)")
	idle := fs.Duration("idle", 30*time.Second, "measured time at idle")
	settle := fs.Duration("settle", 10*time.Second, "wait after the restart before measuring")
	db := fs.String("db", "sqlite", "sqlite (a fresh file), or a postgres:// or mysql:// server, on which a fresh schema or database is made")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageErrorf("bench scale: %v", err)
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("bench scale: unexpected argument %q", fs.Arg(0))
	case *tasks < 1 || *tasks > 10_000_000:
		return usageErrorf("bench scale: --tasks %d: want from 1 to 10000000", *tasks)
	case *minutely < 0 || *minutely > *tasks || (*baseline > 0 && *minutely > *baseline):
		return usageErrorf("bench scale: --minutely %d: want from 0 to --tasks and --baseline", *minutely)
	case *idle < 5*time.Second:
		return usageErrorf("bench scale: --idle %s: want at least 5s", *idle)
	case *settle < 0:
		return usageErrorf("bench scale: --settle %s: must not be negative", *settle)
	}
	kind := "cron"
	if *oneoff {
		kind = "oneoff"
	}
	var reports []scaleReport
	for _, n := range []int{*baseline, *tasks} {
		if n <= 0 {
			continue
		}
		r, err := runScale(ctx, *db, kind, n, *minutely, *idle, *settle, stderr)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "kind\ttasks\tcreate s\tstart-up s\tpeak RSS MB\tidle CPU s/s\tfires\tlost\tdup\tlag p50 ms\tp99 ms\tmax ms\n")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.1f\t%.4f\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\n", r.Kind, r.Tasks, r.CreateSeconds, r.StartupSeconds,
			float64(r.RSSBytes)/1e6, r.IdleCPU, r.Fires, r.Lost, r.Duplicates, r.LagMS.P50, r.LagMS.P99, r.LagMS.Max)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"scenario": "scale", "backend": *db, "kind": kind, "runs": reports})
}

// restartAllowance is how long the node of a one-off run may take to stop
// and start again: the tasks due in the idle window are created before the
// restart, due from this plus --settle after their creation.
const restartAllowance = 5 * time.Second

// runScale measures one number of stored tasks of a kind (cron, oneoff) on
// a fresh database.
func runScale(ctx context.Context, db, kind string, n, minutely int, idle, settle time.Duration, progress io.Writer) (scaleReport, error) {
	r := scaleReport{Kind: kind, Tasks: n, Minutely: minutely, IdleSeconds: idle.Seconds()}
	dsn, _, cleanup, err := freshDatabase(db)
	if err != nil {
		return r, err
	}
	defer cleanup()
	rec, targetURL, stopTarget, err := startTarget()
	if err != nil {
		return r, err
	}
	defer stopTarget()

	node, err := startBenchNode(dsn, 16)
	if err != nil {
		return r, err
	}
	start := time.Now()
	var (
		ids  []string
		from time.Time // the measured window's start; oneoff: fixed at creation
		due  func(i int) time.Time
	)
	if kind == "oneoff" {
		// The far tasks first, then the measured ones, due in a window
		// that starts once the node has restarted and settled.
		_, err = createScaleTasks(ctx, node.url, targetURL, minutely, n, 0, farOneOff(start, n), progress)
		if err == nil {
			from = time.Now().Add(restartAllowance + settle).Truncate(time.Second).Add(time.Second).UTC()
			due = func(i int) time.Time { return spreadOver(from, idle, i, minutely) }
			ids, err = createScaleTasks(ctx, node.url, targetURL, 0, minutely, minutely,
				func(i int) (string, any) { return "run_at", due(i).Format(time.RFC3339) }, progress)
		}
	} else {
		ids, err = createScaleTasks(ctx, node.url, targetURL, 0, n, minutely, scaleCron(start, minutely), progress)
	}
	if err != nil {
		node.stop()
		return r, err
	}
	r.CreateSeconds = time.Since(start).Seconds()
	node.stop()

	// Start again with every task stored: the start-up a restart costs.
	t0 := time.Now()
	node, err = startBenchNode(dsn, 16)
	if err != nil {
		return r, err
	}
	defer node.stop()
	if err := waitReady(ctx, node.url, time.Minute); err != nil {
		return r, err
	}
	r.StartupSeconds = time.Since(t0).Seconds()
	fmt.Fprintf(progress, "bench: %d %s tasks stored; node ready in %.2f s; settling\n", n, kind, r.StartupSeconds)

	// Let the planner catch up after the restart, then measure.
	if from.IsZero() {
		time.Sleep(settle)
		from = time.Now().Truncate(time.Second).Add(time.Second)
	} else if time.Now().After(from) {
		return r, fmt.Errorf("bench scale: the node took over %s to stop and start again, past the due tasks' window", restartAllowance)
	}
	time.Sleep(time.Until(from))
	cpu0, _, err := bench.ReadProc(node.cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	to := from.Add(idle)
	for time.Now().Before(to) {
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(min(5*time.Second, time.Until(to))):
		}
		fmt.Fprintf(progress, "bench: %d tasks, measuring idle %.0f/%.0f s\n", n, min(time.Since(from), idle).Seconds(), idle.Seconds())
	}
	cpu1, rss, err := bench.ReadProc(node.cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	r.IdleCPU = (cpu1 - cpu0) / idle.Seconds()
	r.RSSBytes = rss
	time.Sleep(2 * time.Second) // the window's last fires

	// The minutely cron tasks fire at second i%60 of every minute; the
	// measured one-off tasks once each, when due.
	var expected []bench.Fire
	for i := range minutely {
		if due != nil {
			expected = append(expected, bench.Fire{Task: ids[i], Scheduled: due(i)})
			continue
		}
		for m := from.Truncate(time.Minute).Add(-time.Minute); m.Before(to); m = m.Add(time.Minute) {
			at := m.Add(time.Duration(i%60) * time.Second)
			if !at.Before(from) && at.Before(to) {
				expected = append(expected, bench.Fire{Task: ids[i], Scheduled: at.UTC()})
			}
		}
	}
	a := bench.Analyze(expected, rec.Arrivals(), from, to)
	r.Fires, r.Received, r.Lost, r.Duplicates, r.LagMS = a.Expected, a.Received, a.Lost, a.Duplicates, a.LagMS
	return r, nil
}

// spreadOver is the whole second at which the i-th of n fires spread
// evenly over the window of length d from from is due.
func spreadOver(from time.Time, d time.Duration, i, n int) time.Time {
	return from.Add(d / time.Duration(n) * time.Duration(i)).Truncate(time.Second) // i*d would overflow for days
}

// scaleCron is the schedule of the cron tasks: the first minutely fire
// every minute (at second i%60); of the rest, 90% fire hourly and 10%
// daily, all in a band of the hour (and of the day) far from now, so that
// the measured window sees only the minutely ones fire.
func scaleCron(now time.Time, minutely int) func(i int) (string, any) {
	quietMinute := (now.UTC().Minute() + 30) % 60 // hourly tasks fire in the 20 minutes from here
	quietHour := (now.UTC().Hour() + 12) % 24
	return func(i int) (string, any) {
		sec := i % 60
		switch {
		case i < minutely:
			return "cron_expr", fmt.Sprintf("%d * * * * *", sec)
		case i%10 != 0:
			return "cron_expr", fmt.Sprintf("%d %d * * * *", sec, (quietMinute+i/60%20)%60)
		default:
			return "cron_expr", fmt.Sprintf("%d %d %d * * *", sec, i/60%60, quietHour)
		}
	}
}

// farOneOff is the schedule of the one-off tasks that stay pending: of n,
// task i is due at the i-th of n instants spread over 1 to 30 days from now.
func farOneOff(now time.Time, n int) func(i int) (string, any) {
	from := now.Add(24 * time.Hour).UTC()
	return func(i int) (string, any) {
		return "run_at", spreadOver(from, 29*24*time.Hour, i, n).Format(time.RFC3339)
	}
}

// createScaleTasks creates tasks lo to hi (excluded) through POST
// /tasks:batch: task i is named s-i, calls target, and has the schedule
// field (cron_expr or run_at) schedule(i) returns. It returns the IDs of
// the tasks from lo below keep, in order.
func createScaleTasks(ctx context.Context, api, target string, lo, hi, keep int, schedule func(i int) (string, any), progress io.Writer) ([]string, error) {
	n := hi - lo
	batches := (n + createBatch - 1) / createBatch
	kept := make([]string, max(0, min(hi, keep)-lo))
	var (
		wg      sync.WaitGroup
		next    = make(chan int)
		created atomic.Int64
		errOnce sync.Once
		first   error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range createParallel {
		wg.Go(func() {
			for b := range next {
				blo, bhi := lo+b*createBatch, min(hi, lo+(b+1)*createBatch)
				items := make([]map[string]any, 0, bhi-blo)
				for i := blo; i < bhi; i++ {
					key, value := schedule(i)
					items = append(items, map[string]any{"name": fmt.Sprintf("s-%d", i), key: value,
						"target_url": target, "overlap_action": "PARALLEL"})
				}
				body, _ := json.Marshal(map[string]any{"tasks": items})
				ids, _, err := postTaskBatchOnce(ctx, api, body, bhi-blo)
				if err != nil {
					errOnce.Do(func() { first = fmt.Errorf("create tasks %d to %d: %w", blo, bhi-1, err); cancel() })
					continue
				}
				for i := blo; i < min(bhi, lo+len(kept)); i++ {
					kept[i-lo] = ids[i-blo]
				}
				if c := created.Add(int64(bhi - blo)); c%100_000 < int64(bhi-blo) {
					fmt.Fprintf(progress, "bench: created %d/%d tasks\n", c, n)
				}
			}
		})
	}
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
	if first != nil {
		return nil, first
	}
	return kept, ctx.Err()
}

// waitReady polls /readyz until it answers 200.
func waitReady(ctx context.Context, api string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, "GET", api+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("node not ready within %s", limit)
}
