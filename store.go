package sundial

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sundialhq/sundial/label"
)

// Store is the storage contract. Every database adapter implements it and
// passes the conformance suite in store/storetest. Methods that change state
// do so in one transaction; errors are *Error values (ENotFound, EConflict)
// where the caller can act on them, EUnavailable (see Unavailable) when the
// database cannot be reached or cannot write now, as each adapter
// classifies its driver's errors; anything else is internal.
//
// Times are stored in UTC with microsecond precision. Where a time comes
// from is one rule: a method records the times its caller gives (a now
// argument, or the times in its Params: the caller's clock, which tests
// fake). A time the caller does not give is the moment of the method's own
// write, read from the store's clock (each adapter's Options.Clock,
// time.Now by default) once the rows it writes are locked: a claim's
// updated_at and the start of the runs it starts, a run inserted without
// CreatedAt, a report without its time, the send cutoff's lower bound
// (SendCutoff). Node liveness alone (NodeRegister, NodeHeartbeat,
// NodeReap) reads the database's clock, because it compares the
// heartbeats of nodes whose own clocks may differ; SQLite's database
// lives in one process, whose clock is the store's.
//
// A task's Version grows by one with every change of the task itself: each
// TaskUpdate, and the end of a one-off task (its status set COMPLETED or
// FAILED along with a run's outcome), so that a client's write based on an
// earlier read is refused as stale. Planning a task's fires is not a change.
type Store interface {
	// Close releases the database.
	Close() error
	// Ping reports whether the database answers.
	Ping(ctx context.Context) error

	// TaskCreateMany inserts the tasks (already normalised) in one
	// transaction, setting each one's ID, Version (1), CreatedAt and
	// UpdatedAt (now). A live task with the same name is EConflict (field
	// "name"). A task whose RequestID names a live task is resolved to it:
	// when that task has the same RequestHash, nothing is inserted for it,
	// *ts[i] becomes the existing task and existed[i] is true; otherwise it
	// is EConflict (field "request_id"). An error about one task is a
	// *BatchError with its index, and inserts nothing at all. Concurrent
	// calls with the same RequestID create one task.
	TaskCreateMany(ctx context.Context, ts []*Task, now time.Time) (existed []bool, err error)
	// TaskGet returns a live task, or ENotFound.
	TaskGet(ctx context.Context, id int64) (*Task, error)
	// TaskExists reports whether a task, live or deleted, has the ID id.
	// Deleting a task only marks it deleted, so false means that no task
	// ever had it.
	TaskExists(ctx context.Context, id int64) (bool, error)
	// TaskList returns live tasks ordered by ID.
	TaskList(ctx context.Context, f TaskListParams) ([]*Task, error)
	// TaskUpdate replaces the task whose ID and Version match t, bumping
	// Version and setting UpdatedAt, and deletes its upcoming runs so that
	// the planner plans it anew from t.NextFireTime: planned SCHEDULED runs
	// never delivered (Deliveries 0, trigger not MANUAL), and first
	// deliveries committed RUNNING ahead of an instant later than the
	// send cutoff (see SendMargin). Runs waiting for a retry stay, with the
	// task's new priority, but are handed back to no node with a bumped
	// fence, as are redeliveries committed ahead of an instant past the
	// cutoff (their delivery count undone), so that they go out under the
	// new definition. When t is not ENABLED, its QUEUED runs become
	// SKIPPED (SkipDisabled, DisabledQueuedError) and its runs waiting for
	// another delivery CANCELED (DisabledRetryError), finished now. A
	// missing task is ENotFound, a version mismatch EConflict (field
	// "version").
	TaskUpdate(ctx context.Context, t *Task, now time.Time) error
	// TaskDelete marks the task deleted, deletes its SCHEDULED runs never
	// delivered and its first deliveries committed ahead of an instant past
	// the send cutoff, and cancels its other SCHEDULED runs, its QUEUED
	// runs and its other runs committed ahead of an instant past the
	// cutoff.
	TaskDelete(ctx context.Context, id int64, now time.Time) error

	// TaskStateSave merges each change (what a node recorded of a task's
	// outcomes since it last saved them: see TaskState) into its task's
	// saved state, in one transaction: a task with no row of task_state
	// gets one, with its first state (FirstStates: what SaveStates would
	// write over an empty row); the rows of the other tasks are locked,
	// the latest successful run of each task SuccessesToRead names is
	// read, SaveStates merges (the changes of one task in order), and the
	// rows are written back with UpdatedAt now. Rows are made and locked
	// in task order. A change of a deleted task, or of an ID no task has,
	// is ignored. Concurrent calls about the same tasks (other nodes) wait
	// for each other, so every change is merged: one whose task's row
	// another makes meanwhile merges into that row.
	TaskStateSave(ctx context.Context, changes []*TaskState, now time.Time) error
	// TaskStates returns what the state blocks of the tasks ids are made
	// of (Task.Health): their saved states, by task ID (none for a task
	// that has none), and their latest runs that ended (a final status,
	// scheduled at or before now; none for a task that has none), by task
	// ID. It makes two queries whatever the number of ids; each task's
	// latest run is read backwards from now in its range of the runs'
	// (task_id, scheduled_at) index, so that fires planned ahead cost
	// nothing.
	TaskStates(ctx context.Context, ids []int64, now time.Time) (map[int64]*TaskState, map[int64]*LastRun, error)

	// PlanDue claims up to limit enabled tasks whose NextFireTime is at or
	// before until, earliest first (NextFireTime, then ID: the order of the
	// due index, so that a large backlog is never sorted), and calls plan
	// for each inside one transaction. The runs plan returns are inserted (a
	// fire already planned is left alone) in the order of their scheduled
	// times, then of their tasks' IDs, so that the runs of the call due at
	// the same instant lie together in the table; with fence 1 and the
	// task's priority, owned by nodeID, or by no node when nodeID is empty
	// (any node then claims them with RunClaimDue), and the task's
	// NextFireTime becomes Plan.Next. Concurrent calls never plan the same
	// task. A task whose Plan is Keep is left as it is: nothing is
	// inserted for it and its row is not written. It returns the runs it
	// inserted, with their IDs.
	PlanDue(ctx context.Context, until time.Time, limit int, nodeID string, now time.Time, plan PlanFunc) ([]*Run, error)

	// DepRecord records the outcomes of parents' runs on the joins of
	// their children (see dependency.go), each outcome in a transaction of
	// its own: the join (rec.ChildID, rec.LogicalTime) is made WAITING and
	// empty if it has none, and locked; the child is read (nil when it is
	// not live); decide is called with both and the outcome, and what it
	// returns is written: the child's run inserted (at the child's
	// priority; when the fire key is taken, the join records the run
	// that has it instead), the join written back when it changed, and
	// deleted when it records no parent. The lock on the join makes the
	// outcomes of one join, recorded by any number of nodes at once, wait
	// for each other, so that the child's run is made once. It returns the
	// runs it inserted.
	DepRecord(ctx context.Context, recs []DepRecordParams, now time.Time, decide JoinFunc) ([]*Run, error)
	// DepExpire calls decide, without an outcome, on each of up to limit
	// WAITING joins whose DeadlineAt is at or before now, oldest first,
	// each in a transaction of its own under its lock as DepRecord does,
	// and writes what it returns. It returns the runs it inserted.
	DepExpire(ctx context.Context, now time.Time, limit int, decide JoinFunc) ([]*Run, error)
	// DepJoinGet returns the join of a child at a logical time, or
	// ENotFound.
	DepJoinGet(ctx context.Context, childID int64, logical time.Time) (*DepJoin, error)
	// DepPurge deletes the joins that are no longer WAITING and were last
	// written before before, and reports how many it deleted.
	DepPurge(ctx context.Context, before time.Time) (int, error)

	// RunInsert inserts a run (a manual trigger, with its Params) with its
	// task's priority. An existing (TaskID, FireKey) is EConflict.
	RunInsert(ctx context.Context, r *Run) error
	// RunGet returns a run, or ENotFound.
	RunGet(ctx context.Context, id int64) (*Run, error)
	// RunList returns runs newest first: by scheduled time, then (among
	// runs scheduled at the same instant) by ID, both descending.
	RunList(ctx context.Context, f RunListParams) ([]*Run, error)
	// RunAdmit decides, in one transaction holding the task's lock, what the
	// SCHEDULED or QUEUED run id (with the given fence) becomes, by calling
	// decide with the task's state, and applies the decision. It returns the
	// run as updated, or ENotFound if the run is gone, not admissible, or
	// fenced off.
	RunAdmit(ctx context.Context, id, fence int64, now time.Time, decide AdmitFunc) (*Run, error)
	// RunStart moves SCHEDULED runs straight to RUNNING, each only if its
	// fence matches; ok[i] reports whether starts[i] applied.
	//
	// Every write that starts a delivery (RunStart, RunAdmit deciding
	// RUNNING, a claim's ClaimStartParams) empties the run's HTTPStatus,
	// ResponseBody, Error and Message: what the previous delivery left
	// belongs to its attempt (RunAttempts), not to the one under way.
	RunStart(ctx context.Context, starts []RunStartParams) (ok []bool, err error)
	// RunCheckSend reports, for runs committed RUNNING ahead of their
	// instant (RunStart), whether each may still be sent: SendGo if it is
	// RUNNING with that fence, SendCancel if so but its cancellation was
	// requested, SendDrop if it is gone, fenced off or no longer RUNNING
	// (a change of its task took it back). It only reads.
	RunCheckSend(ctx context.Context, refs []RunRef) ([]SendCheck, error)
	// RunFinish records outcomes of RUNNING runs, each only if its fence
	// matches and the run is still active; ok[i] reports whether it applied.
	// Each applied outcome of a RUNNING run (the end of a delivery's call;
	// for an ASYNC run, WAITING_CALLBACK) is also recorded as an attempt of
	// its run, numbered by the run's delivery count (see RunAttempts): on
	// the run itself (Run.AttemptOnRun) when the outcome ends the run for
	// good (RunFinishParams.AttemptOnRun), in a row of its own otherwise.
	//
	// An outcome with Retry set records the attempt with its Status, but
	// the run goes back to SCHEDULED, held by no node, due at DueAt (the
	// end of its backoff), keeping HTTPStatus, ResponseBody and Error of the
	// failed delivery until the next one starts. A WAITING_CALLBACK outcome
	// sets DueAt, the callback deadline. CompleteTask, when set, becomes the
	// status of the run's task in the same transaction (a one-off task that
	// ended).
	RunFinish(ctx context.Context, finishes []RunFinishParams) (ok []bool, err error)
	// RunComplete ends a WAITING_CALLBACK run, or a RUNNING one whose
	// callback came before its call's answer was recorded (a callback, or
	// a callback deadline passed): c.Status becomes the run's, or, with
	// c.Retry, the run goes back to SCHEDULED for another delivery as in
	// RunFinish. c.Error, c.Message and c.Result become the run's either
	// way. The run's latest attempt takes the outcome (a RUNNING
	// run's delivery is recorded as a new attempt). A missing run is
	// ENotFound; a fence that is not the run's is EConflict (field
	// "fence"): the delivery was superseded; a run that is not RUNNING or
	// WAITING_CALLBACK is EConflict (field "status").
	RunComplete(ctx context.Context, c RunCompleteParams) (*Run, error)
	// RunProgress saves what a RUNNING or WAITING_CALLBACK run reports
	// about itself (progress, checkpoint; nil keeps the saved one) and, for
	// a WAITING_CALLBACK run, moves its callback deadline to p.DueAt when
	// that is later. Errors as RunComplete.
	RunProgress(ctx context.Context, p RunProgressParams) (*Run, error)
	// RunCallbackExpired returns up to limit WAITING_CALLBACK runs whose
	// callback deadline (DueAt) is at or before now, oldest first, and
	// their tasks (deleted ones too) by ID.
	RunCallbackExpired(ctx context.Context, now time.Time, limit int) ([]*Run, map[int64]*Task, error)
	// RunUpcoming returns up to limit upcoming runs of a task (SCHEDULED,
	// never delivered), by scheduled time then ID.
	RunUpcoming(ctx context.Context, taskID int64, limit int) ([]*Run, error)
	// RunAttempts returns the attempts recorded for a run, oldest first:
	// one per delivery that ended, including deliveries cut off by a node's
	// death or stop (RunRelease, NodeReap), which end INTERRUPTED. The last
	// one of a run that has AttemptOnRun is the run's own (Run.OwnAttempt),
	// read from the run's row after the attempts' rows.
	RunAttempts(ctx context.Context, runID int64) ([]*Attempt, error)
	// RunCancel cancels a run: SCHEDULED and QUEUED ones at once, RUNNING and
	// WAITING_CALLBACK ones by setting CancelRequested for their node. A
	// final run is EConflict. A one-off task whose scheduled run is
	// cancelled at once becomes FAILED.
	RunCancel(ctx context.Context, id int64, now time.Time) (*Run, error)
	// RunQueuedNext returns the oldest QUEUED run of a task, or nil.
	RunQueuedNext(ctx context.Context, taskID int64) (*Run, error)
	// RunsOwned returns the unfinished runs (SCHEDULED, QUEUED, RUNNING)
	// owned by nodeID.
	RunsOwned(ctx context.Context, nodeID string) ([]*Run, error)
	// RunRelease gives up nodeID's runs on shutdown: planned SCHEDULED ones
	// never delivered are deleted and their tasks' NextFireTime rewound to
	// the earliest of them, with the tasks' later planned fires, whoever
	// holds them (RunChanges.Rewind), so the next planner pass (on any
	// node) plans them again under the task's catch-up mode; SCHEDULED ones delivered
	// before (a retry, a redelivery) are handed back to no node, as they
	// are; MANUAL ones are SKIPPED (MISFIRE); RUNNING ones become
	// INTERRUPTED with the reason, each recorded as an INTERRUPTED attempt
	// of nodeID.
	RunRelease(ctx context.Context, nodeID, reason string, now time.Time) error
	// RunPurge deletes up to limit final runs created before before, and
	// reports how many it deleted.
	RunPurge(ctx context.Context, before time.Time, limit int) (int, error)

	// RunClaimDue claims for nodeID up to limit SCHEDULED runs that no node
	// holds and that are due (DueAt) at or before until, most urgent first:
	// earliest DueAt, then (among runs due at the same instant, as in a
	// burst) Priority descending, then ID. An index serves that order, so a
	// claim reads its limit of rows whatever the backlog, and nothing
	// waits longer than runs due after it. It sets their node and bumps
	// their fence. Concurrent claims never take the
	// same run and do not wait for each other. It returns the claimed runs,
	// and their tasks by ID.
	//
	// In the claim's own write of each run it also starts the claimed runs
	// that start selects (see ClaimStartParams), as RunStart would: RUNNING, Attempt at
	// least 1, StartedAt the later of DueAt and now, a new TraceID,
	// Deliveries plus one. A fire that needs no admission is then written
	// once between its plan and its outcome, not twice.
	RunClaimDue(ctx context.Context, nodeID string, until time.Time, limit int, start ClaimStartParams) ([]*Run, map[int64]*Task, error)
	// RunClaim takes over the given SCHEDULED or QUEUED runs for nodeID,
	// each only if its fence still matches: it sets their node and bumps
	// their fence. It returns the runs it took, and their tasks by ID.
	RunClaim(ctx context.Context, nodeID string, refs []RunRef) ([]*Run, map[int64]*Task, error)
	// RunUnplanMissed deletes, in one transaction, the planned fires that
	// came too late to start: up to limit SCHEDULED runs never delivered
	// and made by the planner (trigger SCHEDULE), due before before,
	// oldest first, held by any node or by none, for which missed (called
	// with the run and its task, deleted or not) reports true. Each
	// task's NextFireTime is rewound to its earliest deleted run when that
	// is earlier, and its later planned fires are deleted too
	// (RunChanges.Rewind), so that the planner counts them under the
	// task's catch-up mode, together with the fires it has not planned,
	// against one instant, and plans the rest anew. A node
	// holding a deleted run finds it gone when it tries to start it. A
	// task is never rewound before a later fire of it that was taken (see
	// UnplanMissed): a missed run before that is recorded SKIPPED MISFIRE
	// on its own instead. It returns how many runs it looked at and how
	// many it unplanned (deleted or recorded missed).
	RunUnplanMissed(ctx context.Context, before time.Time, limit int, missed func(*Run, *Task) bool) (looked, deleted int, err error)
	// RunRedeliver takes up to limit INTERRUPTED runs, oldest first: each
	// that has had fewer than maxDeliveries deliveries, whose task is live
	// and whose cancellation was not requested becomes SCHEDULED again, held
	// by nodeID with a bumped fence, and is returned (with its task) to be
	// delivered again; the others become FAILED (finished now, with the
	// reason in Error, and a one-off task whose scheduled run this is
	// becomes FAILED). A redelivered run is due now.
	RunRedeliver(ctx context.Context, nodeID string, maxDeliveries, limit int, now time.Time) ([]*Run, map[int64]*Task, error)
	// RunFindStuck returns up to limit SCHEDULED runs due (DueAt) before dueBefore
	// that nodeID holds, that no node holds, or whose node is not ALIVE,
	// oldest first: the compensator's query.
	RunFindStuck(ctx context.Context, nodeID string, dueBefore time.Time, limit int) ([]*Run, error)
	// RunLongRunning returns up to limit RUNNING runs whose call started
	// at or before startedBefore, longest running first: the alerter's
	// long_run sweep. It reads the RUNNING runs of an index on status.
	RunLongRunning(ctx context.Context, startedBefore time.Time, limit int) ([]*Run, error)
	// RunCancelRequested returns the IDs of RUNNING and WAITING_CALLBACK
	// runs held by nodeID whose cancellation was requested.
	RunCancelRequested(ctx context.Context, nodeID string) ([]int64, error)

	// SettingEnsure returns the value of a cluster-wide setting, storing
	// value first when the setting has none (the first node to start
	// decides, e.g. the callback secret).
	SettingEnsure(ctx context.Context, name, value string) (string, error)
	// SettingGet returns the value of a cluster-wide setting, and whether
	// it has one, storing nothing (a node that must not decide a setting
	// asks whether another did, e.g. whether the cluster seals secrets).
	SettingGet(ctx context.Context, name string) (value string, ok bool, err error)

	// SettingList returns the settings whose name starts with prefix
	// (case-sensitive, no wildcards; "" for every one), by name, byte for
	// byte.
	SettingList(ctx context.Context, prefix string) ([]Setting, error)
	// SettingSwap sets the value of the setting name to next only if it
	// still holds old exactly (as SettingList or SettingGet read it), in
	// one statement, and reports whether it did: false when another node
	// changed it meanwhile, or there is no such setting. It is how a
	// sealed setting is sealed again with a new key ("sundial secrets
	// reseal") while nodes read it.
	SettingSwap(ctx context.Context, name, old, next string) (bool, error)

	// TaskSecretsList returns the secret columns (TaskSecrets) of up to
	// limit tasks whose ID is greater than afterID, by ID: every stored
	// task, live or deleted, whatever its status, so that a caller pages
	// through them all.
	TaskSecretsList(ctx context.Context, afterID int64, limit int) ([]*TaskSecrets, error)
	// TaskSecretsSwap replaces the secret columns of the task old.TaskID
	// (next.TaskID is the same), live or deleted, with next's, only if
	// they still hold exactly old's (as TaskSecretsList read them), in one
	// statement, and reports whether it did: false when a node wrote the
	// task since it was read (read it again), or there is no such task. Nothing else about the
	// task changes: not its Version nor its UpdatedAt, nor its runs. It
	// is for sealing a task's secrets again with a new key ("sundial
	// secrets reseal"), which is not a change of the task: a client's
	// write based on an earlier read is not refused for it, and its
	// values are the same once opened.
	TaskSecretsSwap(ctx context.Context, old, next *TaskSecrets) (bool, error)

	// TokenCreate inserts an API token (its ID, hash and times set by the
	// caller). A token with the same name is EConflict (field "name"); a
	// revoked token's name is free again.
	TokenCreate(ctx context.Context, t *Token) error
	// TokenByHash returns the token whose secret hashes to hash, read
	// through an index on every call (so that a revocation on one node is
	// seen at once by all), or ENotFound.
	TokenByHash(ctx context.Context, hash string) (*Token, error)
	// TokenList returns every token, by name.
	TokenList(ctx context.Context) ([]*Token, error)
	// TokenDelete revokes a token: it is deleted. An unknown ID is
	// ENotFound.
	TokenDelete(ctx context.Context, id string) (*Token, error)

	// CalendarCreate inserts a calendar (its times set by the caller) at
	// version 1. A calendar with the same name is EConflict (field "name").
	CalendarCreate(ctx context.Context, c *Calendar) error
	// CalendarGet returns the calendar name, or ENotFound.
	CalendarGet(ctx context.Context, name string) (*Calendar, error)
	// CalendarList returns every calendar, by name.
	CalendarList(ctx context.Context) ([]*Calendar, error)
	// CalendarVersions returns the version of every calendar by name: what
	// the planner reads each pass to know which of the calendars it has
	// compiled changed.
	CalendarVersions(ctx context.Context) (map[string]int64, error)
	// CalendarUpdate replaces the description, zone and entries of the
	// calendar c.Name when its version is c.Version (any when 0), bumps its
	// version, sets its UpdatedAt to c.UpdatedAt, and returns it as
	// stored. A missing calendar is ENotFound, another version EConflict
	// (field "version").
	CalendarUpdate(ctx context.Context, c *Calendar) (*Calendar, error)
	// CalendarDelete deletes the calendar name and returns it as it was.
	// One that live tasks reference is EConflict, naming them; an unknown
	// name ENotFound.
	CalendarDelete(ctx context.Context, name string) (*Calendar, error)

	// AuditInsert appends entries to the audit log, in their order; the
	// database gives each the next ID.
	AuditInsert(ctx context.Context, es []*AuditEntry) error
	// AuditList returns the entries f selects, newest (highest ID) first.
	AuditList(ctx context.Context, f AuditListParams) ([]*AuditEntry, error)
	// AuditPurge deletes up to limit entries older than before, oldest
	// first, and reports how many it deleted.
	AuditPurge(ctx context.Context, before time.Time, limit int) (int, error)

	// AlertChannelCreate inserts a channel (its secrets sealed) and sets
	// its ID, Version 1 and times; a name taken is EConflict (field
	// "name").
	AlertChannelCreate(ctx context.Context, c *AlertChannel, now time.Time) error
	// AlertChannelGet returns a channel, or ENotFound.
	AlertChannelGet(ctx context.Context, id int64) (*AlertChannel, error)
	// AlertChannelList returns every channel, by name.
	AlertChannelList(ctx context.Context) ([]*AlertChannel, error)
	// AlertChannelUpdate replaces channel c.ID if its version is still
	// c.Version (else EConflict), and bumps it.
	AlertChannelUpdate(ctx context.Context, c *AlertChannel, now time.Time) error
	// AlertChannelSecretsSwap writes channel next (its secrets sealed
	// anew, by sundial secrets reseal) if its version is still
	// next.Version, changing neither its version nor its updated_at; false
	// (and nothing written) when the channel changed or is gone.
	AlertChannelSecretsSwap(ctx context.Context, next *AlertChannel) (bool, error)
	// AlertChannelDelete deletes a channel, or ENotFound.
	AlertChannelDelete(ctx context.Context, id int64) error
	// AlertRuleCreate, AlertRuleGet, AlertRuleList, AlertRuleUpdate and
	// AlertRuleDelete are the same for rules.
	AlertRuleCreate(ctx context.Context, r *AlertRule, now time.Time) error
	AlertRuleGet(ctx context.Context, id int64) (*AlertRule, error)
	AlertRuleList(ctx context.Context) ([]*AlertRule, error)
	AlertRuleUpdate(ctx context.Context, r *AlertRule, now time.Time) error
	AlertRuleDelete(ctx context.Context, id int64) error

	// IncidentOpen inserts inc OPEN with its notifications, in one
	// transaction, unless an incident of the same (rule, task) is open: a
	// unique key decides, so of nodes that open one at once, one does.
	// opened says whether this call did; inc and notes get their IDs.
	IncidentOpen(ctx context.Context, inc *Incident, notes []*Notification) (opened bool, err error)
	// IncidentResolve resolves the open incident id at now and inserts
	// notes, in one transaction; resolved is false (and nothing written)
	// when it is not open, resolved meanwhile by another node.
	IncidentResolve(ctx context.Context, id int64, now time.Time, notes []*Notification) (resolved bool, err error)
	// IncidentRepeat sets the open incident id's NotifiedAt from prev to
	// now and inserts notes; false (and nothing written) when it is no
	// longer open, was acknowledged, or another node repeated it
	// (NotifiedAt is not prev).
	IncidentRepeat(ctx context.Context, id int64, prev, now time.Time, notes []*Notification) (bool, error)
	// IncidentAck records the acknowledgement of the open incident id (at,
	// by whom, a note); false (and nothing written) when it is not open
	// or already acknowledged, ENotFound when there is no such incident.
	IncidentAck(ctx context.Context, id int64, at time.Time, by, note string) (bool, error)
	// IncidentGet returns an incident with its notifications, or
	// ENotFound.
	IncidentGet(ctx context.Context, id int64) (*Incident, error)
	// IncidentList returns the incidents f selects, newest first, each
	// with its notifications.
	IncidentList(ctx context.Context, f IncidentListParams) ([]*Incident, error)
	// NotificationClaim claims up to limit PENDING notifications due by
	// now whose claim (if any) expired, for nodeID until until: a
	// compare-and-swap per row, so a notification is delivered by one
	// node at a time; a claim that lapses (the node died) is taken again.
	NotificationClaim(ctx context.Context, nodeID string, now, until time.Time, limit int) ([]*Notification, error)
	// NotificationFinish writes n's delivery (status, due time, tries,
	// attempts, sent time) and drops its claim, if nodeID still holds it;
	// false when it does not.
	NotificationFinish(ctx context.Context, nodeID string, n *Notification) (bool, error)

	// NodeRegister inserts or revives a node as ALIVE, its heartbeat and
	// start time taken from the database's clock.
	NodeRegister(ctx context.Context, n *Node) error
	// NodeHeartbeat renews an ALIVE node's heartbeat with the database's
	// clock. A node that is no longer ALIVE (declared dead, or left) is
	// ENotFound: it has lost its membership and must stop executing.
	NodeHeartbeat(ctx context.Context, id string) error
	// NodeLeave marks a node LEFT.
	NodeLeave(ctx context.Context, id string) error
	// NodeList returns every node, newest first.
	NodeList(ctx context.Context) ([]*Node, error)
	// NodeReap declares DEAD every ALIVE node whose heartbeat is older than
	// deadAfter by the database's clock, releases their runs as RunRelease
	// does, and returns their IDs.
	NodeReap(ctx context.Context, deadAfter time.Duration, now time.Time) ([]string, error)
	// NodePrune deletes the nodes that are gone (LEFT or DEAD) and whose
	// last heartbeat is before before, and reports how many it deleted.
	// ALIVE nodes are never deleted, however old their heartbeat.
	NodePrune(ctx context.Context, before time.Time) (int, error)

	// StatsSave writes the per-minute counters of nodes (StatsMinute),
	// one row per node and minute: a row that exists is replaced whole
	// with ms's values (a node writes a minute's counters as they stand,
	// so that writing them again, after a failure, counts nothing twice),
	// one that does not is inserted. Minutes are whole (truncated here if
	// not). It writes a few statements whatever the number of rows.
	StatsSave(ctx context.Context, ms []*StatsMinute) error
	// StatsList returns the rows of the minutes in [from, to), by minute
	// then node: a range of the table's primary key.
	StatsList(ctx context.Context, from, to time.Time) ([]*StatsMinute, error)
	// StatsPurge deletes the rows of the minutes before before, and
	// reports how many it deleted.
	StatsPurge(ctx context.Context, before time.Time) (int, error)
}

// Node states.
const (
	NodeAlive = "ALIVE"
	NodeLeft  = "LEFT"
	NodeDead  = "DEAD"
)

// Node is one Sundial process in the cluster (seed 003's pod identity).
type Node struct {
	ID          string    `json:"id"` // host-pid-random
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Address     string    `json:"address"`
	State       string    `json:"state"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
}

// Setting is a cluster-wide setting (Store.SettingList).
type Setting struct {
	Name, Value string
}

// TaskSecrets are the columns of a stored task that hold its secrets
// (see SealTask), as they are stored: the target URL (its userinfo), the
// headers (the values of sensitive ones) and the signing secret.
type TaskSecrets struct {
	TaskID        int64
	TargetURL     string
	Headers       map[string]string
	SigningSecret string
}

// TaskListParams selects tasks for TaskList: those that match every condition
// set.
type TaskListParams struct {
	Status     []TaskStatus // any of these; empty: any
	Name       string       // exactly this name; empty: any
	NamePrefix string       // names starting with this (case-sensitive); empty: any
	// NameContains picks names holding this, letters A-Z in either case;
	// empty: any.
	NameContains string
	RequestID    string // exactly this request_id; empty: any
	BizID        string // exactly this biz_id; empty: any
	// Selector picks tasks by their labels; empty: any.
	Selector label.Selector
	// HasParents picks the tasks that have parents (Task.DependsOn).
	HasParents bool
	AfterID    int64 // paging: IDs greater than this
	Limit      int
}

// RunListParams selects runs for RunList: those that match every condition
// set.
type RunListParams struct {
	TaskID   int64       // 0: any
	Status   []RunStatus // any of these; empty: any
	Trigger  []Trigger   // any of these; empty: any
	From, To time.Time   // scheduled time in [From, To); zero: open
	// FinishedFrom and FinishedTo select by finished time, in
	// [FinishedFrom, FinishedTo); zero: open. A run not finished has none,
	// and is left out when either is set.
	FinishedFrom, FinishedTo time.Time
	// Selector picks runs by the labels of their task, live or deleted;
	// empty: any.
	Selector label.Selector
	// ExcludePlannedAfter, when set, leaves out the runs planned ahead of
	// it: SCHEDULED, never delivered, and scheduled after it (the fires
	// the planner made ahead of their time). A run waiting for a retry
	// (delivered before) and a fire that is due stay.
	ExcludePlannedAfter time.Time
	// BeforeTime and BeforeID page: when BeforeID is set, only the runs
	// after (BeforeTime, BeforeID) in RunList's order, that is scheduled
	// before BeforeTime, or at it with an ID smaller than BeforeID.
	BeforeTime time.Time
	BeforeID   int64
	Limit      int
}

// PlanFunc decides the runs of one due task: called by PlanDue.
type PlanFunc func(t *Task) Plan

// Plan is what the planner makes of one due task.
//
// PlanDue also writes the task's fire counters (Task.FireCount and
// Task.CountedThrough) as the PlanFunc left them on the task it was given
// (Task.Count): they change with the plan, in the same write.
type Plan struct {
	Runs []*Run     // to insert: SCHEDULED fires, or a SKIPPED MISFIRE record
	Next *time.Time // the task's next unplanned fire; nil when it has none
	// Keep leaves the task as it is, due, for a later call: Runs and Next
	// are ignored and its row is not written.
	Keep bool
	// End, when set (COMPLETED), ends the task with the plan, as Task.End
	// does: a bounded task with no fire left, and no planned fire to end
	// it with (TaskEndOf).
	End TaskStatus
}

// AdmitFunc decides what a run becomes when its time comes: called by
// RunAdmit with the task's state read under its lock.
type AdmitFunc func(s AdmitState) Admission

// AdmitState is what the policies look at (seed 001 section 5).
type AdmitState struct {
	Task *Task
	Run  *Run
	// Pending are the task's other unfinished runs scheduled at or before
	// this one: RUNNING, WAITING_CALLBACK, QUEUED, and SCHEDULED ones due
	// earlier that have not started.
	Pending []*Run
	// Active counts the task's RUNNING and WAITING_CALLBACK runs on every
	// node; Queued its QUEUED runs other than this one.
	Active, Queued int
	// LastEffective is the task's latest run before this one that is not
	// SCHEDULED, QUEUED or SKIPPED; nil if none.
	LastEffective *Run
	// SkipsSinceLast are the SKIPPED runs recorded after LastEffective,
	// oldest first, at most MaxSkipsSinceLast of them, but for those of
	// reason CALENDAR, which no policy decided.
	SkipsSinceLast []*Run
}

// MaxSkipsSinceLast caps AdmitState.SkipsSinceLast: the failure policy
// looks for one skip recorded after the last effective run, so a long
// history of skips is never read whole.
const MaxSkipsSinceLast = 10

// Admission is a policy decision for one run.
type Admission struct {
	Status     RunStatus // RUNNING, QUEUED or SKIPPED
	SkipReason SkipReason
	Attempt    int
	TraceID    string // stored on a RUNNING run
	// Cancel lists runs to cancel first (CANCEL_PREV): RunAdmit treats each
	// as RunCancel does.
	Cancel []int64
	// CompleteTask, when set, becomes the task's status with the decision
	// (a one-off task whose only fire is SKIPPED: FAILED).
	CompleteTask TaskStatus
}

// Attempt is one delivery of a run and how it ended.
type Attempt struct {
	RunID        int64      `json:"-"`
	Delivery     int        `json:"delivery"` // 1 for the first delivery of the fire
	NodeID       string     `json:"node_id"`
	Status       RunStatus  `json:"status"`
	HTTPStatus   int        `json:"http_status,omitempty"`
	Error        string     `json:"error,omitempty"`
	ResponseBody string     `json:"response_body,omitempty"` // the first 4 KiB
	StartedAt    *time.Time `json:"started_at"`
	FinishedAt   time.Time  `json:"finished_at"`
}

// RunRef names a run as its holder knows it: ID and fence.
type RunRef struct {
	ID, Fence int64
}

// SendMargin bounds how close to its instant a change of a task still
// takes back a fire already committed RUNNING ahead (TaskUpdate,
// TaskDelete): the send cutoff is SendMargin after the later of the
// change's now and the clock when its transaction runs. A fire due within
// it is already being sent as it was. A node checks its committed fires
// (RunCheckSend) well within SendMargin before their instant, so a fire
// the change took back is never sent.
const SendMargin = 100 * time.Millisecond

// SendCheck is what RunCheckSend found for a committed run.
type SendCheck uint8

// Verdicts of RunCheckSend.
const (
	SendDrop   SendCheck = iota // gone, fenced off, or no longer RUNNING: do not send
	SendGo                      // still RUNNING with its fence: send it
	SendCancel                  // RUNNING, but its cancellation was requested: record it CANCELED unsent
)

// SendCutoff is the send cutoff (see SendMargin) of a change of a task
// made at now, for an adapter to call inside the change's transaction
// with its clock's reading there: SendMargin after the later of the two.
// The later matters when the change waited for a lock: a fire whose
// instant came nearer meanwhile may have been checked and be on its way.
func SendCutoff(now, clock time.Time) time.Time {
	if clock.After(now) {
		now = clock
	}
	return now.Add(SendMargin)
}

// RunStartParams starts one run (Store.RunStart): fields set on the run.
type RunStartParams struct {
	ID, Fence int64
	Attempt   int
	StartedAt time.Time
	TraceID   string
}

// ClaimStartParams selects the runs a claim (Store.RunClaimDue) starts at once,
// committing them RUNNING ahead of their instant in the claim's own write.
// A run is started if it is due at or before By and either was delivered
// before (a retry: admitted already) or is marked StartAhead and scheduled
// at or after FreshAfter (an older first delivery may have been missed,
// which the claimer judges). A zero By starts nothing.
type ClaimStartParams struct {
	By         time.Time
	FreshAfter time.Time
}

// RunFinishParams is the outcome of one delivery (Store.RunFinish).
type RunFinishParams struct {
	ID, Fence    int64
	Status       RunStatus
	StartedAt    time.Time // when the delivery really began
	FinishedAt   time.Time
	HTTPStatus   int
	ResponseBody string
	Error        string
	// Retry sends the run back to SCHEDULED, due at DueAt, instead of
	// ending it with Status (which its attempt records).
	Retry bool
	// DueAt is the retry's time (Retry), or the callback deadline (Status
	// WAITING_CALLBACK).
	DueAt time.Time
	// CompleteTask, when set, becomes the status of the run's task.
	CompleteTask TaskStatus
}

// RunCompleteParams ends an ASYNC run (Store.RunComplete).
type RunCompleteParams struct {
	ID, Fence    int64
	Status       RunStatus // SUCCESS, FAILED or FAILED_TIMEOUT
	Result       json.RawMessage
	Error        string
	Message      string // the callback's message, kept as the run's Message
	FinishedAt   time.Time
	Retry        bool      // back to SCHEDULED, due at DueAt, instead
	DueAt        time.Time // the retry's time
	CompleteTask TaskStatus
}

// RunProgressParams is a long job's report on its run (Store.RunProgress).
type RunProgressParams struct {
	ID, Fence  int64
	Progress   json.RawMessage // nil: keep
	Checkpoint json.RawMessage // nil: keep
	DueAt      time.Time       // the new callback deadline, if later
	Now        time.Time
}

// BatchError is the error of one item of a batch (TaskCreateMany).
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return fmt.Sprintf("item %d: %v", e.Index, e.Err) }
func (e *BatchError) Unwrap() error { return e.Err }

// CompensationStatus is the state of a node's start compensator (seed
// 000's safety net for runs stuck before start), as
// GET /api/v1/admin/compensation shows it.
type CompensationStatus struct {
	IntervalMS   int64     `json:"interval_ms"`
	Multiplier   int       `json:"multiplier"`
	QueueSize    int       `json:"queue_size"`
	LastPoll     time.Time `json:"last_poll"`
	NextPollInMS int64     `json:"next_poll_in_ms"`
	Rounds       int64     `json:"rounds"`
	Skipped      int64     `json:"skipped_rounds"`
	Compensated  int64     `json:"compensated_runs"`
}
