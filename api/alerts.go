package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sundialhq/sundial"
)

// The alerts' routes (docs/alerts.md): channels and rules, managed here
// and judged by the scheduler's alerter; incidents, read here.

// maxAlertBody is the largest body of a channel or a rule.
const maxAlertBody = 64 << 10

// AlertStore is what the alert routes read and write; sundial.Store has
// it.
type AlertStore interface {
	AlertChannelCreate(ctx context.Context, c *sundial.AlertChannel, now time.Time) error
	AlertChannelGet(ctx context.Context, id int64) (*sundial.AlertChannel, error)
	AlertChannelList(ctx context.Context) ([]*sundial.AlertChannel, error)
	AlertChannelUpdate(ctx context.Context, c *sundial.AlertChannel, now time.Time) error
	AlertChannelDelete(ctx context.Context, id int64) error
	AlertRuleCreate(ctx context.Context, r *sundial.AlertRule, now time.Time) error
	AlertRuleGet(ctx context.Context, id int64) (*sundial.AlertRule, error)
	AlertRuleList(ctx context.Context) ([]*sundial.AlertRule, error)
	AlertRuleUpdate(ctx context.Context, r *sundial.AlertRule, now time.Time) error
	AlertRuleDelete(ctx context.Context, id int64) error
	IncidentGet(ctx context.Context, id int64) (*sundial.Incident, error)
	IncidentList(ctx context.Context, f sundial.IncidentListParams) ([]*sundial.Incident, error)
	IncidentAck(ctx context.Context, id int64, at time.Time, by, note string) (bool, error)
}

// channelRequest is the body of POST /alert-channels and PUT
// /alert-channels/{id} (which needs version).
type channelRequest struct {
	Name          string                `json:"name"`
	Kind          sundial.ChannelKind   `json:"kind"`
	URL           string                `json:"url"`
	SigningSecret string                `json:"signing_secret"`
	SMTP          *sundial.SMTPSettings `json:"smtp"`
	Version       int64                 `json:"version"`
}

// ruleRequest is the body of POST /alert-rules and PUT /alert-rules/{id}
// (which needs version).
type ruleRequest struct {
	Name        string            `json:"name"`
	TaskID      int64             `json:"task_id"`
	Task        string            `json:"task"`
	Selector    string            `json:"selector"`
	Condition   conditionRequest  `json:"condition"`
	RepeatEvery string            `json:"repeat_every"`
	Silences    []sundial.Silence `json:"silences"`
	Channels    []string          `json:"channels"`
	Version     int64             `json:"version"`
}

// conditionRequest is a rule's condition as a client writes it: its
// durations as text ("90s", "1h30m").
type conditionRequest struct {
	Kind      sundial.ConditionKind `json:"kind"`
	Count     int                   `json:"count"`
	Rate      float64               `json:"rate"`
	Window    string                `json:"window"`
	MinRuns   int                   `json:"min_runs"`
	Threshold string                `json:"threshold"`
	Reasons   []sundial.SkipReason  `json:"reasons"`
}

// duration reads the duration text v of field, "" for none.
func duration(field, v string) (sundial.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e := sundial.Errorf(sundial.EInvalid, field, `%s must be a duration such as "90s", "5m" or "1h30m"`, field)
		e.Token = v
		return 0, e
	}
	return sundial.Duration(d), nil
}

// channelTestResult is the answer of POST /alert-channels/{id}/test.
type channelTestResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// alertsChanged tells this node's scheduler to reload the rules and
// channels now.
func (s *Server) alertsChanged() {
	if a, ok := s.sched.(interface{ AlertsChanged() }); ok {
		a.AlertsChanged()
	}
}

// alertStore is the store's alert methods, or an error when it has none.
func (s *Server) alertStore() (AlertStore, error) {
	as, ok := s.store.(AlertStore)
	if !ok {
		return nil, sundial.Errorf(sundial.EUnavailable, "", "this server keeps no alerts")
	}
	return as, nil
}

// channelOf checks and seals the channel of req (replacing cur, nil for a
// create). generated is the signing secret the server made for
// "generate", to answer once; "" for none.
func (s *Server) channelOf(req *channelRequest, cur *sundial.AlertChannel) (c *sundial.AlertChannel, generated string, err error) {
	c = &sundial.AlertChannel{Name: req.Name, Kind: req.Kind, URL: req.URL, SigningSecret: req.SigningSecret, SMTP: req.SMTP}
	if c.Kind == sundial.ChannelWebhook && c.SigningSecret == "generate" {
		c.SigningSecret = sundial.GenerateSigningSecret()
		generated = c.SigningSecret
	}
	if err := c.Validate(); err != nil {
		return nil, "", err
	}
	if c.Kind != sundial.ChannelEmail && s.checkTarget != nil && !sundial.Sealed(c.URL) && c.URL != sundial.Masked {
		if err := s.checkTarget(c.URL); err != nil {
			if e, ok := err.(*sundial.Error); ok {
				e.Field = "url"
			}
			return nil, "", err
		}
	}
	if err := sundial.SealChannel(c, cur, s.sealer); err != nil {
		return nil, "", err
	}
	return c, generated, nil
}

// channelAnswer is channel c as an answer: masked, but for a signing
// secret the request had generated, which is shown this once (a receiver
// needs it to verify the signatures).
func channelAnswer(c *sundial.AlertChannel, generated string) *sundial.AlertChannel {
	v := sundial.MaskChannel(c)
	if generated != "" {
		v.SigningSecret = generated
	}
	return v
}

// handleChannelCreate serves POST /api/v1/alert-channels.
func (s *Server) handleChannelCreate(w http.ResponseWriter, r *http.Request) {
	as, err := s.alertStore()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req channelRequest
	if err := decodeJSON(w, r, &req, maxAlertBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, generated, err := s.channelOf(&req, nil)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := as.AlertChannelCreate(r.Context(), c, s.now()); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.audit(r, "alert_channel.create", "alert-channel/"+strconv.FormatInt(c.ID, 10), 0, nil, sundial.MaskChannel(c))
	s.alertsChanged()
	w.Header().Set("Location", "/api/v1/alert-channels/"+strconv.FormatInt(c.ID, 10))
	writeJSON(w, http.StatusCreated, channelAnswer(c, generated))
}

// handleChannelList serves GET /api/v1/alert-channels: every channel, by
// name, its secrets masked.
func (s *Server) handleChannelList(w http.ResponseWriter, r *http.Request) {
	as, err := s.alertStore()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cs, err := as.AlertChannelList(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items := make([]*sundial.AlertChannel, len(cs))
	for i, c := range cs {
		items[i] = sundial.MaskChannel(c)
	}
	writeJSON(w, http.StatusOK, listResponse[*sundial.AlertChannel]{Items: items})
}

// handleChannelGet serves GET /api/v1/alert-channels/{id}.
func (s *Server) handleChannelGet(w http.ResponseWriter, r *http.Request) {
	as, id, ok := s.alertRoute(w, r)
	if !ok {
		return
	}
	c, err := as.AlertChannelGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sundial.MaskChannel(c))
}

// handleChannelReplace serves PUT /api/v1/alert-channels/{id}: the whole
// channel, with the version it was read at; a secret sent back as "***"
// keeps its stored value.
func (s *Server) handleChannelReplace(w http.ResponseWriter, r *http.Request) {
	as, id, ok := s.alertRoute(w, r)
	if !ok {
		return
	}
	var req channelRequest
	if err := decodeJSON(w, r, &req, maxAlertBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Version < 1 {
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "version", "version is required: the version the channel was read at"))
		return
	}
	cur, err := as.AlertChannelGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, generated, err := s.channelOf(&req, cur)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c.ID, c.Version, c.CreatedAt = id, req.Version, cur.CreatedAt
	if err := as.AlertChannelUpdate(r.Context(), c, s.now()); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.audit(r, "alert_channel.update", "alert-channel/"+strconv.FormatInt(id, 10), 0, sundial.MaskChannel(cur), sundial.MaskChannel(c))
	s.alertsChanged()
	writeJSON(w, http.StatusOK, channelAnswer(c, generated))
}

// handleChannelDelete serves DELETE /api/v1/alert-channels/{id}; a
// channel a rule names is a 409.
func (s *Server) handleChannelDelete(w http.ResponseWriter, r *http.Request) {
	as, id, ok := s.alertRoute(w, r)
	if !ok {
		return
	}
	c, err := as.AlertChannelGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rules, err := as.AlertRuleList(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for _, rule := range rules {
		for _, name := range rule.Channels {
			if name == c.Name {
				s.writeError(w, r, sundial.Errorf(sundial.EConflict, "id", "rule %q notifies channel %q: change or delete the rule first", rule.Name, c.Name))
				return
			}
		}
	}
	if err := as.AlertChannelDelete(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.audit(r, "alert_channel.delete", "alert-channel/"+strconv.FormatInt(id, 10), 0, sundial.MaskChannel(c), nil)
	s.alertsChanged()
	w.WriteHeader(http.StatusNoContent)
}

// handleChannelTest serves POST /api/v1/alert-channels/{id}/test: a test
// message is sent now, and the answer says how it went (200 either way:
// the request worked; the channel may not have).
func (s *Server) handleChannelTest(w http.ResponseWriter, r *http.Request) {
	as, id, ok := s.alertRoute(w, r)
	if !ok {
		return
	}
	c, err := as.AlertChannelGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res := channelTestResult{OK: true}
	open, err := sundial.OpenChannel(c, s.sealer)
	switch {
	case err != nil:
	case s.notify == nil:
		err = fmt.Errorf("this server sends no notifications")
	default:
		err = s.notify(r.Context(), open, sundial.AlertMessage{Event: sundial.EventTest, Rule: "test", Task: "test",
			Reason: "a test notification sent through the API", OpenedAt: s.now().UTC(),
			Key: "ntf_test_" + strconv.FormatInt(s.now().UnixNano(), 36)})
	}
	if err != nil {
		res = channelTestResult{Error: err.Error()}
	}
	s.audit(r, "alert_channel.test", "alert-channel/"+strconv.FormatInt(id, 10), 0, nil, res)
	writeJSON(w, http.StatusOK, res)
}

// alertRoute reads the store and the path's id of an alert route, or
// answers the error.
func (s *Server) alertRoute(w http.ResponseWriter, r *http.Request) (AlertStore, int64, bool) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return nil, 0, false
	}
	as, err := s.alertStore()
	if err != nil {
		s.writeError(w, r, err)
		return nil, 0, false
	}
	return as, id, true
}

// ruleOf checks a rule request: its task (by id or name) exists, its
// channels exist.
func (s *Server) ruleOf(ctx context.Context, as AlertStore, req *ruleRequest) (*sundial.AlertRule, error) {
	c := req.Condition
	rule := &sundial.AlertRule{Name: req.Name, TaskID: req.TaskID, TaskName: req.Task, Selector: req.Selector,
		Condition: sundial.AlertCondition{Kind: c.Kind, Count: c.Count, Rate: c.Rate, MinRuns: c.MinRuns, Reasons: c.Reasons},
		Silences:  req.Silences, Channels: req.Channels}
	var err error
	if rule.RepeatEvery, err = duration("repeat_every", req.RepeatEvery); err != nil {
		return nil, err
	}
	if rule.Condition.Window, err = duration("condition.window", c.Window); err != nil {
		return nil, err
	}
	if rule.Condition.Threshold, err = duration("condition.threshold", c.Threshold); err != nil {
		return nil, err
	}
	if req.TaskID != 0 && req.Task != "" {
		return nil, sundial.Errorf(sundial.EInvalid, "task", "give task (a name) or task_id, not both")
	}
	if err := rule.Validate(); err != nil {
		return nil, err
	}
	switch {
	case req.TaskID != 0:
		t, err := s.store.TaskGet(ctx, req.TaskID)
		if sundial.ErrorCode(err) == sundial.ENotFound {
			return nil, sundial.Errorf(sundial.EInvalid, "task_id", "no task %d", req.TaskID)
		}
		if err != nil {
			return nil, err
		}
		rule.TaskName = t.Name
	case req.Task != "":
		ts, err := s.store.TaskList(ctx, sundial.TaskListParams{Name: req.Task, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(ts) == 0 {
			e := sundial.Errorf(sundial.EInvalid, "task", "no task named %q", req.Task)
			e.Token = req.Task
			return nil, e
		}
		rule.TaskID = ts[0].ID
	}
	chans, err := as.AlertChannelList(ctx)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, c := range chans {
		have[c.Name] = true
	}
	for i, name := range req.Channels {
		if !have[name] {
			e := sundial.Errorf(sundial.EInvalid, fmt.Sprintf("channels[%d]", i), "no channel named %q", name)
			e.Token = name
			return nil, e
		}
	}
	return rule, nil
}

// handleRuleCreate serves POST /api/v1/alert-rules.
func (s *Server) handleRuleCreate(w http.ResponseWriter, r *http.Request) {
	as, err := s.alertStore()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req ruleRequest
	if err := decodeJSON(w, r, &req, maxAlertBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	rule, err := s.ruleOf(r.Context(), as, &req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := as.AlertRuleCreate(r.Context(), rule, s.now()); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.audit(r, "alert_rule.create", "alert-rule/"+strconv.FormatInt(rule.ID, 10), rule.TaskID, nil, rule)
	s.alertsChanged()
	w.Header().Set("Location", "/api/v1/alert-rules/"+strconv.FormatInt(rule.ID, 10))
	writeJSON(w, http.StatusCreated, rule)
}

// handleRuleList serves GET /api/v1/alert-rules: every rule, by name.
func (s *Server) handleRuleList(w http.ResponseWriter, r *http.Request) {
	as, err := s.alertStore()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var watched *sundial.Task
	if v := r.URL.Query().Get("task_id"); v != "" {
		id, err := positiveQuery("task_id", v)
		if err == nil {
			if watched, err = s.store.TaskGet(r.Context(), id); sundial.ErrorCode(err) == sundial.ENotFound {
				err = sundial.Errorf(sundial.ENotFound, "task_id", "no task %d", id)
			}
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	rules, err := as.AlertRuleList(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if watched != nil {
		rules = slices.DeleteFunc(rules, func(rule *sundial.AlertRule) bool { return !rule.Watches(watched) })
	}
	if rules == nil {
		rules = []*sundial.AlertRule{}
	}
	writeJSON(w, http.StatusOK, listResponse[*sundial.AlertRule]{Items: rules})
}

// handleRuleGet serves GET /api/v1/alert-rules/{id}.
func (s *Server) handleRuleGet(w http.ResponseWriter, r *http.Request) {
	as, id, ok := s.alertRoute(w, r)
	if !ok {
		return
	}
	rule, err := as.AlertRuleGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rule)
}

// handleRuleReplace serves PUT /api/v1/alert-rules/{id}.
func (s *Server) handleRuleReplace(w http.ResponseWriter, r *http.Request) {
	as, id, ok := s.alertRoute(w, r)
	if !ok {
		return
	}
	var req ruleRequest
	if err := decodeJSON(w, r, &req, maxAlertBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Version < 1 {
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "version", "version is required: the version the rule was read at"))
		return
	}
	cur, err := as.AlertRuleGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rule, err := s.ruleOf(r.Context(), as, &req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rule.ID, rule.Version, rule.CreatedAt = id, req.Version, cur.CreatedAt
	if err := as.AlertRuleUpdate(r.Context(), rule, s.now()); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.audit(r, "alert_rule.update", "alert-rule/"+strconv.FormatInt(id, 10), rule.TaskID, cur, rule)
	s.alertsChanged()
	writeJSON(w, http.StatusOK, rule)
}

// handleRuleDelete serves DELETE /api/v1/alert-rules/{id}; its open
// incidents resolve at the next sweep, without a notification.
func (s *Server) handleRuleDelete(w http.ResponseWriter, r *http.Request) {
	as, id, ok := s.alertRoute(w, r)
	if !ok {
		return
	}
	cur, err := as.AlertRuleGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := as.AlertRuleDelete(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.audit(r, "alert_rule.delete", "alert-rule/"+strconv.FormatInt(id, 10), cur.TaskID, cur, nil)
	s.alertsChanged()
	w.WriteHeader(http.StatusNoContent)
}

// handleIncidentList serves GET /api/v1/incidents: a page of incidents,
// newest first, each with its notifications.
func (s *Server) handleIncidentList(w http.ResponseWriter, r *http.Request) {
	as, err := s.alertStore()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	limit, err := parseLimit(q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f := sundial.IncidentListParams{Limit: limit + 1}
	switch st := q.Get("status"); st {
	case "", string(sundial.IncidentOpen), string(sundial.IncidentResolved):
		f.Status = sundial.IncidentStatus(st)
	default:
		e := sundial.Errorf(sundial.EInvalid, "status", "status must be OPEN or RESOLVED")
		e.Token = st
		s.writeError(w, r, e)
		return
	}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"task_id", &f.TaskID}, {"rule_id", &f.RuleID}} {
		if v := q.Get(p.name); v != "" {
			if *p.dst, err = positiveQuery(p.name, v); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
	}
	if c := q.Get("cursor"); c != "" {
		if f.BeforeID, err = decodeTaskCursor(c); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	incs, err := as.IncidentList(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items, next := page(incs, limit, func(i *sundial.Incident) string { return encodeTaskCursor(i.ID) })
	writeJSON(w, http.StatusOK, listResponse[*sundial.Incident]{Items: items, NextCursor: next})
}

// handleIncidentGet serves GET /api/v1/incidents/{id}.
func (s *Server) handleIncidentGet(w http.ResponseWriter, r *http.Request) {
	as, id, ok := s.alertRoute(w, r)
	if !ok {
		return
	}
	inc, err := as.IncidentGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inc)
}

// ackRequest is the optional body of POST /incidents/{id}/ack.
type ackRequest struct {
	Note string `json:"note"`
}

// handleIncidentAck serves POST /api/v1/incidents/{id}/ack: the open
// incident is acknowledged, by the request's actor, with an optional
// note; it then sends no repeat notification, and still its resolve. A
// resolved incident, or one acknowledged already, is a 409.
func (s *Server) handleIncidentAck(w http.ResponseWriter, r *http.Request) {
	as, id, ok := s.alertRoute(w, r)
	if !ok {
		return
	}
	var req ackRequest
	if err := decodeOptional(w, r, &req, maxAlertBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := sundial.CheckAckNote(req.Note); err != nil {
		s.writeError(w, r, err)
		return
	}
	acked, err := as.IncidentAck(r.Context(), id, s.now(), actorOf(r), req.Note)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	inc, err := as.IncidentGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !acked {
		e := sundial.Errorf(sundial.EConflict, "", "incident %d is resolved; only an open incident is acknowledged", id)
		if inc.Status == sundial.IncidentOpen && inc.AckedAt != nil {
			e = sundial.Errorf(sundial.EConflict, "", "incident %d was acknowledged already, by %s at %s", id, inc.AckedBy,
				inc.AckedAt.UTC().Format(time.RFC3339))
		}
		s.writeError(w, r, e)
		return
	}
	s.audit(r, "incident.ack", "incident/"+strconv.FormatInt(id, 10), inc.TaskID, nil, map[string]string{"note": req.Note})
	writeJSON(w, http.StatusOK, inc)
}

// positiveQuery reads v, the value of query parameter name, as a positive
// integer: an id.
func positiveQuery(name, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		e := sundial.Errorf(sundial.EInvalid, name, "%s must be a positive integer", name)
		e.Token = v
		return 0, e
	}
	return n, nil
}
