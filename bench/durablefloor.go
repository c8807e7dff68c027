package bench

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"
)

// The durable floor's shape: claimers claim batches of durableBatch jobs
// each, one statement a batch, while the others' jobs are sent
// (pipelining), and the outcome writer records up to durableBatch
// outcomes a statement.
const (
	durableClaimers = 2
	durableBatch    = 250
)

// DurableFloorConfig is a durable floor's burst.
type DurableFloorConfig struct {
	DSN      string        // a postgres:// server, on which a schema of its own is made and dropped after
	Tasks    int           // jobs, all due at one instant
	Senders  int           // goroutines sending the deliveries
	Timeout  time.Duration // how long after the due instant to wait for the last delivery
	Progress io.Writer     // a line a second; nil for none
	// RunsIndexes gives the table of jobs the indexes of Sundial's runs
	// table on PostgreSQL as well (floorRunsIndexes), so that the floor
	// with and without them says what they cost a burst.
	RunsIndexes bool
}

// DurableFloorResult is what the durable floor measured.
type DurableFloorResult struct {
	Tasks               int         `json:"tasks"`
	Claimers            int         `json:"claimers"`
	Batch               int         `json:"batch"`
	Senders             int         `json:"senders"`
	RunsIndexes         bool        `json:"runs_indexes,omitempty"` // the table had the indexes of Sundial's runs too
	LoadSeconds         float64     `json:"load_seconds"`           // the rows copied in and vacuumed, not timed in the rate
	LastDeliverySeconds float64     `json:"last_delivery_seconds"`  // the last arrival minus the due instant
	DoneSeconds         float64     `json:"done_seconds"`           // the last outcome committed minus the due instant
	DeliveriesPerSecond float64     `json:"deliveries_per_second"`  // tasks / last_delivery_seconds
	LagMS               Percentiles `json:"lag_ms"`
}

// DurableFloor measures the least a scheduler can do to deliver a burst
// at least once with a database record of each job: a bare pgx program,
// no scheduler. In a schema of its own it makes one table of jobs with a
// partial index on the pending ones, copies in cfg.Tasks jobs due at one
// whole second a few seconds ahead and vacuums them (not timed). At the
// instant, durableClaimers claimers each claim durableBatch due jobs in
// one committed statement (the durability: a job is marked running before
// it is sent) and hand them to cfg.Senders goroutines, which POST each
// with the headers of a delivery of Sundial's over keep-alive connections
// (warmed beforehand) to a Recorder of its own; one writer records the
// outcomes, as many as have piled up up to durableBatch a statement. It
// fails unless every job arrived exactly once and every row ended done.
// The rate is the jobs over the time from the instant to the last
// arrival, as AnalyzeBurst takes a scheduler's.
func DurableFloor(ctx context.Context, cfg DurableFloorConfig) (DurableFloorResult, error) {
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	n := cfg.Tasks
	if n < 1 || cfg.Senders < 1 || cfg.Timeout <= 0 {
		return DurableFloorResult{}, fmt.Errorf("durable floor: %d tasks, %d senders, timeout %s: want at least 1 of each", n, cfg.Senders, cfg.Timeout)
	}
	res := DurableFloorResult{Tasks: n, Claimers: durableClaimers, Batch: durableBatch, Senders: cfg.Senders, RunsIndexes: cfg.RunsIndexes}

	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		// The parser's message may quote the DSN, password included.
		return res, errors.New("durable floor: the DSN is not a valid connection string")
	}
	schema := "sundial_floor_" + floorSuffix()
	drop, err := floorSchema(ctx, pcfg.ConnConfig, schema)
	if err != nil {
		return res, err
	}
	defer func() {
		if err := drop(); err != nil {
			fmt.Fprintf(progress, "bench: durable floor: schema %s left behind: %v\n", schema, err)
		}
	}()
	pcfg.ConnConfig.RuntimeParams["search_path"] = schema
	pcfg.MaxConns = durableClaimers + 2 // the claimers, the writer, one for the rest
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return res, fmt.Errorf("durable floor: connect: %w", err)
	}
	defer pool.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, fmt.Errorf("durable floor: listen: %w", err)
	}
	rec := &Recorder{}
	stop := rec.Serve(ln)
	defer stop()
	url := "http://" + ln.Addr().String() + "/hook"
	t := &http.Transport{MaxIdleConnsPerHost: max(cfg.Senders, 512), IdleConnTimeout: time.Minute}
	defer t.CloseIdleConnections()
	client := &http.Client{Transport: t}

	// Not timed: the table, its rows, warm connections to the database and
	// to the target. The rows are due at a whole second at least 2 s after
	// the load should end; a load that ends later dates them again.
	start := time.Now()
	due := floorDue(start.Add(2*time.Second + time.Duration(n)*20*time.Microsecond))
	fmt.Fprintf(progress, "bench: durable floor: loading %d jobs in schema %s\n", n, schema)
	if err := floorLoad(ctx, pool, n, due, cfg.RunsIndexes); err != nil {
		return res, err
	}
	if err := floorWarm(ctx, pool, int(pcfg.MaxConns)); err != nil {
		return res, err
	}
	if err := burst(ctx, client, url, cfg.Senders, cfg.Senders, time.Time{}); err != nil {
		return res, fmt.Errorf("durable floor: warm %d connections: %w", cfg.Senders, err)
	}
	// The untimed work may have run past the instant: date the jobs
	// again, as often as it takes to be ahead of it.
	for time.Until(due) < time.Second {
		fmt.Fprintf(progress, "bench: durable floor: the load ran to %.1f s before the instant; the jobs are dated again\n", time.Until(due).Seconds())
		due = floorDue(time.Now().Add(2 * time.Second))
		if _, err := pool.Exec(ctx, `UPDATE jobs SET due_at = $1`, due.UnixMicro()); err != nil {
			return res, fmt.Errorf("durable floor: date the jobs again: %w", err)
		}
		if _, err := pool.Exec(ctx, `VACUUM ANALYZE jobs`); err != nil {
			return res, fmt.Errorf("durable floor: vacuum: %w", err)
		}
	}
	warm := rec.Count()
	res.LoadSeconds = time.Since(start).Seconds()
	fmt.Fprintf(progress, "bench: durable floor: %d jobs loaded in %.1f s, due at %s (in %.1f s); %d claimers of %d, %d senders\n",
		n, res.LoadSeconds, due.Format(time.RFC3339), time.Until(due).Seconds(), durableClaimers, durableBatch, cfg.Senders)

	runCtx, cancel := context.WithDeadline(ctx, due.Add(cfg.Timeout))
	defer cancel()
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case now := <-tick.C:
				if now.Before(due) {
					fmt.Fprintf(progress, "bench: durable floor: due in %.0f s\n", due.Sub(now).Seconds())
					continue
				}
				fmt.Fprintf(progress, "bench: durable floor: %.0f s after the due instant, %d/%d delivered so far\n",
					now.Sub(due).Seconds(), rec.Count()-warm, n)
			}
		}
	}()
	var done time.Time
	select {
	case <-runCtx.Done():
		err = runCtx.Err()
	case <-time.After(time.Until(due)):
		done, err = floorRun(runCtx, pool, client, url, n, cfg.Senders, due)
	}
	close(stopProgress)
	<-progressDone
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return res, fmt.Errorf("durable floor: not done %s after the due instant, %d/%d delivered", cfg.Timeout, rec.Count()-warm, n)
		}
		return res, fmt.Errorf("durable floor: %w", err)
	}

	var pending int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE state <> 'done'`).Scan(&pending); err != nil {
		return res, fmt.Errorf("durable floor: count the jobs not done: %w", err)
	}
	arrived := rec.Arrivals()[warm:]
	seen := make(map[string]bool, n)
	var last time.Time
	for _, a := range arrived {
		if !a.Scheduled.Equal(due) {
			continue
		}
		seen[a.Task] = true
		if a.At.After(last) {
			last = a.At
		}
	}
	if lost, dups := n-len(seen), len(arrived)-len(seen); lost != 0 || dups != 0 || pending != 0 {
		return res, fmt.Errorf("durable floor: %d of %d jobs lost, %d duplicate deliveries, %d rows not done", lost, n, dups, pending)
	}
	res.LastDeliverySeconds = last.Sub(due).Seconds()
	res.DoneSeconds = done.Sub(due).Seconds()
	if res.LastDeliverySeconds > 0 {
		res.DeliveriesPerSecond = float64(n) / res.LastDeliverySeconds
	}
	res.LagMS = floorLags(arrived, []time.Time{due})
	fmt.Fprintf(progress, "bench: durable floor: %d delivered in %.3f s after the due instant (%.0f per second), all recorded done in %.3f s\n",
		n, res.LastDeliverySeconds, res.DeliveriesPerSecond, res.DoneSeconds)
	return res, nil
}

// floorDue is the whole second at or after t.
func floorDue(t time.Time) time.Time {
	return t.Add(time.Second - 1).Truncate(time.Second).UTC()
}

// floorSchema makes the schema and returns the function that drops it,
// which works on after ctx is cancelled.
func floorSchema(ctx context.Context, conn *pgx.ConnConfig, schema string) (drop func() error, err error) {
	ident := pgx.Identifier{schema}.Sanitize()
	admin := func(ctx context.Context, stmt string) error {
		c, err := pgx.ConnectConfig(ctx, conn.Copy())
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, stmt)
		return err
	}
	if err := admin(ctx, "CREATE SCHEMA "+ident); err != nil {
		return nil, fmt.Errorf("durable floor: create schema: %w", err)
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return admin(ctx, "DROP SCHEMA "+ident+" CASCADE")
	}, nil
}

// floorRunsIndexes are the indexes of Sundial's runs table on PostgreSQL
// besides its primary key and runs_unclaimed (which jobs_pending is), on
// the columns of the table of jobs that stand for theirs: a job is the run
// of a one-off task of its own (task_id), due at due_at (scheduled_at),
// whose state and node are its status and node_id, and which is final when
// done. A job's claim and outcome then add the entries a run's do: one to
// each full index, and to jobs_created at the outcome.
var floorRunsIndexes = []string{
	`CREATE UNIQUE INDEX jobs_fire ON jobs (task_id, fire_key)`,
	`CREATE INDEX jobs_task_status ON jobs (task_id, state, due_at, id)`,
	`CREATE INDEX jobs_state_node ON jobs (state, node)`,
	`CREATE INDEX jobs_created ON jobs (created_at, id) WHERE state = 'done'`,
	`CREATE INDEX jobs_waiting ON jobs (due_at) WHERE state = 'waiting'`,
	`CREATE INDEX jobs_task_due ON jobs (task_id, due_at, id)`,
	`CREATE INDEX jobs_due ON jobs (due_at, id)`,
}

// floorLoad makes the table of jobs (with floorRunsIndexes when
// runsIndexes), copies in n pending jobs due at due, and vacuums and
// analyzes it. Times are microseconds since the epoch.
func floorLoad(ctx context.Context, pool *pgxpool.Pool, n int, due time.Time, runsIndexes bool) error {
	for _, stmt := range []string{
		`CREATE TABLE jobs (
			id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			task_id bigint GENERATED ALWAYS AS (id) STORED,
			fire_key text NOT NULL DEFAULT 'at',
			due_at bigint NOT NULL,
			state text NOT NULL,
			node text NOT NULL DEFAULT '',
			created_at bigint NOT NULL DEFAULT 0,
			started_at bigint,
			finished_at bigint,
			http_status int NOT NULL DEFAULT 0
		)`,
		`CREATE INDEX jobs_pending ON jobs (due_at, id) WHERE state = 'pending'`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("durable floor: create the table: %w", err)
		}
	}
	at := due.UnixMicro()
	copied, err := pool.CopyFrom(ctx, pgx.Identifier{"jobs"}, []string{"due_at", "state"},
		pgx.CopyFromSlice(n, func(int) ([]any, error) { return []any{at, "pending"}, nil }))
	if err != nil {
		return fmt.Errorf("durable floor: copy the jobs: %w", err)
	}
	if copied != int64(n) {
		return fmt.Errorf("durable floor: copied %d jobs of %d", copied, n)
	}
	if runsIndexes {
		// Built on the rows copied in, which is quicker than adding
		// each row to them.
		for _, stmt := range floorRunsIndexes {
			if _, err := pool.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("durable floor: index the table: %w", err)
			}
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE jobs`); err != nil {
		return fmt.Errorf("durable floor: vacuum: %w", err)
	}
	return nil
}

// floorWarm opens k connections of the pool and gives them back, so the
// burst finds them open.
func floorWarm(ctx context.Context, pool *pgxpool.Pool, k int) error {
	conns := make([]*pgxpool.Conn, 0, k)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range k {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("durable floor: connect: %w", err)
		}
		conns = append(conns, c)
	}
	return nil
}

// floorOutcome is one delivery's outcome, to be recorded.
type floorOutcome struct {
	id         int64
	status     int32
	finishedAt int64
}

// floorRun delivers the n jobs due at due, from the instant on: claimers,
// senders and the outcome writer, as DurableFloor says. It returns when
// the last outcome was committed.
func floorRun(ctx context.Context, pool *pgxpool.Pool, client *http.Client, url string, n, senders int, due time.Time) (time.Time, error) {
	g, ctx := errgroup.WithContext(ctx)
	ids := make(chan int64, durableBatch)
	outcomes := make(chan floorOutcome, durableBatch)
	sched := due.UTC().Format(time.RFC3339Nano)

	// The claimers close ids when they end, the senders outcomes; an
	// error of any part cancels the others.
	var claimed atomic.Int64
	var claimers, sending sync.WaitGroup
	for range durableClaimers {
		claimers.Add(1)
		g.Go(func() error {
			defer claimers.Done()
			for claimed.Load() < int64(n) {
				now := time.Now().UnixMicro()
				rows, _ := pool.Query(ctx, `
					UPDATE jobs SET state = 'running', node = $1, started_at = $2
					WHERE id IN (
						SELECT id FROM jobs WHERE state = 'pending' AND due_at <= $3
						ORDER BY due_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
					RETURNING id`, "floor", now, now, durableBatch)
				got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
				if err != nil {
					return fmt.Errorf("claim: %w", err)
				}
				claimed.Add(int64(len(got)))
				if len(got) == 0 {
					// The rest are locked by the other claimer's statement.
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(time.Millisecond):
					}
				}
				for _, id := range got {
					select {
					case ids <- id:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
			return nil
		})
	}
	go func() { claimers.Wait(); close(ids) }()
	for range senders {
		sending.Add(1)
		g.Go(func() error {
			defer sending.Done()
			for id := range ids {
				s := strconv.FormatInt(id, 10)
				status, err := send(ctx, client, url, s, sched)
				if err != nil {
					return fmt.Errorf("send job %s: %w", s, err)
				}
				select {
				case outcomes <- floorOutcome{id, int32(status), time.Now().UnixMicro()}:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
	}
	go func() { sending.Wait(); close(outcomes) }()

	var done time.Time
	g.Go(func() error {
		var (
			batch    []floorOutcome
			id       = make([]int64, 0, durableBatch)
			status   = make([]int32, 0, durableBatch)
			finished = make([]int64, 0, durableBatch)
		)
		for o := range outcomes {
			batch = append(batch[:0], o)
		more:
			for len(batch) < durableBatch {
				select {
				case o, ok := <-outcomes:
					if !ok {
						break more
					}
					batch = append(batch, o)
				default:
					break more
				}
			}
			id, status, finished = id[:0], status[:0], finished[:0]
			for _, o := range batch {
				id, status, finished = append(id, o.id), append(status, o.status), append(finished, o.finishedAt)
			}
			tag, err := pool.Exec(ctx, `
				UPDATE jobs SET state = 'done', finished_at = o.finished_at, http_status = o.status
				FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS o(id, status, finished_at)
				WHERE jobs.id = o.id`, id, status, finished)
			if err != nil {
				return fmt.Errorf("record outcomes: %w", err)
			}
			if tag.RowsAffected() != int64(len(batch)) {
				return fmt.Errorf("record outcomes: %d rows updated for %d outcomes", tag.RowsAffected(), len(batch))
			}
		}
		done = time.Now()
		return nil
	})
	err := g.Wait()
	return done, err
}

// floorSuffix is a random name's end.
func floorSuffix() string {
	b := make([]byte, 5)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}
