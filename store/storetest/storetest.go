// Package storetest is the conformance suite of sundial.Store: every
// database adapter (store/sqlite, store/postgres, store/mysql) passes Run,
// which holds each Store method to its contract in store.go, one subtest per
// method and behaviour, each on a fresh database. Most cases use one store;
// the Cluster cases open two or three stores on one database, as the nodes
// of a cluster do, and race them (cluster.go).
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// Opener returns a fresh, migrated, empty store for one test and arranges
// (t.Cleanup) for it to be closed and dropped.
type Opener = func(t *testing.T) sundial.Store

// Backend is a database adapter as the suite tests it.
type Backend struct {
	// Open opens one test's database, fresh, migrated and empty, and nodes
	// stores on it (at least one), each with connections of its own, as
	// that many nodes of a cluster have. It arranges (t.Cleanup) for them
	// to be closed and the database dropped.
	Open func(t *testing.T, nodes int) []sundial.Store
	// LockRuns, for a database that locks rows, begins a transaction of
	// its own on s's database that locks the runs ids, as another node's
	// claim under way holds them, and returns the function that ends it.
	// Nil for a database whose write transaction locks all of it (SQLite):
	// there a node's write waits for another's instead of passing over
	// the rows it holds.
	LockRuns func(t *testing.T, s sundial.Store, ids []int64) (release func())
	// AttemptRows counts the rows of run_attempts that s's database holds
	// for the run runID, as they are stored: the attempts a run keeps
	// itself (sundial.Run.AttemptOnRun) have none.
	AttemptRows func(t *testing.T, s sundial.Store, runID int64) int
	// Exec runs one SQL statement on s's database, as an operator would
	// (DowngradeAttempts).
	Exec func(t *testing.T, s sundial.Store, query string)
}

// oneWriter reports whether a write transaction locks the whole database.
func (b Backend) oneWriter() bool { return b.LockRuns == nil }

// Run runs the conformance suite against the databases b opens. Subtests
// run in parallel, each with a database of its own.
func Run(t *testing.T, b Backend) {
	open := func(t *testing.T) sundial.Store { return b.Open(t, 1)[0] }
	for _, g := range []struct {
		name string
		fn   func(*testing.T, Backend)
	}{
		{"ClusterPlanDue", testClusterPlanDue},
		{"ClusterRunClaimDue", testClusterRunClaimDue},
		{"ClusterRunAdmit", testClusterRunAdmit},
		{"ClusterTaskCreateMany", testClusterTaskCreateMany},
		{"ClusterSettingEnsure", testClusterSettingEnsure},
		{"ClusterTokenDelete", testClusterTokenDelete},
		{"ClusterRunComplete", testClusterRunComplete},
		{"ClusterRunFinish", testClusterRunFinish},
		{"ClusterTakeover", testClusterTakeover},
		{"ClusterFence", testClusterFence},
		{"ClusterLockOrder", testClusterLockOrder},
		{"ClusterSecretsSwap", testClusterSecretsSwap},
		{"ClusterTaskStateSave", testClusterTaskStateSave},
		{"ClusterDepRecord", testClusterDepRecord},
		{"AttemptsGolden", testAttemptsGolden},
		{"ClusterIncidentOpen", testClusterIncidentOpen},
	} {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.fn(t, b)
		})
	}
	for _, g := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"Ping", testPing},
		{"Task", testTask},
		{"TaskList", testTaskList},
		{"Labels", testLabels},
		{"TaskListSelector", testTaskListSelector},
		{"RunListFilters", testRunListFilters},
		{"RunRerunOf", testRunRerunOf},
		{"PlanDue", testPlanDue},
		{"TaskBounds", testTaskBounds},
		{"Run", testRun},
		{"RunAdmit", testRunAdmit},
		{"RunStart", testRunStart},
		{"RunFinish", testRunFinish},
		{"RunCancel", testRunCancel},
		{"RunQueuedNext", testRunQueuedNext},
		{"RunsOwned", testRunsOwned},
		{"RunRelease", testRunRelease},
		{"RunPurge", testRunPurge},
		{"RunClaimDue", testRunClaimDue},
		{"ClaimStartParams", testClaimStart},
		{"RunClaim", testRunClaim},
		{"RunUnplanMissed", testRunUnplanMissed},
		{"RunRedeliver", testRunRedeliver},
		{"RunFindStuck", testRunFindStuck},
		{"RunCancelRequested", testRunCancelRequested},
		{"RunAttempts", testRunAttempts},
		{"Node", testNode},
		{"Transitions", testTransitions},
		{"DueAt", testDueAt},
		{"RunFinishRetry", testRunFinishRetry},
		{"RunFinishCallback", testRunFinishCallback},
		{"RunFinishCompleteTask", testRunFinishCompleteTask},
		{"RunComplete", testRunComplete},
		{"RunProgress", testRunProgress},
		{"RunCallbackExpired", testRunCallbackExpired},
		{"RunUpcoming", testRunUpcoming},
		{"Retries", testRetries},
		{"OneOffEnd", testOneOffEnd},
		{"TaskOneOff", testTaskOneOff},
		{"TaskCreateMany", testTaskCreateMany},
		{"TaskListBizID", testTaskListBizID},
		{"SettingEnsure", testSettingEnsure},
		{"SettingSwap", testSettingSwap},
		{"TaskSecrets", testTaskSecrets},
		{"Token", testToken},
		{"Calendar", testCalendar},
		{"Audit", testAudit},
		{"TaskChangeTakesBack", testTaskChangeTakesBack},
		{"RunCheckSend", testRunCheckSend},
		{"RunParams", testRunParams},
		{"RunMessage", testRunMessage},
		{"DeliveryStart", testDeliveryStart},
		{"PlanRule", testPlanRule},
		{"ClaimRule", testClaimRule},
		{"StartRule", testStartRule},
		{"FinishRule", testFinishRule},
		{"ReleaseRule", testReleaseRule},
		{"TakeBackRule", testTakeBackRule},
		{"RedeliverRule", testRedeliverRule},
		{"TaskStateSave", testTaskStateSave},
		{"TaskStatesLastRun", testTaskStatesLastRun},
		{"TaskStatesMany", testTaskStatesMany},
		{"AlertObjects", testAlertObjects},
		{"Incidents", testIncidents},
		{"IncidentAck", testIncidentAck},
		{"AlertChannelSecretsSwap", testAlertChannelSecretsSwap},
		{"RunLongRunning", testRunLongRunning},
		{"Dependencies", testDependencies},
		{"Stats", testStats},
	} {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.fn(t, open)
		})
	}
}

func testPing(t *testing.T, open Opener) {
	f := setup(t, open)
	if err := f.s.Ping(f.ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// t0 is the suite's fixed "now"; at(n) is n seconds after it.
var t0 = time.Date(2030, time.March, 4, 5, 6, 7, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func ptr[T any](v T) *T { return &v }

// fixture is one test's store and helpers that build state through the
// Store's own methods.
type fixture struct {
	t   *testing.T
	s   sundial.Store
	ctx context.Context
}

func setup(t *testing.T, open Opener) *fixture {
	t.Helper()
	return &fixture{t: t, s: open(t), ctx: t.Context()}
}

// newTask returns a valid, normalised task named name.
func newTask(name string, mods ...func(*sundial.Task)) *sundial.Task {
	tk := &sundial.Task{
		Name:         name,
		Description:  "a test task",
		CronExpr:     "*/5 * * * * *",
		Timezone:     "Europe/Berlin",
		TargetURL:    "https://example.com/hook",
		Headers:      map[string]string{"X-Token": "secret", "Content-Type": "application/json"},
		BodyTemplate: `{"fire":"{{.FireKey}}"}`,
		RetryPolicy:  json.RawMessage(`{"max_attempts":3}`),
		Priority:     0,
		// Not a default, so that every round trip of a task checks it.
		StartingDeadline:   90,
		PauseAfterFailures: 4,
	}
	for _, m := range mods {
		m(tk)
	}
	if err := tk.Normalize(t0); err != nil {
		panic(fmt.Sprintf("newTask %q: %v", name, err))
	}
	return tk
}

func withNext(t time.Time) func(*sundial.Task) {
	return func(tk *sundial.Task) { tk.NextFireTime = &t }
}

func withPriority(p int) func(*sundial.Task) { return func(tk *sundial.Task) { tk.Priority = p } }

// task creates a task at t0.
func (f *fixture) task(name string, mods ...func(*sundial.Task)) *sundial.Task {
	f.t.Helper()
	tk := newTask(name, mods...)
	if err := CreateTask(f.ctx, f.s, tk, t0); err != nil {
		f.t.Fatalf("CreateTask %q: %v", name, err)
	}
	return tk
}

func (f *fixture) getTask(id int64) *sundial.Task {
	f.t.Helper()
	tk, err := f.s.TaskGet(f.ctx, id)
	if err != nil {
		f.t.Fatalf("TaskGet %d: %v", id, err)
	}
	return tk
}

func (f *fixture) get(id int64) *sundial.Run {
	f.t.Helper()
	r, err := f.s.RunGet(f.ctx, id)
	if err != nil {
		f.t.Fatalf("RunGet %d: %v", id, err)
	}
	return r
}

func withNode(node string) func(*sundial.Run) { return func(r *sundial.Run) { r.NodeID = node } }

func withKey(key string) func(*sundial.Run) { return func(r *sundial.Run) { r.FireKey = key } }

func manual(r *sundial.Run) { r.Trigger = sundial.TriggerManual }

// run makes a run of task scheduled at when and brings it to status through
// legal steps (insert, admit, start, finish, cancel, release). Its fire key
// is the scheduled one, its node "node-a", unless mods say otherwise.
func (f *fixture) run(task int64, when time.Time, status sundial.RunStatus, mods ...func(*sundial.Run)) *sundial.Run {
	f.t.Helper()
	r := &sundial.Run{
		TaskID:        task,
		FireKey:       sundial.ScheduledFireKey(when),
		Trigger:       sundial.TriggerSchedule,
		ScheduledTime: when,
		Status:        sundial.RunScheduled,
		NodeID:        "node-a",
		Fence:         1,
	}
	for _, m := range mods {
		m(r)
	}
	if status == sundial.RunInterrupted {
		// RunRelease interrupts every RUNNING run of a node: give this one
		// a node of its own.
		r.NodeID = fmt.Sprintf("solo-%d-%s", task, r.FireKey)
	}
	if err := f.s.RunInsert(f.ctx, r); err != nil {
		f.t.Fatalf("RunInsert: %v", err)
	}
	f.to(r, status)
	return f.get(r.ID)
}

// to moves the SCHEDULED run r to status.
func (f *fixture) to(r *sundial.Run, status sundial.RunStatus) {
	f.t.Helper()
	admit := func(d sundial.Admission) {
		f.t.Helper()
		if _, err := f.s.RunAdmit(f.ctx, r.ID, r.Fence, t0, func(sundial.AdmitState) sundial.Admission { return d }); err != nil {
			f.t.Fatalf("RunAdmit %d to %s: %v", r.ID, d.Status, err)
		}
	}
	start := func() {
		f.t.Helper()
		ok, err := f.s.RunStart(f.ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: r.ScheduledTime}})
		if err != nil || !ok[0] {
			f.t.Fatalf("RunStart %d: %v %v", r.ID, ok, err)
		}
	}
	finish := func(s sundial.RunStatus) {
		f.t.Helper()
		ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: s,
			StartedAt: r.ScheduledTime, FinishedAt: r.ScheduledTime.Add(time.Second)}})
		if err != nil || !ok[0] {
			f.t.Fatalf("RunFinish %d to %s: %v %v", r.ID, s, ok, err)
		}
	}
	switch status {
	case sundial.RunScheduled:
	case sundial.RunQueued:
		admit(sundial.Admission{Status: sundial.RunQueued, Attempt: 1})
	case sundial.RunSkipped:
		admit(sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipOverlap, Attempt: 1})
	case sundial.RunRunning:
		start()
	case sundial.RunWaitingCallback:
		start()
		finish(sundial.RunWaitingCallback)
	case sundial.RunFailedTimeout:
		start()
		finish(sundial.RunWaitingCallback)
		finish(sundial.RunFailedTimeout)
	case sundial.RunSuccess, sundial.RunFailed, sundial.RunTimeout:
		start()
		finish(status)
	case sundial.RunCanceled:
		if _, err := f.s.RunCancel(f.ctx, r.ID, t0); err != nil {
			f.t.Fatalf("RunCancel %d: %v", r.ID, err)
		}
	case sundial.RunInterrupted:
		start()
		if err := f.s.RunRelease(f.ctx, r.NodeID, "test", t0); err != nil {
			f.t.Fatalf("RunRelease %s: %v", r.NodeID, err)
		}
	default:
		f.t.Fatalf("no way to make a %s run", status)
	}
}

// wantErr fails t unless err is a *sundial.Error with code (and field, if
// not empty).
func wantErr(t *testing.T, err error, code, field string) {
	t.Helper()
	e, ok := errors.AsType[*sundial.Error](err)
	if !ok {
		t.Fatalf("error = %v, want a *sundial.Error with code %s", err, code)
	}
	if e.Code != code || (field != "" && e.Field != field) {
		t.Fatalf("error = %#v, want code %q field %q", e, code, field)
	}
	if e.Message == "" {
		t.Fatalf("error %#v has no message", e)
	}
}

// Comparison: times as UTC microseconds, JSON compacted, nil maps empty, so
// that any backend's faithful round trip compares equal.

func normTime(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }

func normTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	return ptr(normTime(*t))
}

func normTask(tk *sundial.Task) sundial.Task {
	c := *tk
	c.CreatedAt, c.UpdatedAt, c.NextFireTime = normTime(c.CreatedAt), normTime(c.UpdatedAt), normTimePtr(c.NextFireTime)
	c.RunAt, c.DisabledAt = normTimePtr(c.RunAt), normTimePtr(c.DisabledAt)
	if c.Headers == nil {
		c.Headers = map[string]string{}
	}
	c.RetryPolicy, c.Params = compactJSON(c.RetryPolicy), compactJSON(c.Params)
	return c
}

func normRun(r *sundial.Run) sundial.Run {
	c := *r
	c.ScheduledTime, c.CreatedAt, c.UpdatedAt = normTime(c.ScheduledTime), normTime(c.CreatedAt), normTime(c.UpdatedAt)
	c.DueAt = normTime(c.DueAt)
	c.StartedAt, c.FinishedAt = normTimePtr(c.StartedAt), normTimePtr(c.FinishedAt)
	c.Result, c.Progress, c.Checkpoint = compactJSON(c.Result), compactJSON(c.Progress), compactJSON(c.Checkpoint)
	c.Params = compactJSON(c.Params)
	return c
}

// compactJSON is raw without insignificant space (a JSON column may give
// it back reformatted); nil and empty stay nil.
func compactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

func eqTask(t *testing.T, got, want *sundial.Task) {
	t.Helper()
	if g, w := normTask(got), normTask(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("task:\n got %+v\nwant %+v", g, w)
	}
}

func eqRun(t *testing.T, got, want *sundial.Run) {
	t.Helper()
	if g, w := normRun(got), normRun(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("run:\n got %+v\nwant %+v", fmtRun(g), fmtRun(w))
	}
}

func fmtRun(r sundial.Run) string {
	b, _ := json.Marshal(r)
	return string(b)
}

func runIDs(rs []*sundial.Run) []int64 {
	ids := []int64{}
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

func taskIDs(ts []*sundial.Task) []int64 {
	ids := []int64{}
	for _, tk := range ts {
		ids = append(ids, tk.ID)
	}
	return ids
}

func eqIDs(t *testing.T, what string, got, want []int64) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func eqTime(t *testing.T, what string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil || !got.Equal(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// CreateTask creates one task, as the API does: TaskCreateMany with one
// task, whose error it returns unwrapped from its *sundial.BatchError.
func CreateTask(ctx context.Context, s sundial.Store, t *sundial.Task, now time.Time) error {
	_, err := s.TaskCreateMany(ctx, []*sundial.Task{t}, now)
	if be, ok := errors.AsType[*sundial.BatchError](err); ok {
		return be.Err
	}
	return err
}
