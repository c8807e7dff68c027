package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCLIAutoPause, end to end against a loopback target that fails: a
// task with pause_after_failures 2 is disabled by sundial at its second
// failure in a row, with the reason shown by the API.
func TestCLIAutoPause(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	target.status = 503
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: fragile\ncron_expr: \"0 0 0 1 1 * 2099\"\npause_after_failures: 2\ntarget_url: "+target.srv.URL+"/f\n")
	mustCLI(t, env, "task", "create", "-f", file)
	type view struct {
		Status             string `json:"status"`
		PauseAfterFailures int    `json:"pause_after_failures"`
		DisabledReason     string `json:"disabled_reason"`
		DisabledBy         string `json:"disabled_by"`
	}
	get := func() view {
		var v view
		if err := json.Unmarshal([]byte(mustCLI(t, env, "task", "get", "fragile", "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	_ = runCLI(t, env, "", "task", "trigger", "fragile", "--wait")
	target.wait(t, 1, 10*time.Second)
	if v := get(); v.Status != "ENABLED" || v.PauseAfterFailures != 2 {
		t.Fatalf("after one failure: %+v", v)
	}
	_ = runCLI(t, env, "", "task", "trigger", "fragile", "--wait")
	target.wait(t, 1, 10*time.Second)
	waitFor(t, func() bool { return get().Status == "DISABLED" })
	if v := get(); v.DisabledBy != "sundial" || !strings.Contains(v.DisabledReason, "paused after 2 consecutive failures") ||
		!strings.Contains(v.DisabledReason, "HTTP 503") {
		t.Errorf("paused task: %+v", v)
	}
}
