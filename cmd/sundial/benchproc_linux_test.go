package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	// Its SQLite file, which a killed bench cannot remove, goes with the test.
	bench.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	// A pipe of the test's own, read to its end (when the node's end
	// closes it too), so that nothing the node writes after the bench
	// ended kills it with SIGPIPE instead of the signal under test.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	bench.Stderr = w
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan struct{})
	go func() { _ = bench.Wait(); close(exited) }()
	t.Cleanup(func() { _ = bench.Process.Kill(); <-exited })

	var mu sync.Mutex
	var said strings.Builder
	created := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			mu.Lock()
			said.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.HasPrefix(sc.Text(), "bench: created 10 tasks") {
				close(created)
			}
		}
	}()
	stderr := func() string { mu.Lock(); defer mu.Unlock(); return said.String() }
	select {
	case <-created:
	case <-exited:
		t.Fatalf("the bench ended before creating its tasks:\n%s", stderr())
	case <-time.After(60 * time.Second):
		t.Fatalf("the bench did not create its tasks within 60 s:\n%s", stderr())
	}

	nodes := childPIDs(t, bench.Process.Pid)
	if len(nodes) != 1 {
		t.Fatalf("the bench runs %d child processes (%v), want its one node", len(nodes), nodes)
	}
	// A handle on the node taken now, while it is the bench's child, so
	// that the cleanup of a failed test signals it and no process that
	// took its PID since.
	node, err := os.FindProcess(nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = node.Kill(); _ = node.Release() }()
	if err := bench.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	deadline := time.Now().Add(30 * time.Second)
	for alive(nodes[0]) {
		if time.Now().After(deadline) {
			t.Fatalf("node %d still runs 30 s after its bench was killed:\n%s", nodes[0], stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childPIDs lists the child processes of pid, from /proc (its threads'
// children files).
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
