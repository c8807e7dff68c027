package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchNodesEndWithTheBench kills a running "sundial bench throughput"
// and sees the node it started end too, where it used to go on firing.
func TestBenchNodesEndWithTheBench(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	bench := exec.Command(sundialBinary(t), "bench", "throughput", "--tasks", "10", "--lead", "120s", "--db", "sqlite")
	stderr, err := bench.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bench.Process.Kill(); _ = bench.Wait() })
	created := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "bench: created 10 tasks") {
				close(created)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-created:
	case <-time.After(60 * time.Second):
		t.Fatal("the bench did not create its tasks within 60 s")
	}

	nodes := childPIDs(t, bench.Process.Pid)
	if len(nodes) != 1 {
		t.Fatalf("the bench runs %d child processes (%v), want its one node", len(nodes), nodes)
	}
	t.Cleanup(func() {
		if p, err := os.FindProcess(nodes[0]); err == nil && alive(nodes[0]) {
			_ = p.Kill() // the test failed: not left running
		}
	})
	if err := bench.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = bench.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for alive(nodes[0]) {
		if time.Now().After(deadline) {
			t.Fatalf("node %d still runs 30 s after its bench was killed", nodes[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childPIDs lists the child processes of pid, from /proc.
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	threads, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range threads {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for _, f := range strings.Fields(string(b)) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, n)
		}
	}
	return out
}

// alive reports whether process pid runs: it exists and is not a zombie
// waiting for its new parent to reap it.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
