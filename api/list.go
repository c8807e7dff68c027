package api

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// listResponse is the body of a paged list: one page of items, and the
// cursor of the next page, "" on the last.
type listResponse[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// parseLimit reads limit: 1 to maxPageLimit, defaultPageLimit without one.
func parseLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return defaultPageLimit, nil
	}
	limit, err := strconv.Atoi(v)
	if err != nil || limit < 1 || limit > maxPageLimit {
		return 0, &sundial.Error{Code: sundial.EInvalid, Field: "limit", Token: v,
			Message: "limit must be an integer from 1 to " + strconv.Itoa(maxPageLimit)}
	}
	return limit, nil
}

// page trims items, fetched with a limit of limit+1, to limit, and returns
// the cursor of the next page, made by cursor from the page's last item:
// "" when there is none. A store may cap what it returns at maxPageLimit; a
// full page of that size then gets a cursor, and the page after it may be
// empty.
func page[T any](items []T, limit int, cursor func(T) string) ([]T, string) {
	if items == nil {
		items = []T{}
	}
	if len(items) > limit {
		items = items[:limit]
	} else if len(items) < limit || limit < maxPageLimit {
		return items, ""
	}
	return items, cursor(items[len(items)-1])
}

// A cursor is the base64url (unpadded) of the position in its list's order
// that the page ended at; clients treat it as opaque. A task list's is the
// decimal ID of the last task (tasks are listed by ID). A run list's is
// runCursorTag, then the scheduled time in microseconds and the ID of the
// last run, separated by colons (runs are listed by scheduled time, then
// ID). Each decoder refuses the other's cursors, so a cursor from another
// list or another order is a 400 rather than a page from the wrong place.

// runCursorTag names the order of a run list's cursor.
const runCursorTag = "sched"

func encodeTaskCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

func decodeTaskCursor(s string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var id int64
	if err == nil {
		id, err = strconv.ParseInt(string(b), 10, 64)
	}
	if err != nil || id < 1 {
		return 0, errCursor(s)
	}
	return id, nil
}

func encodeRunCursor(r *sundial.Run) string {
	text := runCursorTag + ":" + strconv.FormatInt(r.ScheduledTime.UnixMicro(), 10) + ":" + strconv.FormatInt(r.ID, 10)
	return base64.RawURLEncoding.EncodeToString([]byte(text))
}

func decodeRunCursor(s string) (time.Time, int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, 0, errCursor(s)
	}
	parts := strings.Split(string(b), ":")
	if len(parts) != 3 || parts[0] != runCursorTag {
		return time.Time{}, 0, errCursor(s)
	}
	micros, err1 := strconv.ParseInt(parts[1], 10, 64)
	id, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || id < 1 {
		return time.Time{}, 0, errCursor(s)
	}
	return time.UnixMicro(micros).UTC(), id, nil
}

func errCursor(s string) error {
	return &sundial.Error{Code: sundial.EInvalid, Field: "cursor", Token: s,
		Message: "not a cursor this list gave out; pass next_cursor from the previous page of the same list unchanged"}
}
