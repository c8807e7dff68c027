package sundial_test

import (
	"os"
	"strings"
	"testing"

	"github.com/sundialhq/sundial/store/storetest"
)

// TestDowngradeDocumented: docs/design.md gives for a downgrade the very
// statements the conformance suite runs on every backend
// (storetest.DowngradeAttempts).
func TestDowngradeDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range storetest.DowngradeAttempts {
		if !strings.Contains(string(doc), "\n"+q+"\n") {
			t.Errorf("docs/design.md does not give the statement\n%s", q)
		}
	}
}
