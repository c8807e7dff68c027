package storetest

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// testAlertObjects: channels and rules are created, read, listed by
// name, replaced under their version and deleted; a name taken and a
// stale version are EConflict, an unknown id ENotFound.
func testAlertObjects(t *testing.T, open Opener) {
	f := setup(t, open)
	hook := &sundial.AlertChannel{Name: "ops-hook", Kind: sundial.ChannelWebhook, URL: "https://example.com/alerts",
		SigningSecret: "sealed:v1:xyz"}
	mail := &sundial.AlertChannel{Name: "mail", Kind: sundial.ChannelEmail, SMTP: &sundial.SMTPSettings{Host: "smtp.example.com",
		Port: 587, Username: "u", Password: "sealed:v1:pw", From: "sundial@example.com", To: []string{"ops@example.com"}}}
	for _, c := range []*sundial.AlertChannel{hook, mail} {
		if err := f.s.AlertChannelCreate(f.ctx, c, at(0)); err != nil {
			t.Fatalf("AlertChannelCreate(%s): %v", c.Name, err)
		}
		if c.ID == 0 || c.Version != 1 || !c.CreatedAt.Equal(at(0)) {
			t.Fatalf("created %+v", c)
		}
	}
	if err := f.s.AlertChannelCreate(f.ctx, &sundial.AlertChannel{Name: "mail", Kind: sundial.ChannelSlack, URL: "https://x"}, at(0)); sundial.ErrorCode(err) != sundial.EConflict {
		t.Fatalf("a second channel named mail: %v, want conflict", err)
	}
	got, err := f.s.AlertChannelGet(f.ctx, mail.ID)
	if err != nil || got.Name != "mail" || got.SMTP == nil || got.SMTP.Password != "sealed:v1:pw" || got.SMTP.To[0] != "ops@example.com" {
		t.Fatalf("AlertChannelGet = %+v, %v", got, err)
	}
	list, err := f.s.AlertChannelList(f.ctx)
	if err != nil || len(list) != 2 || list[0].Name != "mail" || list[1].Name != "ops-hook" {
		t.Fatalf("AlertChannelList = %+v, %v", list, err)
	}
	got.SMTP.Port = 2525
	if err := f.s.AlertChannelUpdate(f.ctx, got, at(5)); err != nil || got.Version != 2 {
		t.Fatalf("AlertChannelUpdate: %v (version %d)", err, got.Version)
	}
	stale := *got
	stale.Version = 1
	if err := f.s.AlertChannelUpdate(f.ctx, &stale, at(6)); sundial.ErrorCode(err) != sundial.EConflict {
		t.Fatalf("update at a stale version: %v, want conflict", err)
	}
	if again, _ := f.s.AlertChannelGet(f.ctx, mail.ID); again.SMTP.Port != 2525 || again.Version != 2 || !again.UpdatedAt.Equal(at(5)) {
		t.Fatalf("after update: %+v", again)
	}
	if err := f.s.AlertChannelDelete(f.ctx, hook.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.AlertChannelGet(f.ctx, hook.ID); sundial.ErrorCode(err) != sundial.ENotFound {
		t.Fatalf("get deleted: %v", err)
	}
	if err := f.s.AlertChannelDelete(f.ctx, hook.ID); sundial.ErrorCode(err) != sundial.ENotFound {
		t.Fatalf("delete twice: %v", err)
	}

	r := &sundial.AlertRule{Name: "three", TaskID: 42, Condition: sundial.AlertCondition{Kind: sundial.CondConsecutiveFailures, Count: 3},
		RepeatEvery: sundial.Duration(time.Hour), Channels: []string{"mail"},
		Silences: []sundial.Silence{{Start: "22:00", End: "06:00", Days: []string{"sat"}}}}
	if err := f.s.AlertRuleCreate(f.ctx, r, at(0)); err != nil || r.ID == 0 {
		t.Fatalf("AlertRuleCreate: %v", err)
	}
	gr, err := f.s.AlertRuleGet(f.ctx, r.ID)
	if err != nil || gr.TaskID != 42 || gr.Condition.Count != 3 || gr.RepeatEvery != sundial.Duration(time.Hour) ||
		len(gr.Silences) != 1 || gr.Silences[0].Start != "22:00" {
		t.Fatalf("AlertRuleGet = %+v, %v", gr, err)
	}
	gr.Condition.Count = 5
	if err := f.s.AlertRuleUpdate(f.ctx, gr, at(1)); err != nil {
		t.Fatal(err)
	}
	rules, err := f.s.AlertRuleList(f.ctx)
	if err != nil || len(rules) != 1 || rules[0].Condition.Count != 5 || rules[0].Version != 2 {
		t.Fatalf("AlertRuleList = %+v, %v", rules, err)
	}
	if err := f.s.AlertRuleDelete(f.ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.AlertRuleGet(f.ctx, r.ID); sundial.ErrorCode(err) != sundial.ENotFound {
		t.Fatalf("get deleted rule: %v", err)
	}
}

// testIncidents: one open incident per (rule, task): a second open is
// refused without a row; a resolve happens once and frees the key for the
// next incident; a repeat moves notified_at under compare-and-swap; each
// writes its notifications in the same transaction; notifications are
// claimed once until their claim lapses, and finished by their holder.
func testIncidents(t *testing.T, open Opener) {
	f := setup(t, open)
	notes := func(ev sundial.NotificationEvent, due time.Time) []*sundial.Notification {
		return []*sundial.Notification{
			{ChannelID: 1, ChannelName: "a", Event: ev, Status: sundial.NotifyPending, DueAt: due, CreatedAt: at(0)},
			{ChannelID: 2, ChannelName: "b", Event: ev, Status: sundial.NotifyPending, DueAt: due, CreatedAt: at(0), Held: true},
		}
	}
	inc := func() *sundial.Incident {
		return &sundial.Incident{RuleID: 7, RuleName: "r", TaskID: 9, TaskName: "job", Condition: sundial.CondRunFailed,
			Reason: "HTTP 500", OpenedAt: at(0), NotifiedAt: at(0)}
	}
	first := inc()
	opened, err := f.s.IncidentOpen(f.ctx, first, notes(sundial.EventOpened, at(0)))
	if err != nil || !opened || first.ID == 0 || len(first.Notifications) != 2 || first.Notifications[0].ID == 0 ||
		first.Notifications[1].ID <= first.Notifications[0].ID {
		t.Fatalf("IncidentOpen = %v, %v: %+v", opened, err, first)
	}
	if opened, err := f.s.IncidentOpen(f.ctx, inc(), notes(sundial.EventOpened, at(0))); err != nil || opened {
		t.Fatalf("a second open incident of (rule, task): %v, %v", opened, err)
	}
	other := inc()
	other.TaskID = 10
	if opened, err := f.s.IncidentOpen(f.ctx, other, nil); err != nil || !opened {
		t.Fatalf("an incident of another task: %v, %v", opened, err)
	}
	got, err := f.s.IncidentGet(f.ctx, first.ID)
	if err != nil || got.Status != sundial.IncidentOpen || got.Reason != "HTTP 500" || len(got.Notifications) != 2 ||
		!got.Notifications[1].Held || got.Notifications[0].Event != sundial.EventOpened {
		t.Fatalf("IncidentGet = %+v, %v", got, err)
	}

	// A repeat: once per notified_at.
	if ok, err := f.s.IncidentRepeat(f.ctx, first.ID, at(0), at(60), notes(sundial.EventRepeat, at(60))[:1]); err != nil || !ok {
		t.Fatalf("IncidentRepeat: %v, %v", ok, err)
	}
	if ok, err := f.s.IncidentRepeat(f.ctx, first.ID, at(0), at(61), notes(sundial.EventRepeat, at(61))[:1]); err != nil || ok {
		t.Fatalf("IncidentRepeat from a stale time: %v, %v", ok, err)
	}

	// Claims: the due ones, once.
	claimed, err := f.s.NotificationClaim(f.ctx, "n1", at(60), at(120), 10)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("NotificationClaim = %d, %v; want the 3 due", len(claimed), err)
	}
	if again, err := f.s.NotificationClaim(f.ctx, "n2", at(61), at(121), 10); err != nil || len(again) != 0 {
		t.Fatalf("claimed twice: %d, %v", len(again), err)
	}
	sent := claimed[0]
	sent.Attempted(at(62), "n1", nil)
	if ok, err := f.s.NotificationFinish(f.ctx, "n1", sent); err != nil || !ok {
		t.Fatalf("NotificationFinish: %v, %v", ok, err)
	}
	failed := claimed[1]
	failed.Attempted(at(62), "n1", errors.New("connection refused"))
	if ok, err := f.s.NotificationFinish(f.ctx, "n2", failed); err != nil || ok {
		t.Fatalf("NotificationFinish by a node without the claim: %v, %v", ok, err)
	}
	if ok, err := f.s.NotificationFinish(f.ctx, "n1", failed); err != nil || !ok {
		t.Fatal(ok, err)
	}
	// The third claim lapses: another node takes it after its lease.
	if again, err := f.s.NotificationClaim(f.ctx, "n2", at(71), at(200), 10); err != nil || len(again) != 0 {
		t.Fatalf("claimed before the lease ended: %d, %v", len(again), err)
	}
	// At 120 the lapsed claim is due again; the failed one is due after
	// its backoff (62 + 10 s).
	again, err := f.s.NotificationClaim(f.ctx, "n2", at(120), at(200), 10)
	if err != nil || len(again) != 2 {
		t.Fatalf("after the lease: %d, %v; want the lapsed claim and the retry", len(again), err)
	}

	if ok, err := f.s.IncidentResolve(f.ctx, first.ID, at(130), notes(sundial.EventResolved, at(130))[:1]); err != nil || !ok {
		t.Fatalf("IncidentResolve: %v, %v", ok, err)
	}
	if ok, err := f.s.IncidentResolve(f.ctx, first.ID, at(131), nil); err != nil || ok {
		t.Fatalf("IncidentResolve twice: %v, %v", ok, err)
	}
	got, err = f.s.IncidentGet(f.ctx, first.ID)
	if err != nil || got.Status != sundial.IncidentResolved || got.ResolvedAt == nil || !got.ResolvedAt.Equal(at(130)) ||
		len(got.Notifications) != 4 || got.Notifications[3].Event != sundial.EventResolved {
		t.Fatalf("after resolve: %+v, %v", got, err)
	}
	var s *sundial.Notification
	for _, n := range got.Notifications {
		if n.ID == sent.ID {
			s = n
		}
	}
	if s == nil || s.Status != sundial.NotifySent || s.SentAt == nil || s.Tries != 1 || len(s.Attempts) != 1 || s.Attempts[0].Node != "n1" {
		t.Fatalf("the sent notification reads %+v", s)
	}
	// The key is free: the next incident of (rule, task) opens.
	next := inc()
	if opened, err := f.s.IncidentOpen(f.ctx, next, nil); err != nil || !opened {
		t.Fatalf("open after resolve: %v, %v", opened, err)
	}
	list, err := f.s.IncidentList(f.ctx, sundial.IncidentListParams{TaskID: 9})
	if err != nil || len(list) != 2 || list[0].ID != next.ID || list[1].ID != first.ID || len(list[1].Notifications) != 4 {
		t.Fatalf("IncidentList(task 9) = %d, %v", len(list), err)
	}
	openOnes, err := f.s.IncidentList(f.ctx, sundial.IncidentListParams{Status: sundial.IncidentOpen})
	if err != nil || len(openOnes) != 2 {
		t.Fatalf("IncidentList(OPEN) = %d, %v; want 2", len(openOnes), err)
	}
	if _, err := f.s.IncidentGet(f.ctx, 987654); sundial.ErrorCode(err) != sundial.ENotFound {
		t.Fatalf("IncidentGet(unknown) = %v", err)
	}
}

// testClusterIncidentOpen: nodes that open the incident of one (rule,
// task) at once open it once, with one set of notifications.
func testClusterIncidentOpen(t *testing.T, b Backend) {
	c := setupCluster(t, b, 3)
	var won atomic.Int32
	race(6, func(i int) {
		inc := &sundial.Incident{RuleID: 1, RuleName: "r", TaskID: 2, TaskName: "job", Condition: sundial.CondRunFailed,
			Reason: "x", OpenedAt: at(0), NotifiedAt: at(0)}
		ok, err := c.node(i).IncidentOpen(t.Context(), inc, []*sundial.Notification{{ChannelID: 1, ChannelName: "a",
			Event: sundial.EventOpened, Status: sundial.NotifyPending, DueAt: at(0), CreatedAt: at(0)}})
		if err != nil && sundial.ErrorCode(err) != sundial.EUnavailable {
			t.Errorf("node %d: %v", i, err)
		}
		if ok {
			won.Add(1)
		}
	})
	if won.Load() != 1 {
		t.Fatalf("%d nodes opened the incident, want 1", won.Load())
	}
	list, err := c.node(0).IncidentList(t.Context(), sundial.IncidentListParams{})
	if err != nil || len(list) != 1 || len(list[0].Notifications) != 1 {
		t.Fatalf("incidents after the race: %+v, %v", list, err)
	}
}

// testIncidentAck: an open incident is acknowledged once, with who and a
// note; an acknowledged incident takes no repeat, still resolves; a
// resolved one and an unknown one are refused. The run that opened an
// incident is kept and selects it.
func testIncidentAck(t *testing.T, open Opener) {
	f := setup(t, open)
	inc := &sundial.Incident{RuleID: 3, RuleName: "r", TaskID: 4, TaskName: "job", Condition: sundial.CondLongRun,
		Reason: "slow", OpenedAt: at(0), NotifiedAt: at(0), RunID: 77}
	if ok, err := f.s.IncidentOpen(f.ctx, inc, nil); err != nil || !ok {
		t.Fatalf("IncidentOpen: %v, %v", ok, err)
	}
	if got, err := f.s.IncidentGet(f.ctx, inc.ID); err != nil || got.RunID != 77 || got.AckedAt != nil || got.AckedBy != "" {
		t.Fatalf("IncidentGet = %+v, %v", got, err)
	}
	for _, tc := range []struct {
		run  int64
		want int
	}{{77, 1}, {78, 0}} {
		list, err := f.s.IncidentList(f.ctx, sundial.IncidentListParams{RuleID: 3, TaskID: 4, RunID: tc.run})
		if err != nil || len(list) != tc.want {
			t.Fatalf("IncidentList(run %d) = %d, %v; want %d", tc.run, len(list), err, tc.want)
		}
	}
	if ok, err := f.s.IncidentAck(f.ctx, inc.ID, at(5), "alice", "looking"); err != nil || !ok {
		t.Fatalf("IncidentAck: %v, %v", ok, err)
	}
	if ok, err := f.s.IncidentAck(f.ctx, inc.ID, at(6), "bob", ""); err != nil || ok {
		t.Fatalf("IncidentAck twice: %v, %v; want false", ok, err)
	}
	got, err := f.s.IncidentGet(f.ctx, inc.ID)
	if err != nil || got.AckedAt == nil || !got.AckedAt.Equal(at(5)) || got.AckedBy != "alice" || got.AckNote != "looking" {
		t.Fatalf("after the ack: %+v, %v", got, err)
	}
	if ok, err := f.s.IncidentRepeat(f.ctx, inc.ID, at(0), at(60), nil); err != nil || ok {
		t.Fatalf("IncidentRepeat of an acknowledged incident: %v, %v; want false", ok, err)
	}
	if ok, err := f.s.IncidentResolve(f.ctx, inc.ID, at(70), nil); err != nil || !ok {
		t.Fatalf("IncidentResolve of an acknowledged incident: %v, %v", ok, err)
	}
	other := &sundial.Incident{RuleID: 3, RuleName: "r", TaskID: 5, TaskName: "job2", Condition: sundial.CondRunFailed,
		Reason: "x", OpenedAt: at(0), NotifiedAt: at(0)}
	if ok, err := f.s.IncidentOpen(f.ctx, other, nil); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := f.s.IncidentResolve(f.ctx, other.ID, at(1), nil); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := f.s.IncidentAck(f.ctx, other.ID, at(2), "alice", ""); err != nil || ok {
		t.Fatalf("IncidentAck of a resolved incident: %v, %v; want false", ok, err)
	}
	if _, err := f.s.IncidentAck(f.ctx, 987654, at(2), "alice", ""); sundial.ErrorCode(err) != sundial.ENotFound {
		t.Fatalf("IncidentAck(unknown) = %v, want not found", err)
	}
}

// testRunLongRunning: the RUNNING runs started at or before a time,
// longest running first, of every node; others are left out.
func testRunLongRunning(t *testing.T, open Opener) {
	f := setup(t, open)
	tk := f.task("a")
	old := f.run(tk.ID, at(10), sundial.RunRunning)
	older := f.run(tk.ID, at(5), sundial.RunRunning, withNode("node-b"))
	f.run(tk.ID, at(30), sundial.RunRunning)        // started after the bound
	f.run(tk.ID, at(1), sundial.RunSuccess)         // finished
	f.run(tk.ID, at(2), sundial.RunWaitingCallback) // not in a call
	f.run(tk.ID, at(3), sundial.RunScheduled)       // not started
	runs, err := f.s.RunLongRunning(f.ctx, at(20), 10)
	if err != nil {
		t.Fatalf("RunLongRunning: %v", err)
	}
	ids := make([]int64, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	eqIDs(t, "long running", ids, []int64{older.ID, old.ID})
	if runs, err := f.s.RunLongRunning(f.ctx, at(20), 1); err != nil || len(runs) != 1 || runs[0].ID != older.ID {
		t.Fatalf("RunLongRunning(limit 1) = %v, %v", runs, err)
	}
}

// testAlertChannelSecretsSwap: a channel's secrets are swapped while its
// version is the one read, its version and updated_at left as they are;
// after a change, or for a channel gone, nothing is written.
func testAlertChannelSecretsSwap(t *testing.T, open Opener) {
	f := setup(t, open)
	c := &sundial.AlertChannel{Name: "mail", Kind: sundial.ChannelEmail, SMTP: &sundial.SMTPSettings{Host: "smtp.example.com",
		Port: 587, Username: "u", Password: "sealed:v1:old", From: "sundial@example.com", To: []string{"ops@example.com"}}}
	if err := f.s.AlertChannelCreate(f.ctx, c, at(0)); err != nil {
		t.Fatal(err)
	}
	read, err := f.s.AlertChannelGet(f.ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	next := *read
	next.SMTP = &sundial.SMTPSettings{Host: "smtp.example.com", Port: 587, Username: "u", Password: "sealed:v1:new",
		From: "sundial@example.com", To: []string{"ops@example.com"}}
	if ok, err := f.s.AlertChannelSecretsSwap(f.ctx, &next); err != nil || !ok {
		t.Fatalf("AlertChannelSecretsSwap: %v, %v", ok, err)
	}
	got, err := f.s.AlertChannelGet(f.ctx, c.ID)
	if err != nil || got.SMTP.Password != "sealed:v1:new" || got.Version != read.Version || !got.UpdatedAt.Equal(read.UpdatedAt) {
		t.Fatalf("after the swap: %+v, %v", got, err)
	}
	// A change since the read: the swap of the stale read writes nothing.
	got.SMTP.Port = 2525
	if err := f.s.AlertChannelUpdate(f.ctx, got, at(5)); err != nil {
		t.Fatal(err)
	}
	stale := next
	stale.SMTP = &sundial.SMTPSettings{Host: "smtp.example.com", Port: 587, Username: "u", Password: "sealed:v1:stale",
		From: "sundial@example.com", To: []string{"ops@example.com"}}
	if ok, err := f.s.AlertChannelSecretsSwap(f.ctx, &stale); err != nil || ok {
		t.Fatalf("AlertChannelSecretsSwap of a stale read: %v, %v; want false", ok, err)
	}
	if got, err := f.s.AlertChannelGet(f.ctx, c.ID); err != nil || got.SMTP.Port != 2525 || got.SMTP.Password != "sealed:v1:new" {
		t.Fatalf("after a stale swap: %+v, %v", got.SMTP, err)
	}
	gone := stale
	gone.ID = 987654
	if ok, err := f.s.AlertChannelSecretsSwap(f.ctx, &gone); err != nil || ok {
		t.Fatalf("AlertChannelSecretsSwap of no channel: %v, %v; want false", ok, err)
	}
}
