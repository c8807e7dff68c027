package storetest

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// Proxy forwards TCP connections from a loopback port to a database
// server until the test cuts it: an outage as a store sees it, without
// stopping the server other tests share.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

// NewProxy starts a proxy to target (host:port), closed at the end of t.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(p.Cut)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		p.wg.Go(func() { pipe(up, c) })
		p.wg.Go(func() { pipe(c, up) })
	}
}

// Cut makes the server unreachable through the proxy: its port is closed,
// so a new connection is refused, and every connection through it is
// reset, so those a store holds break. It returns once every forwarding
// goroutine has ended.
func (p *Proxy) Cut() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not an orderly close
		}
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// RunUnavailable checks how s answers an outage that cut makes (a closed
// store, a cut Proxy, a database that cannot be written): before it,
// errors that are the caller's stay what they are (ENotFound, EConflict);
// after it, each method tried is EUnavailable, with the driver's error
// kept in the chain for the log.
func RunUnavailable(t *testing.T, s sundial.Store, cut func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	tk := newTask("before-the-outage")
	if err := CreateTask(ctx, s, tk, t0); err != nil {
		t.Fatalf("CreateTask before the outage: %v", err)
	}
	_, err := s.TaskGet(ctx, tk.ID+1000)
	wantErr(t, err, sundial.ENotFound, "")
	wantErr(t, CreateTask(ctx, s, newTask("before-the-outage"), t0), sundial.EConflict, "name")

	cut()

	plan := func(*sundial.Task) sundial.Plan { return sundial.Plan{} }
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Ping", func() error { return s.Ping(ctx) }},
		{"TaskGet", func() error { _, err := s.TaskGet(ctx, tk.ID); return err }},
		{"TaskList", func() error { _, err := s.TaskList(ctx, sundial.TaskListParams{Limit: 10}); return err }},
		{"CreateTask", func() error { return CreateTask(ctx, s, newTask("during-the-outage"), t0) }},
		{"TaskCreateMany", func() error {
			_, err := s.TaskCreateMany(ctx, []*sundial.Task{newTask("many-during-the-outage")}, t0)
			return err
		}},
		{"TaskUpdate", func() error { u := *tk; u.Description = "changed"; return s.TaskUpdate(ctx, &u, t0) }},
		{"TaskDelete", func() error { return s.TaskDelete(ctx, tk.ID, t0) }},
		{"PlanDue", func() error { _, err := s.PlanDue(ctx, t0, 10, "node-a", t0, plan); return err }},
		{"RunInsert", func() error {
			return s.RunInsert(ctx, &sundial.Run{TaskID: tk.ID, FireKey: "m:1", Trigger: sundial.TriggerManual,
				ScheduledTime: t0, Status: sundial.RunScheduled, Attempt: 1, NodeID: "node-a", Fence: 1})
		}},
		{"RunGet", func() error { _, err := s.RunGet(ctx, 1); return err }},
		{"RunList", func() error { _, err := s.RunList(ctx, sundial.RunListParams{Limit: 10}); return err }},
		{"RunCancel", func() error { _, err := s.RunCancel(ctx, 1, t0); return err }},
		{"RunUpcoming", func() error { _, err := s.RunUpcoming(ctx, tk.ID, 10); return err }},
		{"NodeList", func() error { _, err := s.NodeList(ctx); return err }},
		{"NodeHeartbeat", func() error { return s.NodeHeartbeat(ctx, "node-a") }},
	} {
		err := c.call()
		e, ok := errors.AsType[*sundial.Error](err)
		if !ok || e.Code != sundial.EUnavailable {
			t.Errorf("%s during the outage = %v, want EUnavailable", c.name, err)
			continue
		}
		if e.Err == nil {
			t.Errorf("%s during the outage: EUnavailable without its cause", c.name)
		}
	}
}
