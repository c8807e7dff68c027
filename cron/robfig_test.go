package cron_test

// Differential test against github.com/robfig/cron/v3 on the syntax both
// implementations share, in zones without daylight saving (where the Vixie
// rule and robfig's behaviour coincide).
//
// Deliberately excluded: Quartz L/W/#, 7 for Sunday (robfig rejects it), the
// year field, a bare "*" inside a list, and "*/1" in the day fields (robfig
// treats "*/1" as unrestricted for the OR rule; doc.go treats it as
// restricted).

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/sundialhq/sundial/cron"
)

var rfParser = robfig.NewParser(robfig.Second | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

var rfOpts = orGenOpts{question: true, descr: true}

// rfExpr generates an expression robfig and doc.go read the same way.
func rfExpr(g orGen) string {
	for {
		e := g.expr(rfOpts)
		if strings.HasPrefix(e, "@") {
			return e
		}
		f := strings.Fields(e)
		if hasStarOne(f[3]) || hasStarOne(f[5]) {
			continue
		}
		return e
	}
}

func hasStarOne(field string) bool {
	for it := range strings.SplitSeq(field, ",") {
		if it == "*/1" {
			return true
		}
	}
	return false
}

func TestRobfigDifferential(t *testing.T) {
	t.Parallel()
	n := 15000
	if testing.Short() {
		n = 1000
	}
	zones := []string{"UTC", "Asia/Kolkata", "Asia/Tokyo", "Etc/GMT+5"}
	r := rand.New(rand.NewPCG(3, 0x5eed))
	g := orGen{r}
	compared, skipped, failures := 0, 0, 0
	for range n {
		expr := rfExpr(g)
		loc := mustLoad(t, zones[r.IntN(len(zones))])
		after := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).
			Add(time.Duration(r.Int64N(90*365*86400)) * time.Second).In(loc)
		if r.IntN(8) == 0 {
			after = after.Add(time.Duration(r.Int64N(int64(time.Second))))
		}
		rs, err := rfParser.Parse(expr)
		if err != nil {
			t.Fatalf("robfig cannot parse generated %q: %v", expr, err)
		}
		s, err := cron.Parse(expr)
		if err != nil {
			if o, oerr := orParse(expr); oerr == nil && orNeverFires(o) {
				continue // see TestSpecNeverFires
			}
			t.Errorf("Parse(%q): %v (robfig accepts it)", expr, err)
			failures++
			continue
		}
		at := after
		for step := range 4 {
			want := rs.Next(at)
			if want.IsZero() {
				skipped++
				break // robfig gives up after five years
			}
			got := s.Next(at)
			compared++
			if !got.Equal(want) {
				// Ask the oracle who is right before blaming the implementation.
				o, _ := orParse(expr)
				ow, ok := o.next(at, want.AddDate(0, 0, 1))
				if ok && ow.Equal(got) {
					t.Logf("robfig disagrees with both the oracle and the implementation: %q in %s after %s: robfig %s, ours %s",
						expr, loc, fmtT(at), fmtT(want), fmtT(got))
					break
				}
				t.Errorf("%q in %s: Next(%s) = %s, robfig %s, oracle %s (step %d from %s)",
					expr, loc, fmtT(at), fmtT(got), fmtT(want), fmtT(ow), step, fmtT(after))
				failures++
				break
			}
			if got.Location().String() != loc.String() {
				t.Errorf("%q: Next returned location %s, want %s", expr, got.Location(), loc)
				failures++
				break
			}
			at = got
		}
		if failures >= 15 {
			t.Fatalf("too many failures")
		}
	}
	t.Logf("%d comparisons, %d chains cut short by robfig's five-year limit", compared, skipped)
}

// The known intentional difference, pinned down: "*/1" in a day field is a
// restriction for doc.go's OR rule but not for robfig.
func TestRobfigStarOneDifference(t *testing.T) {
	t.Parallel()
	const expr = "0 0 0 */1 * MON"
	after := mustTime(t, jan1)
	rs, err := rfParser.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cron.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rs.Next(after), mustTime(t, "2026-01-05T00:00:00Z"); !got.Equal(want) {
		t.Fatalf("robfig changed: %s", got)
	}
	if got, want := s.Next(after), mustTime(t, "2026-01-02T00:00:00Z"); !got.Equal(want) {
		t.Errorf("Next = %s, want %s (OR of two restricted fields)", got, want)
	}
}
