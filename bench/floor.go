package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FloorResult is the bare client's lag with one number of workers.
type FloorResult struct {
	Workers int         `json:"workers"`
	LagMS   Percentiles `json:"lag_ms"`
}

// FloorWorkers are the numbers of workers Floor tries by default: the
// floor is the best of them.
var FloorWorkers = []int{16, 64, 256}

// Floor measures what the machine does with no scheduler and no database:
// n POSTs due at the same whole second, sent by a bare net/http client
// over keep-alive connections warmed beforehand, to a Recorder target of
// its own, with the headers and body a delivery of Sundial's carries. For
// each number of workers it runs rounds bursts, one a second, and gives
// the lag (arrival minus the whole second) over all of them. An aligned
// burst of Sundial's is judged against the best p99 (BestFloor).
func Floor(ctx context.Context, n int, workers []int, rounds int) ([]FloorResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rec := &Recorder{}
	stop := rec.Serve(ln)
	defer stop()
	url := "http://" + ln.Addr().String() + "/hook"

	var out []FloorResult
	for _, w := range workers {
		t := &http.Transport{MaxIdleConnsPerHost: max(w, 512), IdleConnTimeout: time.Minute}
		client := &http.Client{Transport: t}
		// Warm w connections: w requests at once, answered and kept.
		if err := burst(ctx, client, url, w, w, time.Time{}); err != nil {
			t.CloseIdleConnections()
			return nil, fmt.Errorf("floor: warm %d connections: %w", w, err)
		}
		before := len(rec.Arrivals())
		var dues []time.Time
		for range rounds {
			// The next whole second at least 300 ms away, as a node
			// commits its fires 300 ms ahead.
			due := time.Now().Add(300 * time.Millisecond).Truncate(time.Second).Add(time.Second)
			dues = append(dues, due)
			if err := burst(ctx, client, url, n, w, due); err != nil {
				t.CloseIdleConnections()
				return nil, fmt.Errorf("floor: %d workers: %w", w, err)
			}
		}
		t.CloseIdleConnections()
		out = append(out, FloorResult{Workers: w, LagMS: floorLags(rec.Arrivals()[before:], dues)})
	}
	return out, nil
}

// BestFloor is the result with the lowest p99, or false for none.
func BestFloor(rs []FloorResult) (FloorResult, bool) {
	if len(rs) == 0 {
		return FloorResult{}, false
	}
	return slices.MinFunc(rs, func(a, b FloorResult) int {
		switch {
		case a.LagMS.P99 < b.LagMS.P99:
			return -1
		case a.LagMS.P99 > b.LagMS.P99:
			return 1
		}
		return 0
	}), true
}

// floorLags is the lag percentiles of the arrivals of bursts due at dues:
// each arrival's lag from its X-Sundial-Scheduled-Time.
func floorLags(arrivals []Arrival, dues []time.Time) Percentiles {
	var lags []time.Duration
	for _, a := range arrivals {
		if slices.ContainsFunc(dues, a.Scheduled.Equal) {
			lags = append(lags, a.At.Sub(a.Scheduled))
		}
	}
	slices.Sort(lags)
	return percentilesOf(lags)
}

// burst sends n POSTs with w workers at due (zero: at once), and fails on
// the first error or answer other than 2xx.
func burst(ctx context.Context, client *http.Client, url string, n, w int, due time.Time) error {
	jobs := make(chan int, n)
	for i := range n {
		jobs <- i
	}
	close(jobs)
	sched := due.UTC().Format(time.RFC3339Nano)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	fail := func(err error) { once.Do(func() { first = err }) }
	for range w {
		wg.Go(func() {
			if !due.IsZero() {
				select {
				case <-ctx.Done():
					fail(ctx.Err())
					return
				case <-time.After(time.Until(due)):
				}
			}
			for i := range jobs {
				if _, err := send(ctx, client, url, strconv.Itoa(i+1), sched); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// send makes one request as a delivery of Sundial's looks: its headers
// and a small JSON body, for the task and run id. It returns the answer's
// status, and fails on an answer other than 2xx.
func send(ctx context.Context, client *http.Client, url, id, sched string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"run_id":`+id+`}`))
	if err != nil {
		return 0, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Sundial/1")
	h.Set("X-Sundial-Run-Id", id)
	h.Set("X-Sundial-Task-Id", id)
	h.Set("X-Sundial-Scheduled-Time", sched)
	h.Set("X-Sundial-Trigger", "SCHEDULE")
	h.Set("X-Sundial-Attempt", "1")
	h.Set("X-Sundial-Delivery", "1")
	h.Set("X-Sundial-Node", "floor")
	h.Set("Idempotency-Key", "sundial-"+id+"-s:"+sched)
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("the target answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}
