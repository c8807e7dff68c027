package sundial

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Live events: one Event per change of a run's status and per change of a
// task, sent to the clients of GET /api/v1/events. A node makes the events
// of the changes it makes (its scheduler's, its API's) and an EventRelay
// carries them to the other nodes through the database they share,
// writing no row: see docs/design.md, "Live events".

// EventKind says what changed.
type EventKind string

// The kinds of events: a run's by the status it entered, a task's by what
// was done to it.
const (
	// EventRunScheduled: a manual trigger made a run, SCHEDULED. (A fire
	// the planner plans ahead has no event before it starts, is queued or
	// skipped: see scheduler/events.go.)
	EventRunScheduled EventKind = "run.scheduled"
	// EventRunQueued: admission queued the run behind its task's active
	// runs (concurrency_policy QUEUE).
	EventRunQueued EventKind = "run.queued"
	// EventRunStarted: a delivery of the run began (RUNNING).
	EventRunStarted EventKind = "run.started"
	// EventRunWaiting: the target of an ASYNC task took the run; it waits
	// for its callback (WAITING_CALLBACK) until Run.DueAt.
	EventRunWaiting EventKind = "run.waiting"
	// EventRunRetrying: the run is SCHEDULED again for another delivery,
	// due at Run.DueAt: a retry after a failed delivery, or a delivery cut
	// off by a node's stop or death made again.
	EventRunRetrying EventKind = "run.retrying"
	// EventRunInterrupted: a delivery was cut off (INTERRUPTED); a live
	// node delivers the run again, or fails it.
	EventRunInterrupted EventKind = "run.interrupted"
	// EventRunFinished: the run ended: SUCCESS, FAILED, TIMEOUT,
	// FAILED_TIMEOUT, CANCELED or SKIPPED.
	EventRunFinished EventKind = "run.finished"

	EventTaskCreated  EventKind = "task.created"
	EventTaskUpdated  EventKind = "task.updated"
	EventTaskDeleted  EventKind = "task.deleted"
	EventTaskEnabled  EventKind = "task.enabled"
	EventTaskDisabled EventKind = "task.disabled"
)

// EventKinds returns every kind of event, the runs' then the tasks'.
func EventKinds() []EventKind {
	return []EventKind{EventRunScheduled, EventRunQueued, EventRunStarted, EventRunWaiting, EventRunRetrying,
		EventRunInterrupted, EventRunFinished,
		EventTaskCreated, EventTaskUpdated, EventTaskDeleted, EventTaskEnabled, EventTaskDisabled}
}

// Group is what the kind is about: "run" or "task".
func (k EventKind) Group() string {
	g, _, _ := strings.Cut(string(k), ".")
	return g
}

// RunEventKind is the kind of the event of a run entering status; retry
// says that a SCHEDULED run was delivered before (see EventRunRetrying).
func RunEventKind(status RunStatus, retry bool) EventKind {
	switch {
	case status == RunScheduled && retry:
		return EventRunRetrying
	case status == RunScheduled:
		return EventRunScheduled
	case status == RunQueued:
		return EventRunQueued
	case status == RunRunning:
		return EventRunStarted
	case status == RunWaitingCallback:
		return EventRunWaiting
	case status == RunInterrupted:
		return EventRunInterrupted
	}
	return EventRunFinished
}

// Event is one change of a run or a task.
type Event struct {
	// ID names the event in the whole cluster: every node that holds it
	// knows it by this ID, and a client resumes after it (Last-Event-ID).
	// See NewEventID.
	ID   string    `json:"id"`
	Kind EventKind `json:"kind"`
	// At is when the change was made, by the clock of the node that made
	// it (for a change a node found in the database, when it was written).
	At time.Time `json:"at"`
	// NodeID is the node that made the change; empty when a node found the
	// change in the database without being told of it (see
	// docs/design.md).
	NodeID string    `json:"node_id,omitempty"`
	Task   EventTask `json:"task"`
	// Run is the run that changed, for the run.* kinds.
	Run *EventRun `json:"run,omitempty"`
}

// EventTask is the task an event is about: the task that changed, or the
// task of the run that changed.
type EventTask struct {
	ID int64 `json:"id"`
	// Name is empty for a run whose task was deleted before the event was
	// made.
	Name string `json:"name,omitempty"`
	// Status and Version are the task's after the change: task.* kinds.
	Status  TaskStatus `json:"status,omitempty"`
	Version int64      `json:"version,omitempty"`
	// Changed names the fields a task.updated changed, sorted.
	Changed []string `json:"changed,omitempty"`
}

// EventRun is the run an event is about, as the change left it.
type EventRun struct {
	ID            int64      `json:"id"`
	Status        RunStatus  `json:"status"`
	SkipReason    SkipReason `json:"skip_reason,omitempty"`
	Trigger       Trigger    `json:"trigger"`
	ScheduledTime time.Time  `json:"scheduled_time"`
	Attempt       int        `json:"attempt,omitempty"`
	// Delivery numbers the delivery that began or ended (1 for the
	// fire's first); 0 before the first.
	Delivery   int        `json:"delivery,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// DueAt is when a run.retrying run is delivered again, or a
	// run.waiting run's callback deadline.
	DueAt      *time.Time `json:"due_at,omitempty"`
	HTTPStatus int        `json:"http_status,omitempty"`
	// Error is the run's error, cut to MaxEventError bytes.
	Error       string `json:"error,omitempty"`
	MissedCount int    `json:"missed_count,omitempty"`
}

// MaxEventError bounds the error text an event carries; the run has it
// whole (GET /api/v1/runs/{id}).
const MaxEventError = 512

// EventError is s cut to MaxEventError bytes, at a rune boundary.
func EventError(s string) string {
	if len(s) <= MaxEventError {
		return s
	}
	cut := MaxEventError
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// RunEvent is the event of run r of task t (nil: deleted) entering the
// status it has, as stored: the run as a trigger made it, as admission
// left it, as a node found it in the database.
func RunEvent(r *Run, t *Task, at time.Time) Event {
	e := Event{Kind: RunEventKind(r.Status, r.Deliveries > 0), At: at, Task: EventTask{ID: r.TaskID},
		Run: &EventRun{ID: r.ID, Status: r.Status, SkipReason: r.SkipReason, Trigger: r.Trigger,
			ScheduledTime: r.ScheduledTime, Attempt: r.Attempt, Delivery: r.Deliveries,
			StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, HTTPStatus: r.HTTPStatus,
			Error: EventError(r.Error), MissedCount: r.MissedCount}}
	if t != nil {
		e.Task.Name = t.Name
	}
	switch r.Status {
	case RunScheduled:
		if r.Deliveries > 0 {
			due := r.DueAt
			e.Run.DueAt = &due
		}
		e.Run.StartedAt, e.Run.FinishedAt = nil, nil
	case RunWaitingCallback:
		due := r.DueAt
		e.Run.DueAt = &due
	}
	return e
}

// TaskEvent is the event of a change of a task made through the API, read
// from its audit entry (AuditEntry: the actions task.create, task.update,
// task.delete, task.enable and task.disable, and any other "task." action
// that changes the task, as an update), and whether the entry is one.
// A trigger (task.trigger) changes a run, not the task: it has its run's
// events instead.
func TaskEvent(a *AuditEntry) (Event, bool) {
	kind := EventTaskUpdated
	switch a.Action {
	case "task.create":
		kind = EventTaskCreated
	case "task.delete":
		kind = EventTaskDeleted
	case "task.enable":
		kind = EventTaskEnabled
	case "task.disable":
		kind = EventTaskDisabled
	case "task.trigger":
		return Event{}, false
	default:
		if !strings.HasPrefix(a.Action, "task.") || a.TaskID == 0 {
			return Event{}, false
		}
	}
	// The task after the change; before a delete, as it was.
	fields := a.After
	if kind == EventTaskDeleted || len(fields) == 0 {
		fields = a.Before
	}
	var task struct {
		Name    string     `json:"name"`
		Status  TaskStatus `json:"status"`
		Version int64      `json:"version"`
		Changed []string   `json:"changed"`
	}
	_ = json.Unmarshal(fields, &task) // what it holds is the task's; the event names the task anyway
	e := Event{Kind: kind, At: a.At, Task: EventTask{ID: a.TaskID, Name: task.Name, Status: task.Status,
		Version: task.Version, Changed: task.Changed}}
	if kind != EventTaskUpdated {
		e.Task.Changed = nil
	}
	return e, true
}

// NewEventID returns the ID of an event made at at: its Unix microseconds,
// "-", and key, which makes it unique among the events of that
// microsecond in the cluster (a node's own mark and a sequence number, or
// what a node found in the database). EventIDTime reads the time back.
func NewEventID(at time.Time, key string) string {
	return strconv.FormatInt(at.UnixMicro(), 10) + "-" + key
}

// MaxEventIDLen bounds an event ID a client sends back.
const MaxEventIDLen = 128

// EventIDTime returns the time an event ID (NewEventID) carries, or an
// error saying what an ID looks like.
func EventIDTime(id string) (time.Time, error) {
	micros, key, ok := strings.Cut(id, "-")
	us, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || us < 0 || key == "" || len(id) > MaxEventIDLen || !eventKey(key) {
		return time.Time{}, fmt.Errorf("%q is not an event ID: an event's id field, such as 1767225600000000-a1b2c3.42", id)
	}
	return time.UnixMicro(us).UTC(), nil
}

// eventKey reports whether key is made of the characters an event ID's
// key may hold: ASCII letters, digits, ".", "-" and "_".
func eventKey(key string) bool {
	for _, c := range []byte(key) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// EventRelay carries events between the nodes of a cluster through the
// database they share, writing no row in it: PostgreSQL's NOTIFY, a poll
// of the runs and the audit log on MySQL (see store/postgres and
// store/mysql). A node on SQLite, alone, needs none.
type EventRelay interface {
	// Publish sends events this node made, with their IDs, to every
	// node, this one included: each node's Listen delivers them. It may
	// return before they are delivered.
	Publish(ctx context.Context, evs []Event) error
	// Listen delivers to sink the events of every node as they come,
	// until ctx is done; then it returns nil. It returns an error only
	// when it cannot listen at all.
	Listen(ctx context.Context, sink EventSink) error
}

// EventSink is where an EventRelay's Listen delivers.
type EventSink struct {
	// Deliver takes events, in the order this node is to send them.
	Deliver func([]Event)
	// Lost says that events may have been missed since the last ones
	// delivered (the connection to the database was lost), and why.
	Lost func(reason string)
	// Ready says that the relay listens: every event published from then
	// on is delivered. Called once.
	Ready func()
	// Interest takes the interests announced through an
	// EventDemandRelay (Announce), every node's, this one's included, in
	// the order they come; nil: they are dropped.
	Interest func(EventInterest)
}

// EventDemandRelay is an EventRelay whose sending costs every node
// (PostgreSQL's NOTIFY, which every node hears and decodes): its nodes
// send their events to the cluster only while some node has a stream of
// them open, which it announces. A node that has none keeps its events,
// and sends those a new interest asks for when it hears it. See
// docs/design.md, "Live events".
type EventDemandRelay interface {
	EventRelay
	// Announce tells every node, this one included (EventSink.Interest),
	// that in.Node has streams of the events open.
	Announce(ctx context.Context, in EventInterest) error
	// Dropped tells every node, this one included (EventSink.Lost), that
	// node dropped events it kept, made from on, before a stream asked for
	// them: the streams miss them.
	Dropped(ctx context.Context, node string, from time.Time) error
}

// EventInterest is a node's announce that it has streams of the live
// events open.
type EventInterest struct {
	Node string `json:"node"`
	// Since is when the node's streams opened, by its clock: it wants
	// every node's events from then on (and the nodes' clocks may differ:
	// see event.Slack).
	Since time.Time `json:"since"`
}
