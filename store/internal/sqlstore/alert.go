package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// The alerts' methods (see 0020_alerts.sql): channels and rules are a
// name, one column (a channel's kind, a rule's task_id) and a JSON
// document; incidents and notifications are written only when an outcome
// opens, repeats or resolves an incident.

// errTaken is an insert refused by a unique key, inside a transaction.
var errTaken = errors.New("taken")

// alertObject is what the channel and rule methods share of a table.
type alertObject struct {
	table, col, what string
}

var (
	channelTable = alertObject{table: "alert_channels", col: "kind", what: "channel"}
	ruleTable    = alertObject{table: "alert_rules", col: "task_id", what: "rule"}
)

// create inserts a row and returns its id (read back by its unique name).
func (p *Plain) alertCreate(ctx context.Context, o alertObject, name string, col any, spec []byte, now time.Time) (int64, error) {
	d := p.q.d
	_, err := p.w.Exec(ctx, d.bind(`INSERT INTO `+o.table+` (name, `+o.col+`, spec_json, version, created_at, updated_at)
		VALUES (?, ?, ?, 1, ?, ?)`), name, col, string(spec), sqlrow.Micros(now), sqlrow.Micros(now))
	if err != nil {
		if d.Duplicate != nil && d.Duplicate(err) {
			e := sundial.Errorf(sundial.EConflict, "name", "a %s named %q exists", o.what, name)
			e.Token = name
			return 0, e
		}
		return 0, p.wrap(err, "create %s %s", o.what, name)
	}
	var id int64
	if err := p.w.QueryRow(ctx, d.bind(`SELECT id FROM `+o.table+` WHERE name = ?`), name).Scan(&id); err != nil {
		return 0, p.wrap(err, "read %s %s", o.what, name)
	}
	return id, nil
}

// alertRow is a row of a channel or rule table.
type alertRow struct {
	id, version, created, updated int64
	spec                          string
}

func (p *Plain) alertGet(ctx context.Context, o alertObject, id int64) (*alertRow, error) {
	var r alertRow
	err := p.r.QueryRow(ctx, p.q.d.bind(`SELECT id, version, created_at, updated_at, spec_json FROM `+o.table+` WHERE id = ?`), id).
		Scan(&r.id, &r.version, &r.created, &r.updated, &r.spec)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("", "%s %d not found", o.what, id)
	}
	if err != nil {
		return nil, p.wrap(err, "read %s %d", o.what, id)
	}
	return &r, nil
}

func (p *Plain) alertList(ctx context.Context, o alertObject) ([]*alertRow, error) {
	rows, err := p.r.Query(ctx, `SELECT id, version, created_at, updated_at, spec_json FROM `+o.table+` ORDER BY name`)
	out, err := scanAll(rows, err, func(sc sqlrow.Scanner) (*alertRow, error) {
		var r alertRow
		return &r, sc.Scan(&r.id, &r.version, &r.created, &r.updated, &r.spec)
	})
	if err != nil {
		return nil, p.wrap(err, "list %ss", o.what)
	}
	return out, nil
}

// alertUpdate replaces row id at version, bumping it.
func (p *Plain) alertUpdate(ctx context.Context, o alertObject, id, version int64, name string, col any, spec []byte, now time.Time) error {
	d := p.q.d
	n, err := p.w.Exec(ctx, d.bind(`UPDATE `+o.table+` SET name = ?, `+o.col+` = ?, spec_json = ?, version = version + 1, updated_at = ?
		WHERE id = ? AND version = ?`), name, col, string(spec), sqlrow.Micros(now), id, version)
	if err != nil {
		if d.Duplicate != nil && d.Duplicate(err) {
			e := sundial.Errorf(sundial.EConflict, "name", "a %s named %q exists", o.what, name)
			e.Token = name
			return e
		}
		return p.wrap(err, "update %s %d", o.what, id)
	}
	if n == 0 {
		if _, err := p.alertGet(ctx, o, id); err != nil {
			return err
		}
		return sundial.Errorf(sundial.EConflict, "version", "%s %d changed since version %d: read it again", o.what, id, version)
	}
	return nil
}

func (p *Plain) alertDelete(ctx context.Context, o alertObject, id int64) error {
	n, err := p.w.Exec(ctx, p.q.d.bind(`DELETE FROM `+o.table+` WHERE id = ?`), id)
	if err != nil {
		return p.wrap(err, "delete %s %d", o.what, id)
	}
	if n == 0 {
		return sqlrow.NotFound("", "%s %d not found", o.what, id)
	}
	return nil
}

func channelOf(r *alertRow) (*sundial.AlertChannel, error) {
	var c sundial.AlertChannel
	if err := json.Unmarshal([]byte(r.spec), &c); err != nil {
		return nil, fmt.Errorf("channel %d: %w", r.id, err)
	}
	c.ID, c.Version, c.CreatedAt, c.UpdatedAt = r.id, r.version, sqlrow.FromMicros(r.created), sqlrow.FromMicros(r.updated)
	return &c, nil
}

func ruleOf(r *alertRow) (*sundial.AlertRule, error) {
	var v sundial.AlertRule
	if err := json.Unmarshal([]byte(r.spec), &v); err != nil {
		return nil, fmt.Errorf("rule %d: %w", r.id, err)
	}
	v.ID, v.Version, v.CreatedAt, v.UpdatedAt = r.id, r.version, sqlrow.FromMicros(r.created), sqlrow.FromMicros(r.updated)
	return &v, nil
}

// AlertChannelCreate inserts c.
func (p *Plain) AlertChannelCreate(ctx context.Context, c *sundial.AlertChannel, now time.Time) (err error) {
	defer p.classify(&err)
	now = sqlrow.Norm(now)
	spec, err := json.Marshal(c)
	if err != nil {
		return err
	}
	id, err := p.alertCreate(ctx, channelTable, c.Name, string(c.Kind), spec, now)
	if err != nil {
		return err
	}
	c.ID, c.Version, c.CreatedAt, c.UpdatedAt = id, 1, now, now
	return nil
}

// AlertChannelGet returns channel id.
func (p *Plain) AlertChannelGet(ctx context.Context, id int64) (_ *sundial.AlertChannel, err error) {
	defer p.classify(&err)
	r, err := p.alertGet(ctx, channelTable, id)
	if err != nil {
		return nil, err
	}
	return channelOf(r)
}

// AlertChannelList returns every channel, by name.
func (p *Plain) AlertChannelList(ctx context.Context) (_ []*sundial.AlertChannel, err error) {
	defer p.classify(&err)
	rows, err := p.alertList(ctx, channelTable)
	if err != nil {
		return nil, err
	}
	out := make([]*sundial.AlertChannel, 0, len(rows))
	for _, r := range rows {
		c, err := channelOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// AlertChannelUpdate replaces c at c.Version.
func (p *Plain) AlertChannelUpdate(ctx context.Context, c *sundial.AlertChannel, now time.Time) (err error) {
	defer p.classify(&err)
	now = sqlrow.Norm(now)
	spec, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := p.alertUpdate(ctx, channelTable, c.ID, c.Version, c.Name, string(c.Kind), spec, now); err != nil {
		return err
	}
	c.Version, c.UpdatedAt = c.Version+1, now
	return nil
}

// AlertChannelSecretsSwap writes next's spec if the channel is still at
// next.Version, leaving its version and updated_at as they are.
func (p *Plain) AlertChannelSecretsSwap(ctx context.Context, next *sundial.AlertChannel) (_ bool, err error) {
	defer p.classify(&err)
	spec, err := json.Marshal(next)
	if err != nil {
		return false, err
	}
	n, err := p.w.Exec(ctx, p.q.d.bind(`UPDATE alert_channels SET spec_json = ? WHERE id = ? AND version = ?`),
		string(spec), next.ID, next.Version)
	if err != nil {
		return false, p.wrap(err, "swap the secrets of channel %d", next.ID)
	}
	return n > 0, nil
}

// AlertChannelDelete deletes channel id.
func (p *Plain) AlertChannelDelete(ctx context.Context, id int64) (err error) {
	defer p.classify(&err)
	return p.alertDelete(ctx, channelTable, id)
}

// AlertRuleCreate inserts r.
func (p *Plain) AlertRuleCreate(ctx context.Context, r *sundial.AlertRule, now time.Time) (err error) {
	defer p.classify(&err)
	now = sqlrow.Norm(now)
	spec, err := json.Marshal(r)
	if err != nil {
		return err
	}
	id, err := p.alertCreate(ctx, ruleTable, r.Name, r.TaskID, spec, now)
	if err != nil {
		return err
	}
	r.ID, r.Version, r.CreatedAt, r.UpdatedAt = id, 1, now, now
	return nil
}

// AlertRuleGet returns rule id.
func (p *Plain) AlertRuleGet(ctx context.Context, id int64) (_ *sundial.AlertRule, err error) {
	defer p.classify(&err)
	r, err := p.alertGet(ctx, ruleTable, id)
	if err != nil {
		return nil, err
	}
	return ruleOf(r)
}

// AlertRuleList returns every rule, by name.
func (p *Plain) AlertRuleList(ctx context.Context) (_ []*sundial.AlertRule, err error) {
	defer p.classify(&err)
	rows, err := p.alertList(ctx, ruleTable)
	if err != nil {
		return nil, err
	}
	out := make([]*sundial.AlertRule, 0, len(rows))
	for _, r := range rows {
		v, err := ruleOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// AlertRuleUpdate replaces r at r.Version.
func (p *Plain) AlertRuleUpdate(ctx context.Context, r *sundial.AlertRule, now time.Time) (err error) {
	defer p.classify(&err)
	now = sqlrow.Norm(now)
	spec, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := p.alertUpdate(ctx, ruleTable, r.ID, r.Version, r.Name, r.TaskID, spec, now); err != nil {
		return err
	}
	r.Version, r.UpdatedAt = r.Version+1, now
	return nil
}

// AlertRuleDelete deletes rule id.
func (p *Plain) AlertRuleDelete(ctx context.Context, id int64) (err error) {
	defer p.classify(&err)
	return p.alertDelete(ctx, ruleTable, id)
}

const incidentCols = `id, rule_id, task_id, status, rule_name, task_name, condition_kind, reason, opened_at, resolved_at,
	notified_at, run_id, acked_at, acked_by, ack_note`

func scanIncident(sc sqlrow.Scanner) (*sundial.Incident, error) {
	var (
		inc              sundial.Incident
		status, cond     string
		opened, notified int64
		resolved, acked  sql.NullInt64
	)
	if err := sc.Scan(&inc.ID, &inc.RuleID, &inc.TaskID, &status, &inc.RuleName, &inc.TaskName, &cond, &inc.Reason,
		&opened, &resolved, &notified, &inc.RunID, &acked, &inc.AckedBy, &inc.AckNote); err != nil {
		return nil, err
	}
	inc.Status, inc.Condition = sundial.IncidentStatus(status), sundial.ConditionKind(cond)
	inc.OpenedAt, inc.ResolvedAt, inc.NotifiedAt = sqlrow.FromMicros(opened), sqlrow.TimePtr(resolved), sqlrow.FromMicros(notified)
	inc.AckedAt = sqlrow.TimePtr(acked)
	inc.Notifications = []*sundial.Notification{}
	return &inc, nil
}

const notificationCols = `id, incident_id, channel_id, channel_name, event, status, held, due_at, created_at, sent_at,
	tries, attempts_json, claimed_by, claimed_until`

func scanNotification(sc sqlrow.Scanner) (*sundial.Notification, error) {
	var (
		n                          sundial.Notification
		event, status, attempts    string
		held                       int
		due, created, claimedUntil int64
		sent                       sql.NullInt64
	)
	if err := sc.Scan(&n.ID, &n.IncidentID, &n.ChannelID, &n.ChannelName, &event, &status, &held, &due, &created, &sent,
		&n.Tries, &attempts, &n.ClaimedBy, &claimedUntil); err != nil {
		return nil, err
	}
	n.Event, n.Status, n.Held = sundial.NotificationEvent(event), sundial.NotificationStatus(status), held != 0
	n.DueAt, n.CreatedAt, n.SentAt, n.ClaimedUntil = sqlrow.FromMicros(due), sqlrow.FromMicros(created), sqlrow.TimePtr(sent),
		sqlrow.FromMicros(claimedUntil)
	n.Attempts = []sundial.NotificationAttempt{}
	if err := json.Unmarshal([]byte(attempts), &n.Attempts); err != nil {
		return nil, fmt.Errorf("notification %d: attempts: %w", n.ID, err)
	}
	return &n, nil
}

// insertNotes inserts the notifications of incident id and sets their IDs.
func (p *Plain) insertNotes(ctx context.Context, tx DB, id int64, notes []*sundial.Notification) error {
	if len(notes) == 0 {
		return nil
	}
	b := p.q.d.bind
	for _, n := range notes {
		held := 0
		if n.Held {
			held = 1
		}
		attempts, err := json.Marshal(n.Attempts)
		if err != nil {
			return err
		}
		if n.Attempts == nil {
			attempts = []byte("[]")
		}
		n.IncidentID = id
		_, err = tx.Exec(ctx, b(`INSERT INTO notifications (incident_id, channel_id, channel_name, event, status, held,
			due_at, created_at, sent_at, tries, attempts_json, claimed_by, claimed_until)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, 0, ?, '', 0)`), id, n.ChannelID, n.ChannelName, string(n.Event),
			string(n.Status), held, sqlrow.Micros(n.DueAt), sqlrow.Micros(n.CreatedAt), string(attempts))
		if err != nil {
			return err
		}
	}
	rows, err := tx.Query(ctx, b(`SELECT id FROM notifications WHERE incident_id = ? ORDER BY id DESC LIMIT `+
		strconv.Itoa(len(notes))), id)
	ids, err := scanAll(rows, err, func(sc sqlrow.Scanner) (int64, error) {
		var v int64
		return v, sc.Scan(&v)
	})
	if err != nil {
		return err
	}
	for i, v := range ids {
		notes[len(notes)-1-i].ID = v
	}
	return nil
}

// inTx runs fn in a transaction of the write handle.
func (p *Plain) inTx(ctx context.Context, fn func(DB) error) error {
	tx, ok := p.w.(Txer)
	if !ok {
		return errors.New("sqlstore: the write handle has no transactions")
	}
	return tx.InTx(ctx, fn)
}

// IncidentOpen inserts inc OPEN and its notes, unless one is open.
func (p *Plain) IncidentOpen(ctx context.Context, inc *sundial.Incident, notes []*sundial.Notification) (opened bool, err error) {
	defer p.classify(&err)
	d := p.q.d
	inc.Status = sundial.IncidentOpen
	inc.OpenedAt, inc.NotifiedAt = sqlrow.Norm(inc.OpenedAt), sqlrow.Norm(inc.NotifiedAt)
	err = p.inTx(ctx, func(tx DB) error {
		_, err := tx.Exec(ctx, d.bind(`INSERT INTO incidents (rule_id, task_id, open_key, status, rule_name, task_name,
			condition_kind, reason, opened_at, resolved_at, notified_at, run_id) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`),
			inc.RuleID, inc.TaskID, string(inc.Status), inc.RuleName, inc.TaskName, string(inc.Condition), inc.Reason,
			sqlrow.Micros(inc.OpenedAt), sqlrow.Micros(inc.NotifiedAt), inc.RunID)
		if err != nil {
			if d.Duplicate != nil && d.Duplicate(err) {
				return errTaken
			}
			return err
		}
		if err := tx.QueryRow(ctx, d.bind(`SELECT id FROM incidents WHERE rule_id = ? AND task_id = ? AND open_key = 1`),
			inc.RuleID, inc.TaskID).Scan(&inc.ID); err != nil {
			return err
		}
		return p.insertNotes(ctx, tx, inc.ID, notes)
	})
	if errors.Is(err, errTaken) {
		return false, nil
	}
	if err != nil {
		return false, p.wrap(err, "open incident of rule %d, task %d", inc.RuleID, inc.TaskID)
	}
	inc.Notifications = notes
	return true, nil
}

// IncidentResolve resolves the open incident id and inserts notes.
func (p *Plain) IncidentResolve(ctx context.Context, id int64, now time.Time, notes []*sundial.Notification) (resolved bool, err error) {
	defer p.classify(&err)
	err = p.inTx(ctx, func(tx DB) error {
		n, err := tx.Exec(ctx, p.q.d.bind(`UPDATE incidents SET open_key = NULL, status = ?, resolved_at = ?
			WHERE id = ? AND open_key = 1`), string(sundial.IncidentResolved), sqlrow.Micros(now), id)
		if err != nil {
			return err
		}
		if n == 0 {
			return errTaken
		}
		return p.insertNotes(ctx, tx, id, notes)
	})
	if errors.Is(err, errTaken) {
		return false, nil
	}
	if err != nil {
		return false, p.wrap(err, "resolve incident %d", id)
	}
	return true, nil
}

// IncidentRepeat moves the open incident id's notified_at from prev to
// now and inserts notes.
func (p *Plain) IncidentRepeat(ctx context.Context, id int64, prev, now time.Time, notes []*sundial.Notification) (_ bool, err error) {
	defer p.classify(&err)
	err = p.inTx(ctx, func(tx DB) error {
		n, err := tx.Exec(ctx, p.q.d.bind(`UPDATE incidents SET notified_at = ?
			WHERE id = ? AND open_key = 1 AND notified_at = ? AND acked_at IS NULL`),
			sqlrow.Micros(now), id, sqlrow.Micros(prev))
		if err != nil {
			return err
		}
		if n == 0 {
			return errTaken
		}
		return p.insertNotes(ctx, tx, id, notes)
	})
	if errors.Is(err, errTaken) {
		return false, nil
	}
	if err != nil {
		return false, p.wrap(err, "repeat incident %d", id)
	}
	return true, nil
}

// IncidentAck acknowledges the open incident id, once.
func (p *Plain) IncidentAck(ctx context.Context, id int64, at time.Time, by, note string) (_ bool, err error) {
	defer p.classify(&err)
	n, err := p.w.Exec(ctx, p.q.d.bind(`UPDATE incidents SET acked_at = ?, acked_by = ?, ack_note = ?
		WHERE id = ? AND open_key = 1 AND acked_at IS NULL`), sqlrow.Micros(at), by, note, id)
	if err != nil {
		return false, p.wrap(err, "acknowledge incident %d", id)
	}
	if n > 0 {
		return true, nil
	}
	var one int
	err = p.w.QueryRow(ctx, p.q.d.bind(`SELECT 1 FROM incidents WHERE id = ?`), id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, sqlrow.NotFound("", "incident %d not found", id)
	}
	if err != nil {
		return false, p.wrap(err, "read incident %d", id)
	}
	return false, nil
}

// IncidentGet returns incident id with its notifications.
func (p *Plain) IncidentGet(ctx context.Context, id int64) (_ *sundial.Incident, err error) {
	defer p.classify(&err)
	inc, err := scanIncident(p.r.QueryRow(ctx, p.q.d.bind(`SELECT `+incidentCols+` FROM incidents WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("", "incident %d not found", id)
	}
	if err != nil {
		return nil, p.wrap(err, "read incident %d", id)
	}
	if err := p.withNotes(ctx, []*sundial.Incident{inc}); err != nil {
		return nil, err
	}
	return inc, nil
}

// IncidentList returns the incidents f selects, newest first.
func (p *Plain) IncidentList(ctx context.Context, f sundial.IncidentListParams) (_ []*sundial.Incident, err error) {
	defer p.classify(&err)
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.Status != "" {
		add("status = ?", string(f.Status))
	}
	if f.TaskID != 0 {
		add("task_id = ?", f.TaskID)
	}
	if f.RuleID != 0 {
		add("rule_id = ?", f.RuleID)
	}
	if f.RunID != 0 {
		add("run_id = ?", f.RunID)
	}
	if f.BeforeID > 0 {
		add("id < ?", f.BeforeID)
	}
	q := `SELECT ` + incidentCols + ` FROM incidents`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q += ` ORDER BY id DESC LIMIT ` + strconv.Itoa(limit)
	rows, err := p.r.Query(ctx, p.q.d.bind(q), args...)
	out, err := scanAll(rows, err, scanIncident)
	if err != nil {
		return nil, p.wrap(err, "list incidents")
	}
	if err := p.withNotes(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// withNotes reads the notifications of incs.
func (p *Plain) withNotes(ctx context.Context, incs []*sundial.Incident) error {
	if len(incs) == 0 {
		return nil
	}
	byID := make(map[int64]*sundial.Incident, len(incs))
	args := make([]any, len(incs))
	for i, inc := range incs {
		byID[inc.ID], args[i] = inc, inc.ID
	}
	q := `SELECT ` + notificationCols + ` FROM notifications WHERE incident_id IN (?` +
		strings.Repeat(", ?", len(incs)-1) + `) ORDER BY id`
	rows, err := p.r.Query(ctx, p.q.d.bind(q), args...)
	notes, err := scanAll(rows, err, scanNotification)
	if err != nil {
		return p.wrap(err, "read notifications")
	}
	for _, n := range notes {
		inc := byID[n.IncidentID]
		inc.Notifications = append(inc.Notifications, n)
	}
	return nil
}

// NotificationClaim claims up to limit due notifications for nodeID.
func (p *Plain) NotificationClaim(ctx context.Context, nodeID string, now, until time.Time, limit int) (_ []*sundial.Notification, err error) {
	defer p.classify(&err)
	b := p.q.d.bind
	pending := string(sundial.NotifyPending)
	rows, err := p.w.Query(ctx, b(`SELECT id FROM notifications WHERE status = ? AND due_at <= ? AND claimed_until <= ?
		ORDER BY due_at, id LIMIT `+strconv.Itoa(limit)), pending, sqlrow.Micros(now), sqlrow.Micros(now))
	ids, err := scanAll(rows, err, func(sc sqlrow.Scanner) (int64, error) {
		var v int64
		return v, sc.Scan(&v)
	})
	if err != nil {
		return nil, p.wrap(err, "find due notifications")
	}
	var out []*sundial.Notification
	for _, id := range ids {
		n, err := p.w.Exec(ctx, b(`UPDATE notifications SET claimed_by = ?, claimed_until = ?
			WHERE id = ? AND status = ? AND claimed_until <= ?`), nodeID, sqlrow.Micros(until), id, pending, sqlrow.Micros(now))
		if err != nil {
			return nil, p.wrap(err, "claim notification %d", id)
		}
		if n == 0 {
			continue // another node claimed it
		}
		note, err := scanNotification(p.w.QueryRow(ctx, b(`SELECT `+notificationCols+` FROM notifications WHERE id = ?`), id))
		if err != nil {
			return nil, p.wrap(err, "read notification %d", id)
		}
		out = append(out, note)
	}
	return out, nil
}

// NotificationFinish writes n's delivery if nodeID still holds its claim.
func (p *Plain) NotificationFinish(ctx context.Context, nodeID string, n *sundial.Notification) (_ bool, err error) {
	defer p.classify(&err)
	attempts, err := json.Marshal(n.Attempts)
	if err != nil {
		return false, err
	}
	c, err := p.w.Exec(ctx, p.q.d.bind(`UPDATE notifications SET status = ?, due_at = ?, tries = ?, attempts_json = ?,
		sent_at = ?, claimed_by = '', claimed_until = 0 WHERE id = ? AND claimed_by = ? AND status = ?`),
		string(n.Status), sqlrow.Micros(n.DueAt), n.Tries, string(attempts), sqlrow.NullMicros(n.SentAt), n.ID, nodeID,
		string(sundial.NotifyPending))
	if err != nil {
		return false, p.wrap(err, "record notification %d", n.ID)
	}
	return c == 1, nil
}
