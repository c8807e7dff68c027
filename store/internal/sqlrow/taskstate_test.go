package sqlrow

import (
	"reflect"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

func TestLagsRoundTrip(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var s sundial.TaskState
	for i := range 150 {
		s.AddLag(t0.Add(time.Duration(i)*time.Second), time.Duration(i*7)*time.Millisecond)
	}
	s.AddLag(t0.Add(time.Hour+1500*time.Microsecond), -3*time.Millisecond) // a manual run's, early
	text := EncodeLags(s.Lags)
	if len(text) > 1200 {
		t.Errorf("100 lags of a task firing every second take %d bytes", len(text))
	}
	got, err := DecodeLags(text)
	if err != nil || !reflect.DeepEqual(got, s.Lags) {
		t.Fatalf("DecodeLags(%q) = %v, %v; want %v", text, got, err, s.Lags)
	}
	if got, err := DecodeLags(""); got != nil || err != nil || EncodeLags(nil) != "" {
		t.Errorf("none: %v, %v", got, err)
	}
	for _, bad := range []string{"1", "1:x", "1:2,-1:3", "1:2,", ":"} {
		if _, err := DecodeLags(bad); err == nil {
			t.Errorf("DecodeLags(%q) took it", bad)
		}
	}
}
