package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sundialhq/sundial"
)

// Limits of POST /api/v1/tasks:batch and GET /api/v1/tasks/{id}/upcoming.
const (
	maxBatchTasks   = 1000
	maxBatchBody    = 16 << 20
	defaultUpcoming = 10
	maxUpcoming     = 1000
)

// batchRequest is the body of POST /api/v1/tasks:batch.
type batchRequest struct {
	Tasks []json.RawMessage `json:"tasks"`
}

// batchItem is the result of one task of a batch: the task created (201),
// or found by its request_id (200); or, when the batch was refused, the
// item's error (and null for the items that were fine).
type batchItem struct {
	Status int           `json:"status"`
	Task   *sundial.Task `json:"task,omitempty"`
	Error  *errorDetail  `json:"error,omitempty"`
}

type batchResponse struct {
	Items []batchItem `json:"items"`
}

// handleTaskBatch serves POST /api/v1/tasks:batch: up to 1,000 tasks,
// created in one transaction. Either every task is created (or found by
// its request_id) and the answer is 200 with a result per item, or none is
// and the answer is the status of the first failing item, with every
// failing item's error in its place.
func (s *Server) handleTaskBatch(w http.ResponseWriter, r *http.Request) {
	raw, err := readJSON(w, r, maxBatchBody)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// A fault inside an item is left to the item's own check below, so
	// that the answer lists every refused item in its place.
	if f := findJSONFault(raw); f != nil && !(len(f.path) > 1 && f.path[0].name == "tasks" && f.path[1].isIndex) {
		s.writeError(w, r, f.error())
		return
	}
	var req batchRequest
	if err := decodeStrict(raw, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case req.Tasks == nil:
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "tasks", "tasks is required: an array of task objects"))
		return
	case len(req.Tasks) == 0:
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "tasks", "tasks is empty"))
		return
	case len(req.Tasks) > maxBatchTasks:
		s.writeError(w, r, sundial.Errorf(sundial.EInvalid, "tasks",
			"tasks has %d items; a batch takes at most %d", len(req.Tasks), maxBatchTasks))
		return
	}
	now := s.now()
	tasks := make([]*sundial.Task, len(req.Tasks))
	items := make([]batchItem, len(req.Tasks))
	generated := make([]string, len(req.Tasks))
	failed := 0
	for i, raw := range req.Tasks {
		t, gen, err := s.batchTask(r.Context(), raw, now, actorOf(r))
		if err != nil {
			items[i] = itemError(i, err)
			failed++
			continue
		}
		t.NextFireTime = nextFire(t, now)
		tasks[i], generated[i] = t, gen
	}
	if failed == 0 {
		for i, t := range tasks {
			if err := s.checkDeps(r.Context(), t, nil, tasks); err != nil {
				items[i] = itemError(i, err)
				failed++
			}
		}
	}
	if failed > 0 {
		s.writeBatchError(w, items)
		return
	}
	existed, err := s.store.TaskCreateMany(r.Context(), tasks, now)
	if err != nil {
		be, ok := errors.AsType[*sundial.BatchError](err)
		if !ok || sundial.ErrorCode(err) == sundial.EUnavailable {
			s.writeError(w, r, err)
			return
		}
		items[be.Index] = itemError(be.Index, be.Err)
		s.writeBatchError(w, items)
		return
	}
	created := false
	var audit []*sundial.AuditEntry
	var found []*sundial.Task // found by their request_id: they may have a history
	for i, t := range tasks {
		if existed[i] {
			found = append(found, t)
		} else {
			t.State = t.Health(nil, nil, now)
		}
	}
	s.answerStates(r, now, found...)
	for i, t := range tasks {
		if existed[i] {
			items[i] = batchItem{Status: http.StatusOK, Task: taskView(t, now)}
			continue
		}
		created = true
		s.logChange(r, "task created", slog.Int64("task_id", t.ID), slog.String("name", t.Name),
			slog.Int("batch_item", i))
		audit = append(audit, s.auditEntry(r, "task.create", taskTarget(t.ID), t.ID, nil, t))
		items[i] = batchItem{Status: http.StatusCreated, Task: answerTask(t, now, generated[i])}
	}
	if created {
		s.auditAll(r, audit)
		s.sched.Poke()
	}
	writeJSON(w, http.StatusOK, batchResponse{Items: items})
}

// batchTask decodes and checks one task of a batch, as POST /tasks does
// for actor, and returns the signing secret generated for it, if any.
func (s *Server) batchTask(ctx context.Context, raw json.RawMessage, now time.Time, actor string) (*sundial.Task, string, error) {
	if err := checkJSON(raw); err != nil {
		return nil, "", err
	}
	req := taskRequest{actor: actor}
	if err := decodeStrict(raw, &req); err != nil {
		return nil, "", err
	}
	t, err := s.writable(ctx, &req, nil, now)
	return t, req.generated, err
}

// itemError is the result of item i refused with err; its field is the
// path inside the batch (tasks[3].cron_expr).
func itemError(i int, err error) batchItem {
	e, ok := errors.AsType[*sundial.Error](err)
	if !ok {
		e = sundial.Errorf(sundial.EInternal, "", "internal error")
	}
	status, ok := statusByCode[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	field := fmt.Sprintf("tasks[%d]", i)
	if e.Field != "" {
		field += "." + e.Field
	}
	return batchItem{Status: status, Error: &errorDetail{Code: e.Code, Message: e.Message, Field: field, Token: e.Token}}
}

// writeBatchError answers a refused batch: the status of its first failing
// item, and every item's result.
func (s *Server) writeBatchError(w http.ResponseWriter, items []batchItem) {
	i := slices.IndexFunc(items, func(it batchItem) bool { return it.Error != nil })
	first := items[i]
	refused := make([]*batchItem, len(items)) // null for the items that were fine
	for j := range items {
		if items[j].Error != nil {
			refused[j] = &items[j]
		}
	}
	writeJSON(w, first.Status, struct {
		Error errorDetail  `json:"error"`
		Items []*batchItem `json:"items"`
	}{Error: errorDetail{Code: first.Error.Code, Message: "no task was created: " + first.Error.Field + ": " + first.Error.Message,
		Field: first.Error.Field, Token: first.Error.Token}, Items: refused})
}

// maxUpcomingLooked bounds the fire times GET /tasks/{id}/upcoming looks
// at past the planned runs, listed or passed over for a calendar.
const maxUpcomingLooked = 100_000

// calendarSet returns the calendars t references, compiled; one that does
// not exist (any more) is left out.
func (s *Server) calendarSet(ctx context.Context, t *sundial.Task) (sundial.CalendarSet, error) {
	set := sundial.CalendarSet{}
	for _, name := range t.Calendars {
		c, err := s.store.CalendarGet(ctx, name)
		if sundial.ErrorCode(err) == sundial.ENotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		if rule, err := c.Compile(); err == nil {
			set[name] = rule
		}
	}
	return set, nil
}

// upcomingResponse is the body of GET /api/v1/tasks/{id}/upcoming.
type upcomingResponse struct {
	// Runs are the fires already planned (materialised ahead: within the
	// planner's lookahead, or further for a frequent task), by scheduled
	// time.
	Runs []*sundial.Run `json:"runs"`
	// Next are the fire times after them that are not planned yet, but
	// for those on one of the task's calendars.
	Next []time.Time `json:"next"`
}

// handleTaskUpcoming serves GET /api/v1/tasks/{id}/upcoming?limit=: the
// task's next fires, planned runs first.
func (s *Server) handleTaskUpcoming(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit := defaultUpcoming
	if v := r.URL.Query().Get("limit"); v != "" {
		limit, err = strconv.Atoi(v)
		if err != nil || limit < 1 || limit > maxUpcoming {
			s.writeError(w, r, &sundial.Error{Code: sundial.EInvalid, Field: "limit", Token: v,
				Message: "limit must be an integer from 1 to " + strconv.Itoa(maxUpcoming)})
			return
		}
	}
	t, err := s.store.TaskGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	runs, err := s.store.RunUpcoming(r.Context(), id, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if runs == nil {
		runs = []*sundial.Run{}
	}
	resp := upcomingResponse{Runs: runs, Next: []time.Time{}}
	for _, run := range runs {
		utcRun(run)
	}
	cals, err := s.calendarSet(r.Context(), t)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	_, loc, _ := t.Schedule()
	if t.Status == sundial.TaskEnabled && t.NextFireTime != nil && (t.OneOff() || t.Fires(*t.NextFireTime)) {
		next := t.NextFireTime.UTC()
		// A fire on one of the task's calendars is not listed: it will be
		// SKIPPED (CALENDAR). The look is bounded, for a calendar that
		// covers every day.
		for looked := 0; len(resp.Runs)+len(resp.Next) < limit && looked < maxUpcomingLooked; looked++ {
			if _, off := cals.Skips(t, next, loc); !off || t.OneOff() {
				resp.Next = append(resp.Next, next)
				t.Count(next) // each fire listed counts against max_runs, as the planner's will
			}
			n := t.NextAfter(next)
			if n == nil {
				break
			}
			next = *n
		}
	}
	writeJSON(w, http.StatusOK, resp)
}
