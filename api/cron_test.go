package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

func cronNextURL(q url.Values) string {
	return "/api/v1/cron/next?" + q.Encode()
}

func TestCronNext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		query url.Values
		want  cronNextResponse
	}{
		{
			name:  "six fields",
			query: url.Values{"expr": {"*/15 * * * * *"}, "from": {"2026-01-01T00:00:00Z"}, "count": {"3"}},
			want: cronNextResponse{
				Expr: "*/15 * * * * *", Timezone: "UTC", Description: "Every 15 seconds",
				Next: []string{"2026-01-01T00:00:15Z", "2026-01-01T00:00:30Z", "2026-01-01T00:00:45Z"},
			},
		},
		{
			name:  "five fields",
			query: url.Values{"expr": {"30 9 * * mon-fri"}, "from": {"2026-01-01T00:00:00Z"}, "count": {"2"}},
			want: cronNextResponse{
				Expr: "0 30 9 * * MON-FRI", Timezone: "UTC", Description: "At 09:30, on Monday through Friday",
				Next: []string{"2026-01-01T09:30:00Z", "2026-01-02T09:30:00Z"},
			},
		},
		{
			name:  "descriptor",
			query: url.Values{"expr": {"@daily"}, "from": {"2026-01-01T00:00:00Z"}, "count": {"2"}},
			want: cronNextResponse{
				Expr: "0 0 0 * * *", Timezone: "UTC", Description: "At 00:00",
				Next: []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"},
			},
		},
		{
			name:  "every",
			query: url.Values{"expr": {"@every 90s"}, "from": {"2026-01-01T00:00:00Z"}, "count": {"2"}},
			want: cronNextResponse{
				Expr: "@every 1m30s", Timezone: "UTC",
				Description: "Every 1 minute 30 seconds, counted from when the schedule starts",
				Next:        []string{"2026-01-01T00:01:30Z", "2026-01-01T00:03:00Z"},
			},
		},
		{
			name: "spring forward in New York",
			query: url.Values{"expr": {"0 30 2 * * *"}, "tz": {"America/New_York"},
				"from": {"2026-03-07T12:00:00Z"}, "count": {"2"}},
			want: cronNextResponse{
				Expr: "0 30 2 * * *", Timezone: "America/New_York", Description: "At 02:30",
				Next: []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"},
			},
		},
		{
			name: "spring forward in New York, skip_gap",
			query: url.Values{"expr": {"0 30 2 * * *"}, "tz": {"America/New_York"}, "dst": {"skip_gap"},
				"from": {"2026-03-07T12:00:00Z"}, "count": {"2"}},
			want: cronNextResponse{
				Expr: "0 30 2 * * *", Timezone: "America/New_York", Description: "At 02:30",
				Next: []string{"2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"},
			},
		},
		{
			name: "fall back in New York, repeat",
			query: url.Values{"expr": {"0 30 1 * * *"}, "tz": {"America/New_York"}, "dst": {"REPEAT"},
				"from": {"2026-10-31T12:00:00Z"}, "count": {"3"}},
			want: cronNextResponse{
				Expr: "0 30 1 * * *", Timezone: "America/New_York", Description: "At 01:30",
				Next: []string{"2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"},
			},
		},
		{
			name: "from with an offset, answered in tz",
			query: url.Values{"expr": {"0 0 9 * * *"}, "tz": {"Asia/Kolkata"},
				"from": {"2025-12-31T19:00:00-05:00"}, "count": {"1"}},
			want: cronNextResponse{
				Expr: "0 0 9 * * *", Timezone: "Asia/Kolkata", Description: "At 09:00",
				Next: []string{"2026-01-01T09:00:00+05:30"},
			},
		},
		{
			name:  "fractional from, whole-second fires",
			query: url.Values{"expr": {"* * * * * *"}, "from": {"2026-01-01T00:00:00.5Z"}, "count": {"1"}},
			want: cronNextResponse{
				Expr: "* * * * * *", Timezone: "UTC", Description: "Every second",
				Next: []string{"2026-01-01T00:00:01Z"},
			},
		},
		{
			name:  "defaults: now, five fires, UTC",
			query: url.Values{"expr": {"@hourly"}},
			want: cronNextResponse{
				Expr: "0 0 * * * *", Timezone: "UTC", Description: "At the start of every hour",
				Next: []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z",
					"2026-01-01T04:00:00Z", "2026-01-01T05:00:00Z"},
			},
		},
		{
			name:  "schedule over",
			query: url.Values{"expr": {"0 0 0 1 1 * 2020"}},
			want: cronNextResponse{
				Expr: "0 0 0 1 1 * 2020", Timezone: "UTC",
				Description: "At 00:00, on day 1 of the month, in January, in 2020",
				Next:        []string{},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			rec := b.do(t, http.MethodGet, cronNextURL(tt.query), "", nil)
			if rec.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200; body %s", rec.Code, rec.Body)
			}
			dec := json.NewDecoder(rec.Body)
			dec.DisallowUnknownFields()
			var got cronNextResponse
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got.Expr != tt.want.Expr || got.Timezone != tt.want.Timezone ||
				got.Description != tt.want.Description || !slices.Equal(got.Next, tt.want.Next) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if got.Next == nil {
				t.Error(`"next" is null, want []`)
			}
		})
	}
}

func TestCronNextWallClock(t *testing.T) {
	t.Parallel()
	b := &bundle{srv: NewServer(Config{})} // nil Now reads time.Now, nil Logger discards
	before := time.Now()
	rec := b.do(t, http.MethodGet, cronNextURL(url.Values{"expr": {"* * * * * *"}, "count": {"1"}}), "", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d; body %s", rec.Code, rec.Body)
	}
	var got cronNextResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	fire, err := time.Parse(time.RFC3339, got.Next[0])
	if err != nil {
		t.Fatal(err)
	}
	if !fire.After(before) {
		t.Errorf("first fire %v is not after %v", fire, before)
	}
}

func TestCronNextErrors(t *testing.T) {
	t.Parallel()
	const every = "* * * * * *"
	tests := []struct {
		name  string
		query url.Values
		want  errorDetail
	}{
		{
			name:  "expr missing",
			query: url.Values{},
			want:  errorDetail{Field: "expr", Message: "is required"},
		},
		{
			name:  "day of month out of range",
			query: url.Values{"expr": {"0 0 32 * *"}},
			want:  errorDetail{Field: "expr", Token: "32", Message: "day-of-month: value out of range 1-31"},
		},
		{
			name:  "wrong field count",
			query: url.Values{"expr": {"a b"}},
			want: errorDetail{Field: "expr", Token: "a b",
				Message: "expression: has 2 fields, want 5, 6 or 7 (sec min hour dom mon dow [year])"},
		},
		{
			name:  "every too short",
			query: url.Values{"expr": {"@every 500ms"}},
			want:  errorDetail{Field: "expr", Token: "500ms", Message: "@every: interval must be at least 1s"},
		},
		{
			name:  "unknown dst",
			query: url.Values{"expr": {every}, "dst": {"sometimes"}},
			want:  errorDetail{Field: "dst", Token: "sometimes", Message: "must be one of vixie, skip_gap, repeat"},
		},
		{
			name:  "unknown zone",
			query: url.Values{"expr": {every}, "tz": {"Mars/Olympus_Mons"}},
			want:  errorDetail{Field: "tz", Token: "Mars/Olympus_Mons", Message: "not a known IANA time zone (for example Europe/Paris)"},
		},
		{
			name:  "server local zone",
			query: url.Values{"expr": {every}, "tz": {"Local"}},
			want:  errorDetail{Field: "tz", Token: "Local", Message: "not a known IANA time zone (for example Europe/Paris)"},
		},
		{
			name:  "zone path escape",
			query: url.Values{"expr": {every}, "tz": {"../../etc/passwd"}},
			want:  errorDetail{Field: "tz", Token: "../../etc/passwd", Message: "not a known IANA time zone (for example Europe/Paris)"},
		},
		{
			name:  "from not a time",
			query: url.Values{"expr": {every}, "from": {"yesterday"}},
			want:  errorDetail{Field: "from", Token: "yesterday", Message: "not an RFC 3339 time (for example 2026-01-01T00:00:00Z)"},
		},
		{
			name:  "from without zone",
			query: url.Values{"expr": {every}, "from": {"2026-01-01T00:00:00"}},
			want:  errorDetail{Field: "from", Token: "2026-01-01T00:00:00", Message: "not an RFC 3339 time (for example 2026-01-01T00:00:00Z)"},
		},
		{
			name:  "count zero",
			query: url.Values{"expr": {every}, "count": {"0"}},
			want:  errorDetail{Field: "count", Token: "0", Message: "must be an integer from 1 to 1000"},
		},
		{
			name:  "count too big",
			query: url.Values{"expr": {every}, "count": {"1001"}},
			want:  errorDetail{Field: "count", Token: "1001", Message: "must be an integer from 1 to 1000"},
		},
		{
			name:  "count negative",
			query: url.Values{"expr": {every}, "count": {"-3"}},
			want:  errorDetail{Field: "count", Token: "-3", Message: "must be an integer from 1 to 1000"},
		},
		{
			name:  "count not a number",
			query: url.Values{"expr": {every}, "count": {"five"}},
			want:  errorDetail{Field: "count", Token: "five", Message: "must be an integer from 1 to 1000"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			rec := b.do(t, http.MethodGet, cronNextURL(tt.query), "", nil)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400; body %s", rec.Code, rec.Body)
			}
			want := tt.want
			want.Code = sundial.EInvalid
			if got := errorOf(t, rec); got != want {
				t.Errorf("error = %+v\nwant %+v", got, want)
			}
		})
	}
}
