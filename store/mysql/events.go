package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// The live events of the cluster, on a database without NOTIFY: a node
// takes its own events at once, as it publishes them, and finds the other
// nodes' changes by polling, every pollEvery, what was written since its
// last poll: the runs by updated_at (the index runs_updated, migration
// 0016), the changes of tasks in the audit log by happened_at. Each poll
// reaches lookback before the last, so that a change whose transaction
// committed late, or whose node's clock lags, is found still; what was
// delivered already is known and left out. A poll finds a run as it is,
// not each state it went through: a run that started and ended between two
// polls is seen ended. No row is written for an event.

// Timing of the polls.
const (
	pollEvery = 250 * time.Millisecond
	lookback  = time.Second
	// pollLimit bounds the rows of one query of a poll; a poll pages on
	// until it has read all.
	pollLimit = 2000
	// forgetAfter is how long the relay remembers what it delivered of a
	// run or an audit entry once a poll can no longer find it again.
	forgetAfter = lookback + 10*time.Second
)

// EventRelay returns the relay of the live events of the nodes on this
// database (see sundial.EventRelay): this node's events at once, the other
// nodes' from a poll of the runs and the audit log.
func (s *Store) EventRelay() sundial.EventRelay {
	return &relay{s: s, local: make(chan []sundial.Event, 1024), runs: map[int64]delivered{},
		tasks: map[string]time.Time{}, audit: map[int64]time.Time{}}
}

type relay struct {
	s     *Store
	local chan []sundial.Event // this node's, for Listen to deliver in turn with the polls' finds

	// What was delivered, touched by Listen alone.
	runs      map[int64]delivered  // the latest state delivered of each run
	tasks     map[string]time.Time // taskKey of each change of a task delivered
	audit     map[int64]time.Time  // the audit entries read
	lastPoll  time.Time            // when the last poll began, by the store's clock
	lostSince bool                 // the database failed a poll since the last that succeeded
}

// delivered is a state of a run a node delivered: its order (runOrder),
// and when, to forget it.
type delivered struct {
	delivery, step int
	final          bool
	at             time.Time
}

// runOrder is where a run in status, after deliveries deliveries, is in
// its life: a later state has a greater (delivery, step). A run counts
// its deliveries as each starts, and within a delivery goes SCHEDULED
// (planned), QUEUED, RUNNING, WAITING_CALLBACK, INTERRUPTED, SCHEDULED
// again (for the next delivery), or ends.
func runOrder(status sundial.RunStatus, deliveries int) (delivery, step int) {
	switch {
	case status == sundial.RunScheduled && deliveries == 0:
		step = 0
	case status == sundial.RunQueued:
		step = 1
	case status == sundial.RunRunning:
		step = 2
	case status == sundial.RunWaitingCallback:
		step = 3
	case status == sundial.RunInterrupted:
		step = 4
	case status == sundial.RunScheduled:
		step = 5
	default:
		step = 6
	}
	return deliveries, step
}

// newer reports whether the state of run e is later than what was
// delivered of it, and remembers it if so. An ended run changes no more.
func (r *relay) newer(run *sundial.EventRun, now time.Time) bool {
	d, step := runOrder(run.Status, run.Delivery)
	if cur, ok := r.runs[run.ID]; ok && (cur.final || d < cur.delivery || d == cur.delivery && step <= cur.step) {
		return false
	}
	r.runs[run.ID] = delivered{delivery: d, step: step, final: run.Status.Final(), at: now}
	return true
}

// taskKey names a change of a task alike in this node's event and in the
// one a poll makes of its audit entry.
func taskKey(e *sundial.Event) string {
	return fmt.Sprintf("%d.%s.%d", e.Task.ID, e.Kind, e.Task.Version)
}

// keep leaves out of evs what was delivered already, and remembers the
// rest.
func (r *relay) keep(evs []sundial.Event, now time.Time) []sundial.Event {
	out := evs[:0:0]
	for i := range evs {
		e := &evs[i]
		if e.Run != nil {
			if !r.newer(e.Run, now) {
				continue
			}
		} else {
			key := taskKey(e)
			if _, seen := r.tasks[key]; seen {
				continue
			}
			r.tasks[key] = now
		}
		out = append(out, *e)
	}
	return out
}

// Publish hands this node's events to Listen.
func (r *relay) Publish(ctx context.Context, evs []sundial.Event) error {
	select {
	case r.local <- evs:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Listen delivers this node's events and what the polls find until ctx is
// done. A poll the database fails is tried again at the next; the first
// failure says that events may be lost (a change made and changed again
// meanwhile is found in its last state only).
func (r *relay) Listen(ctx context.Context, sink sundial.EventSink) error {
	r.lastPoll = r.s.clock()
	sink.Ready()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case evs := <-r.local:
			if evs = r.keep(evs, r.s.clock()); len(evs) > 0 {
				sink.Deliver(evs)
			}
		case <-tick.C:
			evs, err := r.poll(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if !r.lostSince {
					r.lostSince = true
					r.s.log.Warn("live events: cannot poll the database", "component", "events", "err", err)
					sink.Lost("the database could not be polled for the cluster's changes")
				}
				continue
			}
			r.lostSince = false
			if len(evs) > 0 {
				sink.Deliver(evs)
			}
		}
	}
}

// poll returns the changes written since lookback before the last poll
// that were not delivered yet: the runs', then the tasks'.
func (r *relay) poll(ctx context.Context) ([]sundial.Event, error) {
	now := r.s.clock()
	since := r.lastPoll.Add(-lookback)
	runs, err := r.pollRuns(ctx, since)
	if err != nil {
		return nil, err
	}
	tasks, err := r.pollAudit(ctx, since)
	if err != nil {
		return nil, err
	}
	r.lastPoll = now
	found := append(runs, tasks...)
	slices.SortStableFunc(found, func(a, b sundial.Event) int { return a.At.Compare(b.At) })
	evs := r.keep(found, now)
	r.forget(now)
	return evs, nil
}

// forget drops what no poll can find again.
func (r *relay) forget(now time.Time) {
	for id, d := range r.runs {
		if now.Sub(d.at) > forgetAfter {
			delete(r.runs, id)
		}
	}
	for key, at := range r.tasks {
		if now.Sub(at) > forgetAfter {
			delete(r.tasks, key)
		}
	}
	for id, at := range r.audit {
		if now.Sub(at) > forgetAfter {
			delete(r.audit, id)
		}
	}
}

// pollRunsSQL reads the runs written at or after a time, in the order of
// runs_updated, after a page's last (updated_at, id), with their tasks'
// names: what an event says of them.
const pollRunsSQL = `SELECT r.id, r.task_id, t.name, r.status, r.skip_reason, r.trigger_type, r.scheduled_at, r.attempt,
	r.deliveries, r.started_at, r.finished_at, r.due_at, r.http_status, LEFT(r.error, 512), r.missed_count, r.updated_at
	FROM runs r FORCE INDEX (runs_updated) JOIN tasks t ON t.id = r.task_id
	WHERE r.updated_at >= ? AND (r.updated_at > ? OR r.id > ?)
	ORDER BY r.updated_at, r.id LIMIT ?`

// pollRuns returns the event of each run written since since, as it is
// now, at the time it was written; a fire planned and not due yet has
// none.
func (r *relay) pollRuns(ctx context.Context, since time.Time) ([]sundial.Event, error) {
	var evs []sundial.Event
	after, afterID := sqlrow.Micros(since)-1, int64(0)
	for {
		rows, err := r.s.db.QueryContext(ctx, pollRunsSQL, after, after, afterID, pollLimit)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			var (
				run                        sundial.Run
				name                       string
				scheduled, due, updated    int64
				started, finished          sql.NullInt64
				status, skip, trigger, err string
			)
			if err := rows.Scan(&run.ID, &run.TaskID, &name, &status, &skip, &trigger, &scheduled, &run.Attempt,
				&run.Deliveries, &started, &finished, &due, &run.HTTPStatus, &err, &run.MissedCount, &updated); err != nil {
				rows.Close()
				return nil, err
			}
			run.Status, run.SkipReason, run.Trigger, run.Error = sundial.RunStatus(status), sundial.SkipReason(skip), sundial.Trigger(trigger), err
			run.ScheduledTime, run.DueAt = sqlrow.FromMicros(scheduled), sqlrow.FromMicros(due)
			if started.Valid {
				t := sqlrow.FromMicros(started.Int64)
				run.StartedAt = &t
			}
			if finished.Valid {
				t := sqlrow.FromMicros(finished.Int64)
				run.FinishedAt = &t
			}
			after, afterID = updated, run.ID
			n++
			if run.Planned() {
				continue // a fire planned ahead has no event before it starts (see scheduler/events.go)
			}
			at := sqlrow.FromMicros(updated)
			e := sundial.RunEvent(&run, &sundial.Task{Name: name}, at)
			e.ID = sundial.NewEventID(at, "r"+strconv.FormatInt(run.ID, 10)+"."+strconv.Itoa(run.Deliveries)+"."+status)
			evs = append(evs, e)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if n < pollLimit {
			return evs, nil
		}
	}
}

// pollAuditSQL reads the changes of tasks the audit log holds from a time
// on, through audit_happened.
const pollAuditSQL = `SELECT id, happened_at, action, task_id, before_json, after_json FROM audit
	WHERE happened_at >= ? AND action LIKE 'task.%' ORDER BY id`

// pollAudit returns the events of the changes of tasks made through the API
// of any node since since, each once.
func (r *relay) pollAudit(ctx context.Context, since time.Time) ([]sundial.Event, error) {
	rows, err := r.s.db.QueryContext(ctx, pollAuditSQL, sqlrow.Micros(since))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var evs []sundial.Event
	now := r.s.clock()
	for rows.Next() {
		var (
			a             sundial.AuditEntry
			at            int64
			before, after []byte
		)
		if err := rows.Scan(&a.ID, &at, &a.Action, &a.TaskID, &before, &after); err != nil {
			return nil, err
		}
		if _, seen := r.audit[a.ID]; seen {
			continue
		}
		r.audit[a.ID] = now
		a.At, a.Before, a.After = sqlrow.FromMicros(at), before, after
		if e, ok := sundial.TaskEvent(&a); ok {
			e.ID = sundial.NewEventID(a.At, "a"+strconv.FormatInt(a.ID, 10))
			evs = append(evs, e)
		}
	}
	return evs, rows.Err()
}
