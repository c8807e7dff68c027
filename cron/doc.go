// Package cron parses cron expressions and computes their fire times.
//
// It owns Sundial's schedule language: every fire the scheduler makes starts
// with [Schedule.Next]. Parsing happens once; Next then jumps field by field
// over the calendar (year, month, day, hour, minute, second), so its cost does
// not depend on how far away the next fire is, and it allocates nothing.
//
// # Syntax
//
// An expression has six fields, or five (seconds are then 0), or seven (the
// last is the year):
//
//	second  minute  hour  day-of-month  month  day-of-week  [year]
//	0-59    0-59    0-23  1-31          1-12   0-7          1970-2099
//
// Each field is "*" or a comma-separated list of items. An item is a number
// "5", a range "1-5", or a stepped set "*/15", "5/15" (from 5 to the field's
// maximum) or "1-30/2". Months accept JAN-DEC and days of the week SUN-SAT, in
// any case; Sunday is 0 or 7. A step must be between 1 and the field's span.
//
// Day-of-month and day-of-week also accept "?" (no specific value, as "*"),
// and the Quartz extensions:
//
//	day-of-month  L      the last day of the month
//	              L-3    three days before the last day
//	              15W    the weekday (Mon-Fri) nearest the 15th, within the month
//	              LW     the last weekday of the month
//	day-of-week   5L     the last Friday of the month
//	              6#3    the third Saturday of the month
//
// When both day fields are restricted (neither is "*" nor "?"), a day matches
// if either field matches, as in Vixie cron: "0 0 0 1 * MON" fires on the 1st
// and on every Monday. When one is "*" or "?", the other alone decides.
//
// Descriptors stand for whole expressions: @yearly and @annually (0 0 0 1 1 *),
// @monthly (0 0 0 1 * *), @weekly (0 0 0 * * 0), @daily and @midnight
// (0 0 0 * * *), @hourly (0 0 * * * *). "@every 1m30s" fires at a fixed rate:
// the interval is at least one second and a whole number of seconds, and
// chaining Next from the moment the schedule starts gives start+interval,
// start+2*interval, and so on, whatever the time zone; the fires never drift
// by the time a run takes.
//
// [Schedule.String] is the normalised form: six or seven fields separated by
// single spaces, names and letters in upper case, descriptors expanded
// ("@every" keeps its own form with a canonical duration).
//
// Anything outside this grammar is a *[ParseError] naming the field and the
// offending token; nothing is silently corrected. A bare "*" inside a list
// ("*,5") is an error, and so is a day-of-month that no month of the month
// field has ("0 0 0 30 2 *", "0 0 0 31 4,6,9,11 *"): such a schedule could
// never fire, so it is a typo, not an intention.
//
// # Time zones and daylight saving
//
// Next evaluates the expression on the wall clock of the location of the time
// it is given, and returns an instant in that location. Across daylight-saving
// changes it follows the rule ISC/Vixie cron has used for decades.
//
// A fixed-time schedule is one whose minute field and hour field both do not
// begin with "*" ("0 30 2 * * *", "0 0 9 * * MON-FRI", @daily). It fires once
// per wall-clock match:
//
//   - A wall time skipped by a spring-forward change fires once, at the first
//     instant after the gap. In America/New_York on 2026-03-08 the clock jumps
//     from 02:00 EST to 03:00 EDT, so "0 30 2 * * *" fires at 03:00:00 EDT
//     (07:00:00Z) that day.
//   - A wall time repeated by a fall-back change fires once, at its first
//     occurrence. In America/New_York on 2026-11-01 the hour from 01:00 to
//     02:00 happens twice; "0 30 1 * * *" fires at 01:30 EDT (05:30Z) only.
//
// Every other schedule (the minute or hour field begins with "*", and
// @hourly) follows the clock: wall times that do not exist are not fired, and
// a repeated hour is fired again in its second pass. "0 30 * * * *" in
// America/New_York does not fire at 02:30 on 2026-03-08, and on 2026-11-01 it
// fires at 01:30 EDT (05:30Z) and again at 01:30 EST (06:30Z).
//
// The same rule holds for offsets that are not whole hours and for the
// southern hemisphere:
//
//   - Australia/Sydney springs forward on 2026-10-04 from 02:00 AEST to 03:00
//     AEDT: "0 30 2 * * *" fires at 03:00 AEDT (2026-10-03T16:00:00Z). It falls
//     back on 2026-04-05 from 03:00 AEDT to 02:00 AEST: "0 30 2 * * *" fires at
//     02:30 AEDT (15:30Z on 04-04) only, "0 30 * * * *" at 02:30 AEDT and again
//     at 02:30 AEST (16:30Z).
//   - Pacific/Chatham (+12:45, +13:45 in summer) springs forward on 2026-09-27
//     from 02:45 to 03:45: "0 0 3 * * *" fires at 03:45 (14:00Z on 09-26), and
//     "0 0 * * * *" does not fire at 03:00 that night.
//   - Asia/Kolkata (+05:30) has no changes: every wall time happens exactly
//     once, and both kinds of schedule fire at every match.
//
// A "@every" schedule is pure duration arithmetic on instants and is not
// affected by daylight saving.
//
// # Other daylight-saving policies
//
// [Schedule.WithDST] chooses another rule for fixed-time schedules (the
// others are unchanged, as they already skip and repeat with the clock):
//
//   - [DSTSkipGap]: a wall time skipped by a spring-forward change does not
//     fire at all. "0 30 2 * * *" in America/New_York has no fire on
//     2026-03-08; the next is 02:30 EDT on 03-09. A repeated wall time still
//     fires in its first pass only.
//   - [DSTRepeat]: a wall time repeated by a fall-back change fires in both
//     passes. "0 30 1 * * *" in America/New_York fires on 2026-11-01 at
//     01:30 EDT (05:30Z) and at 01:30 EST (06:30Z). A skipped wall time
//     still fires at the first instant after the gap.
//
// [DSTVixie], the rule above, is the default.
package cron
