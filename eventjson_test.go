package sundial

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEventAppendJSON: AppendJSON writes the bytes encoding/json's Marshal
// writes, and fails where Marshal fails, over many random events: every
// field of Event filled (set or empty, each in turn), strings with what
// must be escaped, times in odd zones and out of RFC 3339's range. A field
// added to Event, EventTask or EventRun is filled too, so this test fails
// until AppendJSON writes it.
func TestEventAppendJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		var e Event
		fillRandom(t, rng, reflect.ValueOf(&e).Elem())
		checkAppendJSON(t, i, &e)
	}
}

// FuzzEventAppendJSON: whatever the strings and numbers of an event,
// AppendJSON writes what Marshal writes.
func FuzzEventAppendJSON(f *testing.F) {
	f.Add("a1b2", "task-1", "<b>&\"\\\n\t\x00\x1f\u2028\u2029é\xff\xe2\x80", int64(1), 2, int64(1767225600000000))
	f.Fuzz(func(t *testing.T, id, name, text string, n int64, small int, micros int64) {
		at := time.UnixMicro(micros)
		e := Event{ID: id, Kind: EventKind(text), At: at, NodeID: name,
			Task: EventTask{ID: n, Name: name, Status: TaskStatus(text), Version: n, Changed: []string{text, name}},
			Run: &EventRun{ID: n, Status: RunStatus(text), SkipReason: SkipReason(name), Trigger: Trigger(text),
				ScheduledTime: at, Attempt: small, Delivery: small, StartedAt: &at, FinishedAt: &at, DueAt: &at,
				HTTPStatus: small, Error: text, MissedCount: small}}
		checkAppendJSON(t, 0, &e)
	})
}

// checkAppendJSON fails t unless AppendJSON writes e as Marshal does, after
// what b held, and leaves b as it was where Marshal fails.
func checkAppendJSON(t *testing.T, i int, e *Event) {
	t.Helper()
	want, wantErr := json.Marshal(e)
	got, err := e.AppendJSON([]byte("prefix"))
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("event %d %+v: AppendJSON's error %v, Marshal's %v", i, e, err, wantErr)
	case err != nil && string(got) != "prefix":
		t.Fatalf("event %d: AppendJSON failed and left %q", i, got)
	case err == nil && string(got) != "prefix"+string(want):
		t.Fatalf("event %d:\nAppendJSON %s\nMarshal    %s", i, got[len("prefix"):], want)
	}
}

// fillRandom sets v, of any type an Event is made of, to a random value:
// empty a quarter of the time.
func fillRandom(t *testing.T, rng *rand.Rand, v reflect.Value) {
	t.Helper()
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(randomTime(rng)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fillRandom(t, rng, v.Field(i))
		}
		return
	case reflect.Pointer:
		if rng.IntN(4) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			fillRandom(t, rng, v.Elem())
		}
		return
	}
	if rng.IntN(4) == 0 {
		return // empty
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomString(rng))
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{1, -1, rng.Int64N(1000), rng.Int64() - rng.Int64(), 1<<53 + 1}[rng.IntN(5)])
	case reflect.Slice:
		n := rng.IntN(4)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fillRandom(t, rng, v.Index(i))
		}
	default:
		t.Fatalf("no random %s: teach fillRandom (and AppendJSON) its type", v.Type())
	}
}

// randomString is a string of pieces among which those JSON escapes, and
// invalid UTF-8.
func randomString(rng *rand.Rand) string {
	pieces := []string{"a", "run.finished", "SUCCESS", " ", "é", "日本", "😀", "<", ">", "&", `"`, `\`, "/",
		"\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "\u2028", "\u2029", "\ufffd",
		"\xff", "\xe2\x80", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80"}
	var b strings.Builder
	for range rng.IntN(12) {
		if rng.IntN(3) == 0 {
			b.WriteByte(byte(rng.IntN(256)))
		} else {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
	}
	return b.String()
}

// randomTime is a time in years 0 to 9999 in one of several zones, or now
// and then one that RFC 3339 cannot write (a year or a zone offset out of
// its range).
func randomTime(rng *rand.Rand) time.Time {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("", 0), time.FixedZone("IST", 5*3600+1800),
		time.FixedZone("", -(9*3600 + 30*60 + 15)), time.FixedZone("", 23*3600+59*60)}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		zones = append(zones, ny)
	}
	min, max := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	at := time.Unix(min+rng.Int64N(max-min), [...]int64{0, 1000 * rng.Int64N(1e6), rng.Int64N(1e9)}[rng.IntN(3)])
	switch rng.IntN(50) {
	case 0:
		return at.AddDate(10000, 0, 0) // past 9999
	case 1:
		return at.In(time.FixedZone("", 24*3600)) // an offset of 24 hours
	case 2:
		return time.Now() // with a monotonic reading
	}
	return at.In(zones[rng.IntN(len(zones))])
}

// BenchmarkEventJSON: a run.finished event as a burst makes it, encoded by
// AppendJSON and by encoding/json.
func BenchmarkEventJSON(b *testing.B) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 123456789, time.UTC)
	started, finished := at.Add(time.Millisecond), at.Add(4*time.Millisecond)
	e := Event{ID: NewEventID(finished, "a1b2c3.42"), Kind: EventRunFinished, At: finished, NodeID: "node-7f3a",
		Task: EventTask{ID: 100042, Name: "burst-000042"},
		Run: &EventRun{ID: 200042, Status: RunSuccess, Trigger: TriggerSchedule, ScheduledTime: at, Attempt: 1,
			Delivery: 1, StartedAt: &started, FinishedAt: &finished, HTTPStatus: 200}}
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = e.AppendJSON(buf[:0])
		}
	})
	b.Run("Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(&e)
		}
	})
}
