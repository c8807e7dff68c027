package cron

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ParseError reports an expression that is not valid. Field names the field
// ("second", "minute", "hour", "day-of-month", "month", "day-of-week",
// "year", "@every", or "expression" for the expression as a whole) and Token
// the offending text.
type ParseError struct {
	Field  string
	Token  string
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("cron: %s: %q: %s", e.Field, e.Token, e.Reason)
}

type fieldKind int

const (
	second fieldKind = iota
	minute
	hour
	dayOfMonth
	month
	dayOfWeek
	year
)

var fieldNames = [...]string{"second", "minute", "hour", "day-of-month", "month", "day-of-week", "year"}

// bounds are the values a field accepts. openMax is where "*" and "a/n" end;
// it differs from max only for day-of-week, where 7 is Sunday again.
var bounds = [...]struct{ min, max, openMax int }{
	second:     {0, 59, 59},
	minute:     {0, 59, 59},
	hour:       {0, 23, 23},
	dayOfMonth: {1, 31, 31},
	month:      {1, 12, 12},
	dayOfWeek:  {0, 7, 6},
	year:       {minYear, maxYear, maxYear},
}

const (
	minYear = 1970
	maxYear = 2099
)

var monthNames = map[string]int{
	"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
	"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
}

var dayNames = map[string]int{
	"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6,
}

var descriptors = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

// Parse parses a cron expression (see the package documentation for the
// grammar). The result is immutable and safe for concurrent use.
func Parse(expr string) (*Schedule, error) {
	trimmed := strings.TrimSpace(expr)
	if trimmed == "" {
		return nil, &ParseError{Field: "expression", Token: expr, Reason: "empty expression"}
	}
	if strings.HasPrefix(trimmed, "@") {
		return parseDescriptor(trimmed)
	}
	fields := strings.Fields(trimmed)
	switch len(fields) {
	case 5:
		fields = append([]string{"0"}, fields...)
	case 6, 7:
	default:
		return nil, &ParseError{Field: "expression", Token: trimmed,
			Reason: fmt.Sprintf("has %d fields, want 5, 6 or 7 (sec min hour dom mon dow [year])", len(fields))}
	}
	orig := slices.Clone(fields)
	for i := range fields {
		fields[i] = asciiUpper(fields[i])
	}
	s := &Schedule{expr: strings.Join(fields, " ")}
	if err := s.parseFields(fields); err != nil {
		return nil, originalCase(err, fields, orig)
	}
	return s, nil
}

// asciiUpper upper-cases ASCII letters only, so that byte offsets stay the
// same (names and Quartz letters are ASCII; anything else is an error).
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// originalCase reports the token of a parse error as the user wrote it:
// fields are upper-cased before parsing so that names match in any case.
func originalCase(err error, upper, orig []string) error {
	pe, ok := err.(*ParseError)
	if !ok || pe.Token == "" {
		return err
	}
	for k, f := range upper {
		if fieldNames[min(k, len(fieldNames)-1)] != pe.Field {
			continue
		}
		if i := strings.Index(f, pe.Token); i >= 0 {
			pe.Token = orig[k][i : i+len(pe.Token)]
		}
	}
	return pe
}

func parseDescriptor(expr string) (*Schedule, error) {
	name, arg, _ := strings.Cut(expr, " ")
	name = strings.ToLower(name)
	arg = strings.TrimSpace(arg)
	if name == "@every" {
		return parseEvery(arg)
	}
	full, ok := descriptors[name]
	if !ok {
		return nil, &ParseError{Field: "expression", Token: name,
			Reason: "unknown descriptor (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every)"}
	}
	if arg != "" {
		return nil, &ParseError{Field: "expression", Token: arg, Reason: "unexpected text after " + name}
	}
	return Parse(full)
}

func parseEvery(arg string) (*Schedule, error) {
	if arg == "" {
		return nil, &ParseError{Field: "@every", Token: arg, Reason: "missing duration (for example @every 1m30s)"}
	}
	d, err := time.ParseDuration(arg)
	if err != nil {
		return nil, &ParseError{Field: "@every", Token: arg, Reason: "not a duration (for example 90s, 1m30s, 2h)"}
	}
	if d < time.Second {
		return nil, &ParseError{Field: "@every", Token: arg, Reason: "interval must be at least 1s"}
	}
	if d%time.Second != 0 {
		return nil, &ParseError{Field: "@every", Token: arg, Reason: "interval must be a whole number of seconds"}
	}
	return &Schedule{expr: "@every " + formatDuration(d), every: d}, nil
}

// formatDuration writes d (whole seconds) without zero units: 1h, 1m30s, 25h.
func formatDuration(d time.Duration) string {
	secs := int64(d / time.Second)
	h, m, s := secs/3600, secs/60%60, secs%60
	var b strings.Builder
	if h > 0 {
		b.WriteString(strconv.FormatInt(h, 10) + "h")
	}
	if m > 0 {
		b.WriteString(strconv.FormatInt(m, 10) + "m")
	}
	if s > 0 {
		b.WriteString(strconv.FormatInt(s, 10) + "s")
	}
	return b.String()
}

func (s *Schedule) parseFields(fields []string) error {
	s.fixed = fields[minute][0] != '*' && fields[hour][0] != '*'
	s.domStar = fields[dayOfMonth] == "*" || fields[dayOfMonth] == "?"
	s.dowStar = fields[dayOfWeek] == "*" || fields[dayOfWeek] == "?"

	for k := second; k <= dayOfWeek; k++ {
		bits, err := s.parseField(k, fields[k])
		if err != nil {
			return err
		}
		switch k {
		case second:
			s.second = bits
		case minute:
			s.minute = bits
		case hour:
			s.hour = uint32(bits)
		case dayOfMonth:
			s.dom = uint32(bits)
		case month:
			s.month = uint16(bits)
		case dayOfWeek:
			if bits&(1<<7) != 0 {
				bits |= 1 // 7 is Sunday, as 0
			}
			s.dow = uint8(bits & 0x7f)
		}
	}
	s.anyYear = true
	if len(fields) == 7 && fields[year] != "*" {
		s.anyYear = false
		if err := s.parseYears(fields[year]); err != nil {
			return err
		}
	}
	for first := range 7 {
		s.dowByFirst[first] = weekdayDays(s.dow, first)
	}
	return s.checkSatisfiable()
}

// parseField parses one of the six calendar fields into a bit set (bit v set
// when value v matches) and records day specials on s.
func (s *Schedule) parseField(k fieldKind, text string) (uint64, error) {
	var bits uint64
	for item := range strings.SplitSeq(text, ",") {
		if item == "" {
			return 0, s.fieldErr(k, text, "empty list item")
		}
		if item == "?" {
			if k != dayOfMonth && k != dayOfWeek {
				return 0, s.fieldErr(k, item, "? is only allowed in day-of-month and day-of-week")
			}
			if text != "?" {
				return 0, s.fieldErr(k, text, "? must stand alone")
			}
			bits |= rangeBits(bounds[k].min, bounds[k].openMax, 1)
			continue
		}
		if item == "*" && text != "*" {
			return 0, s.fieldErr(k, text, "* must stand alone (use */n for a step)")
		}
		special, err := s.parseSpecial(k, item)
		if err != nil {
			return 0, err
		}
		if special {
			continue
		}
		lo, hi, step, err := parseRange(k, item)
		if err != nil {
			return 0, err
		}
		bits |= rangeBits(lo, hi, step)
	}
	return bits, nil
}

// parseSpecial handles the Quartz items L, L-n, nW, LW (day-of-month) and
// nL, n#k (day-of-week). It reports whether item was one of them.
func (s *Schedule) parseSpecial(k fieldKind, item string) (bool, error) {
	if !looksSpecial(item) {
		return false, nil
	}
	switch k {
	case dayOfMonth:
		switch {
		case strings.Contains(item, "#"):
			return false, s.fieldErr(k, item, "# is only allowed in day-of-week")
		case item == "L":
			s.domLast |= 1
		case item == "LW":
			s.domLastWeekday = true
		case strings.HasPrefix(item, "L-"):
			n, err := number(item[2:])
			if err != nil || n < 1 || n > 30 {
				return false, s.fieldErr(k, item, "L-n needs n from 1 to 30")
			}
			s.domLast |= 1 << n
		case strings.HasSuffix(item, "W"):
			n, err := number(item[:len(item)-1])
			if err != nil || n < 1 || n > 31 {
				return false, s.fieldErr(k, item, "nW needs a day from 1 to 31")
			}
			s.domNearest |= 1 << n
		default:
			return false, s.fieldErr(k, item, "not a valid day-of-month item (L, L-n, nW and LW are allowed)")
		}
		return true, nil
	case dayOfWeek:
		if day, nth, ok := strings.Cut(item, "#"); ok {
			d, err := dayValue(day)
			if err != nil {
				return false, s.fieldErr(k, item, "n#k needs a day of the week from 0 to 7 or SUN to SAT")
			}
			n, err := number(nth)
			if err != nil || n < 1 || n > 5 {
				return false, s.fieldErr(k, item, "n#k needs k from 1 to 5")
			}
			s.dowNth[d%7] |= 1 << n
			return true, nil
		}
		switch {
		case item == "L":
			return false, s.fieldErr(k, item, "L in day-of-week needs a day before it (5L is the last Friday)")
		case !strings.HasSuffix(item, "L"):
			return false, s.fieldErr(k, item, "W and L-n are only allowed in day-of-month")
		}
		d, err := dayValue(item[:len(item)-1])
		if err != nil {
			return false, s.fieldErr(k, item, "nL needs a day of the week from 0 to 7 or SUN to SAT")
		}
		s.dowLast |= 1 << (d % 7)
		return true, nil
	default:
		switch {
		case strings.Contains(item, "#"):
			return false, s.fieldErr(k, item, "# is only allowed in day-of-week")
		case strings.HasSuffix(item, "W"):
			return false, s.fieldErr(k, item, "W is only allowed in day-of-month")
		default:
			return false, s.fieldErr(k, item, "L is only allowed in day-of-month and day-of-week")
		}
	}
}

// looksSpecial reports whether item has the shape of a Quartz item (L, LW,
// L-n, nW, nL, n#k), as opposed to a number, name or range: "JUL" and "WED"
// do not, "5L", "FRIL" and "15W" do.
func looksSpecial(item string) bool {
	if strings.Contains(item, "#") || item == "L" || item == "W" || item == "LW" || strings.HasPrefix(item, "L-") {
		return true
	}
	if len(item) < 2 {
		return false
	}
	if last := item[len(item)-1]; last != 'L' && last != 'W' {
		return false
	}
	prefix := item[:len(item)-1]
	_, isDay := dayNames[prefix]
	_, err := number(prefix)
	return isDay || err == nil
}

func dayValue(text string) (int, error) {
	if d, ok := dayNames[text]; ok {
		return d, nil
	}
	n, err := number(text)
	if err != nil || n > 7 {
		return 0, fmt.Errorf("bad day")
	}
	return n, nil
}

// parseRange parses "*", "n", "a-b", each with an optional "/step".
func parseRange(k fieldKind, item string) (lo, hi, step int, err error) {
	b := bounds[k]
	base, stepText, hasStep := strings.Cut(item, "/")
	step = 1
	if hasStep {
		step, err = number(stepText)
		span := b.max - b.min + 1
		if k == dayOfWeek {
			span = 7
		}
		if err != nil || step < 1 || step > span {
			return 0, 0, 0, &ParseError{Field: fieldNames[k], Token: item,
				Reason: fmt.Sprintf("step must be a number from 1 to %d", span)}
		}
	}
	if base == "*" {
		return b.min, b.openMax, step, nil
	}
	loText, hiText, isRange := strings.Cut(base, "-")
	switch {
	case loText == "" || (isRange && hiText == ""):
		return 0, 0, 0, &ParseError{Field: fieldNames[k], Token: item, Reason: "a range needs a start and an end (a-b)"}
	case strings.Contains(hiText, "-"):
		return 0, 0, 0, &ParseError{Field: fieldNames[k], Token: item, Reason: "a range has one start and one end (a-b)"}
	}
	lo, err = value(k, loText)
	if err != nil {
		return 0, 0, 0, &ParseError{Field: fieldNames[k], Token: loText, Reason: err.Error()}
	}
	switch {
	case isRange:
		hi, err = value(k, hiText)
		if err != nil {
			return 0, 0, 0, &ParseError{Field: fieldNames[k], Token: hiText, Reason: err.Error()}
		}
		if k == dayOfWeek && hi == 0 && lo > 0 && hiText == "SUN" {
			hi = 7 // "SAT-SUN": Sunday is 7 at the end of a range
		}
		if hi < lo {
			return 0, 0, 0, &ParseError{Field: fieldNames[k], Token: base,
				Reason: "range start is after its end"}
		}
	case hasStep:
		hi = b.openMax
		if lo > hi {
			hi = lo
		}
	default:
		hi = lo
	}
	return lo, hi, step, nil
}

// value parses a number or, in month and day-of-week, a name.
func value(k fieldKind, text string) (int, error) {
	switch k {
	case month:
		if v, ok := monthNames[text]; ok {
			return v, nil
		}
	case dayOfWeek:
		if v, ok := dayNames[text]; ok {
			return v, nil
		}
	}
	n, err := number(text)
	if err != nil {
		if k == month || k == dayOfWeek {
			return 0, fmt.Errorf("not a number or a %s name", fieldNames[k])
		}
		return 0, fmt.Errorf("not a number")
	}
	b := bounds[k]
	if n < b.min || n > b.max {
		return 0, fmt.Errorf("value out of range %d-%d", b.min, b.max)
	}
	return n, nil
}

// number parses a plain decimal number of at most four digits.
func number(text string) (int, error) {
	if text == "" || len(text) > 4 {
		return 0, fmt.Errorf("not a number")
	}
	n := 0
	for _, c := range []byte(text) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not a number")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

func rangeBits(lo, hi, step int) uint64 {
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << v
	}
	return bits
}

func (s *Schedule) parseYears(text string) error {
	for item := range strings.SplitSeq(text, ",") {
		if item == "" {
			return s.fieldErr(year, text, "empty list item")
		}
		if strings.ContainsAny(item, "LW#?") {
			return s.fieldErr(year, item, "only numbers, ranges and steps are allowed in year")
		}
		lo, hi, step, err := parseRange(year, item)
		if err != nil {
			return err
		}
		for y := lo; y <= hi; y += step {
			i := y - minYear
			s.years[i/64] |= 1 << (i % 64)
		}
	}
	return nil
}

func (s *Schedule) fieldErr(k fieldKind, token, reason string) error {
	return &ParseError{Field: fieldNames[k], Token: token, Reason: reason}
}

// maxDays is the most days each month can have.
var maxDays = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// checkSatisfiable rejects expressions whose day and month fields can never
// meet, such as "0 0 0 30 2 *": they are typos, never intentions.
func (s *Schedule) checkSatisfiable() error {
	if !s.domStar && !s.dowStar {
		return nil // a matching weekday exists in every month
	}
	if s.domStar {
		return nil // every weekday, or some n#k, nL, occurs in some month
	}
	if s.domLast != 0 || s.domLastWeekday {
		return nil
	}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) == 0 {
			continue
		}
		days := uint32(1)<<(maxDays[m]+1) - 2
		if s.dom&days != 0 || s.domNearest&days != 0 {
			return nil
		}
	}
	return &ParseError{Field: "day-of-month", Token: s.fieldText(dayOfMonth),
		Reason: "no such day in the months of the month field; the schedule would never fire"}
}

func (s *Schedule) fieldText(k fieldKind) string {
	return strings.Fields(s.expr)[k]
}
