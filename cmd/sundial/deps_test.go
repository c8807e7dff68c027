package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClusterPostgresDependencies runs two "sundial serve" processes on one
// PostgreSQL database against a loopback target. Two parents are
// backfilled over the same three hours, so that each logical time has a
// run of each parent, claimed by whichever node is free (both nodes at
// once): a child with join all fires exactly once per logical time after
// both parents succeeded, its request rendered with the parents' run id,
// status and result; a child of a parent that fails never fires, and each
// of its fires is recorded SKIPPED (UPSTREAM) once. A cycle is refused
// with 400 naming it.
func TestClusterPostgresDependencies(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("cluster test")
	}
	db := freshPostgres(t)
	bin := sundialBinary(t)

	var mu sync.Mutex
	got := map[string][]string{} // path -> bodies
	keys := map[string]int{}     // Idempotency-Key of a child's delivery -> count
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], string(body))
		if strings.HasPrefix(r.URL.Path, "/child") {
			keys[r.Header.Get("Idempotency-Key")]++
		}
		mu.Unlock()
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"rows":7}`)
		}
	}))
	defer hook.Close()
	count := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(got[path])
	}

	flags := []string{"--scheduler.dependency_refresh", "200ms"}
	nodes := []*proc{startProc(t, bin, db, flags...), startProc(t, bin, db, flags...)}
	n0, n1 := &node{url: nodes[0].url}, &node{url: nodes[1].url}
	hourly := func(name, path string) string {
		return fmt.Sprintf(`{"name":%q,"cron_expr":"0 0 * * * *","target_url":"%s%s","retry_policy":{"max_attempts":1}}`,
			name, hook.URL, path)
	}
	type created struct {
		ID int64 `json:"id"`
	}
	var extract, load, flaky, child, doomed created
	n0.do(t, "POST", "/api/v1/tasks", hourly("extract", "/ok"), 201, &extract)
	n0.do(t, "POST", "/api/v1/tasks", hourly("load", "/ok"), 201, &load)
	n1.do(t, "POST", "/api/v1/tasks", hourly("flaky", "/fail"), 201, &flaky)
	n1.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"report","target_url":"%s/child","join":"all",
		"depends_on":[{"task":"extract"},{"task":"load","on":"success"}],
		"body_template":"{\"extract\":\"{{parents.extract.status}}\",\"run\":\"{{parents.load.run_id}}\",\"rows\":{{parents.load.result}}}"}`,
		hook.URL), 201, &child)
	n0.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"publish","target_url":"%s/child-doomed",
		"depends_on":[{"task":"extract"},{"task":"flaky"}]}`, hook.URL), 201, &doomed)

	// A cycle through the API: 400 naming it.
	var e struct {
		Error struct {
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"error"`
	}
	n1.do(t, "PATCH", fmt.Sprintf("/api/v1/tasks/%d", extract.ID), `{"depends_on":[{"task":"report"}]}`, 400, &e)
	if e.Error.Field != "depends_on" || e.Error.Message != "depends_on: cycle extract -> report -> extract" {
		t.Fatalf("cycle: %+v", e.Error)
	}

	// Every node learns of a new child within scheduler.dependency_refresh
	// (200ms here): the parents' runs must end after that to count.
	time.Sleep(600 * time.Millisecond)
	now := time.Now().UTC()
	span := fmt.Sprintf(`{"from":%q,"to":%q}`, now.Add(-3*time.Hour).Truncate(time.Hour).Add(time.Second).Format(time.RFC3339),
		now.Format(time.RFC3339))
	for i, id := range []int64{extract.ID, load.ID, flaky.ID} {
		nodeOf := []*node{n0, n1, n0}[i]
		nodeOf.do(t, "POST", fmt.Sprintf("/api/v1/tasks/%d/backfill", id), span, 202, nil)
	}

	type run struct {
		ID         int64  `json:"id"`
		Status     string `json:"status"`
		SkipReason string `json:"skip_reason"`
		Trigger    string `json:"trigger"`
		FireKey    string `json:"fire_key"`
		NodeID     string `json:"node_id"`
		Error      string `json:"error"`
		Scheduled  string `json:"scheduled_time"`
	}
	runsOf := func(id int64) []run {
		var page struct {
			Items []run `json:"items"`
		}
		n0.do(t, "GET", fmt.Sprintf("/api/v1/runs?task_id=%d&limit=100", id), "", 200, &page)
		return page.Items
	}
	deadline := time.Now().Add(30 * time.Second)
	for count("/child") < 3 || len(runsOf(doomed.ID)) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %d deliveries of the child, runs of the doomed child %+v", count("/child"), runsOf(doomed.ID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A fourth delivery would come within a few claims: give the nodes
	// a few seconds to make one, if they would.
	time.Sleep(3 * time.Second)

	nodesSeen := map[string]bool{}
	for _, id := range []int64{extract.ID, load.ID} {
		for _, r := range runsOf(id) {
			nodesSeen[r.NodeID] = true
		}
	}
	t.Logf("the parents' runs ended on %d nodes", len(nodesSeen))

	childRuns, doomedRuns := runsOf(child.ID), runsOf(doomed.ID)
	mu.Lock()
	defer mu.Unlock()
	if n := len(got["/child"]); n != 3 {
		t.Fatalf("the child was delivered %d times, want once per logical time (3):\n%s", n, strings.Join(got["/child"], "\n"))
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("child fire %s delivered %d times", k, n)
		}
	}
	for _, b := range got["/child"] {
		var v struct {
			Extract string `json:"extract"`
			Run     string `json:"run"`
			Rows    struct {
				Rows int `json:"rows"`
			} `json:"rows"`
		}
		if err := json.Unmarshal([]byte(b), &v); err != nil || v.Extract != "SUCCESS" || v.Run == "" || v.Rows.Rows != 7 {
			t.Errorf("child's body %s: %+v, %v", b, v, err)
		}
	}
	if len(childRuns) != 3 {
		t.Fatalf("child runs: %+v", childRuns)
	}
	for _, r := range childRuns {
		if r.Trigger != "DEPENDENCY" || r.Status != "SUCCESS" || !strings.HasPrefix(r.FireKey, "d:") {
			t.Errorf("child run %+v", r)
		}
	}
	if n := len(got["/child-doomed"]); n != 0 {
		t.Errorf("the child of a failing parent was delivered %d times", n)
	}
	if len(doomedRuns) != 3 {
		t.Fatalf("doomed child runs: %+v", doomedRuns)
	}
	for _, r := range doomedRuns {
		if r.Status != "SKIPPED" || r.SkipReason != "UPSTREAM" || !strings.Contains(r.Error, "flaky ended FAILED") {
			t.Errorf("doomed child run %+v", r)
		}
	}
}

// TestCLIDependencies, end to end on one node against a loopback target:
// task get shows a child's parents, task deps both sides; a trigger of
// the parent fires the child once, its body rendered with the parent's
// run; a cycle is refused naming it.
func TestCLIDependencies(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: extract\ncron_expr: \"0 0 0 1 1 * 2099\"\ntarget_url: "+target.srv.URL+"/extract\n"+
		"---\nname: report\ntarget_url: "+target.srv.URL+"/report\ndepends_on: [{task: extract}]\njoin_deadline_seconds: 600\n"+
		"body_template: '{\"status\": \"{{parents.extract.status}}\", \"rows\": {{parents.extract.result}}}'\n")
	mustCLI(t, env, "task", "create", "-f", file)

	get := mustCLI(t, env, "task", "get", "report")
	if !strings.Contains(get, "Depends on:") || !strings.Contains(get, "all of extract (success), waiting up to 10m0s") ||
		!strings.Contains(get, "parents: After its parents (all)") {
		t.Errorf("task get report:\n%s", get)
	}
	deps := mustCLI(t, env, "task", "deps", "extract")
	if !strings.Contains(deps, "Parents:   -") || !strings.Contains(deps, "Children:  report") {
		t.Errorf("task deps extract:\n%s", deps)
	}
	var d taskDeps
	if err := json.Unmarshal([]byte(mustCLI(t, env, "task", "deps", "report", "-o", "json")), &d); err != nil ||
		len(d.Parents) != 1 || d.Parents[0].Task != "extract" || d.Join != "all" || d.JoinDeadline != 600 {
		t.Errorf("task deps report -o json: %+v, %v", d, err)
	}

	_ = mustCLI(t, env, "task", "trigger", "extract", "--wait")
	got := target.wait(t, 2, 10*time.Second)
	var child delivery
	for _, g := range got {
		if g.body != "" && strings.Contains(g.body, "status") {
			child = g
		}
	}
	if child.body != `{"status": "SUCCESS", "rows": {"ok":true}}` {
		t.Errorf("child's body %q", child.body)
	}

	patch := runCLI(t, env, "", "task", "patch", "extract", "-p", `{"depends_on":[{"task":"report"}]}`)
	if patch.err == nil || !strings.Contains(patch.err.Error(), "depends_on: cycle extract -> report -> extract") {
		t.Errorf("a cycle through task patch: %v %s", patch.err, patch.stderr)
	}
}
