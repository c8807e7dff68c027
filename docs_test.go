package sundial

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestRunFieldsDocumented: the run field table of docs/api.md names every
// field a run has in JSON, and no other.
func TestRunFieldsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	section = section[strings.Index(section, "## Runs"):]
	section = section[:strings.Index(section, "\n| request | answer |")]
	documented := map[string]bool{}
	for line := range strings.Lines(section) {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		for name := range strings.SplitSeq(cells[1], ",") {
			documented[strings.Trim(strings.TrimSpace(name), "`")] = true
		}
	}
	rt := reflect.TypeFor[Run]()
	fields := map[string]bool{}
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = true
			if !documented[name] {
				t.Errorf("docs/api.md does not document the run field %q", name)
			}
		}
	}
	for name := range documented {
		if !fields[name] {
			t.Errorf("docs/api.md documents a run field %q that runs do not have", name)
		}
	}
}
