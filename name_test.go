package sundial

import "testing"

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"timezone", "timezone", 0},
		{"timezon", "timezone", 1},   // a letter dropped
		{"timezonee", "timezone", 1}, // added
		{"timezome", "timezone", 1},  // changed
		{"tiemzone", "timezone", 1},  // two swapped
		{"kitten", "sitting", 3},
		{"priorty", "priority", 1},
		{"名前", "名字", 1}, // runes, not bytes
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestNearestName(t *testing.T) {
	t.Parallel()
	known := []string{"name", "description", "cron_expr", "run_at", "timezone", "timeout_seconds",
		"max_concurrency", "max_queue", "retry_policy", "status", "priority", "callback_method"}
	for _, tt := range []struct{ name, want string }{
		{"timezon", "timezone"},
		{"TimeZone", "timezone"},
		{"NAME", "name"},
		{"nmae", "name"}, //nolint:misspell // a misspelling on purpose
		{"stauts", "status"},
		{"max_queu", "max_queue"},
		{"max_concurency", "max_concurrency"},
		{"retry_polcy", "retry_policy"},
		{"cron", "cron_expr"}, // the start of one known name
		{"max", ""},           // the start of two
		{"runat", "run_at"},   // one letter dropped
		{"x", ""},             // too short to guess
		{"schedule", ""},      // nothing near
		{"timeout", "timeout_seconds"},
		{"callback", "callback_method"},
		{"priorities", "priority"},
		{"weight", ""},
	} {
		if got := NearestName(tt.name, known); got != tt.want {
			t.Errorf("NearestName(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := UnknownName("field", "timezon", known); got != `unknown field "timezon"; did you mean "timezone"?` {
		t.Errorf("UnknownName = %q", got)
	}
	if got := UnknownName("key", "zzz", known); got != `unknown key "zzz"` {
		t.Errorf("UnknownName = %q", got)
	}
}
