package sundial

import (
	"context"
	"time"
)

// Store is the storage contract. Every database adapter implements it and
// passes the conformance suite in store/storetest. Methods that change state
// do so in one transaction; errors are *Error values (ENotFound, EConflict)
// where the caller can act on them, anything else is internal.
//
// Times are stored in UTC with microsecond precision.
type Store interface {
	// Close releases the database.
	Close() error
	// Ping reports whether the database answers.
	Ping(ctx context.Context) error

	// TaskCreate inserts t (already normalised), setting ID, Version (1),
	// CreatedAt and UpdatedAt (now). A live task with the same name is
	// EConflict (field "name").
	TaskCreate(ctx context.Context, t *Task, now time.Time) error
	// TaskGet returns a live task, or ENotFound.
	TaskGet(ctx context.Context, id int64) (*Task, error)
	// TaskList returns live tasks ordered by ID.
	TaskList(ctx context.Context, f TaskFilter) ([]*Task, error)
	// TaskUpdate replaces the task whose ID and Version match t, bumping
	// Version and setting UpdatedAt, and deletes its SCHEDULED runs so that
	// the planner plans it anew from t.NextFireTime. A missing task is
	// ENotFound, a version mismatch EConflict (field "version").
	TaskUpdate(ctx context.Context, t *Task, now time.Time) error
	// TaskDelete marks the task deleted and deletes its SCHEDULED runs.
	TaskDelete(ctx context.Context, id int64, now time.Time) error

	// PlanDue claims up to limit enabled tasks whose NextFireTime is at or
	// before until, most urgent first (priority descending, then
	// NextFireTime), and calls plan for each inside one transaction. The
	// runs plan returns are inserted (a fire already planned is left alone)
	// with fence 1, owned by nodeID, or by no node when nodeID is empty (any
	// node then claims them with RunClaimDue), and the task's NextFireTime
	// becomes Plan.Next. Concurrent calls never plan the same task. It
	// returns the runs it inserted, with their IDs.
	PlanDue(ctx context.Context, until time.Time, limit int, nodeID string, now time.Time, plan PlanFunc) ([]*Run, error)

	// RunInsert inserts a run (a manual trigger). An existing (TaskID,
	// FireKey) is EConflict.
	RunInsert(ctx context.Context, r *Run) error
	// RunGet returns a run, or ENotFound.
	RunGet(ctx context.Context, id int64) (*Run, error)
	// RunList returns runs newest first (by ID).
	RunList(ctx context.Context, f RunFilter) ([]*Run, error)
	// RunAdmit decides, in one transaction holding the task's lock, what the
	// SCHEDULED or QUEUED run id (with the given fence) becomes, by calling
	// decide with the task's state, and applies the decision. It returns the
	// run as updated, or ENotFound if the run is gone, not admissible, or
	// fenced off.
	RunAdmit(ctx context.Context, id, fence int64, now time.Time, decide AdmitFunc) (*Run, error)
	// RunStart moves SCHEDULED runs straight to RUNNING, each only if its
	// fence matches; ok[i] reports whether starts[i] applied.
	RunStart(ctx context.Context, starts []RunStart) (ok []bool, err error)
	// RunFinish records outcomes of RUNNING runs, each only if its fence
	// matches and the run is still active; ok[i] reports whether it applied.
	// Each applied outcome of a RUNNING run (the end of a delivery's call;
	// for an ASYNC run, WAITING_CALLBACK) is also recorded as an attempt of
	// its run, numbered by the run's delivery count (see RunAttempts).
	RunFinish(ctx context.Context, finishes []RunFinish) (ok []bool, err error)
	// RunAttempts returns the attempts recorded for a run, oldest first:
	// one per delivery that ended, including deliveries cut off by a node's
	// death or stop (RunRelease, NodeReap), which end INTERRUPTED.
	RunAttempts(ctx context.Context, runID int64) ([]*Attempt, error)
	// RunCancel cancels a run: SCHEDULED and QUEUED ones at once, RUNNING and
	// WAITING_CALLBACK ones by setting CancelRequested for their node. A
	// final run is EConflict.
	RunCancel(ctx context.Context, id int64, now time.Time) (*Run, error)
	// RunQueuedNext returns the oldest QUEUED run of a task, or nil.
	RunQueuedNext(ctx context.Context, taskID int64) (*Run, error)
	// RunsOwned returns the unfinished runs (SCHEDULED, QUEUED, RUNNING)
	// owned by nodeID.
	RunsOwned(ctx context.Context, nodeID string) ([]*Run, error)
	// RunRelease gives up nodeID's runs on shutdown: SCHEDULED ones are
	// deleted and their tasks' NextFireTime rewound to the earliest of them,
	// so the next planner pass (on any node) plans them again under the
	// task's catch-up mode; RUNNING ones become INTERRUPTED with the reason,
	// each recorded as an INTERRUPTED attempt of nodeID.
	RunRelease(ctx context.Context, nodeID, reason string, now time.Time) error
	// RunPurge deletes up to limit final runs created before before, and
	// reports how many it deleted.
	RunPurge(ctx context.Context, before time.Time, limit int) (int, error)

	// RunClaimDue claims for nodeID up to limit SCHEDULED runs that no node
	// holds and that are due at or before until, most urgent first (their
	// task's priority descending, then scheduled time, then ID): it sets
	// their node and bumps their fence. Concurrent claims never take the
	// same run and do not wait for each other. It returns the claimed runs,
	// and their tasks by ID.
	RunClaimDue(ctx context.Context, nodeID string, until time.Time, limit int) ([]*Run, map[int64]*Task, error)
	// RunClaim takes over the given SCHEDULED or QUEUED runs for nodeID,
	// each only if its fence still matches: it sets their node and bumps
	// their fence. It returns the runs it took, and their tasks by ID.
	RunClaim(ctx context.Context, nodeID string, refs []RunRef) ([]*Run, map[int64]*Task, error)
	// RunUnplan deletes the given SCHEDULED runs held by nodeID (each only if
	// its fence matches; MANUAL runs, which no planner makes again, are left
	// alone) and rewinds each task's NextFireTime to its earliest deleted
	// run when that is earlier, so that the planner plans those fires again:
	// used for runs found too late to fire, which then follow the task's
	// catch-up mode.
	RunUnplan(ctx context.Context, nodeID string, refs []RunRef) error
	// RunRedeliver takes up to limit INTERRUPTED runs, oldest first: each
	// that has had fewer than maxDeliveries deliveries, whose task is live
	// and whose cancellation was not requested becomes SCHEDULED again, held
	// by nodeID with a bumped fence, and is returned (with its task) to be
	// delivered again; the others become FAILED (finished now, with the
	// reason in Error).
	RunRedeliver(ctx context.Context, nodeID string, maxDeliveries, limit int, now time.Time) ([]*Run, map[int64]*Task, error)
	// RunFindStuck returns up to limit SCHEDULED runs due before dueBefore
	// that nodeID holds, that no node holds, or whose node is not ALIVE,
	// oldest first: the compensator's query.
	RunFindStuck(ctx context.Context, nodeID string, dueBefore time.Time, limit int) ([]*Run, error)
	// RunCancelRequested returns the IDs of RUNNING and WAITING_CALLBACK
	// runs held by nodeID whose cancellation was requested.
	RunCancelRequested(ctx context.Context, nodeID string) ([]int64, error)

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

// TaskFilter selects tasks for TaskList.
type TaskFilter struct {
	Status     TaskStatus // empty: any
	NamePrefix string
	AfterID    int64 // paging: IDs greater than this
	Limit      int
}

// RunFilter selects runs for RunList.
type RunFilter struct {
	TaskID   int64     // 0: any
	Status   RunStatus // empty: any
	From, To time.Time // scheduled time in [From, To); zero: open
	BeforeID int64     // paging: IDs smaller than this; 0: from the newest
	Limit    int
}

// PlanFunc decides the runs of one due task: called by PlanDue.
type PlanFunc func(t *Task) Plan

// Plan is what the planner makes of one due task.
type Plan struct {
	Runs []*Run     // to insert: SCHEDULED fires, or a SKIPPED MISFIRE record
	Next *time.Time // the task's next unplanned fire; nil when it has none
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
	// SkipsSinceLast are the SKIPPED runs recorded after LastEffective.
	SkipsSinceLast []*Run
}

// Admission is a policy decision for one run.
type Admission struct {
	Status     RunStatus // RUNNING, QUEUED or SKIPPED
	SkipReason SkipReason
	Attempt    int
	TraceID    string // stored on a RUNNING run
	// Cancel lists runs to cancel first (CANCEL_PREV): RunAdmit treats each
	// as RunCancel does.
	Cancel []int64
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

// RunStart starts one run (RunStart): fields set on the run.
type RunStart struct {
	ID, Fence int64
	Attempt   int
	StartedAt time.Time
	TraceID   string
}

// RunFinish is the outcome of one delivery (RunFinish).
type RunFinish struct {
	ID, Fence    int64
	Status       RunStatus
	StartedAt    time.Time // when the delivery really began
	FinishedAt   time.Time
	HTTPStatus   int
	ResponseBody string
	Error        string
}

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
