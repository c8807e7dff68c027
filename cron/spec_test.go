package cron_test

// Hand-written table tests. Every expectation below was worked out from the
// rules in doc.go (and the calendar / zone transitions checked with a
// throwaway program using only the standard time package), not taken from
// the implementation.
//
// Calendar facts used (2026): Jan 1 Thu, Feb 1 Sun, Mar 1 Sun, Apr 1 Wed,
// May 1 Fri (May 31 Sun), Jun 1 Mon, Jul 1 Wed, Aug 1 Sat, Sep 1 Tue,
// Oct 1 Thu, Nov 1 Sun, Dec 1 Tue; 2025-11-30 Sun; Feb 1 2044 Mon.
// Months of 2026-2027 with five Mondays: 2026-03 (30), 2026-06 (29),
// 2026-08 (31), 2026-11 (30), 2027-03 (29).
//
// Transitions (time.ZoneBounds):
//   America/New_York    2026-03-08 02:00 EST->03:00 EDT (07:00Z); 2026-11-01 02:00 EDT->01:00 EST (06:00Z)
//   Europe/London       2026-03-29 01:00 GMT->02:00 BST (01:00Z); 2026-10-25 02:00 BST->01:00 GMT (01:00Z)
//   Australia/Sydney    2026-04-05 03:00 AEDT->02:00 AEST (04-04 16:00Z); 2026-10-04 02:00 AEST->03:00 AEDT (10-03 16:00Z)
//   Pacific/Chatham     2026-04-05 03:45 +1345->02:45 +1245 (04-04 14:00Z); 2026-09-27 02:45 +1245->03:45 +1345 (09-26 14:00Z)
//   Australia/Lord_Howe 2026-04-05 02:00 +11->01:30 +1030 (04-04 15:00Z); 2026-10-04 02:00 +1030->02:30 +11 (10-03 15:30Z)
//   America/Sao_Paulo   2018-02-18 00:00 -02->02-17 23:00 -03 (02:00Z); 2018-11-04 00:00 -03->01:00 -02 (03:00Z)
//   Asia/Kolkata        none

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial/cron"
)

type specCase struct {
	expr  string
	zone  string // "" means UTC
	after string // RFC 3339 (the offset must be the zone's at that instant)
	want  []string
}

const jan1 = "2026-01-01T00:00:00Z" // a Thursday

var specSyntax = []specCase{
	{"* * * * * *", "", jan1, []string{"2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"}},
	{"30 * * * * *", "", jan1, []string{"2026-01-01T00:00:30Z", "2026-01-01T00:01:30Z"}},
	{"*/20 * * * * *", "", jan1, []string{"2026-01-01T00:00:20Z", "2026-01-01T00:00:40Z", "2026-01-01T00:01:00Z"}},
	{"0,15,45 * * * * *", "", jan1, []string{"2026-01-01T00:00:15Z", "2026-01-01T00:00:45Z", "2026-01-01T00:01:00Z"}},
	{"0 */15 * * * *", "", jan1, []string{"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z", "2026-01-01T01:00:00Z"}},
	{"0 5/20 * * * *", "", jan1, []string{"2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:45:00Z", "2026-01-01T01:05:00Z"}},
	{"0 1-30/10 * * * *", "", jan1, []string{"2026-01-01T00:01:00Z", "2026-01-01T00:11:00Z", "2026-01-01T00:21:00Z", "2026-01-01T01:01:00Z"}},
	{"0 0 9-17 * * *", "", "2026-01-01T17:30:00Z", []string{"2026-01-02T09:00:00Z", "2026-01-02T10:00:00Z"}},
	{"0 0,30 8,20 * * *", "", jan1, []string{"2026-01-01T08:00:00Z", "2026-01-01T08:30:00Z", "2026-01-01T20:00:00Z", "2026-01-01T20:30:00Z", "2026-01-02T08:00:00Z"}},
	{"0 0 */6 * * *", "", jan1, []string{"2026-01-01T06:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T18:00:00Z", "2026-01-02T00:00:00Z"}},
	{"0 0 1-23/11 * * *", "", jan1, []string{"2026-01-01T01:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T23:00:00Z", "2026-01-02T01:00:00Z"}},
	{"0 0 0 1 jan-mar/2 *", "", jan1, []string{"2026-03-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-03-01T00:00:00Z"}},
	{"0 0 0 1 */4 *", "", jan1, []string{"2026-05-01T00:00:00Z", "2026-09-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
	{"0 0 0 1 2/5 *", "", jan1, []string{"2026-02-01T00:00:00Z", "2026-07-01T00:00:00Z", "2026-12-01T00:00:00Z", "2027-02-01T00:00:00Z"}},
	{"0 0 0 1 JAN,Jul *", "", jan1, []string{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
	{"0 0 9 * * MON-FRI", "", "2026-01-02T09:00:00Z", []string{"2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z"}},
	{"0 0 0 * * 7", "", jan1, []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
	{"0 0 0 * * 0", "", jan1, []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
	{"0 0 0 * * SUN", "", jan1, []string{"2026-01-04T00:00:00Z"}},
	{"0 0 0 * * 5-7", "", jan1, []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-09T00:00:00Z"}},
	{"0 0 0 * * */2", "", jan1, []string{"2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-06T00:00:00Z", "2026-01-08T00:00:00Z"}},
	{"0 0 0 * * 1/2", "", jan1, []string{"2026-01-02T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-07T00:00:00Z", "2026-01-09T00:00:00Z"}},
	{"0 0 0 * * sat,sun", "", jan1, []string{"2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-10T00:00:00Z"}},
	{"0 0 0 ? * MON", "", jan1, []string{"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z"}},
	{"30 2 * * *", "", jan1, []string{"2026-01-01T02:30:00Z", "2026-01-02T02:30:00Z"}},
	{"0 12 * * fri", "", jan1, []string{"2026-01-02T12:00:00Z", "2026-01-09T12:00:00Z"}},
	{"* * * * * *", "", "2026-01-01T00:00:00.5Z", []string{"2026-01-01T00:00:01Z"}},
	{"0 0 0 * * *", "", "2026-01-01T00:00:00.000000001Z", []string{"2026-01-02T00:00:00Z"}},
	{"0 30 10 * * *", "", "2026-01-01T10:29:59.999Z", []string{"2026-01-01T10:30:00Z", "2026-01-02T10:30:00Z"}},
}

var specCalendar = []specCase{
	// Month ends: the 31st skips 30-day months and February.
	{"0 0 0 31 * *", "", "2026-01-31T00:00:00Z", []string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z", "2026-10-31T00:00:00Z", "2026-12-31T00:00:00Z", "2027-01-31T00:00:00Z"}},
	{"0 0 0 30 * *", "", "2026-01-30T00:00:00Z", []string{"2026-03-30T00:00:00Z", "2026-04-30T00:00:00Z"}},
	// Year ends.
	{"0 59 23 31 12 *", "", "2026-06-01T00:00:00Z", []string{"2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"}},
	{"* * * * * *", "", "2026-12-31T23:59:59Z", []string{"2027-01-01T00:00:00Z"}},
	{"0 0 0 1 1 *", "", "2026-12-31T23:59:59Z", []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
	// Leap years.
	{"0 0 0 29 2 *", "", "2025-01-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
	{"0 0 0 29 2 *", "", "2096-03-01T00:00:00Z", []string{"2104-02-29T00:00:00Z"}}, // 2100 is not a leap year
	// Year field, including exhaustion.
	{"0 0 0 1 1 * 2030", "", jan1, []string{"2030-01-01T00:00:00Z", "zero"}},
	{"0 0 0 1 1 ? 2027-2029/2", "", jan1, []string{"2027-01-01T00:00:00Z", "2029-01-01T00:00:00Z", "zero"}},
	{"0 0 0 1 1 * 2030/20", "", jan1, []string{"2030-01-01T00:00:00Z", "2050-01-01T00:00:00Z", "2070-01-01T00:00:00Z", "2090-01-01T00:00:00Z", "zero"}},
	{"0 0 0 1 1 * *", "", jan1, []string{"2027-01-01T00:00:00Z"}},
	{"0 0 0 1 1 * 2025", "", jan1, []string{"zero"}},
	{"59 59 23 31 12 * 2099", "", jan1, []string{"2099-12-31T23:59:59Z", "zero"}},
	{"0 0 0 29 2 * 2097-2099", "", jan1, []string{"zero"}},
	{"0 0 0 29 2 * 2096-2099", "", jan1, []string{"2096-02-29T00:00:00Z", "zero"}},
	{"* * * * * * 2026", "", "2026-12-31T23:59:58Z", []string{"2026-12-31T23:59:59Z", "zero"}},
}

var specDayRule = []specCase{
	// Both restricted: OR.
	{"0 0 0 1 * MON", "", jan1, []string{"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z", "2026-01-19T00:00:00Z", "2026-01-26T00:00:00Z", "2026-02-01T00:00:00Z", "2026-02-02T00:00:00Z"}},
	{"0 0 0 13 * 5", "", jan1, []string{"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z", "2026-01-16T00:00:00Z"}},
	{"0 0 0 */1 * MON", "", jan1, []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"}}, // "*/1" is restricted
	{"0 0 0 1-31 * MON", "", jan1, []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}},
	{"0 0 0 1 * */1", "", jan1, []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}},
	{"0 0 0 L * MON", "", "2026-01-20T00:00:00Z", []string{"2026-01-26T00:00:00Z", "2026-01-31T00:00:00Z", "2026-02-02T00:00:00Z"}},
	// One restricted: it alone decides.
	{"0 0 0 13 * ?", "", jan1, []string{"2026-01-13T00:00:00Z", "2026-02-13T00:00:00Z"}},
	{"0 0 0 13 * *", "", jan1, []string{"2026-01-13T00:00:00Z", "2026-02-13T00:00:00Z"}},
	{"0 0 0 * * 5", "", jan1, []string{"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-16T00:00:00Z"}},
	{"0 0 0 ? * 5", "", jan1, []string{"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z"}},
	// Neither.
	{"0 0 0 ? * ?", "", jan1, []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}},
	{"0 0 0 * * ?", "", jan1, []string{"2026-01-02T00:00:00Z"}},
}

var specQuartz = []specCase{
	{"0 0 0 L * ?", "", jan1, []string{"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-30T00:00:00Z"}},
	{"0 0 0 L 2 ?", "", "2027-03-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2029-02-28T00:00:00Z"}},
	{"0 30 10 L * *", "", jan1, []string{"2026-01-31T10:30:00Z"}},
	{"0 0 0 L-3 * ?", "", jan1, []string{"2026-01-28T00:00:00Z", "2026-02-25T00:00:00Z", "2026-03-28T00:00:00Z", "2026-04-27T00:00:00Z"}},
	// 15th: Thu, Sun (->Mon 16), Sun (->Mon 16), Wed.
	{"0 0 0 15W * ?", "", jan1, []string{"2026-01-15T00:00:00Z", "2026-02-16T00:00:00Z", "2026-03-16T00:00:00Z", "2026-04-15T00:00:00Z"}},
	{"0 0 0 15W * ?", "", "2026-08-01T00:00:00Z", []string{"2026-08-14T00:00:00Z"}}, // Sat 15 -> Fri 14
	// 1W on a Saturday -> Monday the 3rd (not the previous month); Sunday 1st -> Monday 2nd.
	{"0 0 0 1W * ?", "", "2026-07-01T00:00:00Z", []string{"2026-08-03T00:00:00Z", "2026-09-01T00:00:00Z", "2026-10-01T00:00:00Z", "2026-11-02T00:00:00Z"}},
	// nW on a Sunday that is the last day -> Friday before.
	{"0 0 0 31W * ?", "", "2026-05-01T00:00:00Z", []string{"2026-05-29T00:00:00Z"}},
	{"0 0 0 30W * ?", "", "2025-11-01T00:00:00Z", []string{"2025-11-28T00:00:00Z"}},
	{"0 0 0 LW * ?", "", jan1, []string{"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-31T00:00:00Z", "2026-04-30T00:00:00Z", "2026-05-29T00:00:00Z"}},
	{"0 0 12 LW 5 ?", "", jan1, []string{"2026-05-29T12:00:00Z", "2027-05-31T12:00:00Z"}},
	{"0 0 0 ? * 5L", "", jan1, []string{"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z", "2026-04-24T00:00:00Z"}},
	{"0 0 0 ? * 6#3", "", jan1, []string{"2026-01-17T00:00:00Z", "2026-02-21T00:00:00Z", "2026-03-21T00:00:00Z", "2026-04-18T00:00:00Z"}},
	{"0 0 0 ? * 1#1", "", jan1, []string{"2026-01-05T00:00:00Z", "2026-02-02T00:00:00Z", "2026-03-02T00:00:00Z", "2026-04-06T00:00:00Z"}},
	{"0 0 0 ? * 0#1", "", jan1, []string{"2026-01-04T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"}},
	{"0 0 0 ? * 1#5", "", jan1, []string{"2026-03-30T00:00:00Z", "2026-06-29T00:00:00Z", "2026-08-31T00:00:00Z", "2026-11-30T00:00:00Z", "2027-03-29T00:00:00Z"}},
	{"0 0 0 ? 2 1#5", "", jan1, []string{"2044-02-29T00:00:00Z"}},
}

var specDST = []specCase{
	// America/New_York, spring forward 2026-03-08: fixed-time.
	{"0 30 2 * * *", "America/New_York", "2026-03-07T12:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
	{"0 30 2 * * *", "America/New_York", "2026-03-08T01:59:59-05:00", []string{"2026-03-08T03:00:00-04:00"}},
	{"0 30 2 * * *", "America/New_York", "2026-03-08T03:00:00-04:00", []string{"2026-03-09T02:30:00-04:00"}},
	{"0 0 2 * * *", "America/New_York", "2026-03-07T12:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
	{"0 30 2,3 * * *", "America/New_York", "2026-03-08T00:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00", "2026-03-09T02:30:00-04:00"}},
	{"0 30 2 * * SUN", "America/New_York", "2026-03-01T12:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-15T02:30:00-04:00"}},
	{"* 30 2 * * *", "America/New_York", "2026-03-08T00:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00", "2026-03-09T02:30:01-04:00"}},
	{"@daily", "America/New_York", "2026-03-07T12:00:00-05:00", []string{"2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00"}},
	// America/New_York, spring forward: clock-following.
	{"0 30 * * * *", "America/New_York", "2026-03-08T00:00:00-05:00", []string{"2026-03-08T00:30:00-05:00", "2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00"}},
	{"0 */30 2 * * *", "America/New_York", "2026-03-08T00:00:00-05:00", []string{"2026-03-09T02:00:00-04:00"}},
	// America/New_York, fall back 2026-11-01: fixed-time fires on the first pass only.
	{"0 30 1 * * *", "America/New_York", "2026-10-31T12:00:00-04:00", []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
	{"0 0 1 * * *", "America/New_York", "2026-10-31T12:00:00-04:00", []string{"2026-11-01T01:00:00-04:00", "2026-11-02T01:00:00-05:00"}},
	{"0 45 1 * * *", "America/New_York", "2026-11-01T01:30:00-05:00", []string{"2026-11-02T01:45:00-05:00"}}, // 01:45 was already shown (EDT)
	{"* 30 1 * * *", "America/New_York", "2026-11-01T01:30:58-04:00", []string{"2026-11-01T01:30:59-04:00", "2026-11-02T01:30:00-05:00"}},
	// After the first pass of 01:xx: 01:00 and 01:30 EST were already shown; 02:00 EST was not.
	{"* 0,30 1 * * *", "America/New_York", "2026-11-01T01:40:00-04:00", []string{"2026-11-02T01:00:00-05:00", "2026-11-02T01:00:01-05:00"}},
	{"* 0,30 1,2 * * *", "America/New_York", "2026-11-01T01:40:00-04:00", []string{"2026-11-01T02:00:00-05:00", "2026-11-01T02:00:01-05:00"}},
	// The last second (and sub-second) before the gap.
	{"0 0 2 * * *", "America/New_York", "2026-03-08T01:59:59-05:00", []string{"2026-03-08T03:00:00-04:00"}},
	{"0 30 2 * * *", "America/New_York", "2026-03-08T01:59:59.5-05:00", []string{"2026-03-08T03:00:00-04:00"}},
	{"0 0 3 * * *", "Pacific/Chatham", "2026-09-27T02:44:59+12:45", []string{"2026-09-27T03:45:00+13:45"}},
	// America/New_York, fall back: clock-following fires in both passes.
	{"0 30 * * * *", "America/New_York", "2026-11-01T00:00:00-04:00", []string{"2026-11-01T00:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-01T02:30:00-05:00"}},
	{"0 0 * * * *", "America/New_York", "2026-11-01T00:30:00-04:00", []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},
	// ... also when a day field is restricted.
	{"0 */30 1 * * SUN", "America/New_York", "2026-11-01T00:00:00-04:00", []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00", "2026-11-08T01:00:00-05:00"}},
	{"0 */30 1 1 * *", "America/New_York", "2026-11-01T01:54:00-04:00", []string{"2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00", "2026-12-01T01:00:00-05:00"}},
	{"@hourly", "America/New_York", "2026-11-01T00:30:00-04:00", []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},

	// Europe/London.
	{"0 30 1 * * *", "Europe/London", "2026-03-28T12:00:00Z", []string{"2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"}},
	{"0 0 1 * * *", "Europe/London", "2026-03-28T12:00:00Z", []string{"2026-03-29T02:00:00+01:00", "2026-03-30T01:00:00+01:00"}},
	{"0 30 * * * *", "Europe/London", "2026-03-29T00:00:00Z", []string{"2026-03-29T00:30:00Z", "2026-03-29T02:30:00+01:00"}},
	{"0 30 1 * * *", "Europe/London", "2026-10-24T12:00:00+01:00", []string{"2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00Z"}},
	{"0 30 * * * *", "Europe/London", "2026-10-25T00:00:00+01:00", []string{"2026-10-25T00:30:00+01:00", "2026-10-25T01:30:00+01:00", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}},

	// Australia/Sydney (doc.go examples).
	{"0 30 2 * * *", "Australia/Sydney", "2026-10-03T12:00:00+10:00", []string{"2026-10-04T03:00:00+11:00", "2026-10-05T02:30:00+11:00"}},
	{"0 30 * * * *", "Australia/Sydney", "2026-10-04T01:00:00+10:00", []string{"2026-10-04T01:30:00+10:00", "2026-10-04T03:30:00+11:00"}},
	{"0 30 2 * * *", "Australia/Sydney", "2026-04-04T12:00:00+11:00", []string{"2026-04-05T02:30:00+11:00", "2026-04-06T02:30:00+10:00"}},
	{"0 30 * * * *", "Australia/Sydney", "2026-04-05T02:00:00+11:00", []string{"2026-04-05T02:30:00+11:00", "2026-04-05T02:30:00+10:00", "2026-04-05T03:30:00+10:00"}},

	// Pacific/Chatham: 45-minute offsets.
	{"0 0 3 * * *", "Pacific/Chatham", "2026-09-26T12:00:00+12:45", []string{"2026-09-27T03:45:00+13:45", "2026-09-28T03:00:00+13:45"}},
	{"0 0 * * * *", "Pacific/Chatham", "2026-09-27T02:00:00+12:45", []string{"2026-09-27T04:00:00+13:45"}},
	{"0 50 * * * *", "Pacific/Chatham", "2026-09-27T02:00:00+12:45", []string{"2026-09-27T03:50:00+13:45"}},
	{"0 50 2 * * *", "Pacific/Chatham", "2026-09-26T12:00:00+12:45", []string{"2026-09-27T03:45:00+13:45", "2026-09-28T02:50:00+13:45"}},
	{"0 40 2 * * *", "Pacific/Chatham", "2026-09-26T12:00:00+12:45", []string{"2026-09-27T02:40:00+12:45"}},
	{"0 0 3 * * *", "Pacific/Chatham", "2026-04-04T12:00:00+13:45", []string{"2026-04-05T03:00:00+13:45", "2026-04-06T03:00:00+12:45"}},
	{"0 */52 2 * * SUN", "Pacific/Chatham", "2026-04-05T03:03:45+13:45", []string{"2026-04-05T02:52:00+12:45", "2026-04-12T02:00:00+12:45"}}, // second pass of 02:45-03:45
	{"0 0 * * * *", "Pacific/Chatham", "2026-04-05T02:30:00+13:45", []string{"2026-04-05T03:00:00+13:45", "2026-04-05T03:00:00+12:45", "2026-04-05T04:00:00+12:45"}},

	// Australia/Lord_Howe: 30-minute shift.
	{"0 15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30", []string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
	{"0 15 * * * *", "Australia/Lord_Howe", "2026-10-04T01:00:00+10:30", []string{"2026-10-04T01:15:00+10:30", "2026-10-04T03:15:00+11:00"}},
	{"0 45 * * * *", "Australia/Lord_Howe", "2026-10-04T01:00:00+10:30", []string{"2026-10-04T01:45:00+10:30", "2026-10-04T02:45:00+11:00"}},
	{"0 45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00+11:00", []string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
	{"0 15 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00+11:00", []string{"2026-04-05T01:15:00+11:00", "2026-04-06T01:15:00+10:30"}},
	{"0 45 * * * *", "Australia/Lord_Howe", "2026-04-05T01:00:00+11:00", []string{"2026-04-05T01:45:00+11:00", "2026-04-05T01:45:00+10:30", "2026-04-05T02:45:00+10:30"}},
	{"0 15 * * * *", "Australia/Lord_Howe", "2026-04-05T01:00:00+11:00", []string{"2026-04-05T01:15:00+11:00", "2026-04-05T02:15:00+10:30"}},

	// Asia/Kolkata: no transitions.
	{"0 30 2 * * *", "Asia/Kolkata", "2026-03-08T00:00:00+05:30", []string{"2026-03-08T02:30:00+05:30", "2026-03-09T02:30:00+05:30"}},
	{"0 30 * * * *", "Asia/Kolkata", "2026-11-01T00:00:00+05:30", []string{"2026-11-01T00:30:00+05:30", "2026-11-01T01:30:00+05:30", "2026-11-01T02:30:00+05:30"}},

	// America/Sao_Paulo (2018): transitions at midnight, so the gap and the
	// repeated hour straddle a date change.
	{"@daily", "America/Sao_Paulo", "2018-11-03T12:00:00-03:00", []string{"2018-11-04T01:00:00-02:00", "2018-11-05T00:00:00-02:00"}},
	{"0 0 0 * * SUN", "America/Sao_Paulo", "2018-11-01T12:00:00-03:00", []string{"2018-11-04T01:00:00-02:00", "2018-11-11T00:00:00-02:00"}},
	{"0 0 * * * *", "America/Sao_Paulo", "2018-11-03T23:30:00-03:00", []string{"2018-11-04T01:00:00-02:00"}},
	{"0 30 23 * * *", "America/Sao_Paulo", "2018-02-17T12:00:00-02:00", []string{"2018-02-17T23:30:00-02:00", "2018-02-18T23:30:00-03:00"}},
	{"0 30 23 * * SAT", "America/Sao_Paulo", "2018-02-17T12:00:00-02:00", []string{"2018-02-17T23:30:00-02:00", "2018-02-24T23:30:00-03:00"}},
	{"0 30 23 17 2 *", "America/Sao_Paulo", "2018-02-17T23:10:00-03:00", []string{"2019-02-17T23:30:00-03:00"}},
	{"0 30 * * * *", "America/Sao_Paulo", "2018-02-17T23:00:00-02:00", []string{"2018-02-17T23:30:00-02:00", "2018-02-17T23:30:00-03:00", "2018-02-18T00:30:00-03:00"}},
}

var specEvery = []specCase{
	{"@every 1m30s", "", jan1, []string{"2026-01-01T00:01:30Z", "2026-01-01T00:03:00Z", "2026-01-01T00:04:30Z"}},
	{"@every 90s", "", jan1, []string{"2026-01-01T00:01:30Z", "2026-01-01T00:03:00Z"}},
	{"@every 10s", "", "2026-01-01T00:00:00.25Z", []string{"2026-01-01T00:00:10.25Z", "2026-01-01T00:00:20.25Z"}},
	{"@every 1h", "America/New_York", "2026-03-08T01:30:00-05:00", []string{"2026-03-08T03:30:00-04:00", "2026-03-08T04:30:00-04:00"}},
	{"@every 1h", "America/New_York", "2026-11-01T00:30:00-04:00", []string{"2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-01T02:30:00-05:00"}},
	{"@every 24h", "America/New_York", "2026-03-07T12:00:00-05:00", []string{"2026-03-08T13:00:00-04:00"}},
	{"@every 45m", "Pacific/Chatham", "2026-09-27T02:30:00+12:45", []string{"2026-09-27T04:15:00+13:45"}},
}

func runSpecCases(t *testing.T, cases []specCase) {
	t.Helper()
	runSpecCasesDST(t, cases, cron.DSTVixie)
}

// runSpecCasesDST runs cases with the schedules under the policy dst.
func runSpecCasesDST(t *testing.T, cases []specCase, dst cron.DST) {
	t.Helper()
	for _, c := range cases {
		zone := c.zone
		if zone == "" {
			zone = "UTC"
		}
		t.Run(zone+"/"+c.expr+"/"+c.after, func(t *testing.T) {
			t.Parallel()
			loc := mustLoad(t, zone)
			after := mustTime(t, c.after).In(loc)
			if got := after.Format(time.RFC3339Nano); got != c.after {
				t.Fatalf("bad test: after %s is %s in %s", c.after, got, zone)
			}
			s, err := cron.Parse(c.expr)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.expr, err)
			}
			s = s.WithDST(dst)
			// Chained Next.
			var got []string
			at := after
			var fires []time.Time
			for range c.want {
				n := nextWithTimeout(t, s, at)
				if n.IsZero() {
					got = append(got, "zero")
					break
				}
				got = append(got, n.Format(time.RFC3339Nano))
				fires = append(fires, n)
				if n.Location().String() != loc.String() {
					t.Errorf("Next returned location %s, want %s", n.Location(), loc)
				}
				at = n
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%q in %s after %s:\n got  %v\n want %v", c.expr, zone, c.after, got, c.want)
			}
			// NextN agrees with chained Next: same non-zero prefix, and
			// anything after exhaustion is zero or absent.
			nn := s.NextN(after, len(c.want))
			if len(nn) > len(c.want) {
				t.Errorf("NextN(%d) returned %d times", len(c.want), len(nn))
			}
			for i, x := range nn {
				if i < len(fires) {
					if !x.Equal(fires[i]) {
						t.Errorf("NextN[%d] = %s, chained Next gives %s", i, fmtT(x), fmtT(fires[i]))
					}
				} else if !x.IsZero() {
					t.Errorf("NextN[%d] = %s after exhaustion, want zero", i, fmtT(x))
				}
			}
			if len(nn) < len(fires) {
				t.Errorf("NextN(%d) returned %d times, chained Next found %d", len(c.want), len(nn), len(fires))
			}
		})
	}
}

// nextWithTimeout guards against an implementation that loops forever on a
// schedule that never fires.
func nextWithTimeout(t *testing.T, s *cron.Schedule, at time.Time) time.Time {
	t.Helper()
	ch := make(chan time.Time, 1)
	go func() { ch <- s.Next(at) }()
	select {
	case n := <-ch:
		return n
	case <-time.After(10 * time.Second):
		t.Fatalf("Next(%s) of %q did not return within 10s", at, s)
	}
	return time.Time{}
}

func TestSpecSyntax(t *testing.T)   { t.Parallel(); runSpecCases(t, specSyntax) }
func TestSpecCalendar(t *testing.T) { t.Parallel(); runSpecCases(t, specCalendar) }
func TestSpecDayRule(t *testing.T)  { t.Parallel(); runSpecCases(t, specDayRule) }
func TestSpecQuartz(t *testing.T)   { t.Parallel(); runSpecCases(t, specQuartz) }
func TestSpecDST(t *testing.T)      { t.Parallel(); runSpecCases(t, specDST) }
func TestSpecEvery(t *testing.T)    { t.Parallel(); runSpecCases(t, specEvery) }

// specSkipGap and specRepeat are the per-task DST policies (doc.go,
// "Time zones and daylight saving") across the same real transitions as
// specDST: each changes one side of the Vixie rule and keeps the other.
var specSkipGap = []specCase{
	// America/New_York springs forward 2026-03-08 02:00 EST -> 03:00 EDT:
	// 02:30 and 02:00 do not exist that day, and do not fire.
	{"0 30 2 * * *", "America/New_York", "2026-03-07T12:00:00-05:00", []string{"2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"}},
	{"0 0 2 * * *", "America/New_York", "2026-03-07T12:00:00-05:00", []string{"2026-03-09T02:00:00-04:00"}},
	{"0 0,30 2 * * *", "America/New_York", "2026-03-08T01:00:00-05:00", []string{"2026-03-09T02:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
	// 03:00 exists: it fires as usual, once.
	{"0 0 3 * * *", "America/New_York", "2026-03-07T12:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T03:00:00-04:00"}},
	// A schedule that follows the clock behaves as under vixie.
	{"0 30 * * * *", "America/New_York", "2026-03-08T01:00:00-05:00", []string{"2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00"}},
	// Fall back 2026-11-01: a repeated wall time fires in its first pass only.
	{"0 30 1 * * *", "America/New_York", "2026-10-31T12:00:00-04:00", []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
	// Europe/Berlin springs forward 2026-03-29 02:00 CET -> 03:00 CEST.
	{"0 30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00+01:00", []string{"2026-03-30T02:30:00+02:00"}},
	{"0 30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00+02:00", []string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
	// Australia/Lord_Howe springs forward half an hour 2026-10-04 02:00
	// +10:30 -> 02:30 +11: 02:15 does not exist, 02:45 does.
	{"0 15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30", []string{"2026-10-05T02:15:00+11:00"}},
	{"0 45 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30", []string{"2026-10-04T02:45:00+11:00", "2026-10-05T02:45:00+11:00"}},
	{"0 45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00+11:00", []string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
	// No transition: as vixie.
	{"0 30 2 * * *", "Asia/Kolkata", "2026-03-08T00:00:00+05:30", []string{"2026-03-08T02:30:00+05:30", "2026-03-09T02:30:00+05:30"}},
	{"@every 1h", "America/New_York", "2026-03-08T01:30:00-05:00", []string{"2026-03-08T03:30:00-04:00"}},
}

var specRepeat = []specCase{
	// America/New_York falls back 2026-11-01 02:00 EDT -> 01:00 EST: 01:30
	// happens twice and fires twice.
	{"0 30 1 * * *", "America/New_York", "2026-10-31T12:00:00-04:00", []string{"2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"}},
	{"0 0,30 1 * * *", "America/New_York", "2026-11-01T00:00:00-04:00", []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:00:00-05:00"}},
	// 02:30 happens once (02:00 EST onwards is new wall time).
	{"0 30 2 * * *", "America/New_York", "2026-10-31T12:00:00-04:00", []string{"2026-11-01T02:30:00-05:00"}},
	// From within the second pass, the first is over.
	{"0 30 1 * * *", "America/New_York", "2026-11-01T01:10:00-05:00", []string{"2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"}},
	// Spring forward: a skipped wall time fires after the gap, as vixie.
	{"0 30 2 * * *", "America/New_York", "2026-03-07T12:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
	// Europe/Berlin falls back 2026-10-25 03:00 CEST -> 02:00 CET.
	{"0 30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00+02:00", []string{"2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00", "2026-10-26T02:30:00+01:00"}},
	{"0 30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00+01:00", []string{"2026-03-29T03:00:00+02:00"}},
	// Australia/Lord_Howe falls back half an hour 2026-04-05 02:00 +11 ->
	// 01:30 +10:30: 01:45 happens twice, 01:15 once.
	{"0 45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00+11:00", []string{"2026-04-05T01:45:00+11:00", "2026-04-05T01:45:00+10:30", "2026-04-06T01:45:00+10:30"}},
	{"0 15 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00+11:00", []string{"2026-04-05T01:15:00+11:00", "2026-04-06T01:15:00+10:30"}},
	{"0 15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30", []string{"2026-10-04T02:30:00+11:00"}},
	// A schedule that follows the clock behaves as under vixie.
	{"0 30 * * * *", "America/New_York", "2026-11-01T00:00:00-04:00", []string{"2026-11-01T00:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-01T02:30:00-05:00"}},
}

func TestSpecSkipGap(t *testing.T) { t.Parallel(); runSpecCasesDST(t, specSkipGap, cron.DSTSkipGap) }
func TestSpecRepeat(t *testing.T)  { t.Parallel(); runSpecCasesDST(t, specRepeat, cron.DSTRepeat) }

// A policy round-trips through its name; WithDST copies only for a change.
func TestDSTNames(t *testing.T) {
	t.Parallel()
	for _, d := range []cron.DST{cron.DSTVixie, cron.DSTSkipGap, cron.DSTRepeat} {
		if got, ok := cron.ParseDST(d.String()); !ok || got != d {
			t.Errorf("ParseDST(%q) = %v, %v", d.String(), got, ok)
		}
	}
	if d, ok := cron.ParseDST(""); !ok || d != cron.DSTVixie {
		t.Errorf("ParseDST(\"\") = %v, %v; want vixie", d, ok)
	}
	for _, bad := range []string{"VIXIE", "skip", "both"} {
		if _, ok := cron.ParseDST(bad); ok {
			t.Errorf("ParseDST(%q) accepted", bad)
		}
	}
	s, _ := cron.Parse("0 30 2 * * *")
	if s.WithDST(cron.DSTVixie) != s || s.WithDST(cron.DSTRepeat).DST() != cron.DSTRepeat || s.DST() != cron.DSTVixie {
		t.Error("WithDST: vixie must return the schedule itself, another policy a copy")
	}
}

// The oracle must agree with every hand-written expectation too.
func TestSpecOracleAgrees(t *testing.T) {
	t.Parallel()
	for _, group := range [][]specCase{specSyntax, specCalendar, specDayRule, specQuartz, specDST, specEvery} {
		for _, c := range group {
			zone := c.zone
			if zone == "" {
				zone = "UTC"
			}
			o, err := orParse(c.expr)
			if err != nil {
				t.Errorf("oracle cannot parse %q: %v", c.expr, err)
				continue
			}
			at := mustTime(t, c.after).In(mustLoad(t, zone))
			for _, w := range c.want {
				n, ok := o.next(at, at.AddDate(100, 0, 0))
				if w == "zero" {
					if ok && n.Year() < 2100 {
						t.Errorf("oracle: %q in %s after %s = %s, want zero", c.expr, zone, at, fmtT(n))
					}
					break
				}
				if !ok || n.Format(time.RFC3339Nano) != w {
					t.Errorf("oracle: %q in %s after %s = %s, want %s", c.expr, zone, at, fmtT(n), w)
					break
				}
				at = n
			}
		}
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"@yearly", "0 0 0 1 1 *"},
		{"@annually", "0 0 0 1 1 *"},
		{"@monthly", "0 0 0 1 * *"},
		{"@weekly", "0 0 0 * * 0"},
		{"@daily", "0 0 0 * * *"},
		{"@midnight", "0 0 0 * * *"},
		{"@hourly", "0 0 * * * *"},
		{"30 2 * * *", "0 30 2 * * *"},
		{"* * * * *", "0 * * * * *"},
		{"0 12 * * 7", "0 0 12 * * 7"},
		{"0 0 9 * jan mon-fri", "0 0 9 * JAN MON-FRI"},
		{"0 0 9 * Jan,jul Mon-Fri", "0 0 9 * JAN,JUL MON-FRI"},
		{"0 0 12 * * fri", "0 0 12 * * FRI"},
		{"  0   30  2 * *   *  ", "0 30 2 * * *"},
		{"0\t30\t2 * * *", "0 30 2 * * *"},
		{"0 0 0 l * ?", "0 0 0 L * ?"},
		{"0 0 0 l-3 * ?", "0 0 0 L-3 * ?"},
		{"0 0 0 15w * ?", "0 0 0 15W * ?"},
		{"0 0 0 lw * ?", "0 0 0 LW * ?"},
		{"0 0 0 ? * 5l", "0 0 0 ? * 5L"},
		{"0 0 0 ? * 6#3", "0 0 0 ? * 6#3"},
		{"0 0 0 1 1 * 2030", "0 0 0 1 1 * 2030"},
		{"0 0 0 1 1 ?  2027-2029/2", "0 0 0 1 1 ? 2027-2029/2"},
		{"*/5 1-30/10 */6 1,15 */2 1/2", "*/5 1-30/10 */6 1,15 */2 1/2"},
		{"@every 1m30s", "@every 1m30s"},
		{"@every 90s", "@every 1m30s"},
		{"@every 1s", "@every 1s"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			t.Parallel()
			s, err := cron.Parse(c.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.in, err)
			}
			if got := s.String(); got != c.want {
				t.Errorf("Parse(%q).String() = %q, want %q", c.in, got, c.want)
			}
			s2, err := cron.Parse(s.String())
			if err != nil {
				t.Fatalf("re-Parse(%q): %v", s.String(), err)
			}
			if s2.String() != s.String() {
				t.Errorf("re-Parse(%q).String() = %q", s.String(), s2.String())
			}
		})
	}
}

// doc.go does not fix the spelling of the canonical duration ("1h" or
// "1h0m0s"), only that it is canonical: equal intervals print alike, the
// form re-parses to the same interval, and it is a valid Go duration.
func TestEveryCanonical(t *testing.T) {
	t.Parallel()
	groups := [][]string{
		{"@every 1h", "@every 60m", "@every 3600s", "@every 1h0m0s", "@every 1.0h"},
		{"@every 2h30m", "@every 150m", "@every 9000s", "@every 2h30m0s"},
		{"@every 1m30s", "@every 90s", "@every 1.5m"},
		{"@every 1s", "@every 1000ms"},
		{"@every 25h", "@every 1500m"},
	}
	for _, g := range groups {
		var first string
		for i, in := range g {
			s, err := cron.Parse(in)
			if err != nil {
				t.Errorf("Parse(%q): %v", in, err)
				continue
			}
			str := s.String()
			if i == 0 {
				first = str
			} else if str != first {
				t.Errorf("Parse(%q).String() = %q, but Parse(%q).String() = %q", in, str, g[0], first)
			}
			d, err := time.ParseDuration(strings.TrimPrefix(str, "@every "))
			if !strings.HasPrefix(str, "@every ") || err != nil || d != s.Interval() {
				t.Errorf("Parse(%q).String() = %q is not \"@every <duration of %v>\"", in, str, s.Interval())
			}
		}
	}
}

// Expressions inside the grammar whose day never comes still parse (doc.go:
// only input outside the grammar is a ParseError) and simply never fire.
// TestSpecNeverFires: a day-of-month that no month of the month field has
// is a typo, rejected at parse time; a year field that leaves no leap year
// for Feb 29 parses, and Next reports that there is no fire.
func TestSpecNeverFires(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, token string }{
		{"0 0 0 30 2 *", "30"},
		{"0 0 0 31 4,6,9,11 *", "31"},
		{"0 0 0 31 4 ?", "31"},
		{"0 0 0 30W 2 ?", "30W"},
	} {
		_, err := cron.Parse(c.expr)
		var pe *cron.ParseError
		if !errors.As(err, &pe) || pe.Field != "day-of-month" || pe.Token != c.token {
			t.Errorf("Parse(%q) = %v, want a day-of-month ParseError on %q", c.expr, err, c.token)
		}
	}
	runSpecCases(t, []specCase{
		{"0 0 0 29 2 * 2097-2099", "", jan1, []string{"zero"}},
	})
}

func TestFixedTimeAndInterval(t *testing.T) {
	t.Parallel()
	cases := []struct {
		expr     string
		fixed    bool
		interval time.Duration
	}{
		{"0 30 2 * * *", true, 0},
		{"0 0 9 * * MON-FRI", true, 0},
		{"* 30 2 * * *", true, 0}, // the second field does not count
		{"0 0-59 2 * * *", true, 0},
		{"0 0,30 1-3 * * *", true, 0},
		{"0 5/10 2 * * *", true, 0},
		{"30 2 * * *", true, 0},
		{"0 5 * * *", true, 0},
		{"@yearly", true, 0},
		{"@annually", true, 0},
		{"@monthly", true, 0},
		{"@weekly", true, 0},
		{"@daily", true, 0},
		{"@midnight", true, 0},
		{"@hourly", false, 0},
		{"0 30 * * * *", false, 0},
		{"0 */5 2 * * *", false, 0},
		{"0 0 */2 * * *", false, 0},
		{"0 * 2 * * *", false, 0},
		{"5 * * * *", false, 0},
		{"* * * * *", false, 0},
	}
	for _, c := range cases {
		s, err := cron.Parse(c.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		if s.FixedTime() != c.fixed {
			t.Errorf("Parse(%q).FixedTime() = %v, want %v", c.expr, s.FixedTime(), c.fixed)
		}
		if s.Interval() != c.interval {
			t.Errorf("Parse(%q).Interval() = %v, want %v", c.expr, s.Interval(), c.interval)
		}
	}
	for in, want := range map[string]time.Duration{
		"@every 1m30s": 90 * time.Second, "@every 90s": 90 * time.Second, "@every 1s": time.Second, "@every 24h": 24 * time.Hour,
	} {
		s, err := cron.Parse(in)
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if s.Interval() != want {
			t.Errorf("Parse(%q).Interval() = %v, want %v", in, s.Interval(), want)
		}
	}
}

func TestExplainNonEmpty(t *testing.T) {
	t.Parallel()
	for _, group := range [][]specCase{specSyntax, specCalendar, specDayRule, specQuartz, specDST, specEvery} {
		for _, c := range group {
			s, err := cron.Parse(c.expr)
			if err != nil {
				continue // reported elsewhere
			}
			if e := strings.TrimSpace(s.Explain()); e == "" {
				t.Errorf("Parse(%q).Explain() is empty", c.expr)
			}
		}
	}
}

func TestNextNZero(t *testing.T) {
	t.Parallel()
	s, err := cron.Parse("* * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.NextN(mustTime(t, jan1), 0); len(got) != 0 {
		t.Errorf("NextN(0) = %v, want empty", got)
	}
	got := s.NextN(mustTime(t, jan1), 3)
	if len(got) != 3 || !got[2].Equal(mustTime(t, "2026-01-01T00:00:03Z")) {
		t.Errorf("NextN(3) = %v", got)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	// token "" means: Field is checked, Token only has to be non-empty
	// (or, for an empty expression, anything). alt is an acceptable
	// alternative token (the offending part of the item).
	cases := []struct {
		expr, field, token, alt string
	}{
		{"", "expression", "", ""},
		{"   ", "expression", "", ""},
		{"* * * *", "expression", "", ""},
		{"* * * * * * * *", "expression", "", ""},
		{"0 0 0 1 1 1 2030 x", "expression", "", ""},
		{"@fortnightly", "expression", "@fortnightly", ""},
		{"60 * * * * *", "second", "60", ""},
		{"? * * * * *", "second", "?", ""},
		{"* 60 * * * *", "minute", "60", ""},
		{"0 ? * * * *", "minute", "?", ""},
		{"0 L * * * *", "minute", "L", ""},
		{"0 abc * * * *", "minute", "abc", "ABC"},
		{"0 */0 * * * *", "minute", "*/0", ""},
		{"0 */61 * * * *", "minute", "*/61", ""},
		{"0 10-5 * * * *", "minute", "10-5", ""},
		{"0 1,2,99 * * * *", "minute", "99", "1,2,99"},
		{"0 5-70 * * * *", "minute", "5-70", "70"},
		{"* * 24 * * *", "hour", "24", ""},
		{"0 0 1-10/0 * * *", "hour", "1-10/0", ""},
		{"0 0 */25 * * *", "hour", "*/25", ""},
		{"* * * 0 * *", "day-of-month", "0", ""},
		{"* * * 32 * *", "day-of-month", "32", ""},
		{"0 0 0 5#2 * ?", "day-of-month", "5#2", ""},
		{"0 0 0 5L * ?", "day-of-month", "5L", ""},
		{"0 0 0 32W * ?", "day-of-month", "32W", ""},
		{"0 0 0 1- * *", "day-of-month", "1-", ""},
		{"0 0 0 -1 * *", "day-of-month", "-1", ""},
		{"0 0 0 1-2-3 * *", "day-of-month", "1-2-3", "2-3"},
		{"0 0 0 1/2/3 * *", "day-of-month", "1/2/3", ""},
		{"* * * * 0 *", "month", "0", ""},
		{"* * * * 13 *", "month", "13", ""},
		{"0 0 0 * FOO *", "month", "FOO", ""},
		{"0 0 0 * MON *", "month", "MON", ""},
		{"0 0 0 * L *", "month", "L", ""},
		{"0 0 0 * ? *", "month", "?", ""},
		{"0 0 0 1 */13 *", "month", "*/13", ""},
		{"* * * * * 8", "day-of-week", "8", ""},
		{"0 0 0 * * FUNDAY", "day-of-week", "FUNDAY", ""},
		{"0 0 0 * * JAN", "day-of-week", "JAN", ""},
		{"0 0 0 * * MON-FOO", "day-of-week", "MON-FOO", "FOO"},
		{"0 0 0 * * L", "day-of-week", "L", ""},
		{"0 0 0 * * 5W", "day-of-week", "5W", ""},
		{"0 0 0 ? * 1#6", "day-of-week", "1#6", ""},
		{"0 0 0 ? * 1#0", "day-of-week", "1#0", ""},
		{"0 0 0 * * */9", "day-of-week", "*/9", ""},
		{"0 0 0 1 1 * 1969", "year", "1969", ""},
		{"0 0 0 1 1 * 2100", "year", "2100", ""},
		{"0 0 0 1 1 * ?", "year", "?", ""},
		{"0 0 0 1 1 * 2030/0", "year", "2030/0", ""},
		{"@every 0s", "@every", "0s", ""},
		{"@every 1500ms", "@every", "1500ms", ""},
		{"@every 500ms", "@every", "500ms", ""},
		{"@every -1m", "@every", "-1m", ""},
		{"@every abc", "@every", "abc", ""},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			t.Parallel()
			s, err := cron.Parse(c.expr)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want a *ParseError (field %s)", c.expr, s, c.field)
			}
			var pe *cron.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) error %v (%T) is not a *ParseError", c.expr, err, err)
			}
			if pe.Field != c.field {
				t.Errorf("Parse(%q): Field = %q, want %q (err: %v)", c.expr, pe.Field, c.field, err)
			}
			switch {
			case c.token != "":
				if pe.Token != c.token && (c.alt == "" || pe.Token != c.alt) {
					t.Errorf("Parse(%q): Token = %q, want %q (err: %v)", c.expr, pe.Token, c.token, err)
				}
			case strings.TrimSpace(c.expr) != "":
				if pe.Token == "" {
					t.Errorf("Parse(%q): Token is empty (err: %v)", c.expr, err)
				}
			}
			if err.Error() == "" {
				t.Errorf("Parse(%q): empty error message", c.expr)
			}
		})
	}
}

// Inputs outside the grammar for which doc.go's wording is strict but a
// lenient reading is conceivable; kept separate so a failure is easy to judge.
func TestParseErrorsStrictGrammar(t *testing.T) {
	t.Parallel()
	cases := []struct{ expr, field string }{
		{"*,5 * * * * *", "second"},        // "*" is not a list item
		{"0 0 0 1,,2 * *", "day-of-month"}, // empty item
		{"0 0 0 1, * *", "day-of-month"},
		{"@every", "@every"},
		{"@daily 1", "expression"},
	}
	for _, c := range cases {
		_, err := cron.Parse(c.expr)
		var pe *cron.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a *ParseError", c.expr, err)
			continue
		}
		if pe.Field != c.field {
			t.Errorf("Parse(%q): Field = %q, want %q (err: %v)", c.expr, pe.Field, c.field, err)
		}
	}
}
