package sundial

import (
	"slices"
	"testing"
)

func TestRunStatuses(t *testing.T) {
	all := RunStatuses()
	if len(all) != 11 {
		t.Fatalf("RunStatuses = %v, want the 11 statuses", all)
	}
	for _, s := range all {
		if !ValidRunStatus(string(s)) {
			t.Errorf("RunStatuses lists %q, which is not valid", s)
		}
	}
	type preds struct{ final, active, waiting, held, pending, effective, atOnce bool }
	want := map[RunStatus]preds{
		RunScheduled:       {waiting: true, held: true, atOnce: true},
		RunQueued:          {waiting: true, held: true, pending: true, atOnce: true},
		RunRunning:         {active: true, held: true, pending: true, effective: true},
		RunWaitingCallback: {active: true, pending: true, effective: true},
		RunSuccess:         {final: true, effective: true},
		RunFailed:          {final: true, effective: true},
		RunTimeout:         {final: true, effective: true},
		RunFailedTimeout:   {final: true, effective: true},
		RunCanceled:        {final: true, effective: true},
		RunSkipped:         {final: true},
		RunInterrupted:     {effective: true},
	}
	for _, s := range all {
		got := preds{s.Final(), s.Active(), s.Waiting(), s.Held(), s.Pending(), s.Effective(), s.CancelsAtOnce()}
		if got != want[s] {
			t.Errorf("%s: predicates %+v, want %+v", s, got, want[s])
		}
	}
	if RunStatus("BOGUS").Effective() {
		t.Error("an unknown status is effective")
	}
	// Every status is final, or may still change.
	for _, s := range all {
		if s.Final() == (len(transitions[s]) > 0) {
			t.Errorf("%s: Final %v, but %d transitions", s, s.Final(), len(transitions[s]))
		}
	}
	if !slices.Equal(FinishFrom(RunInterrupted), []RunStatus{RunRunning, RunWaitingCallback}) {
		t.Errorf("FinishFrom(INTERRUPTED) = %v", FinishFrom(RunInterrupted))
	}
}
