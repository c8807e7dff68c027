package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
)

// stateSaves is a store of task states that records every save: when,
// and what.
type stateSaves struct {
	mu    sync.Mutex
	saves []stateSave
	fail  int // the next fail saves fail
	state map[int64]*sundial.TaskState
}

type stateSave struct {
	at    time.Time
	tasks []int64
}

func (s *stateSaves) TaskStateSave(_ context.Context, changes []*sundial.TaskState, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return errors.New("database down")
	}
	sv := stateSave{at: time.Now()}
	for _, c := range changes {
		sv.tasks = append(sv.tasks, c.TaskID)
		if s.state[c.TaskID] == nil {
			s.state[c.TaskID] = &sundial.TaskState{TaskID: c.TaskID}
		}
		s.state[c.TaskID].Merge(c)
	}
	s.saves = append(s.saves, sv)
	return nil
}

// of returns the times at which task's state was saved, since start.
func (s *stateSaves) of(task int64, start time.Time) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for _, sv := range s.saves {
		for _, id := range sv.tasks {
			if id == task {
				out = append(out, sv.at.Sub(start))
			}
		}
	}
	return out
}

func (s *stateSaves) saved(task int64) sundial.TaskState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.state[task]; st != nil {
		return *st
	}
	return sundial.TaskState{}
}

// healthHarness runs a health component on a stateSaves store, inside a
// synctest bubble.
type healthHarness struct {
	h     *health
	store *stateSaves
	start time.Time
	stop  func()
}

func newHealthHarness(t *testing.T, flush time.Duration) *healthHarness {
	store := &stateSaves{state: map[int64]*sundial.TaskState{}}
	h := newHealth(Config{StateFlush: flush}, store, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return &healthHarness{h: h, store: store, start: time.Now(), stop: stop}
}

// fire records a fire of task scheduled now, delivered once with a lag of
// 3 ms, ending with status after 10 ms.
func (hh *healthHarness) fire(task int64, status sundial.RunStatus) {
	now := time.Now()
	hh.h.observe(outcome{run: &sundial.Run{TaskID: task, ScheduledTime: now}, status: status, delivery: 1,
		started: now.Add(3 * time.Millisecond), finished: now.Add(10 * time.Millisecond)})
}

// TestHealthSavesFailuresAtOnce: a failing task's state is saved within
// a second of each failure, and so is the first success after them.
func TestHealthSavesFailuresAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hh := newHealthHarness(t, 5*time.Minute)
		for i := range 5 {
			hh.fire(1, sundial.RunFailed)
			time.Sleep(time.Second)
			synctest.Wait()
			if saves := hh.store.of(1, hh.start); len(saves) != i+1 || saves[i] > time.Duration(i)*time.Second+time.Second {
				t.Fatalf("after %d failures: saves at %v, want one a failure, within a second", i+1, saves)
			}
		}
		if st := hh.store.saved(1); st.ConsecutiveFailures != 5 {
			t.Fatalf("saved %d failures in a row, want 5", st.ConsecutiveFailures)
		}
		hh.fire(1, sundial.RunSuccess)
		time.Sleep(time.Second)
		synctest.Wait()
		if saves := hh.store.of(1, hh.start); len(saves) != 6 {
			t.Fatalf("the first success after failures: saves at %v, want it saved within a second", saves)
		}
		if st := hh.store.saved(1); st.ConsecutiveFailures != 0 || st.LastSuccessAt == nil || len(st.Lags) != 6 {
			t.Fatalf("after a success: %+v", st)
		}
		// A timeout and a cancel are failures; a skip, a retry and an
		// INTERRUPTED delivery are not, nor a WAITING_CALLBACK.
		hh.h.observe(outcome{run: &sundial.Run{TaskID: 1}, status: sundial.RunSkipped})
		hh.h.observe(outcome{run: &sundial.Run{TaskID: 1}, status: sundial.RunFailed, retry: true, delivery: 2})
		hh.h.observe(outcome{run: &sundial.Run{TaskID: 1}, status: sundial.RunInterrupted, delivery: 2})
		time.Sleep(time.Second)
		synctest.Wait()
		if saves := hh.store.of(1, hh.start); len(saves) != 6 {
			t.Fatalf("a skip, a retry, an interruption: saves at %v, want none more", saves)
		}
		hh.h.observe(outcome{run: &sundial.Run{TaskID: 1}, status: sundial.RunTimeout})
		hh.h.observe(outcome{run: &sundial.Run{TaskID: 1}, status: sundial.RunCanceled})
		time.Sleep(time.Second)
		synctest.Wait()
		if st := hh.store.saved(1); len(hh.store.of(1, hh.start)) != 7 || st.ConsecutiveFailures != 2 {
			t.Fatalf("a timeout and a cancel: %d saves, %+v", len(hh.store.of(1, hh.start)), st)
		}
	})
}

// TestHealthHealthyFrequentTask: a healthy task firing every second has
// its state saved once when first seen, then once per flush period, with
// every lag sample; at most 0.004 rows a fire.
func TestHealthHealthyFrequentTask(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const flush = 5 * time.Minute
		hh := newHealthHarness(t, flush)
		const fires = 3600
		for range fires {
			hh.fire(7, sundial.RunSuccess)
			time.Sleep(time.Second)
		}
		synctest.Wait()
		saves := hh.store.of(7, hh.start)
		// At 0.5 s, then every 5 minutes: the twelfth at 55m0.5s.
		if want := 12; len(saves) != want {
			t.Fatalf("an hour of fires every second: %d saves at %v, want %d", len(saves), saves, want)
		}
		if rate := float64(len(saves)) / fires; rate > 0.004 {
			t.Errorf("%.4f rows a fire, want at most 0.004", rate)
		}
		if saves[0] > time.Second {
			t.Errorf("first save at %s, want within a second of the first fire", saves[0])
		}
		for i := 1; i < len(saves); i++ {
			if d := saves[i] - saves[i-1]; d != flush {
				t.Errorf("saves %s apart, want %s", d, flush)
			}
		}
		st := hh.store.saved(7)
		if len(st.Lags) != sundial.MaxLagSamples || st.Lags[0].Lag != 3*time.Millisecond || st.LastSuccessAt == nil {
			t.Errorf("saved state: %d lags, %+v", len(st.Lags), st)
		}
	})
}

// TestHealthRareTask: a task that fires less often than the flush period
// has its state saved at every outcome, and is forgotten in between.
func TestHealthRareTask(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hh := newHealthHarness(t, 5*time.Minute)
		for i := range 4 {
			hh.fire(3, sundial.RunSuccess)
			time.Sleep(time.Second)
			synctest.Wait()
			if saves := hh.store.of(3, hh.start); len(saves) != i+1 {
				t.Fatalf("fire %d: saves at %v, want one a fire", i+1, saves)
			}
			time.Sleep(10*time.Minute - time.Second)
			synctest.Wait()
			hh.h.mu.Lock()
			n := len(hh.h.tasks)
			hh.h.mu.Unlock()
			if n != 0 {
				t.Fatalf("%d tasks kept in memory between fires, want 0", n)
			}
		}
	})
}

// TestHealthFlushOnStop: on stop every change held is saved, even one
// that would have waited for its flush period.
func TestHealthFlushOnStop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hh := newHealthHarness(t, 5*time.Minute)
		for _, task := range []int64{1, 2, 3} {
			hh.fire(task, sundial.RunSuccess)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for range 10 {
			for _, task := range []int64{1, 2, 3} {
				hh.fire(task, sundial.RunSuccess)
			}
			time.Sleep(time.Second)
		}
		if n := len(hh.store.saves); n != 1 {
			t.Fatalf("%d saves before the stop, want 1", n)
		}
		hh.stop()
		for _, task := range []int64{1, 2, 3} {
			if st := hh.store.saved(task); len(st.Lags) != 11 {
				t.Errorf("task %d: %d lags saved, want 11", task, len(st.Lags))
			}
		}
		if n := len(hh.store.saves); n != 2 {
			t.Errorf("%d saves, want 2 (the first, and one on stop)", n)
		}
	})
}

// TestHealthSaveFails: a save the store refuses is tried again after a
// pause, with what came meanwhile; nothing is lost.
func TestHealthSaveFails(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hh := newHealthHarness(t, 5*time.Minute)
		hh.store.mu.Lock()
		hh.store.fail = 2
		hh.store.mu.Unlock()
		hh.fire(1, sundial.RunFailed)
		time.Sleep(time.Second)
		hh.fire(1, sundial.RunFailed)
		time.Sleep(time.Second)
		synctest.Wait()
		if saves := hh.store.of(1, hh.start); len(saves) != 0 {
			t.Fatalf("saves at %v while the store fails", saves)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		st := hh.store.saved(1)
		if saves := hh.store.of(1, hh.start); len(saves) != 1 || st.ConsecutiveFailures != 2 || len(st.Lags) != 2 {
			t.Fatalf("after the store came back: saves at %v, %+v", saves, st)
		}
	})
}
