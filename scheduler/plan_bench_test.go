package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/sqlite"
)

// BenchmarkSteadyWrites measures what 1,000 tasks firing every second
// (created across a second) write to a SQLite database in steady state,
// as the planner, the claimer and the writer drive it, with the store's
// clock simulated (no HTTP, no sleeping): the bytes the process writes to
// the database file and its log a fire (Linux's /proc/self/io), and the
// rows. "lookahead" plans every task up to the lookahead only, a fire of
// each per pass, as before frequent tasks were planned further;
// "refill" plans them up to their refill boundaries (refillAt). It runs
// 160 simulated seconds and counts the last 60.
//
//	go test -run XXX -bench SteadyWrites -benchtime 1x ./scheduler/
func BenchmarkSteadyWrites(b *testing.B) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		b.Skip("needs /proc/self/io")
	}
	for _, c := range []struct {
		name    string
		horizon time.Duration
	}{{"lookahead", 0}, {"refill", DefaultConfig().PlanHorizon}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				bytes, rows := steadyWrites(b, c.horizon)
				b.ReportMetric(bytes, "B/fire")
				b.ReportMetric(rows, "rows/fire")
			}
		})
	}
}

func steadyWrites(b *testing.B, horizon time.Duration) (bytesPerFire, rowsPerFire float64) {
	ctx := context.Background()
	const (
		tasks     = 1000
		lookahead = 10 * time.Second
		claimStep = 50 * time.Millisecond
	)
	t0 := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	now := t0
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "s.db"), sqlite.Options{Clock: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var ts []*sundial.Task
	for i := range tasks {
		tk := &sundial.Task{Name: fmt.Sprint("t", i), CronExpr: "@every 1s", TargetURL: "https://example.com",
			OverlapAction: sundial.OverlapParallel}
		at := t0.Add(time.Duration(i) * time.Second / tasks)
		if err := tk.Normalize(at); err != nil {
			b.Fatal(err)
		}
		tk.NextFireTime = tk.FirstFire(at)
		ts = append(ts, tk)
	}
	if _, err := s.TaskCreateMany(ctx, ts, t0.Add(time.Second)); err != nil {
		b.Fatal(err)
	}
	rowsNow := func() (n int64) {
		for _, r := range s.RowsWritten() {
			n += r.Inserted + r.Updated + r.Deleted
		}
		return n
	}
	var (
		held          []*sundial.Run
		fires         int
		bytes0, rows0 int64
	)
	for step := 0; now.Before(t0.Add(160 * time.Second)); step++ {
		now = t0.Add(time.Second + time.Duration(step)*claimStep)
		if now.Equal(t0.Add(100 * time.Second)) {
			bytes0, rows0 = writtenBytes(b), rowsNow()
		}
		if step%20 == 10 { // a planner pass each second, mid-second
			for {
				n, ahead, kept := 0, 0, 0
				until := now.Add(lookahead)
				keepAfter := now.Add(2*time.Second + DefaultConfig().StartAhead + 2*claimStep)
				_, err := s.PlanDue(ctx, until, DefaultConfig().PlanBatch, "", now, func(tk *sundial.Task) sundial.Plan {
					n++
					h := horizon
					if ahead >= maxPlannedAhead {
						// As planner.planOnce: kept for the next transaction.
						if tk.NextFireTime.After(keepAfter) {
							kept++
							return sundial.Plan{Keep: true}
						}
						h = 0
					}
					p := planTask(tk, now, until, time.Minute, DefaultConfig().MaxRunsPerTask, h, nil)
					for _, r := range p.Runs {
						if r.ScheduledTime.After(until) {
							ahead++
						}
					}
					return p
				})
				if err != nil {
					b.Fatal(err)
				}
				if kept == 0 && n < DefaultConfig().PlanBatch {
					break
				}
			}
		}
		until := now.Add(DefaultConfig().StartAhead + claimStep)
		runs, _, err := s.RunClaimDue(ctx, "node", until, DefaultConfig().ClaimBatch,
			sundial.ClaimStartParams{By: until, FreshAfter: now.Add(-time.Minute)})
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, runs...)
		var done []sundial.RunFinishParams
		rest := held[:0]
		for _, r := range held {
			if r.ScheduledTime.After(now) {
				rest = append(rest, r)
				continue
			}
			done = append(done, sundial.RunFinishParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunSuccess,
				StartedAt: r.ScheduledTime, FinishedAt: now, HTTPStatus: 204})
		}
		held = rest
		if len(done) > 0 {
			if _, err := s.RunFinish(ctx, done); err != nil {
				b.Fatal(err)
			}
			if !now.Before(t0.Add(100 * time.Second)) {
				fires += len(done)
			}
		}
	}
	return float64(writtenBytes(b)-bytes0) / float64(fires), float64(rowsNow()-rows0) / float64(fires)
}

// writtenBytes is what the process has written so far (wchar).
func writtenBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no wchar in /proc/self/io")
	return 0
}
