package bench

import (
	"context"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundialhq/sundial/store/postgres"
)

// TestDurableFloor runs the durable floor on a small burst against the
// PostgreSQL server of SUNDIAL_TEST_POSTGRES (skipped without, but never
// under CI=true): every job arrives once, each with its row done, and the
// schema it made is gone after.
func TestDurableFloor(t *testing.T) {
	t.Parallel()
	dsn := floorDSN(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var progress strings.Builder
	r, err := DurableFloor(ctx, DurableFloorConfig{DSN: dsn, Tasks: 500, Senders: 8, Timeout: 10 * time.Second, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if r.Tasks != 500 || r.Claimers != durableClaimers || r.Batch != durableBatch || r.Senders != 8 {
		t.Errorf("result %+v, want 500 tasks, %d claimers of %d, 8 senders", r, durableClaimers, durableBatch)
	}
	if r.LastDeliverySeconds <= 0 || r.DoneSeconds < r.LastDeliverySeconds || r.DeliveriesPerSecond <= 0 ||
		r.LagMS.Max <= 0 || r.LagMS.P50 > r.LagMS.Max || math.Abs(r.LagMS.Max/1000-r.LastDeliverySeconds) > 1e-6 {
		t.Errorf("result %+v, want a last delivery after the instant, done after it, a rate and lags", r)
	}
	if !strings.Contains(progress.String(), "500 delivered in") {
		t.Errorf("no summary in the progress:\n%s", progress.String())
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := strings.Fields(progress.String()[strings.Index(progress.String(), "in schema ")+len("in schema "):])[0]
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&left); err != nil || left != 0 {
		t.Errorf("schema %s: %d left (%v), want it dropped", schema, left, err)
	}
}

// TestDurableFloorBadDSN fails before touching any server, without
// quoting the DSN.
func TestDurableFloorBadDSN(t *testing.T) {
	t.Parallel()
	_, err := DurableFloor(t.Context(), DurableFloorConfig{DSN: "postgres://u:secret@[::1", Tasks: 1, Senders: 1, Timeout: time.Second})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("err = %v, want an error that does not quote the DSN", err)
	}
}

// TestDurableFloorRunsIndexes: with RunsIndexes, the durable floor's table
// of jobs has indexes of the same shapes as Sundial's runs table on
// PostgreSQL once migrated, and a burst on it delivers every job once.
func TestDurableFloorRunsIndexes(t *testing.T) {
	t.Parallel()
	dsn := floorDSN(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The shape of each of a table's indexes but the one its claims read
	// (the floor's has no priority), sorted: unique or not, its key
	// columns, partial or not.
	indexes := func(schema, table, claims string) []string {
		t.Helper()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var shapes []string
		if err := conn.QueryRow(ctx, `
			SELECT coalesce(array_agg(format('unique=%s keys=%s partial=%s', i.indisunique, i.indnkeyatts, i.indpred IS NOT NULL)), '{}')
			FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relname = $2 AND i.indexrelid <> to_regclass(format('%I.%I', $1::text, $3::text))`,
			schema, table, claims).Scan(&shapes); err != nil {
			t.Fatal(err)
		}
		slices.Sort(shapes)
		return shapes
	}
	schema := func(name string) string {
		t.Helper()
		drop, err := floorSchema(ctx, cfg, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := drop(); err != nil {
				t.Errorf("drop schema %s: %v", name, err)
			}
		})
		return name
	}

	runs := schema("sundial_floor_runs_" + floorSuffix())
	st, err := postgres.Open(ctx, withSearchPath(t, dsn, runs), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	jobs := schema("sundial_floor_jobs_" + floorSuffix())
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pcfg.ConnConfig.RuntimeParams["search_path"] = jobs
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := floorLoad(ctx, pool, 10, time.Now(), true); err != nil {
		t.Fatal(err)
	}
	if got, want := indexes(jobs, "jobs", "jobs_pending"), indexes(runs, "runs", "runs_unclaimed"); !slices.Equal(got, want) || len(want) < 7 {
		t.Errorf("the floor's jobs have the indexes %q with RunsIndexes, Sundial's runs %q: floorRunsIndexes is out of date", got, want)
	}

	var progress strings.Builder
	r, err := DurableFloor(ctx, DurableFloorConfig{DSN: dsn, Tasks: 300, Senders: 8, Timeout: 10 * time.Second,
		Progress: &progress, RunsIndexes: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if !r.RunsIndexes || r.Tasks != 300 || r.DeliveriesPerSecond <= 0 {
		t.Errorf("result %+v, want 300 jobs delivered with the runs' indexes", r)
	}
}

// withSearchPath is dsn, a URL or keyword/value pairs, working in schema.
func withSearchPath(t *testing.T, dsn, schema string) string {
	t.Helper()
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// floorDSN is the PostgreSQL server of SUNDIAL_TEST_POSTGRES; without
// one, the test is skipped, but fails under CI=true.
func floorDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("SUNDIAL_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("SUNDIAL_TEST_POSTGRES is not set: CI must run the PostgreSQL tests")
		}
		t.Skip("set SUNDIAL_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run the durable floor")
	}
	return dsn
}
