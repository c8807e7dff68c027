package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRollingRestartPostgres(t *testing.T) {
	t.Parallel()
	rollingRestart(t, freshPostgres(t))
}

func TestRollingRestartMySQL(t *testing.T) {
	t.Parallel()
	rollingRestart(t, freshMySQL(t))
}

// rollingRestart runs three nodes with a few hundred tasks firing every
// second, stops each node in turn with SIGTERM (a graceful stop: it drains
// its calls and hands its fires back) and starts a new one in its place,
// as a rolling upgrade does, and checks that every scheduled second of
// every task was delivered exactly once: none lost, none twice. It logs
// the lag (delivery after the scheduled second) over the whole run and
// around the handovers (docs/benchmarks.md).
func rollingRestart(t *testing.T, db string) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	bin := sundialBinary(t)
	const tasks = 300

	type fire struct {
		task string
		sec  int64
	}
	var mu sync.Mutex
	got := map[fire][]time.Time{}
	redelivered := 0 // deliveries numbered 2 or more
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sched, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Sundial-Scheduled-Time"))
		f := fire{r.Header.Get("X-Sundial-Task-Id"), sched.Unix()}
		mu.Lock()
		got[f] = append(got[f], time.Now())
		if r.Header.Get("X-Sundial-Delivery") != "1" {
			redelivered++
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()

	nodes := []*proc{startProc(t, bin, db), startProc(t, bin, db), startProc(t, bin, db)}
	n0 := &node{url: nodes[0].url}
	var b strings.Builder
	for i := range tasks {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"r%d","cron_expr":"* * * * * *","target_url":%q}`, i, hook.URL+"/r")
	}
	n0.do(t, "POST", "/api/v1/tasks:batch", `{"tasks":[`+b.String()+`]}`, 200, nil)
	begin := time.Now()
	time.Sleep(2 * time.Second)

	// Each node in turn: SIGTERM, wait for it to exit, start its
	// replacement, let the cluster settle.
	type handover struct{ from, to time.Time }
	var handovers []handover
	for i := range nodes {
		// In the last StartAhead (300 ms) before a second, when the fires
		// of that second are committed RUNNING but not sent: the stop
		// must hand them back, not leave them as cut-off deliveries.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1850 * time.Millisecond)))
		from := time.Now()
		nodes[i].stop(t)
		stopped := time.Since(from)
		nodes[i] = startProc(t, bin, db)
		handovers = append(handovers, handover{from, time.Now()})
		t.Logf("node %d: stopped in %s, replaced by +%s", i, stopped.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
		time.Sleep(1500 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	// The seconds from the first full one after the tasks were made to the
	// last full one before now; the nodes stop once each of them has come
	// (or 10 s have passed: then the test fails on what is missing), so
	// that a late fire on a busy machine is not taken for a lost one.
	from, to := begin.Truncate(time.Second).Add(2*time.Second), time.Now().Add(-time.Second).Truncate(time.Second)
	want := tasks * int(to.Unix()-from.Unix())
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		n := 0
		for f := range got {
			if f.sec >= from.Unix() && f.sec < to.Unix() {
				n++
			}
		}
		mu.Unlock()
		if n >= want {
			break
		}
	}
	for _, p := range nodes {
		p.stop(t)
	}

	mu.Lock()
	defer mu.Unlock()
	taskIDs := map[string]bool{}
	for f := range got {
		taskIDs[f.task] = true
	}
	if len(taskIDs) != tasks {
		t.Fatalf("deliveries for %d tasks, want %d", len(taskIDs), tasks)
	}
	lost, twice := 0, 0
	var lags, handoverLags []time.Duration
	for task := range taskIDs {
		for sec := from.Unix(); sec < to.Unix(); sec++ {
			ats := got[fire{task, sec}]
			switch {
			case len(ats) == 0:
				lost++
				if lost <= 10 {
					t.Errorf("task %s: the fire of %s was never delivered", task, time.Unix(sec, 0).UTC().Format(time.TimeOnly))
				}
				continue
			case len(ats) > 1:
				twice++
				if twice <= 10 {
					t.Errorf("task %s: the fire of %s was delivered %d times", task, time.Unix(sec, 0).UTC().Format(time.TimeOnly), len(ats))
				}
			}
			lag := ats[0].Sub(time.Unix(sec, 0))
			lags = append(lags, lag)
			for _, h := range handovers {
				if !time.Unix(sec, 0).Before(h.from.Add(-time.Second)) && time.Unix(sec, 0).Before(h.to.Add(2*time.Second)) {
					handoverLags = append(handoverLags, lag)
					break
				}
			}
		}
	}
	if lost > 0 || twice > 0 {
		t.Errorf("%d fires lost, %d delivered more than once", lost, twice)
	}
	slices.Sort(lags)
	slices.Sort(handoverLags)
	pct := func(ds []time.Duration, p int) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		return ds[min(len(ds)-1, len(ds)*p/100)].Round(time.Millisecond)
	}
	t.Logf("%d tasks, %d fires in %s..%s: %d lost, %d twice, %d deliveries numbered 2 or more; lag p50 %s p99 %s max %s; around the %d handovers (%d fires) p50 %s p99 %s max %s",
		tasks, len(lags), from.Format(time.TimeOnly), to.Format(time.TimeOnly), lost, twice, redelivered,
		pct(lags, 50), pct(lags, 99), pct(lags, 100), len(handovers), len(handoverLags),
		pct(handoverLags, 50), pct(handoverLags, 99), pct(handoverLags, 100))
	if t.Failed() {
		for _, p := range nodes {
			t.Logf("node output:\n%s", tail(p.out.String(), 40))
		}
	}
}
