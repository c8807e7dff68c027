package sqlrow

import (
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

func TestStatuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		keep func(sundial.RunStatus) bool
		want string
	}{
		{sundial.RunStatus.Waiting, "('SCHEDULED', 'QUEUED')"},
		{sundial.RunStatus.Held, "('SCHEDULED', 'QUEUED', 'RUNNING')"},
		{sundial.RunStatus.Active, "('RUNNING', 'WAITING_CALLBACK')"},
		{sundial.RunStatus.Final, "('SUCCESS', 'FAILED', 'TIMEOUT', 'FAILED_TIMEOUT', 'CANCELED', 'SKIPPED')"},
	} {
		if got := Statuses(tc.keep); got != tc.want {
			t.Errorf("Statuses = %s, want %s", got, tc.want)
		}
	}
}

// TestWriteArgs: each shared write binds as many values as it has markers.
func TestWriteArgs(t *testing.T) {
	t.Parallel()
	r := &sundial.Run{ID: 1}
	if n, args := strings.Count(RunUpdateSQL, "?"), len(RunUpdateArgs(r))+1; n != args || len(RunUpdateCols)+1 != args {
		t.Errorf("RunUpdateSQL has %d markers for %d values and %d columns", n, args, len(RunUpdateCols)+1)
	}
	a := &sundial.Attempt{RunID: 1}
	if n, args := strings.Count(AttemptInsertSQL(3), "?"), 3*len(AttemptArgs(nil, a)); n != args {
		t.Errorf("AttemptInsertSQL(3) has %d markers for %d values", n, args)
	}
	if n := strings.Count(DeleteRunsSQL(4), "?"); n != 4 {
		t.Errorf("DeleteRunsSQL(4) has %d markers", n)
	}
}
