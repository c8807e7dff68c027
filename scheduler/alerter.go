package scheduler

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/label"
)

// alertStore is what the alerter needs of the store.
type alertStore interface {
	AlertRuleList(ctx context.Context) ([]*sundial.AlertRule, error)
	AlertChannelList(ctx context.Context) ([]*sundial.AlertChannel, error)
	RunList(ctx context.Context, f sundial.RunListParams) ([]*sundial.Run, error)
	RunLongRunning(ctx context.Context, startedBefore time.Time, limit int) ([]*sundial.Run, error)
	TaskGet(ctx context.Context, id int64) (*sundial.Task, error)
	IncidentOpen(ctx context.Context, inc *sundial.Incident, notes []*sundial.Notification) (bool, error)
	IncidentResolve(ctx context.Context, id int64, now time.Time, notes []*sundial.Notification) (bool, error)
	IncidentRepeat(ctx context.Context, id int64, prev, now time.Time, notes []*sundial.Notification) (bool, error)
	IncidentGet(ctx context.Context, id int64) (*sundial.Incident, error)
	IncidentList(ctx context.Context, f sundial.IncidentListParams) ([]*sundial.Incident, error)
	NotificationClaim(ctx context.Context, nodeID string, now, until time.Time, limit int) ([]*sundial.Notification, error)
	NotificationFinish(ctx context.Context, nodeID string, n *sundial.Notification) (bool, error)
}

// How the alerter works: it sweeps (reloads its rules, channels and the
// open incidents, resolves the incidents whose condition cleared, sends
// the repeats) every Config.AlertSweep; it looks for notifications due
// every alertPoll, and at once after it made some; a claim of a
// notification lasts notifyLease; it delivers up to notifyBatch at a time.
const (
	alertPoll     = 2 * time.Second
	notifyLease   = 2 * time.Minute
	notifyBatch   = 20
	maxOpenSeries = 1000 // sundial_alert_incidents_open series, the rest summed under task="_other"
	maxLongRuns   = 1000 // RUNNING runs a long_run sweep reads, the longest running first
)

// alertRule is a rule as the alerter holds it, its selector parsed.
type alertRule struct {
	*sundial.AlertRule
	sel label.Selector
}

// watches reports whether r watches task t.
func (r *alertRule) watches(t *sundial.Task) bool {
	if r.TaskID != 0 {
		return r.TaskID == t.ID
	}
	return r.sel != nil && r.sel.Matches(t.Labels)
}

// incKey names the incident of a (rule, task).
type incKey struct{ rule, task int64 }

// longKey names a run a long_run rule has judged running long.
type longKey struct{ rule, run int64 }

// alertJob is an outcome that matters to a rule: to judge with the
// task's runs, or to open or resolve the rule's incident of the task.
type alertJob struct {
	rule    *alertRule
	task    *sundial.Task
	run     int64 // the run judged; 0: none
	verdict sundial.AlertVerdict
	reason  string
}

// alerter opens, repeats and resolves incidents and delivers their
// notifications (docs/alerts.md), once per cluster whatever the number of
// nodes:
//
//   - the writer hands it every outcome this node records (observe); the
//     rules watching the task judge it in memory (AlertCondition.Judge),
//     so an ordinary success of a task without an open incident costs no
//     read and no write; only an outcome that opens or resolves one (or a
//     failure, for the rules that count failures: a read of the task's
//     latest runs) goes to the alerter's loop;
//   - an incident is opened with its notifications in one transaction,
//     under a unique key of (rule, task) among the open ones, and
//     resolved or repeated by a compare-and-swap: of nodes that decide at
//     once, one writes, and only it makes notifications;
//   - the notifications are an outbox: any node claims the due ones for a
//     lease, sends them (Config.Notify) and records each attempt; a
//     failure is tried again after a backoff, a claim whose node died is
//     taken again when its lease ends;
//   - every sweep, each node reloads the rules, channels and open
//     incidents, resolves those whose task succeeded since they opened
//     (or whose failure rate fell below the rule's), so an incident
//     another node opened resolves too, and sends the repeats due (not
//     for an acknowledged incident);
//   - when a rule of long_run exists, the sweep also reads the runs
//     RUNNING past the smallest such threshold (one query on an index of
//     status, bounded by the runs running) and opens the incident of a
//     run still in its call past its rule's threshold, once per run: an
//     incident records its run, and a long_run rule opens none for a run
//     that already opened one. Nothing on the fire path changes.
type alerter struct {
	store  alertStore
	log    *slog.Logger
	node   string
	sweep  time.Duration
	notify func(ctx context.Context, ch *sundial.AlertChannel, m sundial.AlertMessage) error
	sealer sundial.Sealer
	m      *alertMetrics

	mu       sync.Mutex
	rules    []*alertRule
	channels map[string]*sundial.AlertChannel
	open     map[incKey]*sundial.Incident
	jobs     []alertJob
	// longDone are the (rule, run) pairs of the runs a long_run sweep has
	// opened an incident for, or found one of: not looked up again while
	// the run keeps running (the sweep's goroutine alone uses it).
	longDone map[longKey]bool

	wake, deliverNow, reload chan struct{}
}

// alertMetrics are the alerter's series.
type alertMetrics struct {
	open     *prometheus.GaugeVec
	opened   *prometheus.CounterVec
	notified *prometheus.CounterVec
}

func newAlertMetrics(reg prometheus.Registerer) *alertMetrics {
	m := &alertMetrics{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sundial_alert_incidents_open",
			Help: "Open incidents of each task, as the cluster has them at this node's latest sweep; only tasks with one (at most 1000 series, the rest under task=\"_other\").",
		}, []string{"task"}),
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sundial_alert_incidents_opened_total",
			Help: "Incidents this node opened, by condition.",
		}, []string{"condition"}),
		notified: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sundial_alert_notifications_total",
			Help: "Notification attempts this node made, by result (sent, retry, failed; canceled: a repeat dropped after an acknowledge or resolve).",
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.open, m.opened, m.notified)
	}
	return m
}

func newAlerter(cfg Config, store alertStore, log *slog.Logger, reg prometheus.Registerer) *alerter {
	return &alerter{store: store, log: log.With("component", "alerter"), node: cfg.Node.ID, sweep: cfg.AlertSweep,
		notify: cfg.Notify, sealer: cfg.Sealer, m: newAlertMetrics(reg),
		channels: map[string]*sundial.AlertChannel{}, open: map[incKey]*sundial.Incident{},
		wake: make(chan struct{}, 1), deliverNow: make(chan struct{}, 1), reload: make(chan struct{}, 1)}
}

// observe takes an outcome the store has recorded (writer.record). It
// reads nothing: the rules and open incidents are in memory.
func (a *alerter) observe(o outcome) {
	if o.task == nil || o.status == sundial.RunInterrupted || o.status == sundial.RunWaitingCallback {
		return
	}
	ao := sundial.AlertOutcome{Run: o.run, Status: o.status, Retry: o.retry}
	if o.err != "" && o.run.Error != o.err {
		r := *o.run
		r.Error = o.err
		ao.Run = &r
	}
	if !o.started.IsZero() {
		ao.Called, ao.Took = true, o.finished.Sub(o.started)
		if o.delivery <= 1 && o.run.Trigger != sundial.TriggerBackfill {
			ao.Lag = o.started.Sub(dueOf(o.run))
		}
	}
	a.judge(o.task, ao)
}

// paused takes a pause of a task by this node (the pauser's hook).
func (a *alerter) paused(p sundial.AutoPaused) {
	o := sundial.AlertOutcome{Paused: true, Run: &sundial.Run{TaskID: p.Task.ID}}
	if len(p.Runs) > 0 {
		o.Run = p.Runs[0]
	}
	a.judge(p.Task, o)
}

func (a *alerter) judge(t *sundial.Task, o sundial.AlertOutcome) {
	a.mu.Lock()
	defer a.mu.Unlock()
	queued := false
	for _, r := range a.rules {
		if !r.watches(t) {
			continue
		}
		_, open := a.open[incKey{r.ID, t.ID}]
		v, reason := r.Condition.Judge(o, open)
		if v == sundial.VerdictNone || (v == sundial.VerdictOpen && open) ||
			(v == sundial.VerdictHistory && open && o.Status != sundial.RunSuccess) {
			continue // nothing to change: a failure of a task whose incident is open reads nothing
		}
		a.jobs = append(a.jobs, alertJob{rule: r, task: t, run: o.Run.ID, verdict: v, reason: reason})
		queued = true
	}
	if queued {
		poke(a.wake)
	}
}

// Run judges, sweeps and delivers until ctx is done.
func (a *alerter) Run(ctx context.Context) error {
	if err := a.load(ctx); err != nil && ctx.Err() == nil {
		a.log.Error("load alert rules", "err", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.deliverLoop(ctx)
	}()
	defer func() { <-done }()
	sweep := time.NewTimer(a.sweep)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
			a.mu.Lock()
			jobs := a.jobs
			a.jobs = nil
			a.mu.Unlock()
			for _, j := range jobs {
				if err := a.apply(ctx, j); err != nil && ctx.Err() == nil {
					a.log.Error("alert: apply rule", "rule", j.rule.Name, "task_id", j.task.ID, "err", err)
				}
			}
		case <-a.reload:
			if err := a.load(ctx); err != nil && ctx.Err() == nil {
				a.log.Error("load alert rules", "err", err)
			}
		case <-sweep.C:
			if err := a.load(ctx); err != nil && ctx.Err() == nil {
				a.log.Error("load alert rules", "err", err)
			} else if err := a.sweepOpen(ctx); err != nil && ctx.Err() == nil {
				a.log.Error("alert: sweep incidents", "err", err)
			} else if err := a.sweepLong(ctx); err != nil && ctx.Err() == nil {
				a.log.Error("alert: sweep long runs", "err", err)
			}
			sweep.Reset(a.sweep)
		}
	}
}

// load reads the rules, channels and open incidents.
func (a *alerter) load(ctx context.Context) error {
	rules, err := a.store.AlertRuleList(ctx)
	if err != nil {
		return err
	}
	chans, err := a.store.AlertChannelList(ctx)
	if err != nil {
		return err
	}
	open, err := a.store.IncidentList(ctx, sundial.IncidentListParams{Status: sundial.IncidentOpen, Limit: 10000})
	if err != nil {
		return err
	}
	held := make([]*alertRule, 0, len(rules))
	for _, r := range rules {
		ar := &alertRule{AlertRule: r}
		if r.Selector != "" {
			sel, err := sundial.ParseSelector("selector", r.Selector)
			if err != nil {
				continue
			}
			ar.sel = sel
		}
		held = append(held, ar)
	}
	byName := make(map[string]*sundial.AlertChannel, len(chans))
	for _, c := range chans {
		byName[c.Name] = c
	}
	openBy := make(map[incKey]*sundial.Incident, len(open))
	perTask := map[string]int{}
	for _, inc := range open {
		openBy[incKey{inc.RuleID, inc.TaskID}] = inc
		perTask[inc.TaskName]++
	}
	a.mu.Lock()
	a.rules, a.channels, a.open = held, byName, openBy
	a.mu.Unlock()
	a.m.open.Reset()
	n := 0
	for task, c := range perTask {
		if n++; n > maxOpenSeries {
			task = "_other"
		}
		a.m.open.WithLabelValues(task).Add(float64(c))
	}
	return nil
}

// channelsOf returns the channels rule r notifies (those that exist).
func (a *alerter) channelsOf(r *alertRule) []*sundial.AlertChannel {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*sundial.AlertChannel, 0, len(r.Channels))
	for _, name := range r.Channels {
		if c := a.channels[name]; c != nil {
			out = append(out, c)
		} else {
			a.log.Warn("alert rule names a channel that does not exist", "rule", r.Name, "channel", name)
		}
	}
	return out
}

// apply carries out a job: reads the task's runs if the rule needs them,
// then opens or resolves the incident.
func (a *alerter) apply(ctx context.Context, j alertJob) error {
	now := time.Now()
	if j.verdict == sundial.VerdictHistory {
		runs, err := a.store.RunList(ctx, j.rule.Condition.HistoryParams(j.task.ID, now))
		if err != nil {
			return err
		}
		j.verdict, j.reason = j.rule.Condition.JudgeHistory(runs)
	}
	key := incKey{j.rule.ID, j.task.ID}
	a.mu.Lock()
	inc := a.open[key]
	a.mu.Unlock()
	switch {
	case j.verdict == sundial.VerdictOpen && inc == nil:
		return a.openIncident(ctx, j, now)
	case j.verdict == sundial.VerdictResolve && inc != nil:
		return a.resolve(ctx, j.rule, inc, now)
	}
	return nil
}

func (a *alerter) openIncident(ctx context.Context, j alertJob, now time.Time) error {
	if j.rule.Condition.Kind == sundial.CondLongRun && j.run != 0 {
		// Once per run: a run that opened the incident (the sweep saw it
		// running long) and is still long when it ends, after another
		// run's short call resolved it, does not open it again.
		had, err := a.store.IncidentList(ctx, sundial.IncidentListParams{RuleID: j.rule.ID, TaskID: j.task.ID, RunID: j.run, Limit: 1})
		if err != nil || len(had) > 0 {
			return err
		}
	}
	inc := &sundial.Incident{RuleID: j.rule.ID, RuleName: j.rule.Name, TaskID: j.task.ID, TaskName: j.task.Name,
		Condition: j.rule.Condition.Kind, Reason: j.reason, OpenedAt: now, NotifiedAt: now, RunID: j.run}
	notes := sundial.Notifications(j.rule.AlertRule, a.channelsOf(j.rule), sundial.EventOpened, now)
	opened, err := a.store.IncidentOpen(ctx, inc, notes)
	if err != nil {
		return err
	}
	if !opened {
		// Another node opened it: learn it, to resolve it.
		open, err := a.store.IncidentList(ctx, sundial.IncidentListParams{Status: sundial.IncidentOpen, RuleID: j.rule.ID,
			TaskID: j.task.ID, Limit: 1})
		if err != nil || len(open) == 0 {
			return err
		}
		inc = open[0]
	} else {
		a.m.opened.WithLabelValues(string(inc.Condition)).Inc()
		a.m.open.WithLabelValues(inc.TaskName).Inc()
		a.log.Warn("incident opened", "incident_id", inc.ID, "rule", inc.RuleName, "task_id", inc.TaskID,
			"task_name", inc.TaskName, "reason", inc.Reason, "notifications", len(notes))
		poke(a.deliverNow)
	}
	a.mu.Lock()
	a.open[incKey{inc.RuleID, inc.TaskID}] = inc
	a.mu.Unlock()
	return nil
}

func (a *alerter) resolve(ctx context.Context, r *alertRule, inc *sundial.Incident, now time.Time) error {
	var notes []*sundial.Notification
	if r != nil {
		notes = sundial.Notifications(r.AlertRule, a.channelsOf(r), sundial.EventResolved, now)
	}
	ok, err := a.store.IncidentResolve(ctx, inc.ID, now, notes)
	if err != nil {
		return err
	}
	a.mu.Lock()
	delete(a.open, incKey{inc.RuleID, inc.TaskID})
	a.mu.Unlock()
	if ok {
		if g, err := a.m.open.GetMetricWithLabelValues(inc.TaskName); err == nil {
			g.Dec()
		}
		a.log.Info("incident resolved", "incident_id", inc.ID, "rule", inc.RuleName, "task_id", inc.TaskID,
			"task_name", inc.TaskName, "notifications", len(notes))
		poke(a.deliverNow)
	}
	return nil
}

// sweepOpen resolves the open incidents whose condition cleared and sends
// the repeats that are due.
func (a *alerter) sweepOpen(ctx context.Context) error {
	a.mu.Lock()
	rules := make(map[int64]*alertRule, len(a.rules))
	for _, r := range a.rules {
		rules[r.ID] = r
	}
	open := make([]*sundial.Incident, 0, len(a.open))
	for _, inc := range a.open {
		open = append(open, inc)
	}
	a.mu.Unlock()
	for _, inc := range open {
		if ctx.Err() != nil {
			return nil
		}
		now := time.Now()
		r := rules[inc.RuleID]
		if r == nil {
			// The rule was deleted: its incidents resolve, silently.
			if err := a.resolve(ctx, nil, inc, now); err != nil {
				return err
			}
			continue
		}
		cleared, err := a.cleared(ctx, r, inc, now)
		if err != nil {
			return err
		}
		if cleared {
			if err := a.resolve(ctx, r, inc, now); err != nil {
				return err
			}
			continue
		}
		if every := time.Duration(r.RepeatEvery); every > 0 && inc.AckedAt == nil && now.Sub(inc.NotifiedAt) >= every {
			// A channel that has yet to take an earlier notification of
			// the incident (it is failing: the notification waits for its
			// retry) gets no repeat on top: the backlog would reach it in
			// a burst, a repeat before the opened one. The repeat time
			// moves on all the same.
			notes := sundial.Notifications(r.AlertRule, unsentTo(a.channelsOf(r), inc), sundial.EventRepeat, now)
			ok, err := a.store.IncidentRepeat(ctx, inc.ID, inc.NotifiedAt, now, notes)
			if err != nil {
				return err
			}
			if ok {
				poke(a.deliverNow)
			}
		}
	}
	return nil
}

// unsentTo returns the channels of chans without a notification of inc
// still to send (PENDING), as of the last load.
func unsentTo(chans []*sundial.AlertChannel, inc *sundial.Incident) []*sundial.AlertChannel {
	out := chans[:0:0]
	for _, c := range chans {
		pending := slices.ContainsFunc(inc.Notifications, func(n *sundial.Notification) bool {
			return n.ChannelID == c.ID && n.Status == sundial.NotifyPending
		})
		if !pending {
			out = append(out, c)
		}
	}
	return out
}

// sweepLong opens the incidents of the long_run rules for the runs still
// in their call past the rule's threshold. Without a rule of long_run it
// reads nothing.
func (a *alerter) sweepLong(ctx context.Context) error {
	a.mu.Lock()
	var rules []*alertRule
	least := time.Duration(0)
	for _, r := range a.rules {
		if r.Condition.Kind != sundial.CondLongRun {
			continue
		}
		rules = append(rules, r)
		if th := time.Duration(r.Condition.Threshold); least == 0 || th < least {
			least = th
		}
	}
	a.mu.Unlock()
	if len(rules) == 0 {
		return nil
	}
	now := time.Now()
	runs, err := a.store.RunLongRunning(ctx, now.Add(-least), maxLongRuns)
	if err != nil {
		return err
	}
	tasks := map[int64]*sundial.Task{}
	done := make(map[longKey]bool, len(a.longDone))
	defer func() { a.longDone = done }()
	for _, run := range runs {
		if ctx.Err() != nil {
			return nil
		}
		t, seen := tasks[run.TaskID]
		if !seen {
			if t, err = a.store.TaskGet(ctx, run.TaskID); err != nil && sundial.ErrorCode(err) != sundial.ENotFound {
				return err
			}
			tasks[run.TaskID] = t // nil: deleted
		}
		if t == nil || run.StartedAt == nil {
			continue
		}
		for _, r := range rules {
			key := longKey{r.ID, run.ID}
			if a.longDone[key] {
				done[key] = true
				continue
			}
			v, reason := r.Condition.JudgeRunning(run, now)
			if v != sundial.VerdictOpen || !r.watches(t) {
				continue
			}
			a.mu.Lock()
			_, open := a.open[incKey{r.ID, t.ID}]
			a.mu.Unlock()
			if open {
				continue // open for another run: this one may open it later
			}
			if err := a.openIncident(ctx, alertJob{rule: r, task: t, run: run.ID, verdict: v, reason: reason}, now); err != nil {
				return err
			}
			done[key] = true
		}
	}
	return nil
}

// cleared reports whether the condition of open incident inc of rule r
// no longer holds: the task's latest run that counts succeeded after it
// opened (a failure rate: the window's runs no longer reach the rate).
// late_start and long_run are cleared by the next fire that is on time
// or short, as this node or another records it (observe).
func (a *alerter) cleared(ctx context.Context, r *alertRule, inc *sundial.Incident, now time.Time) (bool, error) {
	c := r.Condition
	switch c.Kind {
	case sundial.CondLateStart, sundial.CondLongRun:
		return false, nil
	case sundial.CondFailureRate:
		runs, err := a.store.RunList(ctx, c.HistoryParams(inc.TaskID, now))
		if err != nil {
			return false, err
		}
		v, _ := c.JudgeHistory(runs)
		return v == sundial.VerdictResolve, nil
	}
	latest, err := a.store.RunList(ctx, sundial.RunListParams{TaskID: inc.TaskID, Status: sundial.AutoPauseCounted(), Limit: 1})
	if err != nil || len(latest) == 0 {
		return false, err
	}
	l := latest[0]
	return l.Status == sundial.RunSuccess && l.FinishedAt != nil && l.FinishedAt.After(inc.OpenedAt), nil
}

// deliverLoop sends the notifications due until ctx is done.
func (a *alerter) deliverLoop(ctx context.Context) {
	tick := time.NewTimer(alertPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.deliverNow:
		case <-tick.C:
		}
		for ctx.Err() == nil && a.hasChannels() {
			n, err := a.deliver(ctx)
			if err != nil && ctx.Err() == nil {
				a.log.Error("alert: deliver notifications", "err", err)
			}
			if err != nil || n < notifyBatch {
				break
			}
		}
		tick.Reset(alertPoll)
	}
}

// hasChannels reports whether any channel exists, as of the last load: a
// cluster without one has no notification, and no node looks for one.
func (a *alerter) hasChannels() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.channels) > 0
}

// deliver claims the notifications due and sends them; it returns how
// many it claimed.
func (a *alerter) deliver(ctx context.Context) (int, error) {
	now := time.Now()
	notes, err := a.store.NotificationClaim(ctx, a.node, now, now.Add(notifyLease), notifyBatch)
	if err != nil {
		return 0, err
	}
	incs := map[int64]*sundial.Incident{}
	for _, n := range notes {
		inc := incs[n.IncidentID]
		if inc == nil {
			if inc, err = a.store.IncidentGet(ctx, n.IncidentID); err != nil {
				return len(notes), err
			}
			incs[n.IncidentID] = inc
		}
		if n.Event == sundial.EventRepeat && (inc.AckedAt != nil || inc.Status == sundial.IncidentResolved) {
			// Queued before the acknowledge or the resolve (its channel
			// failing meanwhile): a reminder of what is no longer news.
			n.Cancel(time.Now(), a.node, "not sent: the incident was acknowledged or resolved before it went out")
			a.m.notified.WithLabelValues("canceled").Inc()
			if _, err := a.store.NotificationFinish(context.WithoutCancel(ctx), a.node, n); err != nil {
				return len(notes), err
			}
			continue
		}
		msg := sundial.MessageOf(inc, n)
		msg.Event = n.Event
		if n.Event == sundial.EventOpened || n.Event == sundial.EventRepeat {
			// The message tells what the incident was when it was made.
			msg.Status, msg.ResolvedAt = sundial.IncidentOpen, nil
		}
		err := a.send(ctx, n, msg)
		n.Attempted(time.Now(), a.node, err)
		result := "sent"
		switch {
		case n.Status == sundial.NotifyFailed:
			result = "failed"
			a.log.Error("notification failed for good", "notification_id", n.ID, "incident_id", inc.ID,
				"channel", n.ChannelName, "tries", n.Tries, "err", err)
		case err != nil:
			result = "retry"
			a.log.Warn("notification failed; it will be tried again", "notification_id", n.ID, "incident_id", inc.ID,
				"channel", n.ChannelName, "tries", n.Tries, "retry_at", n.DueAt, "err", err)
		}
		a.m.notified.WithLabelValues(result).Inc()
		if _, err := a.store.NotificationFinish(context.WithoutCancel(ctx), a.node, n); err != nil {
			return len(notes), err
		}
	}
	return len(notes), nil
}

// send delivers n's message to its channel.
func (a *alerter) send(ctx context.Context, n *sundial.Notification, msg sundial.AlertMessage) error {
	a.mu.Lock()
	var ch *sundial.AlertChannel
	for _, c := range a.channels {
		if c.ID == n.ChannelID {
			ch = c
		}
	}
	a.mu.Unlock()
	if ch == nil {
		// Made on another node since the last sweep, or deleted.
		if err := a.load(ctx); err != nil {
			return err
		}
		a.mu.Lock()
		for _, c := range a.channels {
			if c.ID == n.ChannelID {
				ch = c
			}
		}
		a.mu.Unlock()
	}
	if ch == nil {
		return errChannelGone
	}
	open, err := sundial.OpenChannel(ch, a.sealer)
	if err != nil {
		return err
	}
	return a.notify(ctx, open, msg)
}

var errChannelGone = &sundial.Error{Code: sundial.ENotFound, Message: "the channel was deleted"}
