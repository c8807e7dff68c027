package storetest

import (
	"testing"

	"github.com/sundialhq/sundial"
)

// testRunAttempts follows one fire through two deliveries: the first cut
// off by its node's stop, the second answered (WAITING_CALLBACK) and then
// failed by its callback, which is no new attempt; and a late outcome that
// its fence refuses, which records nothing.
func testRunAttempts(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	r := f.run(tk.ID, at(10), sundial.RunInterrupted) // delivery 1, cut off by RunRelease
	if got, err := f.s.RunAttempts(f.ctx, r.ID); err != nil || len(got) != 1 {
		t.Fatalf("RunAttempts after the release = %v, %v; want 1", got, err)
	}

	// Delivery 2 on node-c: answered 202, then failed by its callback.
	runs, _, err := f.s.RunRedeliver(f.ctx, "node-c", 5, 10, at(20))
	if err != nil || len(runs) != 1 {
		t.Fatalf("RunRedeliver = %v, %v", runIDs(runs), err)
	}
	r = runs[0]
	start := func(run *sundial.Run, when int) {
		t.Helper()
		ok, err := f.s.RunStart(f.ctx, []sundial.RunStartParams{{ID: run.ID, Fence: run.Fence, Attempt: 1, StartedAt: at(when)}})
		if err != nil || !ok[0] {
			t.Fatalf("RunStart: %v %v", ok, err)
		}
	}
	finish := func(run *sundial.Run, status sundial.RunStatus, http int, msg string, when int) bool {
		t.Helper()
		ok, err := f.s.RunFinish(f.ctx, []sundial.RunFinishParams{{ID: run.ID, Fence: run.Fence, Status: status,
			StartedAt: at(when), FinishedAt: at(when + 1), HTTPStatus: http, Error: msg, ResponseBody: "body " + msg}})
		if err != nil {
			t.Fatalf("RunFinish: %v", err)
		}
		return ok[0]
	}
	start(r, 21)
	if !finish(r, sundial.RunWaitingCallback, 202, "accepted", 21) {
		t.Fatal("RunFinish to WAITING_CALLBACK refused")
	}
	if !finish(r, sundial.RunFailed, 503, "HTTP 503 Service Unavailable", 22) {
		t.Fatal("RunFinish to FAILED refused")
	}
	// A late outcome under the old fence records nothing.
	stale := *r
	stale.Fence--
	if finish(&stale, sundial.RunSuccess, 200, "late", 23) {
		t.Fatal("a late outcome under an old fence was applied")
	}

	got, err := f.s.RunAttempts(f.ctx, r.ID)
	if err != nil {
		t.Fatalf("RunAttempts: %v", err)
	}
	want := []struct {
		delivery int
		node     string
		status   sundial.RunStatus
		http     int
	}{
		{1, "", sundial.RunInterrupted, 0}, // its node is checked below
		{2, "node-c", sundial.RunWaitingCallback, 202},
	}
	if len(got) != len(want) {
		t.Fatalf("attempts = %d, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		a := got[i]
		if a.RunID != r.ID || a.Delivery != w.delivery || a.Status != w.status || a.HTTPStatus != w.http {
			t.Errorf("attempt %d = %+v, want delivery %d %s %d", i, a, w.delivery, w.status, w.http)
		}
		if i > 0 && (a.NodeID != w.node || a.StartedAt == nil || a.ResponseBody == "" || a.Error == "") {
			t.Errorf("attempt %d = %+v, want node %s with start, body and error", i, a, w.node)
		}
	}
	if first := got[0]; first.NodeID == "" || first.NodeID == "node-c" || first.Error != "test" || first.FinishedAt.IsZero() {
		t.Errorf("cut-off attempt = %+v, want the released node, the release reason and a finish time", first)
	}
	if _, err := f.s.RunAttempts(f.ctx, 999999); err != nil {
		t.Errorf("RunAttempts of an unknown run: %v, want none and no error", err)
	}
}
