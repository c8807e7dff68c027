package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// What a run carries for all its deliveries (the params a manual trigger
// gave it) and what its callback said (its message).

// withParams gives a new run params of its own.
func withParams(p string) func(*sundial.Run) {
	return func(r *sundial.Run) { r.Params = json.RawMessage(p) }
}

// testRunParams: a run's params are stored with it and come back from every
// method that returns the run, through its deliveries.
func testRunParams(t *testing.T, open Opener) {
	const params = `{"order": {"id": 42, "items": ["a", "b"]}, "note": "x\u00e9y"}`
	const compact = `{"order":{"id":42,"items":["a","b"]},"note":"x\u00e9y"}`

	t.Run("InsertGetList", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a", func(tk *sundial.Task) { tk.Params = json.RawMessage(`{"task":true}`) })
		r := f.run(tk.ID, at(1), sundial.RunScheduled, manual, withKey("m:1"), withParams(params))
		eqJSON(t, "Params of the inserted run", r.Params, compact)
		plain := f.run(tk.ID, at(2), sundial.RunScheduled, manual, withKey("m:2"))
		if plain.Params != nil {
			t.Fatalf("a run without params has %s, want none (its task's apply)", plain.Params)
		}
		got, err := f.s.RunList(f.ctx, sundial.RunListParams{TaskID: tk.ID})
		if err != nil || len(got) != 2 {
			t.Fatalf("RunList: %d runs, %v", len(got), err)
		}
		eqRun(t, got[1], r)
		eqRun(t, got[0], plain)
	})

	t.Run("Admitted", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		for i, status := range []sundial.RunStatus{sundial.RunRunning, sundial.RunQueued, sundial.RunSkipped} {
			r := f.run(tk.ID, at(i), sundial.RunScheduled, manual, withParams(params))
			got, err := f.s.RunAdmit(f.ctx, r.ID, r.Fence, at(i), func(sundial.AdmitState) sundial.Admission {
				return sundial.Admission{Status: status, SkipReason: sundial.SkipConcurrency, Attempt: 1}
			})
			if err != nil {
				t.Fatalf("RunAdmit to %s: %v", status, err)
			}
			eqJSON(t, "Params of the run admitted "+string(status), got.Params, compact)
		}
	})

	t.Run("Retried", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.retrying(tk.ID, at(10), at(20), manual, withParams(params))
		eqJSON(t, "Params of the run waiting for its retry", r.Params, compact)
		runs, _, err := f.s.RunClaimDue(f.ctx, "node-b", at(20), 10, sundial.ClaimStartParams{By: at(20)})
		if err != nil || len(runs) != 1 || runs[0].Status != sundial.RunRunning {
			t.Fatalf("RunClaimDue = %v, %v; want the retry, started", runs, err)
		}
		eqJSON(t, "Params of the retry the claim started", runs[0].Params, compact)
		eqRun(t, f.get(r.ID), runs[0])
	})

	t.Run("Redelivered", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.run(tk.ID, at(10), sundial.RunInterrupted, manual, withParams(params))
		runs, _, err := f.s.RunRedeliver(f.ctx, "node-c", 3, 10, at(20))
		if err != nil || len(runs) != 1 || runs[0].ID != r.ID {
			t.Fatalf("RunRedeliver = %v, %v; want run %d", runIDs(runs), err, r.ID)
		}
		eqJSON(t, "Params of the redelivered run", runs[0].Params, compact)
		claimed, _, err := f.s.RunClaim(f.ctx, "node-d", []sundial.RunRef{ref(runs[0])})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("RunClaim = %v, %v", claimed, err)
		}
		eqJSON(t, "Params of the claimed run", claimed[0].Params, compact)
	})
}

// testRunMessage: a callback's message is kept as the run's, apart from
// its error, whatever the outcome.
func testRunMessage(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name   string
		status sundial.RunStatus
		errMsg string
		retry  bool
	}{
		{"Success", sundial.RunSuccess, "", false},
		{"Failed", sundial.RunFailed, "upstream down", false},
		{"FailedRetried", sundial.RunFailed, "upstream down", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, open)
			tk := f.task("a")
			r := f.waiting(tk.ID, at(10), at(400))
			c := sundial.RunCompleteParams{ID: r.ID, Fence: r.Fence, Status: tc.status, Error: tc.errMsg,
				Message: "imported 120 rows; ünïcode", FinishedAt: at(20), Retry: tc.retry}
			if tc.retry {
				c.DueAt = at(30)
			}
			got, err := f.s.RunComplete(f.ctx, c)
			if err != nil {
				t.Fatalf("RunComplete: %v", err)
			}
			want := sundial.RunStatus(tc.status)
			if tc.retry {
				want = sundial.RunScheduled
			}
			if got.Status != want || got.Message != c.Message || got.Error != tc.errMsg {
				t.Fatalf("completed run = %s; want %s with message %q and error %q", fmtRun(*got), want, c.Message, tc.errMsg)
			}
			eqRun(t, f.get(r.ID), got)
		})
	}

	t.Run("NoneByDefault", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.run(tk.ID, at(1), sundial.RunSuccess)
		if r.Message != "" {
			t.Fatalf("a run no callback ended has message %q, want none", r.Message)
		}
		done := f.waiting(tk.ID, at(2), at(400))
		got, err := f.s.RunComplete(f.ctx, sundial.RunCompleteParams{ID: done.ID, Fence: done.Fence,
			Status: sundial.RunFailedTimeout, Error: "no callback before the deadline", FinishedAt: at(3).Add(time.Second)})
		if err != nil || got.Message != "" {
			t.Fatalf("RunComplete without a message = %v, %v; want no message", got, err)
		}
	})
}

// failedDelivery makes a run of task scheduled at when whose first delivery
// (on node-a) was accepted with 202 and then reported FAILED by its
// callback, and that waits for a retry due at due: SCHEDULED, no node, with
// the answer, error and message of that delivery.
func (f *fixture) failedDelivery(task int64, when, due time.Time) *sundial.Run {
	f.t.Helper()
	r := f.waiting(task, when, when.Add(time.Hour))
	got, err := f.s.RunComplete(f.ctx, sundial.RunCompleteParams{ID: r.ID, Fence: r.Fence, Status: sundial.RunFailed,
		Error: "upstream down", Message: "upstream down", FinishedAt: when.Add(2 * time.Second),
		Retry: true, DueAt: due})
	if err != nil {
		f.t.Fatalf("RunComplete %d with a retry: %v", r.ID, err)
	}
	if got.Status != sundial.RunScheduled || got.HTTPStatus != 202 || got.ResponseBody != "accepted" ||
		got.Error != "upstream down" || got.Message != "upstream down" {
		f.t.Fatalf("run waiting for its retry = %s; want SCHEDULED with the failed delivery's answer, error and message", fmtRun(*got))
	}
	return got
}

// eqStarted fails unless r is RUNNING in its delivery number delivery with
// nothing of the previous delivery left on it: no answer, error or
// message. The attempts keep those.
func eqStarted(t *testing.T, what string, r *sundial.Run, delivery int) {
	t.Helper()
	if r.Status != sundial.RunRunning || r.Deliveries != delivery || r.HTTPStatus != 0 || r.ResponseBody != "" ||
		r.Error != "" || r.Message != "" {
		t.Fatalf("%s = %s; want RUNNING in delivery %d, with no http_status, response_body, error or message",
			what, fmtRun(*r), delivery)
	}
}

// testDeliveryStart: every write that starts a delivery of a run (RunStart,
// a claim's ClaimStartParams, RunAdmit deciding RUNNING, of a run waiting for
// admission or queued) empties what the previous delivery left on it; its
// attempt keeps it.
func testDeliveryStart(t *testing.T, open Opener) {
	retried := []wantAttempt{{1, "node-a", sundial.RunFailed, 202, "upstream down", at(10), at(12)}}

	t.Run("RunStart", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.failedDelivery(tk.ID, at(10), at(20))
		got, _, err := f.s.RunClaim(f.ctx, "node-b", []sundial.RunRef{ref(r)})
		if err != nil || len(got) != 1 {
			t.Fatalf("RunClaim = %v, %v", got, err)
		}
		ok, err := f.s.RunStart(f.ctx, []sundial.RunStartParams{{ID: r.ID, Fence: got[0].Fence, Attempt: 1, StartedAt: at(20)}})
		if err != nil || !ok[0] {
			t.Fatalf("RunStart = %v, %v", ok, err)
		}
		eqStarted(t, "run started by RunStart", f.get(r.ID), 2)
		eqAttempts(t, "attempts", f.attempts(r.ID), retried)
	})

	t.Run("ClaimStartParams", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.failedDelivery(tk.ID, at(10), at(20))
		runs, _, err := f.s.RunClaimDue(f.ctx, "node-b", at(20), 10, sundial.ClaimStartParams{By: at(20)})
		if err != nil || len(runs) != 1 {
			t.Fatalf("RunClaimDue = %v, %v; want the retry", runIDs(runs), err)
		}
		eqStarted(t, "run the claim returned", runs[0], 2)
		eqRun(t, f.get(r.ID), runs[0])
		eqAttempts(t, "attempts", f.attempts(r.ID), retried)
	})

	t.Run("RunAdmit", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.failedDelivery(tk.ID, at(10), at(20))
		got, err := f.s.RunAdmit(f.ctx, r.ID, r.Fence, at(20), func(sundial.AdmitState) sundial.Admission {
			return sundial.Admission{Status: sundial.RunRunning, Attempt: 1}
		})
		if err != nil {
			t.Fatalf("RunAdmit: %v", err)
		}
		eqStarted(t, "run admitted RUNNING", got, 2)
		eqRun(t, f.get(r.ID), got)
		eqAttempts(t, "attempts", f.attempts(r.ID), retried)
	})

	t.Run("RunAdmitQueued", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.failedDelivery(tk.ID, at(10), at(20))
		admit := func(status sundial.RunStatus) *sundial.Run {
			t.Helper()
			got, err := f.s.RunAdmit(f.ctx, r.ID, r.Fence, at(20), func(sundial.AdmitState) sundial.Admission {
				return sundial.Admission{Status: status, Attempt: 1}
			})
			if err != nil {
				t.Fatalf("RunAdmit to %s: %v", status, err)
			}
			return got
		}
		// Waiting in the queue, the run still shows how its last
		// delivery ended; once it starts, it no longer does.
		if q := admit(sundial.RunQueued); q.Status != sundial.RunQueued || q.Error != "upstream down" || q.HTTPStatus != 202 {
			t.Fatalf("queued run = %s; want QUEUED, the failed delivery still shown", fmtRun(*q))
		}
		got := admit(sundial.RunRunning)
		eqStarted(t, "queued run admitted RUNNING", got, 2)
		eqRun(t, f.get(r.ID), got)
		eqAttempts(t, "attempts", f.attempts(r.ID), retried)
	})

	t.Run("Redelivered", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		tk := f.task("a")
		r := f.run(tk.ID, at(10), sundial.RunInterrupted) // error: the reason it was cut off
		if r.Error == "" {
			t.Fatalf("interrupted run = %s; want its reason as the error", fmtRun(*r))
		}
		runs, _, err := f.s.RunRedeliver(f.ctx, "node-c", 3, 10, at(20))
		if err != nil || len(runs) != 1 {
			t.Fatalf("RunRedeliver = %v, %v", runIDs(runs), err)
		}
		ok, err := f.s.RunStart(f.ctx, []sundial.RunStartParams{{ID: r.ID, Fence: runs[0].Fence, Attempt: 1, StartedAt: at(20)}})
		if err != nil || !ok[0] {
			t.Fatalf("RunStart = %v, %v", ok, err)
		}
		eqStarted(t, "redelivered run", f.get(r.ID), 2)
		if as := f.attempts(r.ID); len(as) != 1 || as[0].Status != sundial.RunInterrupted || as[0].Error != r.Error {
			t.Fatalf("attempts = %s; want the INTERRUPTED one with its reason", fmtAttempts(as))
		}
	})
}
