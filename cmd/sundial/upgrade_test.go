package main

import (
	"archive/tar"
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundialhq/sundial/store/migrate"
)

// The rolling upgrade test builds the previous release, named by
// .ci/previous-release ("TAG SHA"), from the repository's history and runs
// it beside the current code on one database, as an operator upgrading a
// cluster one node at a time would (docs/upgrading.md). It needs the
// commit (a full clone; the tag itself need not have been fetched) and the
// Go toolchain; the built binary is kept in the user's cache directory,
// keyed by the commit, so only the first run pays for the build.

// previousRelease reads .ci/previous-release: the tag of the previous
// release and the full hash of its commit.
func previousRelease(t *testing.T) (tag, sha string) {
	t.Helper()
	b, err := os.ReadFile("../../.ci/previous-release")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || !strings.HasPrefix(f[0], "v") || len(f[1]) != 40 {
		t.Fatalf(".ci/previous-release = %q, want one line \"vX.Y.Z <full commit hash>\"", b)
	}
	return f[0], f[1]
}

var (
	prevOnce sync.Once
	prevPath string
	prevErr  error
)

// previousBinary returns the previous release's binary, built once from
// `git archive` of its commit (with its tag as the version) and cached.
func previousBinary(t *testing.T) (tag, bin string) {
	t.Helper()
	tag, sha := previousRelease(t)
	if err := exec.Command("git", "-C", "../..", "cat-file", "-e", sha+"^{commit}").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the previous release's commit %s (%s) is not in this clone: fetch the full history (git fetch --unshallow)", sha, tag)
		}
		t.Skipf("the previous release's commit %s (%s) is not in this clone", sha, tag)
	}
	prevOnce.Do(func() { prevPath, prevErr = buildRelease(t, tag, sha) })
	if prevErr != nil {
		t.Fatal(prevErr)
	}
	return tag, prevPath
}

// buildRelease builds cmd/sundial of commit sha, stamped with version tag,
// into the user's cache directory, unless it is there already.
func buildRelease(t *testing.T, tag, sha string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "sundial-test", "release-"+sha, "sundial")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	src, err := os.MkdirTemp("", "sundial-release")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	var archive, stderr bytes.Buffer
	cmd := exec.Command("git", "-C", "../..", "archive", "--format=tar", sha)
	cmd.Stdout, cmd.Stderr = &archive, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git archive %s: %v\n%s", sha, err, stderr.String())
	}
	if err := untar(&archive, src); err != nil {
		return "", fmt.Errorf("extract %s: %w", sha, err)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	tmp := bin + ".tmp" + randomName("")
	begin := time.Now()
	build := exec.Command(goTool(t), "build", "-buildvcs=false",
		"-ldflags", "-X main.version="+tag, "-o", tmp, "./cmd/sundial")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s (%s): %v\n%s", tag, sha, err, out)
	}
	t.Logf("built %s (%s) in %s", tag, sha[:12], time.Since(begin).Round(time.Millisecond))
	return bin, os.Rename(tmp, bin)
}

// untar writes the regular files and directories of a tar stream under dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("%q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(name, b, 0o644)
			}
		}
		if err != nil {
			return err
		}
	}
}

// newMigrations lists the migration files of dialect that the working
// tree has and commit sha had not: what a node of the current code
// applies to a database of the previous release.
func newMigrations(t *testing.T, sha, dialect string) []string {
	t.Helper()
	dir := "store/" + dialect + "/migrations/"
	out, err := exec.Command("git", "-C", "../..", "ls-tree", "--name-only", sha, dir).Output()
	if err != nil {
		t.Fatalf("git ls-tree %s %s: %v", sha, dir, err)
	}
	old := strings.Fields(string(out))
	cur, err := filepath.Glob(filepath.Join("../..", dir, "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, f := range cur {
		if !slices.Contains(old, dir+filepath.Base(f)) {
			added = append(added, filepath.Base(f))
		}
	}
	return added
}

func TestUpgradePostgres(t *testing.T) {
	t.Parallel()
	rollingUpgrade(t, freshPostgres(t), "postgres")
}

func TestUpgradeMySQL(t *testing.T) {
	t.Parallel()
	rollingUpgrade(t, freshMySQL(t), "mysql")
}

// rollingUpgrade runs a node of the previous release alone on a fresh
// database with every-second tasks, starts a node of the current code
// beside it (which applies its newer migrations while the old one fires),
// lets both fire, stops the old one with SIGTERM, then starts the previous
// release again beside the new node (a node rolled back, on a schema a
// newer version migrated) and stops everything. Every scheduled second in
// between is delivered exactly once; both versions deliver while they run
// together; the worst lag around the handover is reported.
func rollingUpgrade(t *testing.T, db, dialect string) {
	if testing.Short() {
		t.Skip("rolling upgrade test")
	}
	tag, oldBin := previousBinary(t)
	_, sha := previousRelease(t)
	out, err := exec.Command(oldBin, "version").Output()
	if v := strings.TrimSpace(string(out)); err != nil || v != "sundial "+tag && !strings.HasPrefix(v, "sundial "+tag+" ") {
		t.Fatalf("%s version = %q, %v; want %s", oldBin, out, err, tag)
	}
	newBin := sundialBinary(t)
	const tasks = 30

	var mu sync.Mutex
	var got []arrival
	arrived := make(chan struct{}, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sched, _ := time.Parse(time.RFC3339Nano, r.Header.Get("X-Sundial-Scheduled-Time"))
		a := arrival{task: r.Header.Get("X-Sundial-Task-Id"), scheduled: sched, at: time.Now(),
			key: r.Header.Get("Idempotency-Key"), node: r.Header.Get("X-Sundial-Node"), completed: true}
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	// together runs two nodes side by side for at least d, and on until
	// both have delivered a fire scheduled since since (the runs coming due go to
	// whichever node claims first, and a node that joins finds the next
	// seconds claimed already), for 20 s at most.
	together := func(since time.Time, d time.Duration, a, b *proc) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		minimum := time.After(d)
		for {
			select {
			case <-minimum:
				minimum = nil
			case <-arrived:
			case <-timeout:
				t.Errorf("in 20 s side by side, nodes %s and %s did not both deliver a fire", a.nodeID(), b.nodeID())
				return
			}
			mu.Lock()
			by := map[string]bool{}
			for _, x := range got {
				if !x.scheduled.Before(since) {
					by[x.node] = true
				}
			}
			mu.Unlock()
			if minimum == nil && by[a.nodeID()] && by[b.nodeID()] {
				return
			}
		}
	}

	started := time.Now()
	old := startProc(t, oldBin, db)
	n := &node{url: old.url}
	for i := range tasks {
		n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":"u%d","cron_expr":"* * * * * *",
			"target_url":%q,"overlap_action":"PARALLEL","timeout_seconds":10}`, i, hook.URL), 201, nil)
	}
	begin := time.Now()
	time.Sleep(5 * time.Second)

	added := newMigrations(t, sha, dialect)
	joined := time.Now()
	cur := startProc(t, newBin, db)
	t.Logf("current code joined at +%s, applying %d migrations the previous release lacks %v",
		joined.Sub(begin).Round(time.Millisecond), len(added), added)
	together(joined, 8*time.Second, old, cur)

	stopping := time.Now()
	oldID := old.nodeID()
	old.stop(t)
	stopped := time.Now()
	t.Logf("%s stopped (SIGTERM) at +%s in %s", tag, stopping.Sub(begin).Round(time.Millisecond),
		stopped.Sub(stopping).Round(time.Millisecond))
	time.Sleep(5 * time.Second)

	// A rollback: the previous release starts on the schema the current
	// code migrated, and must run beside it.
	rejoined := time.Now()
	back := startProc(t, oldBin, db)
	together(rejoined, 6*time.Second, back, cur)
	// The last seconds before the end are not checked (they may be cut
	// off by the stop): 3 s more keeps the fires together saw.
	time.Sleep(3 * time.Second)
	end := time.Now()
	if len(added) > 0 && !strings.Contains(back.out.String(), "does not know") {
		t.Errorf("%s started on a schema with migrations it does not know (%v) without saying so:\n%s", tag, added, back.out)
	}
	back.stop(t)
	cur.stop(t)

	mu.Lock()
	defer mu.Unlock()
	from, to := begin.Truncate(time.Second).Add(2*time.Second), end.Add(-2*time.Second).Truncate(time.Second)
	type fire struct {
		task string
		sec  int64
	}
	byFire := map[fire][]arrival{}
	for _, a := range got {
		if a.scheduled.Before(from) || !a.scheduled.Before(to) {
			continue
		}
		f := fire{a.task, a.scheduled.Unix()}
		byFire[f] = append(byFire[f], a)
	}
	taskIDs := map[string]bool{}
	for f := range byFire {
		taskIDs[f.task] = true
	}
	if len(taskIDs) != tasks {
		t.Fatalf("deliveries for %d tasks, want %d", len(taskIDs), tasks)
	}
	lost, dups := 0, 0
	for task := range taskIDs {
		for sec := from.Unix(); sec < to.Unix(); sec++ {
			switch as := byFire[fire{task, sec}]; len(as) {
			case 0:
				lost++
				t.Errorf("fire of task %s at %s was never delivered", task, time.Unix(sec, 0).UTC().Format(time.TimeOnly))
			case 1:
			default:
				dups++
				t.Errorf("fire of task %s at %s delivered %d times (nodes %s, %s)", task,
					time.Unix(sec, 0).UTC().Format(time.TimeOnly), len(as), as[0].node, as[1].node)
			}
		}
	}

	// Who delivered what: the previous release alone, both together, the
	// current code alone, and again both after the rollback.
	curID, backID := cur.nodeID(), back.nodeID()
	share := func(lo, hi time.Time) map[string]int {
		m := map[string]int{}
		for _, as := range byFire {
			for _, a := range as {
				if !a.scheduled.Before(lo) && a.scheduled.Before(hi) {
					m[a.node]++
				}
			}
		}
		return m
	}
	both := share(joined, stopping)
	if both[oldID] == 0 || both[curID] == 0 {
		t.Errorf("while %s and the current code ran together, deliveries by node %v; want both (%s, %s)",
			tag, both, oldID, curID)
	}
	rollback := share(rejoined, end)
	if rollback[backID] == 0 || rollback[curID] == 0 {
		t.Errorf("after the rollback, deliveries by node %v; want both %s (%s) and the current code (%s)",
			rollback, backID, tag, curID)
	}

	first := map[string]time.Time{}
	for _, a := range got {
		if f, ok := first[a.node]; !ok || a.at.Before(f) {
			first[a.node] = a.at
		}
	}
	t.Logf("first delivery of %s after it started: %s; of the current code: %s; of %s rolled back: %s",
		tag, first[oldID].Sub(started).Round(time.Millisecond), first[curID].Sub(joined).Round(time.Millisecond),
		tag, first[backID].Sub(rejoined).Round(time.Millisecond))

	// Lag around the handover: fires due from the SIGTERM until 3 s after
	// the old node exited.
	worst, overall := time.Duration(0), time.Duration(0)
	for _, as := range byFire {
		for _, a := range as {
			lag := a.at.Sub(a.scheduled)
			overall = max(overall, lag)
			if !a.scheduled.Before(stopping.Truncate(time.Second)) && a.scheduled.Before(stopped.Add(3*time.Second)) {
				worst = max(worst, lag)
			}
		}
	}
	t.Logf("%s on %s: %d fires in %s..%s, %d lost, %d delivered twice; together %v, after the rollback %v; "+
		"worst lag at the handover %s, overall %s",
		tag, dialect, len(byFire), from.Format(time.TimeOnly), to.Format(time.TimeOnly), lost, dups,
		both, rollback, worst.Round(time.Millisecond), overall.Round(time.Millisecond))
	if t.Failed() {
		t.Logf("%s output:\n%s", tag, tail(old.out.String(), 40))
		t.Logf("current code output:\n%s", tail(cur.out.String(), 40))
		t.Logf("%s (rolled back) output:\n%s", tag, tail(back.out.String(), 40))
	}
}

// TestServeNewerSchema: a node starts on a database that a newer release
// migrated (a migration it does not know), as a node rolled back one
// release must, and says so; once a newer migration has recorded that it
// needs a newer Sundial (migrate.RequiresSetting), serve and migrate refuse
// with a message that says what to run. On SQLite, and on PostgreSQL and
// MySQL when their servers are given.
func TestServeNewerSchema(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "sundial.db")
		newerSchema(t, "sqlite:"+path, "sqlite", path)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn := freshPostgres(t)
		newerSchema(t, dsn, "pgx", dsn)
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		dsn := freshMySQL(t)
		// mysql://user@host:port/name, as the driver spells it.
		rest := strings.TrimPrefix(dsn, "mysql://")
		user, rest, _ := strings.Cut(rest, "@")
		addr, name, _ := strings.Cut(rest, "/")
		newerSchema(t, dsn, "mysql", user+"@tcp("+addr+")/"+name)
	})
}

// newerSchema runs TestServeNewerSchema on the database dsn names, which
// sql.Open(driver, source) opens too.
func newerSchema(t *testing.T, dsn, driver, source string) {
	n := startNodeDB(t, dsn)
	n.stop(t)
	db, err := sql.Open(driver, source)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Values written out: one statement for every dialect's placeholders.
	const future = 999999
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (999999, 0)`); err != nil {
		t.Fatal(err)
	}
	n = startNodeDB(t, dsn)
	n.stop(t)
	if !strings.Contains(n.out.String(), "database has a migration this binary does not know") ||
		!strings.Contains(n.out.String(), fmt.Sprint("version=", future)) {
		t.Errorf("serve on a newer schema said:\n%s\nwant the unknown migration named", n.out)
	}

	if _, err := db.Exec(`INSERT INTO settings (name, value) VALUES ('` + migrate.RequiresSetting + `', '999999')`); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("needs a Sundial that knows migration %d", future)
	for _, args := range [][]string{{"serve", "--listen", "127.0.0.1:0"}, {"migrate"}} {
		cmd := args[0]
		res := runArgs(t, append(args, "--db", dsn)...)
		if res.err == nil || !strings.Contains(res.err.Error(), want) || !strings.Contains(res.err.Error(), "run the release that migrated it") {
			t.Errorf("%s on a schema that needs a newer Sundial = %v, want %q", cmd, res.err, want)
		}
	}
}
