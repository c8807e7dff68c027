package cron_test

import (
	"testing"
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/sundialhq/sundial/cron"
)

// benchExprs are the expressions of the speed goal: typical, sparse and
// Quartz-style. Those robfig/cron cannot parse have an empty robfig column.
var benchExprs = []struct {
	name, expr string
	robfig     bool
}{
	{"every-second", "* * * * * *", true},
	{"every-15s", "*/15 * * * * *", true},
	{"every-5min", "0 */5 * * * *", true},
	{"hourly", "0 0 * * * *", true},
	{"weekdays-0930", "0 30 9 * * MON-FRI", true},
	{"business-hours", "0 */15 9-17 * * 1-5", true},
	{"monthly-1st", "0 0 0 1 * *", true},
	{"sparse-feb29", "0 0 0 29 2 *", true},
	{"quartz-LW", "0 0 12 LW * ?", false},
	{"quartz-6#3", "0 0 0 ? * 6#3", false},
	{"quartz-5L", "0 0 0 ? * 5L", false},
}

var sink time.Time

// BenchmarkNext measures one next-fire computation, Sundial and robfig/cron
// side by side, in UTC and in a zone with daylight saving. Starting instants
// are spread over a year so the sparse cases do not hit one lucky date.
func BenchmarkNext(b *testing.B) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		b.Fatal(err)
	}
	rparser := robfig.NewParser(robfig.Second | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)
	starts := make([]time.Time, 256)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range starts {
		starts[i] = base.Add(time.Duration(i)*34*time.Hour + time.Duration(i*7919)*time.Second)
	}
	for _, zone := range []*time.Location{time.UTC, ny} {
		in := make([]time.Time, len(starts))
		for i, t := range starts {
			in[i] = t.In(zone)
		}
		for _, c := range benchExprs {
			s, err := cron.Parse(c.expr)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(zone.String()+"/"+c.name+"/sundial", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					sink = s.Next(in[i&255])
					i++
				}
			})
			if !c.robfig {
				continue
			}
			r, err := rparser.Parse(c.expr)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(zone.String()+"/"+c.name+"/robfig", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					sink = r.Next(in[i&255])
					i++
				}
			})
		}
	}
}

// BenchmarkParse measures parsing a typical expression.
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cron.Parse("0 */15 9-17 * * MON-FRI"); err != nil {
			b.Fatal(err)
		}
	}
}
