package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLICalendar, end to end through the binary against a loopback
// target: a task every 3 s whose calendar covers today records its fires
// SKIPPED with reason CALENDAR and delivers none; once today is taken out
// of the calendar (sundial calendar rm NAME ENTRY), its fires are delivered
// again, and no fire is both. The calendar cannot be deleted while the task
// references it; task get shows the task's calendars and DST policy.
func TestCLICalendar(t *testing.T) {
	t.Parallel()
	target := newHook(t)
	// Planned 2 s ahead: a fire every 3 s is planned one at a time, so a
	// change of the calendar reaches the next fires within seconds.
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--scheduler.poll_interval", "500ms", "--scheduler.lookahead", "2s")
	env := clientEnv(t, n.url)
	now := time.Now().UTC()
	days := now.AddDate(0, 0, -1).Format("2006-01-02") + ".." + now.AddDate(0, 0, 1).Format("2006-01-02")
	out := mustCLI(t, env, "calendar", "add", "off", days, "0 0 0 25 12 *", "--timezone", "UTC", "--description", "around today")
	if out != "calendar/off created with 2 entries\n" {
		t.Fatalf("calendar add: %q", out)
	}
	if ls := mustCLI(t, env, "calendar", "ls"); !regexp.MustCompile(`(?m)^off +UTC +2 +1 +.*around today$`).MatchString(ls) {
		t.Fatalf("calendar ls:\n%s", ls)
	}
	failCLI(t, env, 1, []string{"entries[0]", "2026-13-01"}, "calendar", "add", "bad", "2026-13-01")

	file := filepath.Join(t.TempDir(), "t.yaml")
	writeText(t, file, "name: every3\ncron_expr: \"*/3 * * * * *\"\ndst: skip_gap\ncalendars: [off]\ntarget_url: "+target.srv.URL+"/c\n")
	mustCLI(t, env, "task", "create", "-f", file)
	if out := mustCLI(t, env, "diff", "-f", file); !strings.HasSuffix(out, "0 to create, 0 to change, 1 unchanged\n") {
		t.Errorf("diff of the file the task was created from:\n%s", out)
	}
	failCLI(t, env, 1, []string{"no calendar is named nope", "field calendars[0]"}, "task", "patch", "every3", "--set", `calendars=["nope"]`)
	get := mustCLI(t, env, "task", "get", "every3")
	if !strings.Contains(get, "Calendars:") || !strings.Contains(get, "off (no fire on their days)") || !strings.Contains(get, "skip_gap (a wall time") {
		t.Errorf("task get does not show the calendars and dst:\n%s", get)
	}

	type run struct {
		ID            int64     `json:"id"`
		ScheduledTime time.Time `json:"scheduled_time"`
		Status        string    `json:"status"`
		SkipReason    string    `json:"skip_reason"`
		Error         string    `json:"error"`
	}
	runs := func() []run {
		var page struct {
			Items []run `json:"items"`
		}
		if err := json.Unmarshal([]byte(mustCLI(t, env, "run", "ls", "--task", "every3", "--limit", "200", "-o", "json")), &page.Items); err != nil {
			t.Fatal(err)
		}
		return page.Items
	}
	count := func(status, reason string) int {
		k := 0
		for _, r := range runs() {
			if r.Status == status && r.SkipReason == reason {
				k++
			}
		}
		return k
	}
	waitFor(t, func() bool { return count("SKIPPED", "CALENDAR") >= 2 })
	target.mu.Lock()
	early := len(target.got)
	target.mu.Unlock()
	if early != 0 {
		t.Fatalf("%d deliveries while the calendar covers today, want none", early)
	}
	failCLI(t, env, 1, []string{"calendar off is referenced by 1 task(s): every3"}, "calendar", "rm", "off")

	// Today out of the calendar: the fires run again.
	if out := mustCLI(t, env, "calendar", "rm", "off", days); out != "calendar/off changed: 1 entries (version 2)\n" {
		t.Fatalf("calendar rm ENTRY: %q", out)
	}
	got := target.wait(t, 2, 15*time.Second)
	delivered := map[int64]bool{}
	for _, d := range got {
		delivered[d.scheduled.Unix()] = true
	}
	var lastSkip, firstRun time.Time
	for _, r := range runs() {
		switch {
		case r.Status == "SKIPPED" && r.SkipReason == "CALENDAR":
			if delivered[r.ScheduledTime.Unix()] {
				t.Errorf("the fire of %s was delivered and is SKIPPED CALENDAR", r.ScheduledTime)
			}
			if r.Error != "falls on calendar off" {
				t.Errorf("run %d error %q", r.ID, r.Error)
			}
			if r.ScheduledTime.After(lastSkip) {
				lastSkip = r.ScheduledTime
			}
		case delivered[r.ScheduledTime.Unix()]:
			if firstRun.IsZero() || r.ScheduledTime.Before(firstRun) {
				firstRun = r.ScheduledTime
			}
		}
	}
	if firstRun.IsZero() || !lastSkip.Before(firstRun) {
		t.Errorf("the last calendar skip (%s) is not before the first fire run again (%s)", lastSkip, firstRun)
	}

	// Detached, the calendar can go.
	mustCLI(t, env, "task", "patch", "every3", "--set", "calendars=[]")
	if out := mustCLI(t, env, "calendar", "rm", "off"); out != "calendar/off deleted\n" {
		t.Errorf("calendar rm: %q", out)
	}
	if out := mustCLI(t, env, "calendar", "ls", "-o", "name"); out != "" {
		t.Errorf("calendars left: %q", out)
	}
}

// TestCLIDSTUpcoming, through the binary: a task's upcoming fires across
// New York's real transitions of 2027 follow its dst policy (the task
// starts just before each change with start_at).
func TestCLIDSTUpcoming(t *testing.T) {
	t.Parallel()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))
	env := clientEnv(t, n.url)
	for _, c := range []struct {
		name, expr, dst, startAt string
		want                     []string // the times in New York
	}{
		{"gap-vixie", "0 30 2 * * *", "vixie", "2027-03-13T00:00:00Z",
			[]string{"2027-03-13 02:30:00", "2027-03-14 03:00:00", "2027-03-15 02:30:00"}},
		{"gap-skip", "0 30 2 * * *", "skip_gap", "2027-03-13T00:00:00Z",
			[]string{"2027-03-13 02:30:00", "2027-03-15 02:30:00", "2027-03-16 02:30:00"}},
		{"overlap-vixie", "0 30 1 * * *", "vixie", "2027-11-06T00:00:00Z",
			[]string{"2027-11-06 01:30:00", "2027-11-07 01:30:00", "2027-11-08 01:30:00"}},
		{"overlap-repeat", "0 30 1 * * *", "repeat", "2027-11-06T00:00:00Z",
			[]string{"2027-11-06 01:30:00", "2027-11-07 01:30:00", "2027-11-07 01:30:00", "2027-11-08 01:30:00"}},
	} {
		file := filepath.Join(t.TempDir(), c.name+".yaml")
		writeText(t, file, "name: "+c.name+"\ncron_expr: \""+c.expr+"\"\ntimezone: America/New_York\ndst: "+c.dst+
			"\nstart_at: "+c.startAt+"\ntarget_url: http://127.0.0.1:9/\n")
		mustCLI(t, env, "task", "create", "-f", file)
		out := mustCLI(t, env, "task", "upcoming", c.name, "--limit", "4")
		var got []string
		for _, line := range strings.Split(out, "\n")[1:] {
			if f := strings.Fields(line); len(f) >= 2 {
				got = append(got, f[0]+" "+f[1])
			}
		}
		if strings.Join(got[:len(c.want)], ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: upcoming\n%s\nwant %v first", c.name, out, c.want)
		}
	}
	// And the preview of an expression, from the API.
	resp, err := http.Get(n.url + "/api/v1/cron/next?expr=0+30+1+*+*+*&tz=America/New_York&from=2027-11-06T12:00:00Z&count=2&dst=repeat")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var next struct {
		Next []string `json:"next"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&next); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("cron/next: %d, %v", resp.StatusCode, err)
	}
	if strings.Join(next.Next, ",") != "2027-11-07T01:30:00-04:00,2027-11-07T01:30:00-05:00" {
		t.Errorf("cron/next dst=repeat: %v", next.Next)
	}
}
