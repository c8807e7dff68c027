package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/sundialhq/sundial/bench"
)

// failoverReport is what "sundial bench failover" measured: the bench's
// report of the fires, and the kills.
type failoverReport struct {
	bench.Report
	Kills []failoverKill `json:"kills"`
	// ResumeSeconds is the longest time, over the kills, from a kill to
	// the delivery of the last fire due within a second after it: how long
	// the dead node's fires waited.
	ResumeSeconds float64 `json:"resume_seconds"`
	// SameKeyDuplicates counts the duplicates whose deliveries all carried
	// the fire's one Idempotency-Key (every duplicate should).
	SameKeyDuplicates int `json:"same_key_duplicates"`
}

type failoverKill struct {
	Node          string    `json:"node"`
	At            time.Time `json:"at"`
	ResumeSeconds float64   `json:"resume_seconds"`
}

// benchFailover runs tasks firing every second on a cluster and kills one
// node with SIGKILL at a random moment every interval, starting a new one
// in its place, then reports lost and duplicate fires and how long the
// dead nodes' fires took to resume.
func benchFailover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sundial bench failover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 200, "tasks firing every second")
	nodes := fs.Int("nodes", 3, "nodes")
	every := fs.Duration("every", 10*time.Second, "a node is killed at a random moment of every such interval")
	duration := fs.Duration("duration", 60*time.Second, "measured time")
	db := fs.String("db", "", "a postgres:// or mysql:// server, on which a fresh schema or database is made (required)")
	deadAfter := fs.Duration("dead-after", 3*time.Second, "scheduler.dead_after of the nodes (their heartbeat: a third of it, at most 1s, the default)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageErrorf("bench failover: %v", err)
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("bench failover: unexpected argument %q", fs.Arg(0))
	case !strings.HasPrefix(*db, "postgres") && !strings.HasPrefix(*db, "mysql://"):
		return usageErrorf("bench failover: --db %q: want a postgres:// or mysql:// server (a cluster shares one database)", *db)
	case *tasks < 1 || *tasks > 100000:
		return usageErrorf("bench failover: --tasks %d: want from 1 to 100000", *tasks)
	case *nodes < 2 || *nodes > 16:
		return usageErrorf("bench failover: --nodes %d: want from 2 to 16", *nodes)
	case *every < 2*time.Second || *duration < *every:
		return usageErrorf("bench failover: --every wants at least 2s and --duration at least --every")
	}
	dsn, backend, cleanup, err := freshDatabase(*db)
	if err != nil {
		return err
	}
	defer cleanup()

	rec, targetURL, stopTarget, err := startTarget()
	if err != nil {
		return err
	}
	defer stopTarget()

	extra := []string{"--scheduler.dead_after", deadAfter.String(),
		"--scheduler.heartbeat_interval", min(max(*deadAfter/3, 100*time.Millisecond), time.Second).String()}
	var procs []*benchNode
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for range *nodes {
		p, err := startBenchNode(dsn, 16, extra...)
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	fmt.Fprintf(stderr, "bench: %d nodes on %s; creating %d tasks\n", len(procs), backend, *tasks)
	firsts, err := createBenchTasks(ctx, procs[0].url, targetURL, *tasks, "spread")
	if err != nil {
		return err
	}
	from := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	to := from.Add(*duration)
	var expected []bench.Fire
	for task, first := range firsts {
		for at := first; at.Before(to); at = at.Add(time.Second) {
			if !at.Before(from) {
				expected = append(expected, bench.Fire{Task: task, Scheduled: at.UTC()})
			}
		}
	}

	var kills []failoverKill
	time.Sleep(time.Until(from))
	for slot := from; slot.Add(*every).Before(to.Add(time.Millisecond)); slot = slot.Add(*every) {
		at := slot.Add(time.Duration(rand.Int64N(int64(*every - time.Second))))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(at)):
		}
		i := rand.IntN(len(procs))
		victim := procs[i]
		_ = victim.cmd.Process.Kill()
		<-victim.done
		kills = append(kills, failoverKill{Node: victim.id, At: time.Now()})
		fmt.Fprintf(stderr, "bench: killed node %s; %d deliveries so far\n", victim.id, rec.Count())
		p, err := startBenchNode(dsn, 16, extra...)
		if err != nil {
			return err
		}
		procs[i] = p
	}
	// The window's last fires, and any redelivery of a cut-off call.
	time.Sleep(time.Until(to) + *deadAfter + 3*time.Second)

	arrivals := rec.Arrivals()
	r := failoverReport{Report: bench.Analyze(expected, arrivals, from, to), Kills: kills}
	r.Scenario, r.Backend, r.Nodes, r.Tasks = "failover", backend, len(procs), *tasks
	first := map[bench.Fire]time.Time{}
	keys := map[bench.Fire]map[string]bool{}
	count := map[bench.Fire]int{}
	for _, a := range arrivals {
		f := bench.Fire{Task: a.Task, Scheduled: a.Scheduled.UTC()}
		count[f]++
		if t, ok := first[f]; !ok || a.At.Before(t) {
			first[f] = a.At
		}
		if keys[f] == nil {
			keys[f] = map[string]bool{}
		}
		keys[f][a.Key] = true
	}
	for _, f := range expected {
		if len(keys[f]) == 1 {
			r.SameKeyDuplicates += count[f] - 1
		}
	}
	for i, k := range r.Kills {
		for _, f := range expected {
			if f.Scheduled.Before(k.At) || f.Scheduled.After(k.At.Add(time.Second)) {
				continue
			}
			if t, ok := first[f]; ok {
				r.Kills[i].ResumeSeconds = max(r.Kills[i].ResumeSeconds, t.Sub(k.At).Seconds())
			}
		}
		r.ResumeSeconds = max(r.ResumeSeconds, r.Kills[i].ResumeSeconds)
	}
	if err := r.WriteTable(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kills                %d, every %s; fires resumed within %.2f s of a kill (worst)\n",
		len(r.Kills), *every, r.ResumeSeconds)
	fmt.Fprintf(stdout, "duplicates           %d, of which %d with the fire's one Idempotency-Key\n", r.Duplicates, r.SameKeyDuplicates)
	if err := json.NewEncoder(stdout).Encode(r); err != nil {
		return err
	}
	if r.Lost > 0 {
		return fmt.Errorf("bench failover: %d fires lost", r.Lost)
	}
	return nil
}
