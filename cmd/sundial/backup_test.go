package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBackupRestore backs up a running node's database while its task
// fires every second, stops the node, and starts a new node on the copy
// a few seconds later: the schedule resumes from the copy, and the fires
// the copy missed are caught up by the task's catch-up mode (FULL), every
// second accounted for once.
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	h := newHook(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "sundial.db")
	flags := []string{"--scheduler.lookahead", "2s", "--scheduler.misfire_threshold", "1s"}
	n := startNode(t, db, flags...)
	var task taskJSON
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"backed-up","cron_expr":"* * * * * *",
		"target_url":%q,"overlap_action":"PARALLEL","catch_up_mode":"FULL"}`, h.srv.URL), 201, &task)
	h.wait(t, 2, 10*time.Second)

	copyPath := filepath.Join(dir, "copy.db")
	res := runArgs(t, "backup", "--db", "sqlite:"+db, "--to", copyPath)
	if res.err != nil {
		t.Fatalf("backup: %v\n%s", res.err, res.stderr)
	}
	if !strings.Contains(res.stdout, "Backed up "+db+" to "+copyPath) || !strings.Contains(res.stdout, copyPath+".key") {
		t.Errorf("backup printed %q; want the copy and its key file named", res.stdout)
	}
	if key, err := os.ReadFile(db + ".key"); err != nil {
		t.Fatal(err)
	} else if cp, err := os.ReadFile(copyPath + ".key"); err != nil || string(cp) != string(key) {
		t.Errorf("the key file's copy: %q, %v", cp, err)
	}
	// Not over an existing file, unless forced.
	res = runArgs(t, "backup", "--db", "sqlite:"+db, "--to", copyPath)
	if res.err == nil || !strings.Contains(res.err.Error(), copyPath+".key exists: give --force") {
		t.Errorf("backup onto the copy: %v; want a refusal naming --force", res.err)
	}
	if res = runArgs(t, "backup", "--db", "sqlite:"+db, "--to", copyPath, "--force"); res.err != nil {
		t.Fatalf("backup --force: %v", res.err)
	}
	h.wait(t, 1, 10*time.Second)
	n.stop(t)

	// Down for five seconds after the backup: past the 2 s lookahead plus
	// the 1 s threshold.
	time.Sleep(5 * time.Second)
	n2 := startNode(t, copyPath, flags...)
	h.wait(t, 1, 10*time.Second)
	deadline := time.Now().Add(15 * time.Second)
	for {
		var runs runList
		n2.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/runs?limit=200", task.ID), "", 200, &runs)
		ok, why := catchUpDone("FULL", runs.Items)
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s; runs: %+v", why, runs.Items)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBackupErrors: backup says what is wrong and writes nothing.
func TestBackupErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
		code int
	}{
		{"no --to", []string{"--db", "sqlite:" + filepath.Join(dir, "a.db")}, "--to FILE is required", 2},
		{"not SQLite", []string{"--db", "postgres://u:secret@db/x", "--to", filepath.Join(dir, "b.db")},
			"db postgres://u:***@db/x: only a SQLite database", 2},
		{"no database", []string{"--db", "sqlite:" + filepath.Join(dir, "none.db"), "--to", filepath.Join(dir, "c.db")},
			"none.db: no such file or directory", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runArgs(t, append([]string{"backup"}, tc.args...)...)
			if res.err == nil || !strings.Contains(res.err.Error(), tc.want) || exitCode(res.err) != tc.code {
				t.Errorf("backup = %v (exit %d), want %q, exit %d", res.err, exitCode(res.err), tc.want, tc.code)
			}
		})
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("files written: %v", files)
	}
}
