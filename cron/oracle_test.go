package cron_test

// An independent, deliberately simple reference implementation of the
// schedule language described in doc.go, used as an oracle by the random,
// robfig and fuzz tests.
//
// The oracle parses an expression into plain boolean sets and then walks
// instants forward one second at a time, evaluating every instant on its wall
// clock. The only shortcut is that, inside one zone period (where wall clock =
// instant + constant offset), it jumps over wall-clock stretches that cannot
// match: the rest of a year, month or day whose date does not match, the rest
// of an hour or minute that does not match. Jumps never cross a zone
// transition: the walk always stops exactly at each transition instant.
//
// Daylight saving (doc.go, Vixie rule):
//   - clock-following schedules fire at every instant whose wall clock matches;
//   - fixed-time schedules (minute and hour fields not beginning with '*') fire
//     at an instant whose wall clock matches only if that wall time was not
//     already shown at an earlier instant (first pass of a repeated hour), and
//     at a spring-forward transition instant T if any wall time skipped at T
//     matches.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // make the tests independent of the host's zoneinfo

	"github.com/sundialhq/sundial/cron"
)

type orSchedule struct {
	every time.Duration // > 0 for "@every"
	fixed bool

	sec, min [60]bool
	hour     [24]bool
	month    [13]bool
	hasYear  bool
	year     [2100]bool

	domStar, dowStar bool // field is exactly "*" or "?"
	dom              [32]bool
	domLast          []int // L-n offsets (L is 0)
	domW             []int // nW
	domLW            bool
	dow              [7]bool
	dowLast          [7]bool    // nL
	dowNth           [7][6]bool // n#k
}

var orDescriptors = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

var orMonthNames = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
var orDowNames = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}

// orParse parses expr following doc.go. It is strict where doc.go is clear
// and lenient (accepting) where it is silent.
func orParse(expr string) (*orSchedule, error) {
	fs := strings.Fields(expr)
	if len(fs) == 0 {
		return nil, errors.New("empty")
	}
	if strings.HasPrefix(fs[0], "@") {
		if fs[0] == "@every" {
			if len(fs) != 2 {
				return nil, errors.New("@every wants one duration")
			}
			d, err := time.ParseDuration(fs[1])
			if err != nil {
				return nil, err
			}
			if d < time.Second || d%time.Second != 0 {
				return nil, errors.New("bad @every duration")
			}
			return &orSchedule{every: d}, nil
		}
		e, ok := orDescriptors[fs[0]]
		if !ok || len(fs) != 1 {
			return nil, errors.New("unknown descriptor")
		}
		fs = strings.Fields(e)
	}
	switch len(fs) {
	case 5:
		fs = append([]string{"0"}, fs...)
	case 6, 7:
	default:
		return nil, errors.New("field count")
	}
	o := &orSchedule{}
	o.fixed = !strings.HasPrefix(fs[1], "*") && !strings.HasPrefix(fs[2], "*")
	var err error
	set := func(dst []bool, vals []int) {
		for _, v := range vals {
			dst[v] = true
		}
	}
	var vals []int
	if vals, err = orList(fs[0], 0, 59, 59, nil); err != nil {
		return nil, fmt.Errorf("second: %w", err)
	}
	set(o.sec[:], vals)
	if vals, err = orList(fs[1], 0, 59, 59, nil); err != nil {
		return nil, fmt.Errorf("minute: %w", err)
	}
	set(o.min[:], vals)
	if vals, err = orList(fs[2], 0, 23, 23, nil); err != nil {
		return nil, fmt.Errorf("hour: %w", err)
	}
	set(o.hour[:], vals)
	if vals, err = orList(fs[4], 1, 12, 12, orMonthNames); err != nil {
		return nil, fmt.Errorf("month: %w", err)
	}
	set(o.month[:], vals)
	if err = o.parseDom(fs[3]); err != nil {
		return nil, fmt.Errorf("day-of-month: %w", err)
	}
	if err = o.parseDow(fs[5]); err != nil {
		return nil, fmt.Errorf("day-of-week: %w", err)
	}
	if len(fs) == 7 {
		o.hasYear = true
		if vals, err = orList(fs[6], 1970, 2099, 2099, nil); err != nil {
			return nil, fmt.Errorf("year: %w", err)
		}
		set(o.year[:], vals)
	}
	return o, nil
}

func (o *orSchedule) parseDom(f string) error {
	if f == "*" || f == "?" {
		o.domStar = true
		for d := 1; d <= 31; d++ {
			o.dom[d] = true
		}
		return nil
	}
	u := strings.ToUpper(f)
	switch {
	case u == "L":
		o.domLast = append(o.domLast, 0)
		return nil
	case u == "LW":
		o.domLW = true
		return nil
	case strings.HasPrefix(u, "L-"):
		n, err := orNum(u[2:], 1, 30, nil)
		if err != nil {
			return err
		}
		o.domLast = append(o.domLast, n)
		return nil
	case strings.HasSuffix(u, "W"):
		n, err := orNum(u[:len(u)-1], 1, 31, nil)
		if err != nil {
			return err
		}
		o.domW = append(o.domW, n)
		return nil
	}
	vals, err := orList(f, 1, 31, 31, nil)
	if err != nil {
		return err
	}
	for _, v := range vals {
		o.dom[v] = true
	}
	return nil
}

func (o *orSchedule) parseDow(f string) error {
	if f == "*" || f == "?" {
		o.dowStar = true
		for d := range 7 {
			o.dow[d] = true
		}
		return nil
	}
	u := strings.ToUpper(f)
	if i := strings.IndexByte(u, '#'); i >= 0 {
		n, err := orNum(u[:i], 0, 7, orDowNames)
		if err != nil {
			return err
		}
		k, err := orNum(u[i+1:], 1, 5, nil)
		if err != nil {
			return err
		}
		o.dowNth[n%7][k] = true
		return nil
	}
	if len(u) > 1 && strings.HasSuffix(u, "L") {
		n, err := orNum(u[:len(u)-1], 0, 7, orDowNames)
		if err != nil {
			return err
		}
		o.dowLast[n%7] = true
		return nil
	}
	vals, err := orList(f, 0, 7, 6, orDowNames)
	if err != nil {
		return err
	}
	for _, v := range vals {
		o.dow[v%7] = true
	}
	return nil
}

// orNum parses a decimal number or (if names != nil) a three-letter name.
// names[0] has the value lo (months) or 0 (days of the week).
func orNum(s string, lo, hi int, names []string) (int, error) {
	if s == "" {
		return 0, errors.New("empty number")
	}
	for i, n := range names {
		if strings.EqualFold(s, n) {
			if lo == 1 {
				return i + 1, nil
			}
			return i, nil
		}
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad number %q", s)
		}
	}
	if len(s) > 4 {
		return 0, fmt.Errorf("bad number %q", s)
	}
	n, _ := strconv.Atoi(s)
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d out of range", n)
	}
	return n, nil
}

// orList parses "*" or a comma-separated list of n, a-b, */n, a/n, a-b/n.
// openHi is where "*" and "a/n" end (6 for day-of-week).
func orList(f string, lo, hi, openHi int, names []string) ([]int, error) {
	if f == "*" {
		var out []int
		for v := lo; v <= openHi; v++ {
			out = append(out, v)
		}
		return out, nil
	}
	var out []int
	for item := range strings.SplitSeq(f, ",") {
		base, stepS, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			var err error
			// the span is hi-lo or hi-lo+1 depending on reading; accept both.
			if step, err = orNum(stepS, 1, hi-lo+1, nil); err != nil {
				return nil, err
			}
		}
		var a, b int
		switch {
		case base == "*":
			if !hasStep {
				return nil, errors.New("bare * in a list")
			}
			a, b = lo, openHi
		case strings.Contains(base, "-"):
			as, bs, _ := strings.Cut(base, "-")
			var err error
			if a, err = orNum(as, lo, hi, names); err != nil {
				return nil, err
			}
			if b, err = orNum(bs, lo, hi, names); err != nil {
				return nil, err
			}
			if a > b {
				return nil, errors.New("reversed range")
			}
		default:
			var err error
			if a, err = orNum(base, lo, hi, names); err != nil {
				return nil, err
			}
			b = a
			if hasStep {
				b = max(openHi, a)
			}
		}
		for v := a; v <= b; v += step {
			out = append(out, v)
		}
	}
	return out, nil
}

func orDaysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func orWeekday(y int, m time.Month, d int) time.Weekday {
	return time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Weekday()
}

// orNearestWeekday is the day nW fires on in y-m, or 0 if n does not exist.
func orNearestWeekday(y int, m time.Month, n int) int {
	ld := orDaysIn(y, m)
	if n > ld {
		return 0
	}
	switch orWeekday(y, m, n) {
	case time.Saturday:
		if n == 1 {
			return 3
		}
		return n - 1
	case time.Sunday:
		if n == ld {
			return n - 2
		}
		return n + 1
	}
	return n
}

func (o *orSchedule) dayMatches(y int, m time.Month, d int) bool {
	ld := orDaysIn(y, m)
	wd := orWeekday(y, m, d)
	domM := o.dom[d]
	for _, n := range o.domLast {
		domM = domM || ld-n == d
	}
	for _, n := range o.domW {
		domM = domM || orNearestWeekday(y, m, n) == d
	}
	if o.domLW {
		lw := ld
		switch orWeekday(y, m, ld) {
		case time.Saturday:
			lw = ld - 1
		case time.Sunday:
			lw = ld - 2
		}
		domM = domM || lw == d
	}
	dowM := o.dow[wd] || (o.dowLast[wd] && d+7 > ld) || o.dowNth[wd][(d-1)/7+1]
	switch {
	case !o.domStar && !o.dowStar:
		return domM || dowM
	case !o.domStar:
		return domM
	case !o.dowStar:
		return dowM
	}
	return true
}

// skip returns 0 if the wall time w (a UTC time standing for a wall clock)
// matches, else how many seconds of wall clock can be skipped without
// missing a match.
func (o *orSchedule) skip(w time.Time) int64 {
	y, m, d := w.Date()
	h, mi, s := w.Clock()
	var next time.Time
	switch {
	case o.hasYear && (y < 1970 || y > 2099 || !o.year[y]):
		next = time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)
	case !o.month[m]:
		next = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
	case !o.dayMatches(y, m, d):
		next = time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	case !o.hour[h]:
		next = time.Date(y, m, d, h+1, 0, 0, 0, time.UTC)
	case !o.min[mi]:
		next = time.Date(y, m, d, h, mi+1, 0, 0, time.UTC)
	case !o.sec[s]:
		return 1
	default:
		return 0
	}
	return next.Unix() - w.Unix()
}

// matchesWall reports whether the wall clock shown by t matches.
func (o *orSchedule) matchesWall(t time.Time) bool {
	_, off := t.Zone()
	return o.skip(time.Unix(t.Unix()+int64(off), 0).UTC()) == 0
}

// anyMatchIn reports whether a wall time in [lo, hi) (Unix seconds of wall
// clock) matches.
func (o *orSchedule) anyMatchIn(lo, hi int64) bool {
	for w := lo; w < hi; {
		adv := o.skip(time.Unix(w, 0).UTC())
		if adv == 0 {
			return true
		}
		w += adv
	}
	return false
}

// skippedBefore returns the wall range [lo, hi) skipped by a spring-forward
// transition at instant t, or ok=false if t is not such a transition.
func orSkippedBefore(t time.Time) (lo, hi int64, ok bool) {
	start, _ := t.ZoneBounds()
	if start.IsZero() || !start.Equal(t) {
		return 0, 0, false
	}
	_, off := t.Zone()
	_, prev := t.Add(-time.Second).Zone()
	if prev >= off {
		return 0, 0, false
	}
	return t.Unix() + int64(prev), t.Unix() + int64(off), true
}

// orShownEarlier reports whether the wall clock shown at t was already shown
// at an earlier instant (the second pass of a repeated hour).
func orShownEarlier(t time.Time) bool {
	_, off := t.Zone()
	w := t.Unix() + int64(off)
	cur, _ := t.ZoneBounds()
	for i := 0; i < 4 && !cur.IsZero(); i++ {
		p := cur.Add(-time.Second)
		_, po := p.Zone()
		ps, _ := p.ZoneBounds()
		if w < cur.Unix()+int64(po) && (ps.IsZero() || w >= ps.Unix()+int64(po)) {
			return true
		}
		cur = ps
	}
	return false
}

// firesAt reports whether the schedule fires at instant t (whole second).
func (o *orSchedule) firesAt(t time.Time) bool {
	if o.fixed {
		if lo, hi, ok := orSkippedBefore(t); ok && o.anyMatchIn(lo, hi) {
			return true
		}
		return o.matchesWall(t) && !orShownEarlier(t)
	}
	return o.matchesWall(t)
}

// next returns the first fire strictly after `after` and not after limit.
func (o *orSchedule) next(after, limit time.Time) (time.Time, bool) {
	if o.every > 0 {
		return after.Add(o.every), true
	}
	t := after.Truncate(time.Second).Add(time.Second).In(after.Location())
	for !t.After(limit) {
		_, off := t.Zone()
		_, end := t.ZoneBounds()
		if o.fixed {
			if lo, hi, ok := orSkippedBefore(t); ok && o.anyMatchIn(lo, hi) {
				return t, true
			}
		}
		adv := o.skip(time.Unix(t.Unix()+int64(off), 0).UTC())
		if adv == 0 {
			if !o.fixed || !orShownEarlier(t) {
				return t, true
			}
			adv = 1
		}
		nt := t.Add(time.Duration(adv) * time.Second)
		if !end.IsZero() && nt.After(end) {
			nt = end
		}
		t = nt
	}
	return time.Time{}, false
}

// orNeverFires reports whether the schedule has no fire at all between 1970
// and 2130 (a span that covers every calendar arrangement).
func orNeverFires(o *orSchedule) bool {
	if o.every > 0 {
		return false
	}
	from := time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)
	_, ok := o.next(from, time.Date(2130, 1, 1, 0, 0, 0, 0, time.UTC))
	return !ok
}

// ---------------------------------------------------------------------------
// Self-checks of the oracle against the examples written in doc.go.

func TestOracleDocExamples(t *testing.T) {
	t.Parallel()
	cases := []struct {
		zone, expr, after string
		want              []string // RFC 3339 instants
	}{
		{"America/New_York", "0 30 2 * * *", "2026-03-08T00:00:00-05:00", []string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"America/New_York", "0 30 1 * * *", "2026-11-01T00:00:00-04:00", []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"America/New_York", "0 30 * * * *", "2026-03-08T01:00:00-05:00", []string{"2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z"}},
		{"America/New_York", "0 30 * * * *", "2026-11-01T01:00:00-04:00", []string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}},
		{"Australia/Sydney", "0 30 2 * * *", "2026-10-04T00:00:00+10:00", []string{"2026-10-03T16:00:00Z"}},
		{"Australia/Sydney", "0 30 2 * * *", "2026-04-05T00:00:00+11:00", []string{"2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"}},
		{"Australia/Sydney", "0 30 * * * *", "2026-04-05T02:00:00+11:00", []string{"2026-04-04T15:30:00Z", "2026-04-04T16:30:00Z"}},
		{"Pacific/Chatham", "0 0 3 * * *", "2026-09-27T00:00:00+12:45", []string{"2026-09-26T14:00:00Z"}},
		{"Pacific/Chatham", "0 0 * * * *", "2026-09-27T02:00:00+12:45", []string{"2026-09-26T14:15:00Z"}},
	}
	for _, c := range cases {
		o, err := orParse(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		loc := mustLoad(t, c.zone)
		at := mustTime(t, c.after).In(loc)
		for _, w := range c.want {
			got, ok := o.next(at, at.AddDate(1, 0, 0))
			if !ok || !got.Equal(mustTime(t, w)) {
				t.Fatalf("oracle %q in %s after %s: got %s, want %s", c.expr, c.zone, at, got.UTC(), w)
			}
			at = got
		}
	}
}

// ---------------------------------------------------------------------------
// Helpers shared by the test files.

func mustLoad(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func mustTime(tb testing.TB, s string) time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		tb.Fatalf("bad time %q: %v", s, err)
	}
	return t
}

func fmtT(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	return t.Format("2006-01-02T15:04:05.999999999Z07:00 MST") + " (" + t.UTC().Format("2006-01-02T15:04:05Z") + ")"
}

// ---------------------------------------------------------------------------
// Random expressions over the whole grammar.

type orGen struct {
	r *rand.Rand
}

func (g orGen) n(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

func (g orGen) name(v int, names []string, lo int) string {
	s := names[v-lo]
	switch g.r.IntN(3) {
	case 0:
		return strings.ToLower(s)
	case 1:
		return s[:1] + strings.ToLower(s[1:])
	}
	return s
}

// value renders v, as a name with probability 1/3 when names exist.
func (g orGen) value(v int, lo int, names []string) string {
	if names != nil && v-lo < len(names) && v >= lo && g.r.IntN(3) == 0 {
		return g.name(v, names, lo)
	}
	return strconv.Itoa(v)
}

// pick chooses a value, preferring the "interesting" ones if any.
func (g orGen) pick(lo, hi int, pref []int) int {
	if len(pref) > 0 && g.r.IntN(2) == 0 {
		return pref[g.r.IntN(len(pref))]
	}
	return g.n(lo, hi)
}

// item generates one list item (no bare "*").
// stepHi bounds steps so they are valid under any reading of "span".
func (g orGen) item(lo, hi, openHi int, names []string, pref []int) string {
	stepHi := openHi - lo
	switch g.r.IntN(7) {
	case 0, 1, 2:
		return g.value(g.pick(lo, hi, pref), lo, names)
	case 3:
		a := g.pick(lo, hi, pref)
		b := g.n(a, min(hi, a+g.n(0, (hi-lo)/2+1)))
		return g.value(a, lo, names) + "-" + g.value(b, lo, names)
	case 4:
		return "*/" + strconv.Itoa(g.n(1, stepHi))
	case 5:
		a := g.pick(lo, openHi, pref)
		return g.value(a, lo, names) + "/" + strconv.Itoa(g.n(1, stepHi))
	default:
		a := g.pick(lo, hi, pref)
		b := g.n(a, hi)
		return g.value(a, lo, names) + "-" + g.value(b, lo, names) + "/" + strconv.Itoa(g.n(1, stepHi))
	}
}

func (g orGen) field(lo, hi, openHi int, names []string, pref []int, starWeight int) string {
	x := g.r.IntN(100)
	switch {
	case x < starWeight:
		return "*"
	case x < starWeight+(100-starWeight)*3/4:
		return g.item(lo, hi, openHi, names, pref)
	}
	k := g.n(2, 4)
	items := make([]string, k)
	for i := range items {
		items[i] = g.item(lo, hi, openHi, names, pref)
	}
	return strings.Join(items, ",")
}

type orGenOpts struct {
	quartz   bool // L, W, #
	sunday7  bool // allow 7 for Sunday
	question bool // allow ?
	year     bool // allow a seventh field
	fiveOK   bool // allow five-field expressions
	descr    bool // allow descriptors
}

var orAllOpts = orGenOpts{quartz: true, sunday7: true, question: true, year: true, fiveOK: true, descr: true}

func (g orGen) expr(o orGenOpts) string {
	if o.descr && g.r.IntN(40) == 0 {
		ds := []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
		return ds[g.r.IntN(len(ds))]
	}
	var sec string
	switch g.r.IntN(4) {
	case 0, 1:
		sec = "0"
	case 2:
		sec = g.field(0, 59, 59, nil, []int{0, 30, 59}, 30)
	default:
		sec = strconv.Itoa(g.n(0, 59))
	}
	minute := g.field(0, 59, 59, nil, []int{0, 15, 30, 44, 45, 59}, 30)
	hour := g.field(0, 23, 23, nil, []int{0, 1, 2, 3, 23}, 35)
	dom := g.field(1, 31, 31, nil, []int{1, 15, 28, 29, 30, 31}, 55)
	month := g.field(1, 12, 12, orMonthNames, nil, 65)
	dowHi := 6
	if o.sunday7 {
		dowHi = 7
	}
	dow := g.field(0, dowHi, 6, orDowNames, []int{0, 1, 5, 6}, 55)
	if o.question {
		switch g.r.IntN(10) {
		case 0:
			dom = "?"
		case 1:
			dow = "?"
		}
	}
	if o.quartz {
		switch g.r.IntN(14) {
		case 0:
			dom = "L"
		case 1:
			dom = "L-" + strconv.Itoa(g.n(1, 27))
		case 2:
			dom = strconv.Itoa(g.n(1, 28)) + "W"
		case 3:
			dom = "LW"
		case 4:
			dow = strconv.Itoa(g.n(0, dowHi)) + "L"
		case 5:
			dow = strconv.Itoa(g.n(0, dowHi)) + "#" + strconv.Itoa(g.n(1, 5))
		}
		if g.r.IntN(8) == 0 {
			// Quartz style: the other day field is "?".
			if g.r.IntN(2) == 0 {
				dom = "?"
			} else {
				dow = "?"
			}
		}
	}
	fields := []string{sec, minute, hour, dom, month, dow}
	if o.year && g.r.IntN(8) == 0 {
		var y string
		switch g.r.IntN(4) {
		case 0:
			y = "*"
		case 1:
			y = strconv.Itoa(g.n(2020, 2040))
		case 2:
			a := g.n(2020, 2040)
			y = strconv.Itoa(a) + "-" + strconv.Itoa(g.n(a, 2045))
		default:
			y = strconv.Itoa(g.n(2020, 2030)) + "/" + strconv.Itoa(g.n(1, 5))
		}
		fields = append(fields, y)
	} else if o.fiveOK && sec == "0" && g.r.IntN(3) == 0 {
		fields = fields[1:]
	}
	return strings.Join(fields, " ")
}

// orStart picks a start instant: uniform in 2020-2035, or shortly before or
// after a zone transition.
func orStart(r *rand.Rand, loc *time.Location) time.Time {
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(15*365*86400)) * time.Second).In(loc)
	if r.IntN(2) == 0 {
		_, end := base.ZoneBounds()
		if !end.IsZero() {
			base = end.Add(-time.Duration(r.Int64N(3*3600)) * time.Second)
			if r.IntN(10) == 0 {
				base = end.Add(-time.Second)
			}
			if r.IntN(4) == 0 {
				base = base.Add(time.Duration(r.Int64N(4*3600)) * time.Second)
			}
		}
	}
	if r.IntN(8) == 0 {
		base = base.Add(time.Duration(r.Int64N(int64(time.Second))))
	}
	return base
}

var orZones = []string{
	"UTC",
	"America/New_York",
	"Europe/London",
	"Australia/Sydney",
	"Asia/Kolkata",
	"Pacific/Chatham",
	"Australia/Lord_Howe",
	"America/Sao_Paulo", // DST (until 2019) changed at midnight
}

// orCompare checks up to n chained fires of expr from after against the
// oracle. It returns false (and reports) on the first mismatch.
func orCompare(t *testing.T, expr string, after time.Time, horizon time.Duration, n int) bool {
	t.Helper()
	o, err := orParse(expr)
	if err != nil {
		t.Fatalf("oracle cannot parse generated %q: %v", expr, err)
	}
	s, err := cron.Parse(expr)
	if err != nil {
		if orNeverFires(o) {
			return true // see TestSpecNeverFires
		}
		t.Errorf("Parse(%q): %v (the schedule does fire)", expr, err)
		return false
	}
	if o.every == 0 && s.FixedTime() != o.fixed {
		t.Errorf("Parse(%q).FixedTime() = %v, want %v", expr, s.FixedTime(), o.fixed)
		return false
	}
	at := after
	for i := range n {
		limit := at.Add(horizon)
		want, ok := o.next(at, limit)
		got := s.Next(at)
		if !ok {
			if !got.IsZero() && !got.After(limit) {
				t.Errorf("%q in %s: Next(%s) = %s; oracle finds no fire up to %s (step %d from %s)",
					expr, at.Location(), fmtT(at), fmtT(got), fmtT(limit), i, fmtT(after))
				return false
			}
			return true
		}
		if !got.Equal(want) || got.Location().String() != at.Location().String() {
			t.Errorf("%q in %s: Next(%s) = %s, want %s (step %d from %s)",
				expr, at.Location(), fmtT(at), fmtT(got), fmtT(want), i, fmtT(after))
			return false
		}
		at = got
	}
	return true
}

func TestOracleRandom(t *testing.T) {
	t.Parallel()
	n := 15000
	if testing.Short() {
		n = 1000
	}
	r := rand.New(rand.NewPCG(20260308, 1))
	g := orGen{r}
	type job struct {
		expr  string
		zone  string
		after time.Time
	}
	var jobs []job
	for range n {
		zone := orZones[r.IntN(len(orZones))]
		loc := mustLoad(t, zone)
		after := orStart(r, loc)
		if zone == "America/Sao_Paulo" {
			after = after.AddDate(-10, 0, 0) // 2010-2025: DST until 2019
		}
		jobs = append(jobs, job{g.expr(orAllOpts), zone, after})
	}
	failures := 0
	for _, j := range jobs {
		if !orCompare(t, j.expr, j.after, 60*24*time.Hour, 4) {
			failures++
			if failures >= 15 {
				t.Fatalf("too many failures")
			}
		}
	}
}

// TestOracleDSTNeighbourhood concentrates on hour/minute fields around the
// transitions, for fixed-time and clock-following schedules.
func TestOracleDSTNeighbourhood(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 2026))
	zones := []string{"America/New_York", "Europe/London", "Australia/Sydney", "Pacific/Chatham", "Australia/Lord_Howe", "America/Sao_Paulo"}
	hours := []string{"0", "1", "2", "3", "1-3", "2,3", "*", "*/2", "1/2", "0-23", "23", "22-23", "0,2", "2-4/2"}
	mins := []string{"0", "15", "30", "44", "45", "59", "*", "*/15", "0,30", "29-31", "5/20", "0-59"}
	secs := []string{"0", "0", "*/20", "59", "*"}
	failures := 0
	for range 6000 {
		zone := zones[r.IntN(len(zones))]
		loc := mustLoad(t, zone)
		year := 2021 + r.IntN(10)
		if zone == "America/Sao_Paulo" {
			year = 2010 + r.IntN(8)
		}
		base := time.Date(year, time.Month(1+r.IntN(12)), 1, 0, 0, 0, 0, loc)
		_, end := base.ZoneBounds()
		after := end.Add(-time.Duration(r.Int64N(26*3600)) * time.Second)
		switch r.IntN(10) {
		case 0:
			after = end.Add(-time.Second)
		case 1:
			after = end.Add(-time.Duration(1 + r.Int64N(int64(time.Second))))
		case 2:
			after = end
		case 3:
			after = end.Add(time.Duration(r.Int64N(2*3600)) * time.Second)
		}
		expr := strings.Join([]string{secs[r.IntN(len(secs))], mins[r.IntN(len(mins))], hours[r.IntN(len(hours))], "*", "*", "*"}, " ")
		if !orCompare(t, expr, after, 40*24*time.Hour, 5) {
			failures++
			if failures >= 15 {
				t.Fatalf("too many failures")
			}
		}
	}
}
