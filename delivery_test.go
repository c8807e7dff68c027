package sundial

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// at0 is the rules' tests' "now"; ts(n) is n seconds after it.
var at0 = time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)

func ts(sec int) time.Time { return at0.Add(time.Duration(sec) * time.Second) }

func tp(sec int) *time.Time { t := ts(sec); return &t }

// aRun is a run of task 1 with ID 7, scheduled at ts(0), held by node-a
// under fence 3, with mods applied.
func aRun(status RunStatus, mods ...func(*Run)) *Run {
	r := &Run{ID: 7, TaskID: 1, FireKey: "s:1", Trigger: TriggerSchedule, ScheduledTime: ts(0), DueAt: ts(0),
		Status: status, NodeID: "node-a", Fence: 3, Attempt: 1, Priority: 2, CreatedAt: ts(-100), UpdatedAt: ts(-50)}
	for _, m := range mods {
		m(r)
	}
	return r
}

func eqRunRule(t *testing.T, what string, got, want *Run) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func TestCutResponseBody(t *testing.T) {
	if got := CutResponseBody("short"); got != "short" {
		t.Errorf("CutResponseBody(short) = %q", got)
	}
	long := strings.Repeat("x", MaxResponseBody+10)
	if got := CutResponseBody(long); len(got) != MaxResponseBody {
		t.Errorf("CutResponseBody kept %d bytes, want %d", len(got), MaxResponseBody)
	}
	// A three-byte rune across the limit is left out whole.
	split := strings.Repeat("x", MaxResponseBody-1) + "€"
	if got := CutResponseBody(split); got != strings.Repeat("x", MaxResponseBody-1) {
		t.Errorf("CutResponseBody split a rune: %d bytes", len(got))
	}
}

func TestRunStart(t *testing.T) {
	for _, c := range []struct {
		name string
		r    *Run
		ok   bool
	}{
		{"scheduled", aRun(RunScheduled), true},
		{"other fence", aRun(RunScheduled, func(r *Run) { r.Fence = 4 }), false},
		{"queued", aRun(RunQueued), false},
		{"running", aRun(RunRunning), false},
	} {
		s := RunStartParams{ID: 7, Fence: 3, Attempt: 2, StartedAt: ts(5), TraceID: "trace"}
		if got := s.Applies(c.r); got != c.ok {
			t.Errorf("%s: Applies = %v, want %v", c.name, got, c.ok)
		}
	}
	r := aRun(RunScheduled, func(r *Run) {
		r.Deliveries, r.HTTPStatus, r.ResponseBody, r.Error, r.Message = 1, 503, "busy", "failed", "said no"
		r.AttemptOnRun = true // no run that starts has it; a start clears it all the same
	})
	s := RunStartParams{ID: 7, Fence: 3, Attempt: 2, StartedAt: ts(5), TraceID: "trace"}
	s.Apply(r)
	want := aRun(RunRunning, func(r *Run) {
		r.Attempt, r.StartedAt, r.TraceID, r.Deliveries, r.UpdatedAt = 2, tp(5), "trace", 2, ts(5)
	})
	eqRunRule(t, "started run", r, want)
}

func TestClaimStart(t *testing.T) {
	c := ClaimStartParams{By: ts(20), FreshAfter: ts(8)}
	for _, tc := range []struct {
		name string
		r    *Run
		c    ClaimStartParams
		want bool
	}{
		{"fresh, marked", aRun(RunScheduled, func(r *Run) { r.ScheduledTime, r.DueAt, r.StartAhead = ts(12), ts(12), true }), c, true},
		{"due after By", aRun(RunScheduled, func(r *Run) { r.ScheduledTime, r.DueAt, r.StartAhead = ts(30), ts(30), true }), c, false},
		{"due at By", aRun(RunScheduled, func(r *Run) { r.ScheduledTime, r.DueAt, r.StartAhead = ts(20), ts(20), true }), c, true},
		{"not marked", aRun(RunScheduled, func(r *Run) { r.ScheduledTime, r.DueAt = ts(12), ts(12) }), c, false},
		{"stale", aRun(RunScheduled, func(r *Run) { r.ScheduledTime, r.DueAt, r.StartAhead = ts(5), ts(5), true }), c, false},
		{"at FreshAfter", aRun(RunScheduled, func(r *Run) { r.ScheduledTime, r.DueAt, r.StartAhead = ts(8), ts(8), true }), c, true},
		{"retry", aRun(RunScheduled, func(r *Run) { r.ScheduledTime, r.DueAt, r.Deliveries = ts(1), ts(15), 1 }), c, true},
		{"retry due late", aRun(RunScheduled, func(r *Run) { r.ScheduledTime, r.DueAt, r.Deliveries = ts(1), ts(25), 1 }), c, false},
		{"zero By", aRun(RunScheduled, func(r *Run) { r.Deliveries = 1 }), ClaimStartParams{}, false},
	} {
		if got := tc.c.Starts(tc.r); got != tc.want {
			t.Errorf("%s: Starts = %v, want %v", tc.name, got, tc.want)
		}
	}

	// A claimed run that starts: the later of its due time and now.
	for _, tc := range []struct {
		name    string
		due     time.Time
		started time.Time
	}{{"early", ts(12), ts(12)}, {"late", ts(2), ts(10)}} {
		r := aRun(RunScheduled, func(r *Run) {
			r.NodeID, r.Attempt, r.ScheduledTime, r.DueAt, r.StartAhead, r.Error = "", 0, ts(10), tc.due, true, "old"
		})
		ClaimStartParams{By: ts(20), FreshAfter: ts(0)}.Claim(r, "node-b", ts(10), "trace")
		want := aRun(RunRunning, func(r *Run) {
			r.NodeID, r.Fence, r.UpdatedAt, r.ScheduledTime, r.DueAt, r.StartAhead = "node-b", 4, ts(10), ts(10), tc.due, true
			r.Attempt, r.StartedAt, r.TraceID, r.Deliveries = 1, &tc.started, "trace", 1
		})
		eqRunRule(t, tc.name+" claimed and started", r, want)
	}
	// One that does not start is only claimed.
	r := aRun(RunScheduled, func(r *Run) { r.NodeID = "" })
	ClaimStartParams{}.Claim(r, "node-b", ts(10), "trace")
	eqRunRule(t, "claimed", r, aRun(RunScheduled, func(r *Run) { r.NodeID, r.Fence, r.UpdatedAt = "node-b", 4, ts(10) }))

	for _, tc := range []struct {
		name string
		r    *Run
		want bool
	}{
		{"unclaimed, due", aRun(RunScheduled, func(r *Run) { r.NodeID = "" }), true},
		{"due later", aRun(RunScheduled, func(r *Run) { r.NodeID, r.DueAt = "", ts(11) }), false},
		{"held", aRun(RunScheduled), false},
		{"queued", aRun(RunQueued, func(r *Run) { r.NodeID = "" }), false},
	} {
		if got := tc.r.Unclaimed(ts(10)); got != tc.want {
			t.Errorf("%s: Unclaimed = %v, want %v", tc.name, got, tc.want)
		}
	}
	ref := RunRef{ID: 7, Fence: 3}
	for s, want := range map[RunStatus]bool{RunScheduled: true, RunQueued: true, RunRunning: false, RunSuccess: false} {
		if got := ref.Claimable(aRun(s)); got != want {
			t.Errorf("Claimable(%s) = %v, want %v", s, got, want)
		}
	}
	if (RunRef{ID: 7, Fence: 2}).Claimable(aRun(RunScheduled)) {
		t.Error("a run under another fence is claimable")
	}
}

func TestCheckSend(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *Run
		want SendCheck
	}{
		{"gone", nil, SendDrop},
		{"running", aRun(RunRunning), SendGo},
		{"cancel asked", aRun(RunRunning, func(r *Run) { r.CancelRequested = true }), SendCancel},
		{"fenced off", aRun(RunRunning, func(r *Run) { r.Fence = 4 }), SendDrop},
		{"taken back", aRun(RunScheduled), SendDrop},
		{"done", aRun(RunSuccess), SendDrop},
	} {
		if got := CheckSend(3, tc.r); got != tc.want {
			t.Errorf("%s: CheckSend = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRunFinishRule(t *testing.T) {
	wantFrom := map[RunStatus][]RunStatus{
		RunSuccess:         {RunRunning, RunWaitingCallback},
		RunFailed:          {RunRunning, RunWaitingCallback},
		RunTimeout:         {RunRunning},
		RunFailedTimeout:   {RunWaitingCallback},
		RunCanceled:        {RunRunning, RunWaitingCallback},
		RunWaitingCallback: {RunRunning},
		RunInterrupted:     {RunRunning, RunWaitingCallback},
	}
	for _, s := range append(RunStatuses(), "BOGUS") {
		got := FinishFrom(s)
		if !reflect.DeepEqual(got, wantFrom[s]) {
			t.Errorf("FinishFrom(%s) = %v, want %v", s, got, wantFrom[s])
		}
		f := RunFinishParams{ID: 7, Fence: 3, Status: s}
		if err := f.Check(); (err == nil) != (wantFrom[s] != nil) || (err != nil && ErrorCode(err) != EConflict) {
			t.Errorf("Check of an outcome %s = %v", s, err)
		}
		for _, from := range RunStatuses() {
			want := false
			for _, w := range wantFrom[s] {
				want = want || w == from
			}
			if got := f.Applies(aRun(from)); got != want {
				t.Errorf("outcome %s Applies to a %s run = %v, want %v", s, from, got, want)
			}
		}
	}
	if (&RunFinishParams{Fence: 2, Status: RunSuccess}).Applies(aRun(RunRunning)) {
		t.Error("an outcome under another fence applies")
	}
	if err := (&RunFinishParams{Status: RunSuccess, CompleteTask: TaskEnabled}).Check(); ErrorCode(err) != EInvalid {
		t.Errorf("Check of a task end ENABLED = %v, want %s", err, EInvalid)
	}

	body := strings.Repeat("b", MaxResponseBody+3)
	for _, tc := range []struct {
		name string
		r    *Run
		f    RunFinishParams
		want *Run
		att  *Attempt
	}{
		{"success", aRun(RunRunning, func(r *Run) { r.StartedAt, r.Deliveries = tp(1), 1 }),
			RunFinishParams{Status: RunSuccess, FinishedAt: ts(3), HTTPStatus: 200, ResponseBody: body, Error: ""},
			aRun(RunSuccess, func(r *Run) {
				r.StartedAt, r.Deliveries, r.FinishedAt, r.UpdatedAt = tp(1), 1, tp(3), ts(3)
				r.HTTPStatus, r.ResponseBody, r.AttemptOnRun = 200, body[:MaxResponseBody], true
			}),
			&Attempt{RunID: 7, Delivery: 1, NodeID: "node-a", Status: RunSuccess, HTTPStatus: 200,
				ResponseBody: body[:MaxResponseBody], StartedAt: tp(1), FinishedAt: ts(3)}},
		{"retry", aRun(RunRunning, func(r *Run) { r.StartedAt, r.Deliveries = tp(1), 1 }),
			RunFinishParams{Status: RunFailed, StartedAt: ts(2), FinishedAt: ts(3), HTTPStatus: 503, Error: "busy",
				Retry: true, DueAt: ts(30)},
			aRun(RunScheduled, func(r *Run) {
				r.NodeID, r.StartedAt, r.Deliveries, r.UpdatedAt, r.DueAt = "", tp(2), 1, ts(3), ts(30)
				r.HTTPStatus, r.Error = 503, "busy"
			}),
			&Attempt{RunID: 7, Delivery: 1, NodeID: "node-a", Status: RunFailed, HTTPStatus: 503, Error: "busy",
				StartedAt: tp(2), FinishedAt: ts(3)}},
		{"accepted", aRun(RunRunning, func(r *Run) { r.StartedAt, r.Deliveries = tp(1), 1 }),
			RunFinishParams{Status: RunWaitingCallback, FinishedAt: ts(3), HTTPStatus: 202, DueAt: ts(60)},
			aRun(RunWaitingCallback, func(r *Run) {
				r.StartedAt, r.Deliveries, r.FinishedAt, r.UpdatedAt, r.DueAt, r.HTTPStatus = tp(1), 1, tp(3), ts(3), ts(60), 202
			}),
			&Attempt{RunID: 7, Delivery: 1, NodeID: "node-a", Status: RunWaitingCallback, HTTPStatus: 202,
				StartedAt: tp(1), FinishedAt: ts(3)}},
		{"failure, no finish time", aRun(RunRunning, func(r *Run) { r.StartedAt, r.Deliveries = tp(1), 2 }),
			RunFinishParams{Status: RunFailed, HTTPStatus: 500, ResponseBody: "oops", Error: "HTTP 500"},
			aRun(RunFailed, func(r *Run) {
				r.StartedAt, r.Deliveries, r.UpdatedAt, r.AttemptOnRun = tp(1), 2, ts(10), true
				r.HTTPStatus, r.ResponseBody, r.Error = 500, "oops", "HTTP 500"
			}),
			&Attempt{RunID: 7, Delivery: 2, NodeID: "node-a", Status: RunFailed, HTTPStatus: 500, ResponseBody: "oops",
				Error: "HTTP 500", StartedAt: tp(1), FinishedAt: ts(10)}},
		{"interrupted", aRun(RunRunning, func(r *Run) { r.StartedAt, r.Deliveries = tp(1), 1 }),
			RunFinishParams{Status: RunInterrupted, FinishedAt: ts(40), Error: "lost"},
			aRun(RunInterrupted, func(r *Run) {
				r.StartedAt, r.Deliveries, r.FinishedAt, r.UpdatedAt, r.Error = tp(1), 1, tp(40), ts(40), "lost"
			}),
			&Attempt{RunID: 7, Delivery: 1, NodeID: "node-a", Status: RunInterrupted, Error: "lost",
				StartedAt: tp(1), FinishedAt: ts(40)}},
		{"cancelled unsent", aRun(RunRunning, func(r *Run) { r.StartedAt, r.Deliveries, r.CancelRequested = tp(0), 1, true }),
			RunFinishParams{Status: RunCanceled, StartedAt: ts(-1), FinishedAt: ts(-1), Error: "canceled"},
			aRun(RunCanceled, func(r *Run) {
				r.StartedAt, r.Deliveries, r.FinishedAt, r.UpdatedAt, r.Error = tp(-1), 1, tp(-1), ts(-1), "canceled"
				r.CancelRequested, r.AttemptOnRun = true, true
			}),
			&Attempt{RunID: 7, Delivery: 1, NodeID: "node-a", Status: RunCanceled, Error: "canceled",
				StartedAt: tp(-1), FinishedAt: ts(-1)}},
		{"callback, no finish time", aRun(RunWaitingCallback, func(r *Run) { r.StartedAt, r.Deliveries = tp(1), 1 }),
			RunFinishParams{Status: RunFailedTimeout, Error: "no callback", DueAt: ts(90)},
			aRun(RunFailedTimeout, func(r *Run) {
				r.StartedAt, r.Deliveries, r.UpdatedAt, r.Error = tp(1), 1, ts(10), "no callback"
			}),
			nil},
	} {
		f := tc.f
		f.ID, f.Fence = 7, 3
		if !f.Applies(tc.r) {
			t.Fatalf("%s: does not apply", tc.name)
		}
		att := f.Apply(tc.r, ts(10))
		eqRunRule(t, tc.name, tc.r, tc.want)
		if !reflect.DeepEqual(att, tc.att) {
			t.Errorf("%s: attempt %+v, want %+v", tc.name, att, tc.att)
		}
		// The attempt of an outcome that ends the run for good is the
		// run's own; any other is not on the run.
		onRun := att != nil && f.AttemptOnRun()
		if tc.r.AttemptOnRun != onRun {
			t.Errorf("%s: AttemptOnRun %v, want %v", tc.name, tc.r.AttemptOnRun, onRun)
		}
		own := tc.r.OwnAttempt()
		if !onRun && own != nil {
			t.Errorf("%s: OwnAttempt %+v, want none", tc.name, own)
		}
		if onRun && !reflect.DeepEqual(own, att) {
			t.Errorf("%s: OwnAttempt %+v, want the outcome's %+v", tc.name, own, att)
		}
	}
	for _, s := range RunStatuses() {
		for _, retry := range []bool{false, true} {
			f := RunFinishParams{Status: s, Retry: retry}
			if want := s.Final() && !retry; f.AttemptOnRun() != want {
				t.Errorf("outcome %s (retry %v): AttemptOnRun %v, want %v", s, retry, !want, want)
			}
		}
	}
}

func TestCheckReport(t *testing.T) {
	for s, want := range map[RunStatus]string{RunRunning: "", RunWaitingCallback: "", RunSuccess: "status",
		RunScheduled: "status", RunInterrupted: "status"} {
		err := aRun(s).CheckReport(3)
		if e, ok := err.(*Error); (want == "") != (err == nil) || (ok && (e.Code != EConflict || e.Field != want)) {
			t.Errorf("CheckReport of a %s run = %v, want field %q", s, err, want)
		}
	}
	if e, ok := aRun(RunRunning).CheckReport(2).(*Error); !ok || e.Field != "fence" {
		t.Errorf("CheckReport of another delivery = %v, want a fence conflict", e)
	}
}

func TestRunCompletionRule(t *testing.T) {
	for s, ok := range map[RunStatus]bool{RunSuccess: true, RunFailed: true, RunFailedTimeout: true, RunCanceled: true,
		RunTimeout: false, RunScheduled: false, RunWaitingCallback: false} {
		c := RunCompleteParams{ID: 7, Status: s}
		if err := c.Check(); (err == nil) != ok || (err != nil && ErrorCode(err) != EInvalid) {
			t.Errorf("Check of a completion %s = %v", s, err)
		}
	}
	if err := (&RunCompleteParams{Status: RunSuccess, CompleteTask: TaskDisabled}).Check(); ErrorCode(err) != EInvalid {
		t.Errorf("Check of a task end DISABLED = %v", err)
	}

	result := json.RawMessage(`{"rows":1}`)
	// The callback of a WAITING_CALLBACK run: its latest attempt takes it.
	r := aRun(RunWaitingCallback, func(r *Run) { r.StartedAt, r.Deliveries, r.HTTPStatus = tp(1), 1, 202 })
	c := RunCompleteParams{ID: 7, Fence: 3, Status: RunSuccess, Result: result, Message: "done", FinishedAt: ts(20)}
	a, fresh := c.Apply(r, ts(30))
	eqRunRule(t, "completed", r, aRun(RunSuccess, func(r *Run) {
		r.StartedAt, r.Deliveries, r.HTTPStatus, r.Result, r.Message, r.FinishedAt, r.UpdatedAt = tp(1), 1, 202, result, "done", tp(20), ts(20)
	}))
	if fresh || !reflect.DeepEqual(a, &Attempt{RunID: 7, Status: RunSuccess, FinishedAt: ts(20)}) {
		t.Errorf("attempt of a callback = %+v, fresh %v; want the latest's new status", a, fresh)
	}
	// A RUNNING run's callback, before its answer, to retry: a new attempt.
	r = aRun(RunRunning, func(r *Run) { r.StartedAt, r.Deliveries = tp(1), 2 })
	c = RunCompleteParams{ID: 7, Fence: 3, Status: RunFailed, Error: "bad", Message: "bad", Retry: true, DueAt: ts(40)}
	a, fresh = c.Apply(r, ts(30))
	eqRunRule(t, "retried", r, aRun(RunScheduled, func(r *Run) {
		r.NodeID, r.StartedAt, r.Deliveries, r.Error, r.Message, r.DueAt, r.UpdatedAt = "", tp(1), 2, "bad", "bad", ts(40), ts(30)
	}))
	if !fresh || !reflect.DeepEqual(a, &Attempt{RunID: 7, Delivery: 2, NodeID: "node-a", Status: RunFailed,
		Error: "bad", StartedAt: tp(1), FinishedAt: ts(30)}) {
		t.Errorf("attempt of an early callback = %+v, fresh %v", a, fresh)
	}
}

func TestRunProgressRule(t *testing.T) {
	old := json.RawMessage(`{"page":1}`)
	for _, tc := range []struct {
		name    string
		status  RunStatus
		p       RunProgressParams
		due     time.Time
		prog    json.RawMessage
		checkpt json.RawMessage
	}{
		{"later deadline", RunWaitingCallback, RunProgressParams{Progress: json.RawMessage(`1`), DueAt: ts(50)}, ts(50), json.RawMessage(`1`), old},
		{"earlier deadline", RunWaitingCallback, RunProgressParams{DueAt: ts(-5)}, ts(0), nil, old},
		{"running", RunRunning, RunProgressParams{Checkpoint: json.RawMessage(`{"page":2}`), DueAt: ts(50)}, ts(0), nil, json.RawMessage(`{"page":2}`)},
	} {
		r := aRun(tc.status, func(r *Run) { r.Checkpoint = old })
		tc.p.Apply(r, ts(9))
		eqRunRule(t, tc.name, r, aRun(tc.status, func(r *Run) {
			r.DueAt, r.Progress, r.Checkpoint, r.UpdatedAt = tc.due, tc.prog, tc.checkpt, ts(9)
		}))
	}
}

func TestAdmissionRule(t *testing.T) {
	for _, tc := range []struct {
		from  RunStatus
		d     Admission
		field string // "" for none
		code  string
	}{
		{RunScheduled, Admission{Status: RunRunning}, "", ""},
		{RunQueued, Admission{Status: RunQueued}, "", ""},
		{RunScheduled, Admission{Status: RunSuccess}, "status", EConflict},
		{RunSkipped, Admission{Status: RunRunning}, "status", EConflict},
		{RunScheduled, Admission{Status: RunSkipped, CompleteTask: TaskFailed}, "", ""},
		{RunScheduled, Admission{Status: RunSkipped, CompleteTask: TaskDisabled}, "status", EInvalid},
		// A task end comes only with a skip: ignored otherwise.
		{RunScheduled, Admission{Status: RunRunning, CompleteTask: TaskDisabled}, "", ""},
	} {
		err := tc.d.Check(7, tc.from)
		if (tc.code == "") != (err == nil) || (err != nil && ErrorCode(err) != tc.code) {
			t.Errorf("Check of %s from %s = %v, want %q", tc.d.Status, tc.from, err, tc.code)
		}
	}
	if (&Admission{Status: RunRunning, CompleteTask: TaskFailed}).EndsTask() != "" {
		t.Error("a run admitted RUNNING ends its task")
	}

	r := aRun(RunScheduled, func(r *Run) { r.Error, r.Deliveries = "old", 1 })
	(&Admission{Status: RunRunning, Attempt: 3, TraceID: "tr"}).Apply(r, ts(5))
	eqRunRule(t, "admitted", r, aRun(RunRunning, func(r *Run) {
		r.Attempt, r.StartedAt, r.TraceID, r.Deliveries, r.UpdatedAt = 3, tp(5), "tr", 2, ts(5)
	}))
	r = aRun(RunScheduled)
	(&Admission{Status: RunQueued, Attempt: 2}).Apply(r, ts(5))
	eqRunRule(t, "queued", r, aRun(RunQueued, func(r *Run) { r.Attempt, r.UpdatedAt = 2, ts(5) }))
	r = aRun(RunQueued)
	(&Admission{Status: RunSkipped, SkipReason: SkipOverlap, Attempt: 2}).Apply(r, ts(5))
	eqRunRule(t, "skipped", r, aRun(RunSkipped, func(r *Run) {
		r.SkipReason, r.Attempt, r.FinishedAt, r.UpdatedAt = SkipOverlap, 2, tp(5), ts(5)
	}))
}
