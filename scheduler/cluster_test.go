package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/scheduler"
)

// partitioned is a store that a node reaches only while down is false: it
// simulates a network partition between that node and the database.
type partitioned struct {
	sundial.Store
	down atomic.Bool
}

var errUnreachable = errors.New("dial tcp: connect: connection refused")

func (p *partitioned) err() error {
	if p.down.Load() {
		return errUnreachable
	}
	return nil
}

func (p *partitioned) NodeHeartbeat(ctx context.Context, id string) error {
	if err := p.err(); err != nil {
		return err
	}
	return p.Store.NodeHeartbeat(ctx, id)
}

func (p *partitioned) NodeReap(ctx context.Context, d time.Duration, now time.Time) ([]string, error) {
	if err := p.err(); err != nil {
		return nil, err
	}
	return p.Store.NodeReap(ctx, d, now)
}

func (p *partitioned) NodeRegister(ctx context.Context, n *sundial.Node) error {
	if err := p.err(); err != nil {
		return err
	}
	return p.Store.NodeRegister(ctx, n)
}

func (p *partitioned) PlanDue(ctx context.Context, until time.Time, limit int, node string, now time.Time, plan sundial.PlanFunc) ([]*sundial.Run, error) {
	if err := p.err(); err != nil {
		return nil, err
	}
	return p.Store.PlanDue(ctx, until, limit, node, now, plan)
}

func (p *partitioned) RunClaimDue(ctx context.Context, node string, until time.Time, limit int, start sundial.ClaimStartParams) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	if err := p.err(); err != nil {
		return nil, nil, err
	}
	return p.Store.RunClaimDue(ctx, node, until, limit, start)
}

func (p *partitioned) RunStart(ctx context.Context, s []sundial.RunStartParams) ([]bool, error) {
	if err := p.err(); err != nil {
		return nil, err
	}
	return p.Store.RunStart(ctx, s)
}

func (p *partitioned) RunFinish(ctx context.Context, f []sundial.RunFinishParams) ([]bool, error) {
	if err := p.err(); err != nil {
		return nil, err
	}
	return p.Store.RunFinish(ctx, f)
}

func (p *partitioned) RunRedeliver(ctx context.Context, node string, max, limit int, now time.Time) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	if err := p.err(); err != nil {
		return nil, nil, err
	}
	return p.Store.RunRedeliver(ctx, node, max, limit, now)
}

func (p *partitioned) RunCancelRequested(ctx context.Context, node string) ([]int64, error) {
	if err := p.err(); err != nil {
		return nil, err
	}
	return p.Store.RunCancelRequested(ctx, node)
}

func (p *partitioned) RunFindStuck(ctx context.Context, node string, before time.Time, limit int) ([]*sundial.Run, error) {
	if err := p.err(); err != nil {
		return nil, err
	}
	return p.Store.RunFindStuck(ctx, node, before, limit)
}

type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startNode runs a second scheduler on the bundle's target, with store st.
func startNode(t *testing.T, b *bundle, st sundial.Store, id string, log *slog.Logger) (stop func()) {
	t.Helper()
	s, err := scheduler.New(scheduler.Config{Node: sundial.Node{ID: id}, DrainTimeout: time.Second}, st, b.target, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node %s: %v", id, err)
		}
	}
}

// TestLostOwnership: a node cut off from the database finishes a call it
// cannot record; after the dead threshold it stops, another node takes the
// run over and delivers it again (same Idempotency-Key), and when the cut
// off node comes back its late outcome is refused by the fence.
func TestLostOwnership(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{})
		b.target.hold = 2 * time.Second
		start := time.Now()
		part := &partitioned{Store: b.store}
		logA := &syncLog{}
		stopA := startNode(t, b, part, "node-a", slog.New(slog.NewTextHandler(logA, nil)))
		tk := b.addTask(t, "2 0 0 * * *", nil) // fires once, at 00:00:02

		waitUntil(start.Add(2500 * time.Millisecond)) // node-a's call is in flight
		stopB := startNode(t, b, b.store, "node-b", nil)
		waitUntil(start.Add(3500 * time.Millisecond))
		part.down.Store(true) // node-a's call ends at 4 s; it cannot record it
		waitUntil(start.Add(20 * time.Second))
		part.down.Store(false) // node-a's outcome reaches the database late
		waitUntil(start.Add(30 * time.Second))
		stopB()
		stopA()

		calls := b.target.snapshot()
		if len(calls) != 2 || calls[0].node != "node-a" || calls[1].node != "node-b" || calls[0].key != calls[1].key {
			t.Fatalf("deliveries %+v, want node-a's then node-b's, with the same key", calls)
		}
		if calls[1].at.Sub(start) > 10*time.Second {
			t.Errorf("node-b delivered again at +%s, want within the dead threshold and a heartbeat (~9 s)", calls[1].at.Sub(start))
		}
		rs := b.runs(t, tk.ID)
		if len(rs) != 1 || rs[0].Status != sundial.RunSuccess || rs[0].Deliveries != 2 || rs[0].NodeID != "node-b" {
			t.Fatalf("runs = %+v, want one SUCCESS run delivered twice, held by node-b", rs)
		}
		if !strings.Contains(logA.String(), "run outcome refused") {
			t.Errorf("node-a's late outcome was not refused; its log:\n%s", logA)
		}
		if !strings.Contains(logA.String(), "membership expired") {
			t.Errorf("node-a did not stop on losing its membership; its log:\n%s", logA)
		}
	})
}

// TestCancelAcrossNodes: a cancel asked on one node stops a call made by
// another within a second.
func TestCancelAcrossNodes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{Node: sundial.Node{ID: "node-b"}})
		b.target.hold = time.Hour
		start := time.Now()
		stopA := startNode(t, b, b.store, "node-a", nil)
		tk := b.addTask(t, "2 0 0 * * *", nil)
		waitUntil(start.Add(2500 * time.Millisecond)) // node-a's call is in flight
		b.start()                                     // node-b, where the cancel is asked
		rs := b.runs(t, tk.ID)
		if len(rs) != 1 || rs[0].Status != sundial.RunRunning || rs[0].NodeID != "node-a" {
			t.Fatalf("runs = %+v, want one RUNNING on node-a", rs)
		}
		asked := time.Now()
		if _, err := b.sched.Cancel(context.Background(), rs[0].ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		got, err := b.store.RunGet(context.Background(), rs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != sundial.RunCanceled || got.FinishedAt == nil || got.FinishedAt.Sub(asked) > time.Second {
			t.Errorf("run a second after the cancel = %s (finished %v), want CANCELED within 1 s", got.Status, got.FinishedAt)
		}
		b.stop(t)
		stopA()
	})
}

// TestCompensatorStartsStuckRun: a run this node holds but lost track of
// (the hand-off to its dispatcher was lost), due long ago, is found by the
// compensator and started through the normal path; so is one held by a
// node that is gone.
func TestCompensatorStartsStuckRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t, scheduler.Config{Node: sundial.Node{ID: "node-a"}})
		tk := b.addTask(t, "0 0 0 1 1 *", func(tk *sundial.Task) { tk.Status = sundial.TaskDisabled })
		now := time.Now()
		var stuck []*sundial.Run
		for i, holder := range []string{"node-a", "node-gone"} {
			r := &sundial.Run{TaskID: tk.ID, FireKey: fmt.Sprintf("lost:%d", i), Trigger: sundial.TriggerSchedule,
				ScheduledTime: now.Add(-40 * time.Second), Status: sundial.RunScheduled, Attempt: 1,
				NodeID: holder, Fence: 1, CreatedAt: now, UpdatedAt: now}
			if err := b.store.RunInsert(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			stuck = append(stuck, r)
		}
		b.start()
		synctest.Wait()
		if n := len(b.target.snapshot()); n != 0 {
			t.Fatalf("%d deliveries before any compensation round", n)
		}
		b.sched.TriggerCompensation()
		time.Sleep(time.Second)
		calls := b.target.snapshot()
		if len(calls) != 2 {
			t.Fatalf("%d deliveries after the round, want the 2 stuck runs", len(calls))
		}
		for _, r := range stuck {
			got, err := b.store.RunGet(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != sundial.RunSuccess || got.NodeID != "node-a" || got.Fence <= r.Fence {
				t.Errorf("stuck run after compensation = %+v, want SUCCESS on node-a with a new fence", got)
			}
		}
		if st := b.sched.CompensationStatus(); st.Compensated != 2 || st.Multiplier != 1 {
			t.Errorf("compensation status %+v, want 2 compensated at multiplier 1", st)
		}
		b.stop(t)
	})
}

// lossy is a store whose first claim that takes runs commits them and then
// fails, as a claim whose answer cannot be read back does.
type lossy struct {
	sundial.Store
	failed atomic.Bool
	lost   []int64
}

func (l *lossy) RunClaimDue(ctx context.Context, node string, until time.Time, limit int, start sundial.ClaimStartParams) ([]*sundial.Run, map[int64]*sundial.Task, error) {
	runs, tasks, err := l.Store.RunClaimDue(ctx, node, until, limit, start)
	if err == nil && len(runs) > 0 && l.failed.CompareAndSwap(false, true) {
		for _, r := range runs {
			l.lost = append(l.lost, r.ID)
		}
		return nil, nil, errors.New("read the claimed runs' tasks: too many open files")
	}
	return runs, tasks, err
}

// TestLostClaimRecovered: runs a claim committed (RUNNING, held by this
// node) but whose answer the node never got are not forgotten: the
// compensator finds them held by a live node that has no call for them,
// records the lost delivery INTERRUPTED and delivers them again.
func TestLostClaimRecovered(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var l *lossy
		b := setupWith(t, scheduler.Config{Compensator: scheduler.CompensatorConfig{Base: time.Second, Increment: time.Second,
			Threshold: 5 * time.Second}}, func(s sundial.Store) sundial.Store { l = &lossy{Store: s}; return l })
		tk := b.addTask(t, "* * * * * *", nil)
		b.start()
		time.Sleep(20 * time.Second)
		b.stop(t)

		if len(l.lost) == 0 {
			t.Fatal("no claim was lost: the test did not exercise anything")
		}
		delivered := map[int64]int{}
		for _, c := range b.target.snapshot() {
			delivered[c.runID]++
		}
		for _, id := range l.lost {
			r, err := b.store.RunGet(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			attempts, err := b.store.RunAttempts(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != sundial.RunSuccess || delivered[id] != 1 || len(attempts) != 2 ||
				attempts[0].Status != sundial.RunInterrupted || attempts[1].Status != sundial.RunSuccess {
				t.Errorf("lost run %d: %s, %d calls, attempts %+v; want SUCCESS after one call, the lost delivery INTERRUPTED",
					id, r.Status, delivered[id], attempts)
			}
		}
		for _, r := range b.runs(t, tk.ID) {
			if r.Status == sundial.RunRunning {
				t.Errorf("run %d still RUNNING after the node stopped", r.ID)
			}
		}
	})
}
