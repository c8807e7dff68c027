package sundial

import (
	"strings"
	"time"
	"unicode/utf8"
)

// MaxDisabledReasonLen bounds the reason a task is disabled for, in
// characters.
const MaxDisabledReasonLen = 1024

// CheckDisabledReason refuses a reason for disabling a task that is longer
// than MaxDisabledReasonLen characters, or is not text (invalid UTF-8, a
// NUL byte); field names it in the error.
func CheckDisabledReason(field, reason string) error {
	if strings.ContainsRune(reason, 0) || !utf8.ValidString(reason) {
		return Errorf(EInvalid, field, "%s contains a NUL byte or invalid UTF-8", field)
	}
	if n := utf8.RuneCountInString(reason); n > MaxDisabledReasonLen {
		return Errorf(EInvalid, field, "%s is %d characters long; at most %d", field, n, MaxDisabledReasonLen)
	}
	return nil
}

// NoteDisabled sets why, when and by whom t is disabled (DisabledReason,
// DisabledAt, DisabledBy) as a write of t makes them, once its status is
// decided. cur is the task as stored (nil for a new task), reason the
// reason the request gives (nil: none given), by the actor of the request
// and now its time.
//
//   - A task that is not DISABLED has none: they are cleared (enabling a
//     task clears them). A reason given for it is a 400, unless it is
//     cur's reason sent back as it is (a task sent back as GET answered
//     it, with a new status).
//   - A task that becomes DISABLED is disabled now, by by, for the reason
//     given ("" for none).
//   - A task that stays DISABLED keeps when and by whom; its reason is the
//     one given, or cur's when none is.
func (t *Task) NoteDisabled(cur *Task, reason *string, by string, now time.Time) error {
	if reason != nil {
		given := *reason // reason may point into t
		if err := CheckDisabledReason("disabled_reason", given); err != nil {
			return err
		}
		reason = &given
	}
	if t.Status != TaskDisabled {
		if reason != nil && *reason != "" && (cur == nil || *reason != cur.DisabledReason) {
			return &Error{Code: EInvalid, Field: "disabled_reason", Token: *reason,
				Message: "disabled_reason is kept only while a task is DISABLED: give status DISABLED with it"}
		}
		t.DisabledReason, t.DisabledAt, t.DisabledBy = "", nil, ""
		return nil
	}
	if cur != nil && cur.Status == TaskDisabled {
		t.DisabledAt, t.DisabledBy = cur.DisabledAt, cur.DisabledBy
		t.DisabledReason = cur.DisabledReason
	} else {
		at := now.UTC().Truncate(time.Microsecond)
		t.DisabledAt, t.DisabledBy, t.DisabledReason = &at, by, ""
	}
	if reason != nil {
		t.DisabledReason = *reason
	}
	return nil
}
