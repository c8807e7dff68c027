package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// failRun records a run of task id scheduled at at that ended status.
func (b *storeBundle) failRun(t *testing.T, id int64, at time.Time, status sundial.RunStatus) *sundial.Run {
	t.Helper()
	ctx := t.Context()
	r := &sundial.Run{TaskID: id, FireKey: sundial.ScheduledFireKey(at), ScheduledTime: at, NodeID: "n"}
	if err := b.store.RunInsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: at}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: status,
		StartedAt: at, FinishedAt: at.Add(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRunReplay: dead letters are listed with dead_letter=true; a bulk
// replay checks every run before it replays any, and replays each, oldest
// first, recording rerun_of; a filter that matches too many is refused.
func TestRunReplay(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	tk := b.create(t, task("flaky", nil))
	at := func(m int) time.Time { return time.Date(2025, 12, 31, 23, m, 0, 0, time.UTC) }
	f1 := b.failRun(t, tk.ID, at(1), sundial.RunFailed)
	f2 := b.failRun(t, tk.ID, at(2), sundial.RunTimeout)
	ok := b.failRun(t, tk.ID, at(3), sundial.RunSuccess)
	canceled := b.failRun(t, tk.ID, at(4), sundial.RunCanceled)

	var page listResponse[*sundial.Run]
	want(t, b.do(t, http.MethodGet, "/api/v1/runs?dead_letter=true", nil), http.StatusOK, &page)
	if len(page.Items) != 2 || page.Items[0].ID != f2.ID || page.Items[1].ID != f1.ID {
		t.Fatalf("dead letters: %+v", page.Items)
	}
	count := func() int {
		runs, err := b.store.RunList(t.Context(), sundial.RunListParams{TaskID: tk.ID})
		if err != nil {
			t.Fatal(err)
		}
		return len(runs)
	}
	before := count()
	for _, tc := range []struct {
		body         string
		status       int
		field, words string
	}{
		{fmt.Sprintf(`{"ids":[%d,%d]}`, f1.ID, ok.ID), 400, "ids[1]", "not a dead letter"},
		{fmt.Sprintf(`{"ids":[%d,%d]}`, f1.ID, canceled.ID), 400, "ids[1]", "CANCELED, not a dead letter"},
		{fmt.Sprintf(`{"ids":[%d,%d]}`, f1.ID, f1.ID), 400, "ids[1]", "given twice"},
		{fmt.Sprintf(`{"ids":[%d,999]}`, f1.ID), 400, "ids[1]", "not found"},
		{`{"ids":[` + strings.Repeat("1,", sundial.MaxReplay) + `1]}`, 400, "ids", "at most 100"},
		{`{}`, 400, "ids", "ids, or a filter"},
		{fmt.Sprintf(`{"ids":[%d],"filter":{}}`, f1.ID), 400, "filter", "not both"},
		{`{"filter":{"from":"soon"}}`, 400, "filter.from", "RFC 3339"},
	} {
		rec := b.do(t, http.MethodPost, "/api/v1/runs:replay", tc.body)
		if rec.Code != tc.status {
			t.Fatalf("%s: status %d: %s", tc.body, rec.Code, rec.Body)
		}
		if e := errorOf(t, rec); e.Field != tc.field || !strings.Contains(e.Message, tc.words) {
			t.Errorf("%s: %+v, want field %s and %q", tc.body, e, tc.field, tc.words)
		}
	}
	if n := count(); n != before {
		t.Fatalf("refused replays made %d runs", n-before)
	}

	var resp replayResponse
	want(t, b.do(t, http.MethodPost, "/api/v1/runs:replay", fmt.Sprintf(`{"filter":{"task_id":%d}}`, tk.ID)), http.StatusAccepted, &resp)
	if len(resp.Items) != 2 || resp.Items[0].RerunOf != f1.ID || resp.Items[1].RerunOf != f2.ID {
		t.Fatalf("replay by filter: %+v", resp.Items)
	}
	for _, it := range resp.Items {
		if it.Run == nil || it.Run.RerunOf != it.RerunOf || it.Run.Trigger != sundial.TriggerManual || it.Error != nil {
			t.Errorf("replay item %+v", it)
		}
	}
	entries, err := b.store.AuditList(t.Context(), sundial.AuditListParams{Action: "run.rerun"})
	if err != nil || len(entries) != 2 {
		t.Errorf("%d run.rerun audit entries, want 2 (%v)", len(entries), err)
	}

	// More dead letters than a replay takes: refused whole.
	for i := range sundial.MaxReplay {
		b.failRun(t, tk.ID, at(10).Add(time.Duration(i)*time.Second), sundial.RunFailed)
	}
	rec := b.do(t, http.MethodPost, "/api/v1/runs:replay", `{"filter":{}}`)
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("a filter of %d dead letters: %d %s", sundial.MaxReplay+2, rec.Code, rec.Body)
	}
	if e := errorOf(t, rec); e.Field != "filter" || !strings.Contains(e.Message, "more than 100") {
		t.Errorf("a filter of too many: %+v", e)
	}
}
