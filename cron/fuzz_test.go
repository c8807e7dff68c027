package cron_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sundialhq/sundial/cron"
)

var fuzzZones = []string{"UTC", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham", "Europe/London", "America/Sao_Paulo"}

var fuzzSeeds = []string{
	// valid
	"* * * * * *", "0 30 2 * * *", "0 30 * * * *", "30 2 * * *", "0 0 9 * * MON-FRI",
	"*/15 1-30/10 */6 1,15 JAN-MAR/2 1/2", "0 0 0 L * ?", "0 0 0 L-3 * ?", "0 0 0 15W * ?",
	"0 0 0 1W * ?", "0 0 0 LW * ?", "0 0 0 ? * 5L", "0 0 0 ? * 6#3", "0 0 0 ? * 1#5",
	"0 0 0 1 * MON", "0 0 0 */1 * MON", "0 0 0 29 2 *", "0 0 0 30 2 *", "0 0 0 1 1 * 2030",
	"59 59 23 31 12 * 2099", "0 0 0 1 1 ? 2027-2029/2", "0 0 0 * * 7", "0 0 0 * * 5-7",
	"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
	"@every 1m30s", "@every 1h", "@every 1s", "0 0 9 * jan mon-fri", "0 0 0 l * ?",
	// invalid
	"", "* * * *", "60 * * * * *", "0 */0 * * * *", "0 10-5 * * * *", "0 0 0 * FOO *",
	"0 0 0 * * L", "0 0 0 ? * 1#6", "@every 0s", "@every 1500ms", "@fortnightly",
	"0 0 0 * * 8", "0 0 0 1 1 * 2100", "0 ? * * * *", "0 0 0 5W * 5W", "*,5 * * * * *",
	"0 0 0 1,,2 * *", "0 0 0 L-40 * ?", "0 0 0 99999999999999999999 * *", "0 0 0 1-2-3 * *",
}

// checkSchedule checks the properties every successfully parsed schedule must
// have, for a start instant in a zone. o may be nil if the oracle cannot read
// the expression.
func checkSchedule(t *testing.T, expr string, s *cron.Schedule, o *orSchedule, after time.Time) {
	t.Helper()
	const n = 4
	fires := s.NextN(after, n)
	if len(fires) > n {
		t.Fatalf("%q: NextN(%d) returned %d times", expr, n, len(fires))
	}
	prev := after
	for i, f := range fires {
		if f.IsZero() {
			for _, g := range fires[i:] {
				if !g.IsZero() {
					t.Fatalf("%q: NextN from %s has a non-zero time after a zero one: %v", expr, fmtT(after), fires)
				}
			}
			break
		}
		if !f.After(prev) {
			t.Fatalf("%q in %s: fire %d %s is not after %s", expr, after.Location(), i, fmtT(f), fmtT(prev))
		}
		if nx := s.Next(prev); !nx.Equal(f) {
			t.Fatalf("%q in %s: NextN[%d] = %s but Next(%s) = %s", expr, after.Location(), i, fmtT(f), fmtT(prev), fmtT(nx))
		}
		if f.Location().String() != after.Location().String() {
			t.Fatalf("%q: location %s, want %s", expr, f.Location(), after.Location())
		}
		if o != nil {
			if o.every > 0 {
				if !f.Equal(prev.Add(o.every)) {
					t.Fatalf("%q: Next(%s) = %s, want +%s", expr, fmtT(prev), fmtT(f), o.every)
				}
			} else if f.Nanosecond() != 0 || !o.firesAt(f) {
				t.Fatalf("%q in %s: Next(%s) = %s, which is not a fire time (fixed-time=%v)",
					expr, after.Location(), fmtT(prev), fmtT(f), o.fixed)
			}
		}
		prev = f
	}
	if len(fires) < n && (len(fires) == 0 || !fires[len(fires)-1].IsZero()) {
		// fewer results: the schedule must be exhausted
		if nx := s.Next(prev); !nx.IsZero() {
			t.Fatalf("%q: NextN(%d) returned %d times but Next(%s) = %s", expr, n, len(fires), fmtT(prev), fmtT(nx))
		}
	}
	// Nothing may be missed: compare the first fire with the oracle, within
	// a bounded horizon.
	if o != nil && o.every == 0 {
		limit := after.AddDate(2, 0, 0)
		want, ok := o.next(after, limit)
		got := s.Next(after)
		switch {
		case ok && !got.Equal(want):
			t.Fatalf("%q in %s: Next(%s) = %s, oracle %s", expr, after.Location(), fmtT(after), fmtT(got), fmtT(want))
		case !ok && !got.IsZero() && !got.After(limit):
			t.Fatalf("%q in %s: Next(%s) = %s, oracle finds nothing before %s", expr, after.Location(), fmtT(after), fmtT(got), fmtT(limit))
		}
	}
}

func fuzzParseOne(t *testing.T, expr string, sec int64, zone uint8) {
	s, err := cron.Parse(expr)
	if err != nil {
		var pe *cron.ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("Parse(%q) error %T %v is not a *ParseError", expr, err, err)
		}
		switch pe.Field {
		case "expression", "second", "minute", "hour", "day-of-month", "month", "day-of-week", "year", "@every":
		default:
			t.Fatalf("Parse(%q): unknown Field %q", expr, pe.Field)
		}
		return
	}
	str := s.String()
	s2, err := cron.Parse(str)
	if err != nil {
		t.Fatalf("Parse(%q).String() = %q does not parse: %v", expr, str, err)
	}
	if s2.String() != str {
		t.Fatalf("Parse(%q).String() = %q, re-parsed String() = %q", expr, str, s2.String())
	}
	if s2.FixedTime() != s.FixedTime() || s2.Interval() != s.Interval() {
		t.Fatalf("Parse(%q) and Parse(%q) differ in FixedTime/Interval", expr, str)
	}
	_ = s.Explain()

	o, oerr := orParse(expr)
	if oerr != nil {
		o = nil // outside what the oracle reads; properties only
	} else if o.every == 0 && o.fixed != s.FixedTime() {
		t.Fatalf("Parse(%q).FixedTime() = %v, want %v", expr, s.FixedTime(), o.fixed)
	} else if o.every != s.Interval() {
		t.Fatalf("Parse(%q).Interval() = %v, want %v", expr, s.Interval(), o.every)
	}

	// Start instants between 1971 and 2098.
	const lo, span = 31536000, 4039286400 - 31536000
	u := sec % span
	if u < 0 {
		u += span
	}
	base := time.Unix(lo+u, 0)
	for _, z := range []string{"UTC", fuzzZones[int(zone)%len(fuzzZones)]} {
		loc := mustLoad(t, z)
		after := base.In(loc)
		checkSchedule(t, expr, s, o, after)
		// also just before the next transition of the zone
		if _, end := after.ZoneBounds(); !end.IsZero() {
			checkSchedule(t, expr, s, o, end.Add(-time.Duration(u%7200+1)*time.Second))
		}
	}
}

func FuzzParse(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, int64(1772952000+i*86400*37), uint8(i))
	}
	f.Fuzz(fuzzParseOne)
}

// FuzzNext explores start instants and zones for expressions from the
// random generator (valid by construction), against the oracle.
func FuzzNext(f *testing.F) {
	for i := range 16 {
		f.Add(uint64(i), int64(1772952000+i*86400*53), uint8(i))
	}
	f.Fuzz(func(t *testing.T, seed uint64, sec int64, zone uint8) {
		g := orGen{rand.New(rand.NewPCG(seed, seed>>32))}
		expr := g.expr(orAllOpts)
		fuzzParseOne(t, expr, sec, zone)
	})
}
