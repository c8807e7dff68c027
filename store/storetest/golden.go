package storetest

import (
	"bytes"
	_ "embed" // the golden answers
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// The golden answers of RunAttempts: every path a fire may take through
// the store (a delivery's outcome, a retry, a node's death and a
// redelivery, an ASYNC callback, a cancellation, a change of its task, a
// one-off task's end), made through the Store's methods as the scheduler
// calls them, and what the run, its attempts and its task look like at
// the end. testdata/attempts.golden.json holds the answers; every backend
// gives the same ones. Where a store keeps the attempts is its own
// business: these answers are what a user sees (GET /runs/{id}).
//
// SUNDIAL_UPDATE_GOLDEN=1 writes the answers of the backend under test to
// the file instead of comparing them (run one backend at a time).

//go:embed testdata/attempts.golden.json
var goldenAttempts []byte

// goldenFile is where SUNDIAL_UPDATE_GOLDEN writes the answers.
func goldenFile() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "attempts.golden.json")
}

// goldenAnswer is what a path leaves: its run (nil when the run is gone),
// the run's attempts, and its task's status (deleted: "DELETED").
type goldenAnswer struct {
	Run      *goldenRun      `json:"run"`
	Attempts []goldenAttempt `json:"attempts"`
	Task     string          `json:"task"`
}

// goldenRun is a run as the API answers it, but for what differs from one
// database to another (IDs, the creation time) or from one run of the
// test to another: times are relative to t0, and a time read from the
// store's clock, or a trace ID a claim made, shows as such.
type goldenRun struct {
	FireKey         string             `json:"fire_key"`
	Trigger         sundial.Trigger    `json:"trigger"`
	Scheduled       string             `json:"scheduled_time"`
	DueAt           string             `json:"due_at"`
	Status          sundial.RunStatus  `json:"status"`
	SkipReason      sundial.SkipReason `json:"skip_reason,omitempty"`
	MissedCount     int                `json:"missed_count,omitempty"`
	Attempt         int                `json:"attempt"`
	Deliveries      int                `json:"deliveries"`
	NodeID          string             `json:"node_id"`
	Fence           int64              `json:"fence"`
	StartedAt       string             `json:"started_at"`
	FinishedAt      string             `json:"finished_at"`
	HTTPStatus      int                `json:"http_status"`
	ResponseBody    string             `json:"response_body"`
	Error           string             `json:"error"`
	Message         string             `json:"message"`
	TraceID         string             `json:"trace_id"`
	Result          json.RawMessage    `json:"result,omitempty"`
	CancelRequested bool               `json:"cancel_requested"`
	UpdatedAt       string             `json:"updated_at"`
}

// goldenAttempt is an attempt as the API answers it, times relative to t0.
type goldenAttempt struct {
	Delivery     int               `json:"delivery"`
	NodeID       string            `json:"node_id"`
	Status       sundial.RunStatus `json:"status"`
	HTTPStatus   int               `json:"http_status"`
	Error        string            `json:"error"`
	ResponseBody string            `json:"response_body"`
	StartedAt    string            `json:"started_at"`
	FinishedAt   string            `json:"finished_at"`
}

// rel shows a time relative to t0 ("+12.5s"), or "clock" for one far from
// it: the suite's times are in 2030, so that is the store's clock.
func rel(t time.Time) string {
	d := t.Sub(t0)
	if d < -24*time.Hour || d > 24*time.Hour {
		return "clock"
	}
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

func relPtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return rel(*t)
}

func goldenRunOf(r *sundial.Run) *goldenRun {
	trace := r.TraceID
	if trace != "" && !strings.HasPrefix(trace, "trace-") {
		trace = "(a claim's)"
	}
	return &goldenRun{FireKey: r.FireKey, Trigger: r.Trigger, Scheduled: rel(r.ScheduledTime), DueAt: rel(r.DueAt),
		Status: r.Status, SkipReason: r.SkipReason, MissedCount: r.MissedCount, Attempt: r.Attempt,
		Deliveries: r.Deliveries, NodeID: r.NodeID, Fence: r.Fence, StartedAt: relPtr(r.StartedAt),
		FinishedAt: relPtr(r.FinishedAt), HTTPStatus: r.HTTPStatus, ResponseBody: r.ResponseBody, Error: r.Error,
		Message: r.Message, TraceID: trace, Result: compactJSON(r.Result), CancelRequested: r.CancelRequested,
		UpdatedAt: rel(r.UpdatedAt)}
}

func goldenAttemptOf(a *sundial.Attempt) goldenAttempt {
	return goldenAttempt{Delivery: a.Delivery, NodeID: a.NodeID, Status: a.Status, HTTPStatus: a.HTTPStatus,
		Error: a.Error, ResponseBody: a.ResponseBody, StartedAt: relPtr(a.StartedAt), FinishedAt: rel(a.FinishedAt)}
}

// goldenPath makes one path on a fresh database, with its task (created by
// task), and returns the run whose answers count. rows is how many rows of
// run_attempts the run has in the end, as stored: its attempts but the
// last when its outcome ended it for good (sundial.Run.AttemptOnRun), so
// that a fire delivered once has none.
type goldenPath struct {
	name string
	rows int
	task []func(*sundial.Task)
	run  func(g *gold) *sundial.Run
}

// gold is a path's fixture: its store and its task.
type gold struct {
	*fixture
	tk *sundial.Task
}

// planned inserts a fire of the task planned at when: SCHEDULED, held by
// no node, marked to start with its claim (start_ahead).
func (g *gold) planned(when time.Time, mods ...func(*sundial.Run)) *sundial.Run {
	g.t.Helper()
	r := &sundial.Run{TaskID: g.tk.ID, FireKey: sundial.ScheduledFireKey(when), Trigger: sundial.TriggerSchedule,
		ScheduledTime: when, Status: sundial.RunScheduled, StartAhead: true, CreatedAt: at(-60)}
	for _, m := range mods {
		m(r)
	}
	if err := g.s.RunInsert(g.ctx, r); err != nil {
		g.t.Fatalf("RunInsert: %v", err)
	}
	return g.get(r.ID)
}

// claim claims r for node when it is due, as the claimer does, starting it
// when ClaimStartParams does (a fire marked start_ahead, a retry), and
// returns it as claimed.
func (g *gold) claim(node string, r *sundial.Run) *sundial.Run {
	g.t.Helper()
	runs, _, err := g.s.RunClaimDue(g.ctx, node, r.DueAt, 100, sundial.ClaimStartParams{By: r.DueAt, FreshAfter: at(-3600)})
	if err != nil {
		g.t.Fatalf("RunClaimDue: %v", err)
	}
	for _, c := range runs {
		if c.ID == r.ID {
			return c
		}
	}
	g.t.Fatalf("RunClaimDue by %v did not claim run %d", r.DueAt, r.ID)
	return nil
}

// admit admits r (SCHEDULED or QUEUED) at now as d decides.
func (g *gold) admit(r *sundial.Run, now time.Time, d sundial.Admission) *sundial.Run {
	g.t.Helper()
	got, err := g.s.RunAdmit(g.ctx, r.ID, r.Fence, now, func(sundial.AdmitState) sundial.Admission { return d })
	if err != nil {
		g.t.Fatalf("RunAdmit %d to %s: %v", r.ID, d.Status, err)
	}
	return got
}

// start starts r, SCHEDULED under its fence, at when.
func (g *gold) start(r *sundial.Run, when time.Time, trace string) *sundial.Run {
	g.t.Helper()
	ok, err := g.s.RunStart(g.ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: max(r.Attempt, 1),
		StartedAt: when, TraceID: trace}})
	if err != nil || !ok[0] {
		g.t.Fatalf("RunStart %d: %v %v", r.ID, ok, err)
	}
	return g.get(r.ID)
}

// finish records the outcome fin of r's delivery under r's fence, and
// reports whether it applied.
func (g *gold) finish(r *sundial.Run, fin sundial.RunFinishParams) bool {
	g.t.Helper()
	fin.ID, fin.Fence = r.ID, r.Fence
	ok, err := g.s.RunFinish(g.ctx, []sundial.RunFinishParams{fin})
	if err != nil {
		g.t.Fatalf("RunFinish %d as %s: %v", r.ID, fin.Status, err)
	}
	return ok[0]
}

// done records the outcome fin of r's delivery, which must apply, and
// returns the run as it left it.
func (g *gold) done(r *sundial.Run, fin sundial.RunFinishParams) *sundial.Run {
	g.t.Helper()
	if !g.finish(r, fin) {
		g.t.Fatalf("RunFinish %d as %s did not apply to %s", r.ID, fin.Status, fmtRun(*g.get(r.ID)))
	}
	return g.get(r.ID)
}

// complete records a callback's outcome c on r, under r's fence.
func (g *gold) complete(r *sundial.Run, c sundial.RunCompleteParams) *sundial.Run {
	g.t.Helper()
	c.ID, c.Fence = r.ID, r.Fence
	got, err := g.s.RunComplete(g.ctx, c)
	if err != nil {
		g.t.Fatalf("RunComplete %d as %s: %v", r.ID, c.Status, err)
	}
	return got
}

// redeliver redelivers the INTERRUPTED runs for node, at most max
// deliveries each, at now, and returns them.
func (g *gold) redeliver(node string, maxDeliveries int, now time.Time) []*sundial.Run {
	g.t.Helper()
	runs, _, err := g.s.RunRedeliver(g.ctx, node, maxDeliveries, 100, now)
	if err != nil {
		g.t.Fatalf("RunRedeliver: %v", err)
	}
	return runs
}

// redeliverOne redelivers the INTERRUPTED run r for node at now, and
// returns it as redelivered: SCHEDULED, held by node.
func (g *gold) redeliverOne(r *sundial.Run, node string, now time.Time) *sundial.Run {
	g.t.Helper()
	again := g.redeliver(node, 3, now)
	if len(again) != 1 || again[0].ID != r.ID {
		g.t.Fatalf("RunRedeliver = %v; want run %d", runIDs(again), r.ID)
	}
	return again[0]
}

// reap declares node dead, registered first, as the others do once its
// heartbeat is too old, at now.
func (g *gold) reap(node string, now time.Time) {
	g.t.Helper()
	dead, err := g.s.NodeReap(g.ctx, overdue, now)
	if err != nil || !slices.Equal(dead, []string{node}) {
		g.t.Fatalf("NodeReap = %v, %v; want [%s]", dead, err, node)
	}
}

func (g *gold) register(node string) {
	g.t.Helper()
	if err := g.s.NodeRegister(g.ctx, &sundial.Node{ID: node}); err != nil {
		g.t.Fatalf("NodeRegister: %v", err)
	}
}

func (g *gold) cancel(r *sundial.Run, now time.Time) *sundial.Run {
	g.t.Helper()
	got, err := g.s.RunCancel(g.ctx, r.ID, now)
	if err != nil {
		g.t.Fatalf("RunCancel %d: %v", r.ID, err)
	}
	return got
}

// ms is n milliseconds after t0.
func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// Outcomes as the delivery pool makes them.
func success(started, finished time.Time) sundial.RunFinishParams {
	return sundial.RunFinishParams{Status: sundial.RunSuccess, StartedAt: started, FinishedAt: finished,
		HTTPStatus: 200, ResponseBody: `{"ok":true}`}
}

func failed(started, finished time.Time, code int) sundial.RunFinishParams {
	return sundial.RunFinishParams{Status: sundial.RunFailed, StartedAt: started, FinishedAt: finished,
		HTTPStatus: code, ResponseBody: "busy", Error: "HTTP " + strconv.Itoa(code)}
}

func retried(fin sundial.RunFinishParams, due time.Time) sundial.RunFinishParams {
	fin.Retry, fin.DueAt = true, due
	return fin
}

func accepted(started, finished, deadline time.Time) sundial.RunFinishParams {
	return sundial.RunFinishParams{Status: sundial.RunWaitingCallback, StartedAt: started, FinishedAt: finished,
		HTTPStatus: 202, ResponseBody: "accepted", DueAt: deadline}
}

func retryTask(n int) func(*sundial.Task) {
	return func(tk *sundial.Task) {
		tk.RetryPolicy = json.RawMessage(`{"max_attempts":` + strconv.Itoa(n) + `,"jitter":"none"}`)
	}
}

func async(tk *sundial.Task) { tk.ExecType = sundial.ExecAsync }

// goldenPaths are the paths of a fire through the store.
var goldenPaths = []goldenPath{
	{name: "success", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		return g.done(r, success(at(10), ms(10250)))
	}},
	{name: "success admitted", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10), func(r *sundial.Run) { r.StartAhead = false }))
		r = g.admit(r, at(10), sundial.Admission{Status: sundial.RunRunning, Attempt: 2, TraceID: "trace-admit"})
		return g.done(r, success(ms(10003), ms(10400)))
	}},
	{name: "success without a finish time", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		return g.done(r, sundial.RunFinishParams{Status: sundial.RunSuccess, HTTPStatus: 204})
	}},
	{name: "manual success", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.planned(at(5), func(r *sundial.Run) {
			r.Trigger, r.FireKey, r.NodeID, r.StartAhead = sundial.TriggerManual, "m:1", "node-a", false
		})
		r = g.admit(r, at(5), sundial.Admission{Status: sundial.RunRunning, Attempt: 1, TraceID: "trace-manual"})
		return g.done(r, success(at(5), ms(5100)))
	}},
	{name: "failure", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		return g.done(r, failed(at(10), ms(10300), 500))
	}},
	{name: "timeout", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		return g.done(r, sundial.RunFinishParams{Status: sundial.RunTimeout, StartedAt: at(10), FinishedAt: at(25),
			Error: "timed out after 15s"})
	}},
	{name: "retry then success", rows: 1, task: []func(*sundial.Task){retryTask(3)}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		r = g.done(r, retried(failed(at(10), ms(10300), 503), at(20)))
		r = g.claim("node-b", r)
		return g.done(r, success(at(20), ms(20200)))
	}},
	{name: "retries used up", rows: 2, task: []func(*sundial.Task){retryTask(3)}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		r = g.done(r, retried(failed(at(10), ms(10300), 503), at(20)))
		r = g.claim("node-b", r)
		r = g.done(r, retried(sundial.RunFinishParams{Status: sundial.RunTimeout, StartedAt: at(20), FinishedAt: at(35),
			Error: "timed out after 15s"}, at(40)))
		r = g.claim("node-a", r)
		return g.done(r, failed(at(40), ms(40100), 502))
	}},
	{name: "node death, redelivered, success", rows: 1, run: func(g *gold) *sundial.Run {
		g.register("node-a")
		r := g.claim("node-a", g.planned(at(10)))
		g.reap("node-a", at(15))
		r = g.start(g.redeliverOne(r, "node-b", at(16)), at(16), "trace-again")
		return g.done(r, success(at(16), ms(16500)))
	}},
	{name: "node stop, redelivered, success", rows: 1, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		if err := g.s.RunRelease(g.ctx, "node-a", "node stopped", at(12)); err != nil {
			g.t.Fatalf("RunRelease: %v", err)
		}
		r = g.start(g.redeliverOne(r, "node-b", at(13)), at(13), "trace-again")
		return g.done(r, success(at(13), ms(13500)))
	}},
	{name: "lost delivery, redelivered, success", rows: 1, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		g.done(r, sundial.RunFinishParams{Status: sundial.RunInterrupted, StartedAt: at(10), FinishedAt: at(45),
			Error: "the node lost track of its delivery"})
		r = g.start(g.redeliverOne(r, "node-a", at(46)), at(46), "trace-again")
		return g.done(r, failed(at(46), ms(46100), 500))
	}},
	{name: "interrupted twice, redelivery refused", rows: 2, run: func(g *gold) *sundial.Run {
		g.register("node-a")
		r := g.claim("node-a", g.planned(at(10)))
		g.reap("node-a", at(15))
		g.start(g.redeliverOne(r, "node-b", at(16)), at(16), "trace-again")
		if err := g.s.RunRelease(g.ctx, "node-b", "node stopped", at(17)); err != nil {
			g.t.Fatalf("RunRelease: %v", err)
		}
		if again := g.redeliver("node-c", 2, at(18)); len(again) != 0 {
			g.t.Fatalf("RunRedeliver past max deliveries redelivered %d runs", len(again))
		}
		return g.get(r.ID)
	}},
	{name: "interrupted, task deleted, redelivery refused", rows: 1, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		if err := g.s.RunRelease(g.ctx, "node-a", "node stopped", at(12)); err != nil {
			g.t.Fatalf("RunRelease: %v", err)
		}
		if err := g.s.TaskDelete(g.ctx, g.tk.ID, at(13)); err != nil {
			g.t.Fatalf("TaskDelete: %v", err)
		}
		g.redeliver("node-b", 3, at(14))
		return g.get(r.ID)
	}},
	{name: "async success", rows: 1, task: []func(*sundial.Task){async}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		r = g.done(r, accepted(at(10), ms(10100), at(310)))
		return g.complete(r, sundial.RunCompleteParams{Status: sundial.RunSuccess, Result: json.RawMessage(`{"rows":3}`),
			Message: "imported", FinishedAt: at(70)})
	}},
	{name: "async failure", rows: 1, task: []func(*sundial.Task){async}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		r = g.done(r, accepted(at(10), ms(10100), at(310)))
		return g.complete(r, sundial.RunCompleteParams{Status: sundial.RunFailed, Error: "upstream down",
			Message: "upstream down", FinishedAt: at(70)})
	}},
	{name: "async callback timeout", rows: 1, task: []func(*sundial.Task){async}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		r = g.done(r, accepted(at(10), ms(10100), at(310)))
		return g.complete(r, sundial.RunCompleteParams{Status: sundial.RunFailedTimeout,
			Error: "no callback before the deadline", FinishedAt: ms(310400)})
	}},
	{name: "async failure retried, then success", rows: 2, task: []func(*sundial.Task){async, retryTask(2)}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		r = g.done(r, accepted(at(10), ms(10100), at(310)))
		r = g.complete(r, sundial.RunCompleteParams{Status: sundial.RunFailed, Error: "upstream down",
			Message: "upstream down", FinishedAt: at(70), Retry: true, DueAt: at(80)})
		r = g.claim("node-b", r)
		r = g.done(r, accepted(at(80), ms(80100), at(380)))
		return g.complete(r, sundial.RunCompleteParams{Status: sundial.RunSuccess, Message: "imported", FinishedAt: at(90)})
	}},
	{name: "async callback before the call's answer", rows: 1, task: []func(*sundial.Task){async}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		g.complete(r, sundial.RunCompleteParams{Status: sundial.RunSuccess, Message: "quick", FinishedAt: ms(10050)})
		if g.finish(r, accepted(at(10), ms(10100), at(310))) {
			g.t.Fatalf("the call's answer after the callback applied")
		}
		return g.get(r.ID)
	}},
	{name: "async cancelled while waiting", rows: 1, task: []func(*sundial.Task){async}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		r = g.done(r, accepted(at(10), ms(10100), at(310)))
		r = g.cancel(r, at(20))
		return g.complete(r, sundial.RunCompleteParams{Status: sundial.RunCanceled, Error: "canceled by request",
			FinishedAt: ms(20010)})
	}},
	{name: "async deadline recorded by RunFinish", rows: 1, task: []func(*sundial.Task){async}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		r = g.done(r, accepted(at(10), ms(10100), at(310)))
		return g.done(r, sundial.RunFinishParams{Status: sundial.RunFailedTimeout, FinishedAt: at(311),
			Error: "no callback"})
	}},
	{name: "cancelled before its claim", rows: 0, run: func(g *gold) *sundial.Run {
		return g.cancel(g.planned(at(10)), at(5))
	}},
	{name: "cancelled after its commit, before it was sent", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		g.cancel(r, ms(9800))
		checks, err := g.s.RunCheckSend(g.ctx, []sundial.RunRef{{ID: r.ID, Fence: r.Fence}})
		if err != nil || checks[0] != sundial.SendCancel {
			g.t.Fatalf("RunCheckSend = %v, %v; want cancel", checks, err)
		}
		return g.done(r, sundial.RunFinishParams{Status: sundial.RunCanceled, StartedAt: ms(9980), FinishedAt: ms(9980),
			Error: "canceled by request before it was sent"})
	}},
	{name: "cancelled while running", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		g.cancel(r, at(11))
		return g.done(r, sundial.RunFinishParams{Status: sundial.RunCanceled, StartedAt: at(10), FinishedAt: ms(11200),
			Error: "canceled by request"})
	}},
	{name: "skipped", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10), func(r *sundial.Run) { r.StartAhead = false }))
		return g.admit(r, at(10), sundial.Admission{Status: sundial.RunSkipped, SkipReason: sundial.SkipOverlap, Attempt: 1})
	}},
	{name: "queued, then success", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10), func(r *sundial.Run) { r.StartAhead = false }))
		r = g.admit(r, at(10), sundial.Admission{Status: sundial.RunQueued, Attempt: 1})
		r = g.admit(r, at(30), sundial.Admission{Status: sundial.RunRunning, Attempt: 1, TraceID: "trace-queued"})
		return g.done(r, success(at(30), ms(30300)))
	}},
	{name: "manual run released before its delivery", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.planned(at(5), func(r *sundial.Run) {
			r.Trigger, r.FireKey, r.NodeID, r.StartAhead = sundial.TriggerManual, "m:1", "node-a", false
		})
		if err := g.s.RunRelease(g.ctx, "node-a", "node stopped", at(4)); err != nil {
			g.t.Fatalf("RunRelease: %v", err)
		}
		return g.get(r.ID)
	}},
	{name: "task deleted while planned", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.planned(at(10))
		if err := g.s.TaskDelete(g.ctx, g.tk.ID, t0); err != nil {
			g.t.Fatalf("TaskDelete: %v", err)
		}
		return r
	}},
	{name: "task deleted while committed ahead", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		if err := g.s.TaskDelete(g.ctx, g.tk.ID, t0); err != nil {
			g.t.Fatalf("TaskDelete: %v", err)
		}
		return r
	}},
	{name: "task deleted while running", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(-5)))
		if err := g.s.TaskDelete(g.ctx, g.tk.ID, t0); err != nil {
			g.t.Fatalf("TaskDelete: %v", err)
		}
		return g.done(r, success(at(-5), ms(200)))
	}},
	{name: "task deleted while a retry waits", rows: 1, task: []func(*sundial.Task){retryTask(3)}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(-10)))
		r = g.done(r, retried(failed(at(-10), ms(-9700), 503), at(20)))
		if err := g.s.TaskDelete(g.ctx, g.tk.ID, t0); err != nil {
			g.t.Fatalf("TaskDelete: %v", err)
		}
		return g.get(r.ID)
	}},
	{name: "task deleted while a redelivery is committed ahead", rows: 1, task: []func(*sundial.Task){retryTask(3)}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(-10)))
		r = g.done(r, retried(failed(at(-10), ms(-9700), 503), at(20)))
		g.claim("node-b", r)
		if err := g.s.TaskDelete(g.ctx, g.tk.ID, t0); err != nil {
			g.t.Fatalf("TaskDelete: %v", err)
		}
		return g.get(r.ID)
	}},
	{name: "task updated while planned", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.planned(at(10))
		tk := g.getTask(g.tk.ID)
		tk.Priority = 5
		if err := g.s.TaskUpdate(g.ctx, tk, t0); err != nil {
			g.t.Fatalf("TaskUpdate: %v", err)
		}
		return r
	}},
	{name: "task updated while running", rows: 0, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(-5)))
		tk := g.getTask(g.tk.ID)
		tk.Priority = 5
		if err := g.s.TaskUpdate(g.ctx, tk, t0); err != nil {
			g.t.Fatalf("TaskUpdate: %v", err)
		}
		return g.done(r, failed(at(-5), ms(300), 500))
	}},
	{name: "task updated while a retry is held, then success", rows: 1, task: []func(*sundial.Task){retryTask(3)}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(-10)))
		r = g.done(r, retried(failed(at(-10), ms(-9700), 503), at(20)))
		if _, _, err := g.s.RunClaim(g.ctx, "node-b", []sundial.RunRef{{ID: r.ID, Fence: r.Fence}}); err != nil {
			g.t.Fatalf("RunClaim: %v", err)
		}
		tk := g.getTask(g.tk.ID)
		tk.Priority = 5
		if err := g.s.TaskUpdate(g.ctx, tk, t0); err != nil {
			g.t.Fatalf("TaskUpdate: %v", err)
		}
		r = g.claim("node-c", g.get(r.ID))
		return g.done(r, success(at(20), ms(20100)))
	}},
	{name: "task disabled while a retry waits", rows: 1, task: []func(*sundial.Task){retryTask(3)}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(-10)))
		r = g.done(r, retried(failed(at(-10), ms(-9700), 503), at(20)))
		tk := g.getTask(g.tk.ID)
		tk.Status = sundial.TaskDisabled
		if err := g.s.TaskUpdate(g.ctx, tk, t0); err != nil {
			g.t.Fatalf("TaskUpdate: %v", err)
		}
		return g.get(r.ID)
	}},
	{name: "one-off success", rows: 0, task: []func(*sundial.Task){oneOff(at(10))}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		fin := success(at(10), ms(10200))
		fin.CompleteTask = sundial.TaskCompleted
		return g.done(r, fin)
	}},
	{name: "one-off failure", rows: 0, task: []func(*sundial.Task){oneOff(at(10))}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		fin := failed(at(10), ms(10200), 500)
		fin.CompleteTask = sundial.TaskFailed
		return g.done(r, fin)
	}},
	{name: "one-off retry then success", rows: 1, task: []func(*sundial.Task){oneOff(at(10)), retryTask(2)}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		r = g.done(r, retried(failed(at(10), ms(10200), 503), at(20)))
		r = g.claim("node-b", r)
		fin := success(at(20), ms(20200))
		fin.CompleteTask = sundial.TaskCompleted
		return g.done(r, fin)
	}},
	{name: "one-off async success", rows: 1, task: []func(*sundial.Task){oneOff(at(10)), async}, run: func(g *gold) *sundial.Run {
		r := g.claim("node-a", g.planned(at(10)))
		r = g.done(r, accepted(at(10), ms(10100), at(310)))
		return g.complete(r, sundial.RunCompleteParams{Status: sundial.RunSuccess, FinishedAt: at(70),
			CompleteTask: sundial.TaskCompleted})
	}},
	{name: "one-off cancelled before its claim", rows: 0, task: []func(*sundial.Task){oneOff(at(10))}, run: func(g *gold) *sundial.Run {
		return g.cancel(g.planned(at(10)), at(5))
	}},
	{name: "one-off redelivery refused", rows: 1, task: []func(*sundial.Task){oneOff(at(10))}, run: func(g *gold) *sundial.Run {
		g.register("node-a")
		r := g.claim("node-a", g.planned(at(10)))
		g.reap("node-a", at(15))
		g.redeliver("node-b", 1, at(16))
		return g.get(r.ID)
	}},
}

// DowngradeAttempts are the statements that docs/design.md gives for
// running a version older than migration 0013 on a database again: they
// write the attempts runs keep themselves (attempt_on_run) back as rows of
// run_attempts, after the rows each run has, and unmark the runs, on every
// dialect. Run in one transaction once no newer node runs, they change
// nothing that RunAttempts answers.
var DowngradeAttempts = []string{
	`INSERT INTO run_attempts (run_id, delivery, node_id, status, http_status, error, response_body, started_at, finished_at)
SELECT id, deliveries, node_id, status, http_status, error, response_body, started_at, COALESCE(finished_at, updated_at)
FROM runs WHERE attempt_on_run = TRUE;`,
	`UPDATE runs SET attempt_on_run = FALSE WHERE attempt_on_run = TRUE;`,
}

// testAttemptsGolden: every path of a fire leaves the run, the attempts
// and the task that testdata/attempts.golden.json holds, and no more rows
// of run_attempts than the path says.
func testAttemptsGolden(t *testing.T, b Backend) {
	open := func(t *testing.T) sundial.Store { return b.Open(t, 1)[0] }
	var want map[string]goldenAnswer
	if err := json.Unmarshal(goldenAttempts, &want); err != nil {
		t.Fatalf("read the golden answers: %v", err)
	}
	update := os.Getenv("SUNDIAL_UPDATE_GOLDEN") != ""
	var (
		mu  sync.Mutex
		got = map[string]goldenAnswer{}
	)
	t.Run("paths", func(t *testing.T) {
		for _, p := range goldenPaths {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				f := setup(t, open)
				g := &gold{fixture: f, tk: f.task("golden", p.task...)}
				r := p.run(g)
				ans := goldenAnswer{Attempts: []goldenAttempt{}}
				if now, err := f.s.RunGet(f.ctx, r.ID); err == nil {
					ans.Run = goldenRunOf(now)
				} else if sundial.ErrorCode(err) != sundial.ENotFound {
					t.Fatalf("RunGet %d: %v", r.ID, err)
				}
				atts := f.attempts(r.ID)
				for _, a := range atts {
					if a.RunID != r.ID {
						t.Errorf("attempt of run %d names run %d", r.ID, a.RunID)
					}
					ans.Attempts = append(ans.Attempts, goldenAttemptOf(a))
				}
				// As stored: the rows, and the last attempt on the run
				// when its outcome ended it for good.
				stored := b.AttemptRows(t, f.s, r.ID)
				if stored != p.rows {
					t.Errorf("%d rows of run_attempts, want %d", stored, p.rows)
				}
				if now, err := f.s.RunGet(f.ctx, r.ID); err == nil {
					own := now.OwnAttempt()
					if own != nil {
						stored++
						sameAttempt(t, "the run's own attempt", atts[len(atts)-1], own)
					}
					if own != nil && !now.Status.Final() {
						t.Errorf("a %s run keeps an attempt", now.Status)
					}
				}
				if stored != len(atts) {
					t.Errorf("%d attempts stored (rows and the run's own), RunAttempts answers %d", stored, len(atts))
				}
				// Written back for a downgrade, every attempt is a row, and
				// RunAttempts answers the same.
				for _, q := range DowngradeAttempts {
					b.Exec(t, f.s, q)
				}
				back := f.attempts(r.ID)
				if len(back) != len(atts) {
					t.Fatalf("after the downgrade's statements, %d attempts, want %d", len(back), len(atts))
				}
				for i := range atts {
					sameAttempt(t, "after the downgrade's statements", back[i], atts[i])
				}
				if n := b.AttemptRows(t, f.s, r.ID); n != len(atts) {
					t.Errorf("after the downgrade's statements, %d rows of run_attempts, want %d", n, len(atts))
				}
				if now, err := f.s.RunGet(f.ctx, r.ID); err == nil && now.AttemptOnRun {
					t.Errorf("after the downgrade's statements, the run keeps its attempt")
				}
				switch tk, err := f.s.TaskGet(f.ctx, g.tk.ID); {
				case err == nil:
					ans.Task = string(tk.Status)
				case sundial.ErrorCode(err) == sundial.ENotFound:
					ans.Task = "DELETED"
				default:
					t.Fatalf("TaskGet: %v", err)
				}
				mu.Lock()
				got[p.name] = ans
				mu.Unlock()
				if update {
					return
				}
				w, ok := want[p.name]
				if !ok {
					t.Fatalf("no golden answer for %q: run with SUNDIAL_UPDATE_GOLDEN=1", p.name)
				}
				if g, w := mustJSON(t, ans), mustJSON(t, w); g != w {
					t.Errorf("answers of %q:\n got %s\nwant %s", p.name, g, w)
				}
			})
		}
	})
	if update {
		b, err := json.MarshalIndent(got, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile(), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var extra []string
	for name := range want {
		if !slices.ContainsFunc(goldenPaths, func(p goldenPath) bool { return p.name == name }) {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		t.Errorf("golden answers for paths that are gone: %q", extra)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(buf.String())
}
