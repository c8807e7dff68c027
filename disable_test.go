package sundial

import (
	"strings"
	"testing"
	"time"
)

// TestNoteDisabled: a task that becomes DISABLED is noted disabled now, by
// the actor, for the reason given; one that stays so keeps when and by
// whom, and takes a new reason; one that is not DISABLED has none, and a
// reason given for it is refused unless it is the stored one sent back.
func TestNoteDisabled(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	str := func(s string) *string { return &s }
	disabled := &Task{Status: TaskDisabled, DisabledReason: "vendor down", DisabledAt: &t0, DisabledBy: "alice"}
	enabled := &Task{Status: TaskEnabled}
	// A reason that points into the task itself, as a decoded request's may.
	aliased := &Task{Status: TaskDisabled, DisabledReason: "new"}
	if err := aliased.NoteDisabled(disabled, &aliased.DisabledReason, "bob", t1); err != nil || aliased.DisabledReason != "new" {
		t.Errorf("a reason pointing into the task: %q, %v", aliased.DisabledReason, err)
	}
	for _, tc := range []struct {
		name       string
		status     TaskStatus
		cur        *Task
		reason     *string
		wantReason string
		wantAt     *time.Time
		wantBy     string
		wantErr    string
	}{
		{name: "new disabled with a reason", status: TaskDisabled, reason: str("not yet"), wantReason: "not yet", wantAt: &t1, wantBy: "bob"},
		{name: "new disabled without", status: TaskDisabled, wantAt: &t1, wantBy: "bob"},
		{name: "new enabled", status: TaskEnabled},
		{name: "new enabled with a reason", status: TaskEnabled, reason: str("why"), wantErr: "disabled_reason"},
		{name: "new enabled with an empty reason", status: TaskEnabled, reason: str("")},
		{name: "disabled now", status: TaskDisabled, cur: enabled, reason: str("maintenance"), wantReason: "maintenance", wantAt: &t1, wantBy: "bob"},
		{name: "stays disabled, reason kept", status: TaskDisabled, cur: disabled, wantReason: "vendor down", wantAt: &t0, wantBy: "alice"},
		{name: "stays disabled, new reason", status: TaskDisabled, cur: disabled, reason: str("vendor still down"),
			wantReason: "vendor still down", wantAt: &t0, wantBy: "alice"},
		{name: "stays disabled, reason removed", status: TaskDisabled, cur: disabled, reason: str(""), wantAt: &t0, wantBy: "alice"},
		{name: "enabled again", status: TaskEnabled, cur: disabled},
		{name: "enabled again, the reason sent back", status: TaskEnabled, cur: disabled, reason: str("vendor down")},
		{name: "enabled again with a new reason", status: TaskEnabled, cur: disabled, reason: str("other"), wantErr: "disabled_reason"},
		{name: "enabled with a reason", status: TaskEnabled, cur: enabled, reason: str("x"), wantErr: "disabled_reason"},
		{name: "too long", status: TaskDisabled, reason: str(strings.Repeat("é", MaxDisabledReasonLen+1)), wantErr: "disabled_reason"},
		{name: "longest", status: TaskDisabled, reason: str(strings.Repeat("é", MaxDisabledReasonLen)),
			wantReason: strings.Repeat("é", MaxDisabledReasonLen), wantAt: &t1, wantBy: "bob"},
		{name: "NUL", status: TaskDisabled, reason: str("a\x00b"), wantErr: "disabled_reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tk := &Task{Status: tc.status, DisabledReason: "left over", DisabledBy: "x", DisabledAt: &t0}
			err := tk.NoteDisabled(tc.cur, tc.reason, "bob", t1)
			if tc.wantErr != "" {
				if e, ok := err.(*Error); !ok || e.Code != EInvalid || e.Field != tc.wantErr {
					t.Fatalf("err = %v, want invalid %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tk.DisabledReason != tc.wantReason || tk.DisabledBy != tc.wantBy ||
				(tk.DisabledAt == nil) != (tc.wantAt == nil) || (tk.DisabledAt != nil && !tk.DisabledAt.Equal(*tc.wantAt)) {
				t.Errorf("got %q %v %q, want %q %v %q", tk.DisabledReason, tk.DisabledAt, tk.DisabledBy, tc.wantReason, tc.wantAt, tc.wantBy)
			}
		})
	}
}
