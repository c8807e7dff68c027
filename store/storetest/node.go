package storetest

import (
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// overdue is a deadAfter that makes every ALIVE node's heartbeat too old
// without waiting: the cutoff lies an hour in the future.
const overdue = -time.Hour

func testNode(t *testing.T, open Opener) {
	t.Run("RegisterHeartbeatList", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		before := time.Now()
		n1 := &sundial.Node{ID: "host-1-aaaa", Host: "host", PID: 1, Address: "10.0.0.1:7070"}
		if err := f.s.NodeRegister(f.ctx, n1); err != nil {
			t.Fatalf("NodeRegister: %v", err)
		}
		if n1.State != sundial.NodeAlive || n1.StartedAt.IsZero() || !n1.HeartbeatAt.Equal(n1.StartedAt) {
			t.Fatalf("registered node = %+v; want ALIVE with both times set", n1)
		}
		// The database's clock may differ a little from ours.
		if d := n1.StartedAt.Sub(before); d < -time.Minute || d > time.Minute {
			t.Fatalf("StartedAt %v is %v away from now", n1.StartedAt, d)
		}
		n2 := &sundial.Node{ID: "host-2-bbbb", Host: "host", PID: 2}
		if err := f.s.NodeRegister(f.ctx, n2); err != nil {
			t.Fatalf("NodeRegister: %v", err)
		}
		if err := f.s.NodeHeartbeat(f.ctx, n1.ID); err != nil {
			t.Fatalf("NodeHeartbeat: %v", err)
		}
		nodes, err := f.s.NodeList(f.ctx)
		if err != nil || len(nodes) != 2 {
			t.Fatalf("NodeList: %d nodes, %v", len(nodes), err)
		}
		if nodes[0].ID != n2.ID || nodes[1].ID != n1.ID {
			t.Fatalf("NodeList = [%s %s], want newest first [%s %s]", nodes[0].ID, nodes[1].ID, n2.ID, n1.ID)
		}
		got := nodes[1]
		if got.Host != n1.Host || got.PID != n1.PID || got.Address != n1.Address || got.State != sundial.NodeAlive ||
			!got.StartedAt.Equal(normTime(n1.StartedAt)) || got.HeartbeatAt.Before(got.StartedAt) {
			t.Fatalf("listed node = %+v, registered %+v", got, n1)
		}
		wantErr(t, f.s.NodeHeartbeat(f.ctx, "unknown"), sundial.ENotFound, "")
	})

	t.Run("Leave", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		n := &sundial.Node{ID: "n1"}
		if err := f.s.NodeRegister(f.ctx, n); err != nil {
			t.Fatalf("NodeRegister: %v", err)
		}
		if err := f.s.NodeLeave(f.ctx, n.ID); err != nil {
			t.Fatalf("NodeLeave: %v", err)
		}
		wantErr(t, f.s.NodeHeartbeat(f.ctx, n.ID), sundial.ENotFound, "")
		nodes, err := f.s.NodeList(f.ctx)
		if err != nil || len(nodes) != 1 || nodes[0].State != sundial.NodeLeft {
			t.Fatalf("NodeList after leaving = %v, %v", nodes, err)
		}
		// A node that left is not reaped.
		dead, err := f.s.NodeReap(f.ctx, overdue, t0)
		if err != nil || len(dead) != 0 {
			t.Fatalf("NodeReap = %v, %v; want none", dead, err)
		}
		wantErr(t, f.s.NodeLeave(f.ctx, "unknown"), sundial.ENotFound, "")
	})

	t.Run("Reap", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a", withNext(at(100)))
		for _, id := range []string{"node-a", "node-b"} {
			if err := f.s.NodeRegister(f.ctx, &sundial.Node{ID: id}); err != nil {
				t.Fatalf("NodeRegister: %v", err)
			}
		}
		sched := f.run(tk.ID, at(50), sundial.RunScheduled)
		running := f.run(tk.ID, at(40), sundial.RunRunning)
		keep := f.run(tk.ID, at(41), sundial.RunRunning, withNode("node-b"))

		if dead, err := f.s.NodeReap(f.ctx, time.Hour, t0); err != nil || len(dead) != 0 {
			t.Fatalf("NodeReap(1h) = %v, %v; want none: the heartbeats are fresh", dead, err)
		}
		if err := f.s.NodeLeave(f.ctx, "node-b"); err != nil {
			t.Fatalf("NodeLeave: %v", err)
		}
		dead, err := f.s.NodeReap(f.ctx, overdue, at(200))
		if err != nil {
			t.Fatalf("NodeReap: %v", err)
		}
		if len(dead) != 1 || dead[0] != "node-a" {
			t.Fatalf("NodeReap = %v, want [node-a]", dead)
		}
		nodes, err := f.s.NodeList(f.ctx)
		if err != nil {
			t.Fatalf("NodeList: %v", err)
		}
		for _, n := range nodes {
			if want := map[string]string{"node-a": sundial.NodeDead, "node-b": sundial.NodeLeft}[n.ID]; n.State != want {
				t.Fatalf("node %s is %s, want %s", n.ID, n.State, want)
			}
		}
		// Its runs are released as RunRelease does.
		_, err = f.s.RunGet(f.ctx, sched.ID)
		wantErr(t, err, sundial.ENotFound, "")
		eqTime(t, "NextFireTime", f.getTask(tk.ID).NextFireTime, at(50))
		if got := f.get(running.ID); got.Status != sundial.RunInterrupted || got.Fence <= running.Fence || got.Error == "" {
			t.Fatalf("run of the dead node = %s; want INTERRUPTED with a reason and a new fence", fmtRun(*got))
		}
		eqRun(t, f.get(keep.ID), keep)

		// The dead node has lost its membership until it registers again.
		wantErr(t, f.s.NodeHeartbeat(f.ctx, "node-a"), sundial.ENotFound, "")
		if dead, err := f.s.NodeReap(f.ctx, overdue, at(201)); err != nil || len(dead) != 0 {
			t.Fatalf("second NodeReap = %v, %v; want none", dead, err)
		}
		n := &sundial.Node{ID: "node-a"}
		if err := f.s.NodeRegister(f.ctx, n); err != nil {
			t.Fatalf("NodeRegister again: %v", err)
		}
		if n.State != sundial.NodeAlive {
			t.Fatalf("revived node is %s", n.State)
		}
		if err := f.s.NodeHeartbeat(f.ctx, "node-a"); err != nil {
			t.Fatalf("NodeHeartbeat after reviving: %v", err)
		}
	})

	t.Run("Prune", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		for _, id := range []string{"gone-left", "gone-dead"} {
			if err := f.s.NodeRegister(f.ctx, &sundial.Node{ID: id}); err != nil {
				t.Fatalf("NodeRegister: %v", err)
			}
		}
		if err := f.s.NodeLeave(f.ctx, "gone-left"); err != nil {
			t.Fatalf("NodeLeave: %v", err)
		}
		if dead, err := f.s.NodeReap(f.ctx, overdue, t0); err != nil || len(dead) != 1 || dead[0] != "gone-dead" {
			t.Fatalf("NodeReap = %v, %v; want [gone-dead]", dead, err)
		}
		if err := f.s.NodeRegister(f.ctx, &sundial.Node{ID: "alive"}); err != nil {
			t.Fatalf("NodeRegister: %v", err)
		}
		// The heartbeats were just taken by the database's clock: an hour
		// ago none was, an hour from now all were.
		if n, err := f.s.NodePrune(f.ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Fatalf("NodePrune(an hour ago) = %d, %v; want 0: every node was seen since", n, err)
		}
		n, err := f.s.NodePrune(f.ctx, time.Now().Add(time.Hour))
		if err != nil || n != 2 {
			t.Fatalf("NodePrune(in an hour) = %d, %v; want 2, the LEFT and the DEAD node", n, err)
		}
		nodes, err := f.s.NodeList(f.ctx)
		if err != nil || len(nodes) != 1 || nodes[0].ID != "alive" || nodes[0].State != sundial.NodeAlive {
			t.Fatalf("NodeList after pruning = %v, %v; want only the ALIVE node", nodes, err)
		}
		if n, err := f.s.NodePrune(f.ctx, time.Now().Add(time.Hour)); err != nil || n != 0 {
			t.Fatalf("second NodePrune = %d, %v; want 0", n, err)
		}
		// A pruned node that comes back registers as new.
		if err := f.s.NodeRegister(f.ctx, &sundial.Node{ID: "gone-dead"}); err != nil {
			t.Fatalf("NodeRegister of a pruned node: %v", err)
		}
		if err := f.s.NodeHeartbeat(f.ctx, "gone-dead"); err != nil {
			t.Fatalf("NodeHeartbeat of a pruned node registered again: %v", err)
		}
	})
}
