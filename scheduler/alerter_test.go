package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/scheduler"
)

// notifier records the notifications a scheduler sends; it fails while
// failing is set.
type notifier struct {
	mu      sync.Mutex
	sent    []sundial.AlertMessage
	tries   int
	failing bool
}

func (n *notifier) notify(_ context.Context, ch *sundial.AlertChannel, m sundial.AlertMessage) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tries++
	if n.failing {
		return errors.New("connection refused")
	}
	n.sent = append(n.sent, m)
	return nil
}

func (n *notifier) events() []sundial.NotificationEvent {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]sundial.NotificationEvent, len(n.sent))
	for i, m := range n.sent {
		out[i] = m.Event
	}
	return out
}

// alertSetup is a scheduler with alerts on, a channel and a task firing
// every 10 s whose deliveries fail while failing(true).
type alertSetup struct {
	*bundle
	n     *notifier
	task  *sundial.Task
	first time.Time
}

func newAlertSetup(t *testing.T, rule *sundial.AlertRule, mods ...func(*sundial.Task)) *alertSetup {
	t.Helper()
	return newAlertSetupConfig(t, scheduler.Config{}, rule, mods...)
}

// newAlertSetupConfig is newAlertSetup with the scheduler's cfg.
func newAlertSetupConfig(t *testing.T, cfg scheduler.Config, rule *sundial.AlertRule, mods ...func(*sundial.Task)) *alertSetup {
	t.Helper()
	n := &notifier{}
	cfg.Notify = n.notify
	b := setup(t, cfg)
	ctx := context.Background()
	ch := &sundial.AlertChannel{Name: "ops", Kind: sundial.ChannelWebhook, URL: "http://127.0.0.1:9/alerts"}
	if err := b.store.AlertChannelCreate(ctx, ch, time.Now()); err != nil {
		t.Fatal(err)
	}
	tk := b.addTask(t, "*/10 * * * * *", func(tk *sundial.Task) {
		for _, m := range mods {
			m(tk)
		}
	})
	rule.Name, rule.TaskID, rule.Channels = "r", tk.ID, []string{"ops"}
	if err := b.store.AlertRuleCreate(ctx, rule, time.Now()); err != nil {
		t.Fatal(err)
	}
	b.start()
	return &alertSetup{bundle: b, n: n, task: tk, first: *tk.NextFireTime}
}

func (s *alertSetup) failing(on bool) {
	s.target.mu.Lock()
	defer s.target.mu.Unlock()
	s.target.failTask = 0
	if on {
		s.target.failTask = s.task.ID
	}
}

// after waits until 2 s after the k-th fire (from 1).
func (s *alertSetup) after(k int) {
	waitUntil(s.first.Add(time.Duration(k-1)*10*time.Second + 2*time.Second))
	synctest.Wait()
}

func (s *alertSetup) incidents(t *testing.T) []*sundial.Incident {
	t.Helper()
	incs, err := s.store.IncidentList(context.Background(), sundial.IncidentListParams{TaskID: s.task.ID})
	if err != nil {
		t.Fatal(err)
	}
	return incs
}

// TestAlertConsecutiveFailures: a rule of 3 consecutive failures opens
// one incident at the third failure in a row (not before, and a success
// starts the count again), sends one notification while the task keeps
// failing, and one when the next success resolves it.
func TestAlertConsecutiveFailures(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newAlertSetup(t, &sundial.AlertRule{Condition: sundial.AlertCondition{Kind: sundial.CondConsecutiveFailures, Count: 3}})
		s.failing(true)
		s.after(2)
		s.failing(false)
		s.after(3) // a success: the count starts again
		s.failing(true)
		s.after(5)
		if incs := s.incidents(t); len(incs) != 0 || len(s.n.events()) != 0 {
			t.Fatalf("after 2 failures, a success and 2 failures: %d incidents, sent %v", len(incs), s.n.events())
		}
		s.after(6) // the third failure in a row
		incs := s.incidents(t)
		if len(incs) != 1 || incs[0].Status != sundial.IncidentOpen || incs[0].Reason == "" {
			t.Fatalf("after 3 failures in a row: %+v", incs)
		}
		if got := s.n.events(); len(got) != 1 || got[0] != sundial.EventOpened {
			t.Fatalf("sent %v, want one opened", got)
		}
		s.after(9) // failures 4 to 6: nothing more
		if got := s.n.events(); len(got) != 1 || len(s.incidents(t)) != 1 {
			t.Fatalf("while failing: sent %v, %d incidents", got, len(s.incidents(t)))
		}
		s.failing(false)
		s.after(10)
		incs = s.incidents(t)
		if len(incs) != 1 || incs[0].Status != sundial.IncidentResolved || incs[0].ResolvedAt == nil {
			t.Fatalf("after a success: %+v", incs[0])
		}
		if got := s.n.events(); len(got) != 2 || got[1] != sundial.EventResolved {
			t.Fatalf("sent %v, want opened then resolved", got)
		}
		if n := len(incs[0].Notifications); n != 2 || incs[0].Notifications[0].Status != sundial.NotifySent ||
			incs[0].Notifications[0].Tries != 1 {
			t.Fatalf("notifications %+v", incs[0].Notifications)
		}
		s.after(12)
		if got := s.n.events(); len(got) != 2 {
			t.Fatalf("successes after the resolve sent %v", got)
		}
		s.stop(t)
	})
}

// TestAlertRetryAndRepeat: a notification that fails is tried again
// after its backoff, each attempt recorded; an incident that stays open
// notifies again every repeat_every.
func TestAlertRetryAndRepeat(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newAlertSetup(t, &sundial.AlertRule{Condition: sundial.AlertCondition{Kind: sundial.CondRunFailed},
			RepeatEvery: sundial.Duration(time.Minute)})
		s.n.mu.Lock()
		s.n.failing = true
		s.n.mu.Unlock()
		s.failing(true)
		s.after(1)
		incs := s.incidents(t)
		if len(incs) != 1 || len(incs[0].Notifications) != 1 {
			t.Fatalf("after a failure: %+v", incs)
		}
		n := incs[0].Notifications[0]
		if n.Status != sundial.NotifyPending || n.Tries != 1 || len(n.Attempts) != 1 || n.Attempts[0].Error != "connection refused" {
			t.Fatalf("a failed notification: %+v", n)
		}
		s.n.mu.Lock()
		s.n.failing = false
		s.n.mu.Unlock()
		s.after(3) // 10 s of backoff, and the poll
		n = s.incidents(t)[0].Notifications[0]
		if n.Status != sundial.NotifySent || n.Tries != 2 || len(n.Attempts) != 2 || n.Attempts[1].Error != "" {
			t.Fatalf("the retry: %+v", n)
		}
		s.after(9) // a minute and a sweep after it opened: one repeat
		if got := s.n.events(); len(got) != 2 || got[1] != sundial.EventRepeat {
			t.Fatalf("sent %v, want opened and a repeat", got)
		}
		s.stop(t)
	})
}

// slowPolls is the node of the tests of repeats: it polls every 10 s.
var slowPolls = scheduler.Config{PollInterval: 10 * time.Second, Lookahead: 20 * time.Second,
	HeartbeatInterval: 5 * time.Second, DeadAfter: 15 * time.Second, CancelPoll: 10 * time.Second}

// repeatEveryMinute is a rule of each failed run that notifies again
// every minute while its incident is open.
func repeatEveryMinute() *sundial.AlertRule {
	return &sundial.AlertRule{Condition: sundial.AlertCondition{Kind: sundial.CondRunFailed}, RepeatEvery: sundial.Duration(time.Minute)}
}

// TestAlertAckStopsRepeats: an acknowledged incident sends no repeat
// while it stays open, and still sends its resolve.
func TestAlertAckStopsRepeats(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newAlertSetupConfig(t, slowPolls, repeatEveryMinute())
		s.failing(true)
		s.after(1)
		incs := s.incidents(t)
		if len(incs) != 1 {
			t.Fatalf("after a failure: %+v", incs)
		}
		if ok, err := s.store.IncidentAck(context.Background(), incs[0].ID, time.Now(), "alice", "on it"); err != nil || !ok {
			t.Fatalf("IncidentAck: %v, %v", ok, err)
		}
		s.after(9) // a minute and a sweep after it opened: no repeat
		if got := s.n.events(); len(got) != 1 || got[0] != sundial.EventOpened {
			t.Fatalf("sent %v, want the opened one alone", got)
		}
		s.failing(false)
		s.after(10)
		if got := s.n.events(); len(got) != 2 || got[1] != sundial.EventResolved {
			t.Fatalf("sent %v, want opened then resolved", got)
		}
		if inc := s.incidents(t)[0]; inc.Status != sundial.IncidentResolved || inc.AckedBy != "alice" {
			t.Fatalf("the incident: %+v", inc)
		}
		s.stop(t)
	})
}

// TestAlertAckCancelsQueuedRepeat: a repeat made while its channel fails
// waits for its retry; acknowledged meanwhile, it is CANCELED, not sent
// when the channel recovers.
func TestAlertAckCancelsQueuedRepeat(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newAlertSetupConfig(t, slowPolls, repeatEveryMinute())
		s.failing(true)
		s.after(1)
		s.n.mu.Lock()
		s.n.failing = true
		s.n.mu.Unlock()
		s.after(9) // a minute and a sweep after it opened: the repeat, tried and failed
		incs := s.incidents(t)
		if len(incs) != 1 || len(incs[0].Notifications) != 2 || incs[0].Notifications[1].Event != sundial.EventRepeat ||
			incs[0].Notifications[1].Status != sundial.NotifyPending {
			t.Fatalf("the repeat while its channel fails: %+v", incs)
		}
		if ok, err := s.store.IncidentAck(context.Background(), incs[0].ID, time.Now(), "alice", ""); err != nil || !ok {
			t.Fatalf("IncidentAck: %v, %v", ok, err)
		}
		s.n.mu.Lock()
		s.n.failing = false
		s.n.mu.Unlock()
		s.after(12)
		if got := s.n.events(); len(got) != 1 || got[0] != sundial.EventOpened {
			t.Fatalf("sent %v, want the opened one alone", got)
		}
		n := s.incidents(t)[0].Notifications[1]
		if n.Status != sundial.NotifyCanceled || n.SentAt != nil || !strings.Contains(n.Attempts[len(n.Attempts)-1].Error, "acknowledged") {
			t.Fatalf("the repeat after the acknowledge: %+v", n)
		}
		s.stop(t)
	})
}

// TestAlertRepeatWaitsForChannel: while a channel fails, its opened
// notification waits for its retries and no repeat piles up behind it (a
// burst on recovery, a repeat ahead of the opened one); the repeat time
// moves on all the same.
func TestAlertRepeatWaitsForChannel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newAlertSetupConfig(t, slowPolls, repeatEveryMinute())
		s.n.mu.Lock()
		s.n.failing = true
		s.n.mu.Unlock()
		s.failing(true)
		s.after(8) // 72 s: the opened one has failed 3 times; a repeat was due a sweep ago
		incs := s.incidents(t)
		if len(incs) != 1 || len(incs[0].Notifications) != 1 || incs[0].Notifications[0].Event != sundial.EventOpened ||
			incs[0].Notifications[0].Tries < 3 {
			t.Fatalf("while the channel fails: %d notifications, want the opened one alone", len(incs[0].Notifications))
		}
		if !incs[0].NotifiedAt.After(incs[0].OpenedAt) {
			t.Fatalf("notified_at %s: the repeat time did not move on", incs[0].NotifiedAt)
		}
		s.stop(t)
	})
}

// TestAlertSilence: a notification made in a silence window is held
// until its end, then sent.
func TestAlertSilence(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		from := time.Now()
		to := from.Add(45 * time.Second)
		s := newAlertSetup(t, &sundial.AlertRule{Condition: sundial.AlertCondition{Kind: sundial.CondRunFailed},
			Silences: []sundial.Silence{{From: &from, To: &to}}})
		s.failing(true)
		s.after(1)
		incs := s.incidents(t)
		if len(incs) != 1 || len(incs[0].Notifications) != 1 || !incs[0].Notifications[0].Held ||
			!incs[0].Notifications[0].DueAt.Equal(to.UTC().Truncate(time.Microsecond)) {
			t.Fatalf("in the silence: %+v", incs[0].Notifications[0])
		}
		waitUntil(to.Add(-time.Second))
		synctest.Wait()
		if got := s.n.events(); len(got) != 0 {
			t.Fatalf("sent %v in the silence", got)
		}
		waitUntil(to.Add(3 * time.Second))
		synctest.Wait()
		if got := s.n.events(); len(got) != 1 {
			t.Fatalf("after the silence: sent %v, want the held one", got)
		}
		s.stop(t)
	})
}

// TestAlertAutoPaused: a task that pauses itself raises the incident of
// a rule of auto_paused, once; the failures before it raise nothing else.
func TestAlertAutoPaused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newAlertSetup(t, &sundial.AlertRule{Condition: sundial.AlertCondition{Kind: sundial.CondAutoPaused}},
			func(tk *sundial.Task) { tk.PauseAfterFailures = 2 })
		s.failing(true)
		s.after(1)
		if got := s.n.events(); len(got) != 0 {
			t.Fatalf("after one failure: sent %v", got)
		}
		s.after(4)
		incs := s.incidents(t)
		if len(incs) != 1 || incs[0].Condition != sundial.CondAutoPaused || incs[0].Status != sundial.IncidentOpen {
			t.Fatalf("after the pause: %+v", incs)
		}
		if got := s.n.events(); len(got) != 1 || got[0] != sundial.EventOpened {
			t.Fatalf("sent %v, want one opened", got)
		}
		s.stop(t)
	})
}

// TestAlertLongRunSweep: a rule of long_run opens its incident while the
// run is still in its call, at the first sweep past the threshold, once
// per run: a short run's call resolves it, and neither the long run
// still running nor its end opens it again; the next long run does.
func TestAlertLongRunSweep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := &notifier{}
		// Slower loops than the defaults (a few turns a second of fake
		// time), a sweep every 2 s.
		b := setup(t, scheduler.Config{Notify: n.notify, AlertSweep: 2 * time.Second, PollInterval: 10 * time.Second,
			Lookahead: 20 * time.Second, HeartbeatInterval: 5 * time.Second, DeadAfter: 15 * time.Second,
			CancelPoll: 10 * time.Second})
		ctx := context.Background()
		if err := b.store.AlertChannelCreate(ctx, &sundial.AlertChannel{Name: "ops", Kind: sundial.ChannelWebhook,
			URL: "http://127.0.0.1:9/alerts"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		hold := func(d time.Duration) {
			b.target.mu.Lock()
			b.target.hold = d
			b.target.mu.Unlock()
		}
		hold(50 * time.Second)
		tk := b.addTask(t, "*/20 * * * * *", func(tk *sundial.Task) {
			tk.OverlapAction, tk.TimeoutSeconds = sundial.OverlapParallel, 120
		})
		rule := &sundial.AlertRule{Name: "slow", TaskID: tk.ID, Channels: []string{"ops"},
			Condition: sundial.AlertCondition{Kind: sundial.CondLongRun, Threshold: sundial.Duration(5 * time.Second)}}
		if err := b.store.AlertRuleCreate(ctx, rule, time.Now()); err != nil {
			t.Fatal(err)
		}
		b.start()
		first := *tk.NextFireTime
		incidents := func() []*sundial.Incident {
			t.Helper()
			incs, err := b.store.IncidentList(ctx, sundial.IncidentListParams{TaskID: tk.ID})
			if err != nil {
				t.Fatal(err)
			}
			return incs
		}
		at := func(d time.Duration) {
			waitUntil(first.Add(d))
			synctest.Wait()
		}

		at(4 * time.Second)
		if incs := incidents(); len(incs) != 0 {
			t.Fatalf("before the threshold: %+v", incs)
		}
		at(8 * time.Second) // past the threshold, and a sweep later
		incs := incidents()
		if len(incs) != 1 || incs[0].Status != sundial.IncidentOpen || incs[0].RunID == 0 {
			t.Fatalf("a run in its call past the threshold: %+v", incs)
		}
		long := incs[0].RunID
		if r, err := b.store.RunGet(ctx, long); err != nil || r.Status != sundial.RunRunning {
			t.Fatalf("the run that opened it: %+v, %v; want RUNNING", r, err)
		}
		if got := n.events(); len(got) != 1 || got[0] != sundial.EventOpened {
			t.Fatalf("sent %v, want one opened", got)
		}
		// The next fire (20 s) is short: it resolves the incident while
		// the long one still runs.
		hold(0)
		at(22 * time.Second)
		if incs := incidents(); len(incs) != 1 || incs[0].Status != sundial.IncidentResolved {
			t.Fatalf("after a short run: %+v", incs)
		}
		// Sweeps go on while the long run runs, and it ends (50 s) past
		// the threshold: no second incident for it.
		at(55 * time.Second)
		if r, err := b.store.RunGet(ctx, long); err != nil || !r.Status.Final() {
			t.Fatalf("the long run: %+v, %v; want it ended", r, err)
		}
		if incs := incidents(); len(incs) != 1 {
			t.Fatalf("the long run opened %d incidents, want 1: %+v", len(incs), incs)
		}
		if got := n.events(); len(got) != 2 || got[1] != sundial.EventResolved {
			t.Fatalf("sent %v, want opened, resolved", got)
		}
		// Another long run opens a new incident.
		hold(30 * time.Second)
		at(68 * time.Second) // the fire of 60 s, past its threshold and a sweep
		incs = incidents()
		if len(incs) != 2 || incs[0].Status != sundial.IncidentOpen || incs[0].RunID == long {
			t.Fatalf("a second long run: %+v", incs)
		}
		b.stop(t)
	})
}
