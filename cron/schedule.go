package cron

import (
	"math"
	"math/bits"
	"strconv"
	"time"
)

// Schedule is a parsed expression. Its methods are safe for concurrent use.
type Schedule struct {
	expr  string
	every time.Duration // @every interval; the calendar fields are unused then

	second, minute uint64 // bit v: value v matches
	hour           uint32
	dom            uint32 // bits 1-31
	month          uint16 // bits 1-12
	dow            uint8  // bits 0-6, Sunday 0

	anyYear bool
	years   [3]uint64 // bit y-1970

	domStar, dowStar bool     // the field is "*" or "?"
	fixed            bool     // minute and hour both do not begin with '*'
	domLast          uint32   // bit n: "L-n" ("L" is n = 0)
	domNearest       uint32   // bit n: "nW"
	domLastWeekday   bool     // "LW"
	dowLast          uint8    // bit d: "dL"
	dowNth           [7]uint8 // [d] bit k: "d#k"

	// dowByFirst[w] has bit n set when day n of a month whose 1st is weekday
	// w is a weekday in dow: the day-of-week field as days, computed once.
	dowByFirst [7]uint32

	dst DST // what a fixed-time schedule does across daylight-saving changes
}

// DST is what a fixed-time schedule does with the wall times a
// daylight-saving change skips or repeats (see the package documentation).
// Schedules that follow the clock and "@every" schedules behave the same
// under every policy.
type DST uint8

const (
	// DSTVixie is the default, ISC/Vixie cron's rule: a skipped wall time
	// fires once at the first instant after the gap; a repeated one fires
	// in its first pass only.
	DSTVixie DST = iota
	// DSTSkipGap does not fire a wall time that a spring-forward change
	// skips; a repeated one fires in its first pass only, as DSTVixie.
	DSTSkipGap
	// DSTRepeat fires a wall time that a fall-back change repeats in both
	// passes; a skipped one fires at the first instant after the gap, as
	// DSTVixie.
	DSTRepeat
)

// dstNames are the policies' names, as the task API spells them.
var dstNames = [...]string{DSTVixie: "vixie", DSTSkipGap: "skip_gap", DSTRepeat: "repeat"}

// String returns the policy's name: vixie, skip_gap or repeat.
func (d DST) String() string {
	if int(d) < len(dstNames) {
		return dstNames[d]
	}
	return "DST(" + strconv.Itoa(int(d)) + ")"
}

// ParseDST returns the policy named name (vixie, skip_gap or repeat; ""
// is vixie), case-sensitive.
func ParseDST(name string) (DST, bool) {
	if name == "" {
		return DSTVixie, true
	}
	for d, n := range dstNames {
		if n == name {
			return DST(d), true
		}
	}
	return DSTVixie, false
}

// WithDST returns the schedule with the daylight-saving policy d: s itself
// when it has d already, otherwise a copy.
func (s *Schedule) WithDST(d DST) *Schedule {
	if s.dst == d {
		return s
	}
	c := *s
	c.dst = d
	return &c
}

// DST returns the schedule's daylight-saving policy.
func (s *Schedule) DST() DST { return s.dst }

// String returns the normalised expression.
func (s *Schedule) String() string { return s.expr }

// FixedTime reports whether the schedule fires at fixed wall-clock times
// (minute and hour fields both do not begin with '*'), which decides how it
// behaves across daylight-saving changes (see the package documentation).
func (s *Schedule) FixedTime() bool { return s.fixed }

// Interval returns the interval of an "@every" schedule, or 0.
func (s *Schedule) Interval() time.Duration { return s.every }

// NextN returns the next n fire times after t, fewer if the schedule ends.
func (s *Schedule) NextN(t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for range n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// Next returns the first fire time strictly after t, evaluated on the wall
// clock of t's location and returned in that location. It returns the zero
// Time when the schedule has no later fire (its year field is exhausted).
// For an "@every" schedule it returns t plus the interval.
func (s *Schedule) Next(t time.Time) time.Time {
	if s.every > 0 {
		return t.Add(s.every)
	}
	loc := t.Location()
	// Fires are whole seconds; the first candidate is the next whole second.
	sec := t.Unix() + 1
	if loc == time.UTC {
		c, ok := s.nextCivil(sec)
		if !ok {
			return time.Time{}
		}
		return time.Unix(c, 0).UTC()
	}
	// Walk the zone's periods of constant offset. Within one, wall clock and
	// instants map one to one; at its end the offset changes and the DST rule
	// decides what happens to the wall times skipped or repeated.
	for range 64 {
		at := time.Unix(sec, 0).In(loc)
		_, off := at.Zone()
		start, end := at.ZoneBounds()
		o := int64(off)
		startSec, endSec := int64(math.MinInt64), int64(math.MaxInt64)
		prev := o // offset of the previous period
		if !start.IsZero() {
			startSec = start.Unix()
			_, p := start.Add(-time.Second).Zone()
			prev = int64(p)
		}
		if !end.IsZero() {
			endSec = end.Unix()
		}
		// The first candidate is the first instant after a spring-forward
		// gap: a fixed-time schedule fires here for a match in the gap
		// (not under DSTSkipGap).
		if s.fixed && sec == startSec && prev < o && s.dst != DSTSkipGap {
			if g, ok := s.nextCivil(startSec + prev); ok && g < startSec+o {
				return start.In(loc)
			}
		}
		m, ok := s.nextCivil(sec + o)
		if !ok {
			return time.Time{}
		}
		if m-o < endSec {
			// The match falls in this period. A fixed-time schedule fires a
			// repeated wall time only in its first pass: after a fall-back
			// change, skip the wall times the previous period already showed
			// (unless under DSTRepeat, which fires them again).
			if s.fixed && prev > o && m < startSec+prev && s.dst != DSTRepeat {
				sec = startSec + prev - o
				continue
			}
			return time.Unix(m-o, 0).In(loc)
		}
		_, n := end.Zone()
		next := int64(n)
		// The match lies past this period. If the next period skips wall
		// time (spring forward) and the match is in the gap, a fixed-time
		// schedule fires at the first instant after the gap; under
		// DSTSkipGap it does not, and the search goes on past the gap.
		if s.fixed && next > o && m < endSec+next {
			if s.dst != DSTSkipGap {
				return end.In(loc)
			}
			sec = endSec
			continue
		}
		if next < o {
			// Fall back: the next period shows some wall times again, earlier
			// than m; a schedule that follows the clock may fire in them.
			sec = endSec
			continue
		}
		// No wall time in [c, m) matches and the next change does not repeat
		// any, so no change before m can hold a fire: jump to shortly
		// before m.
		sec = max(endSec, m-o-2*86400)
	}
	return time.Time{}
}

// nextCivil returns the first wall-clock second at or after c (seconds since
// 1970-01-01T00:00:00 on the wall clock) that matches the calendar fields.
// It jumps field by field: a field that does not match moves to its next
// matching value and resets the smaller fields.
func (s *Schedule) nextCivil(c int64) (int64, bool) {
	days := floorDiv(c, 86400)
	rem := int(c - days*86400)
	y, mo, d := civilFromDays(days)
	h, mi, se := rem/3600, rem/60%60, rem%60

	limit := maxYear
	if s.anyYear {
		limit = y + 400 // the Gregorian calendar repeats every 400 years
	}
	maskY, maskM, mask := 0, 0, uint32(0)
	for y <= limit {
		if !s.anyYear && !s.yearMatches(y) {
			ny, ok := s.nextYear(y)
			if !ok {
				return 0, false
			}
			y, mo, d, h, mi, se = ny, 1, 1, 0, 0, 0
		}
		nm := nextBit16(s.month, mo)
		if nm < 0 {
			y, mo, d, h, mi, se = y+1, 1, 1, 0, 0, 0
			continue
		}
		if nm != mo {
			mo, d, h, mi, se = nm, 1, 0, 0, 0
		}
		if maskY != y || maskM != mo {
			maskY, maskM, mask = y, mo, s.dayMask(y, mo)
		}
		nd := nextBit32(mask, d)
		if nd < 0 {
			mo, d, h, mi, se = mo+1, 1, 0, 0, 0
			if mo > 12 {
				y, mo = y+1, 1
			}
			continue
		}
		if nd != d {
			d, h, mi, se = nd, 0, 0, 0
		}
		nh := nextBit32(s.hour, h)
		if nh < 0 {
			d, h, mi, se = d+1, 0, 0, 0
			continue
		}
		if nh != h {
			h, mi, se = nh, 0, 0
		}
		nmi := nextBit64(s.minute, mi)
		if nmi < 0 {
			h, mi, se = h+1, 0, 0
			if h > 23 {
				d, h = d+1, 0
			}
			continue
		}
		if nmi != mi {
			mi, se = nmi, 0
		}
		nse := nextBit64(s.second, se)
		if nse < 0 {
			mi, se = mi+1, 0
			if mi > 59 {
				h, mi = h+1, 0
				if h > 23 {
					d, h = d+1, 0
				}
			}
			continue
		}
		se = nse
		return daysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+se), true
	}
	return 0, false
}

// dayMask returns the days of month mo in year y that match the day fields,
// as bits 1-31.
func (s *Schedule) dayMask(y, mo int) uint32 {
	dim := daysIn(y, mo)
	valid := uint32(1)<<(dim+1) - 2
	first := weekday(daysFromCivil(y, mo, 1))
	if s.domStar && s.dowStar {
		return valid
	}
	var domDays, dowDays uint32
	if !s.domStar {
		domDays = s.dom
		if s.domLast != 0 {
			for n := range 31 {
				if s.domLast&(1<<n) != 0 && dim-n >= 1 {
					domDays |= 1 << (dim - n)
				}
			}
		}
		if s.domNearest != 0 {
			for n := 1; n <= dim; n++ {
				if s.domNearest&(1<<n) != 0 {
					domDays |= 1 << nearestWeekday(n, dim, (first+n-1)%7)
				}
			}
		}
		if s.domLastWeekday {
			last := dim
			switch (first + dim - 1) % 7 {
			case 6:
				last = dim - 1
			case 0:
				last = dim - 2
			}
			domDays |= 1 << last
		}
	}
	if !s.dowStar {
		dowDays = s.dowByFirst[first]
		if s.dowLast != 0 {
			lastW := (first + dim - 1) % 7
			for w := range 7 {
				if s.dowLast&(1<<w) != 0 {
					dowDays |= 1 << (dim - (lastW-w+7)%7)
				}
			}
		}
		for w := range 7 {
			if ks := s.dowNth[w]; ks != 0 {
				firstDay := 1 + (w-first+7)%7
				for k := 1; k <= 5; k++ {
					if ks&(1<<k) != 0 {
						if d := firstDay + 7*(k-1); d <= dim {
							dowDays |= 1 << d
						}
					}
				}
			}
		}
	}
	switch {
	case s.domStar:
		return dowDays & valid
	case s.dowStar:
		return domDays & valid
	default:
		return (domDays | dowDays) & valid
	}
}

// nearestWeekday returns the weekday (Mon-Fri) nearest day n, staying in the
// month: a Saturday moves to Friday (or Monday when n is the 1st), a Sunday
// to Monday (or Friday when n is the last day).
func nearestWeekday(n, dim, wd int) int {
	switch wd {
	case 6:
		if n == 1 {
			return 3
		}
		return n - 1
	case 0:
		if n == dim {
			return n - 2
		}
		return n + 1
	}
	return n
}

// weekdayDays returns bits 1-31 set for the days whose weekday is in dow,
// in a month whose 1st is weekday first.
func weekdayDays(dow uint8, first int) uint32 {
	var m uint32
	for d := 1; d <= 31; d++ {
		if dow&(1<<((first+d-1)%7)) != 0 {
			m |= 1 << d
		}
	}
	return m
}

func (s *Schedule) yearMatches(y int) bool {
	i := y - minYear
	return i >= 0 && i < 130 && s.years[i/64]&(1<<(i%64)) != 0
}

func (s *Schedule) nextYear(y int) (int, bool) {
	if y < minYear {
		y = minYear
	}
	for ; y <= maxYear; y++ {
		if s.yearMatches(y) {
			return y, true
		}
	}
	return 0, false
}

func nextBit64(set uint64, from int) int {
	if from > 63 {
		return -1
	}
	rest := set >> from
	if rest == 0 {
		return -1
	}
	return from + bits.TrailingZeros64(rest)
}

func nextBit32(set uint32, from int) int {
	if from > 31 {
		return -1
	}
	rest := set >> from
	if rest == 0 {
		return -1
	}
	return from + bits.TrailingZeros32(rest)
}

func nextBit16(set uint16, from int) int {
	if from > 15 {
		return -1
	}
	rest := set >> from
	if rest == 0 {
		return -1
	}
	return from + bits.TrailingZeros16(rest)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := int(z - era*146097)
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + int(era)*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// weekday returns the day of the week (Sunday 0) of a day since 1970-01-01,
// which was a Thursday.
func weekday(days int64) int {
	w := int((days + 4) % 7)
	if w < 0 {
		w += 7
	}
	return w
}

func daysIn(y, m int) int {
	if m == 2 && isLeap(y) {
		return 29
	}
	return maxDays[m] - b2i(m == 2)
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
