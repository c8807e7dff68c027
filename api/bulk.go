package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/sundialhq/sundial"
)

// maxBulkTasks bounds the tasks of one POST /api/v1/tasks:bulk, named by
// ids or selected by a selector.
const maxBulkTasks = 1000

// The actions of a bulk request, and the role each needs.
var bulkActions = map[string]sundial.Role{
	"enable":  sundial.RoleOperator,
	"disable": sundial.RoleOperator,
	"trigger": sundial.RoleOperator,
	"delete":  sundial.RoleEditor,
}

// bulkRequest is the body of POST /api/v1/tasks:bulk: an action, and the
// tasks it applies to, by ids or by a selector.
type bulkRequest struct {
	Action   string  `json:"action"`
	IDs      []int64 `json:"ids"`
	Selector *string `json:"selector"`
}

func (bulkRequest) examples() map[string]string {
	return map[string]string{"action": `"disable"`, "ids": `[3, 7]`, "selector": `"team=payments,env!=prod"`}
}

// bulkItem is what became of one task of a bulk request: ok when the
// action was applied to it (an enable or disable of a task already so
// included); else its error. A trigger's item has the run it made.
type bulkItem struct {
	ID        int64             `json:"id"`
	Name      string            `json:"name"`
	OK        bool              `json:"ok"`
	RunID     int64             `json:"run_id,omitempty"`
	RunStatus sundial.RunStatus `json:"run_status,omitempty"`
	Error     *errorDetail      `json:"error,omitempty"`

	status int    // the HTTP status of the item's error
	field  string // where the request named it: ids[3], or selector
}

type bulkResponse struct {
	Action string     `json:"action"`
	Items  []bulkItem `json:"items"`
}

// bulkErrorBody is the answer of a bulk request that failed: the first
// failed task's error, and every task's item.
type bulkErrorBody struct {
	Error  errorDetail `json:"error"`
	Action string      `json:"action"`
	Items  []bulkItem  `json:"items"`
}

// handleTaskBulk serves POST /api/v1/tasks:bulk: enable, disable, trigger
// or delete up to 1,000 tasks, named by ids or selected by a label
// selector. It is all or nothing by checking first: every task is read
// and the action checked against it (the task exists, and for enable and
// disable is not a one-off task that has ended) before any is changed; if
// one fails, none is changed, and the answer is that task's error, with
// each task's in items. Then the action is applied to each task in turn,
// as the route of one task would (its audit entry included). The actions
// cannot share one transaction: a trigger is admitted by the scheduler
// under the task's policies, outside the store. So a task changed by
// another request between the check and the change, or a database that
// fails midway, leaves the tasks before it changed: the answer is then the
// first failed task's error, and items say which were changed.
func (s *Server) handleTaskBulk(w http.ResponseWriter, r *http.Request) {
	var req bulkRequest
	if err := decodeJSON(w, r, &req, maxTaskBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	action, err := s.checkBulk(r, &req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items, err := s.bulkTasks(r.Context(), &req, action)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if slices.ContainsFunc(items, func(it bulkItem) bool { return it.Error != nil }) {
		s.writeBulkError(w, action, items, "nothing was done")
		return
	}
	items = s.applyBulk(r, action, items)
	if slices.ContainsFunc(items, func(it bulkItem) bool { return it.Error != nil }) {
		s.writeBulkError(w, action, items, "not every task was done (items say which were)")
		return
	}
	writeJSON(w, http.StatusOK, bulkResponse{Action: action, Items: items})
}

// checkBulk checks a bulk request before any task is read, and returns
// its action, in lower case.
func (s *Server) checkBulk(r *http.Request, req *bulkRequest) (string, error) {
	action := strings.ToLower(strings.TrimSpace(req.Action))
	role, ok := bulkActions[action]
	if !ok {
		if req.Action == "" {
			return "", sundial.Errorf(sundial.EInvalid, "action", "action is required: enable, disable, trigger or delete")
		}
		return "", &sundial.Error{Code: sundial.EInvalid, Field: "action", Token: req.Action,
			Message: "must be one of enable, disable, trigger, delete"}
	}
	if err := s.requireRole(r, role); err != nil {
		return "", err
	}
	if action == "trigger" && !s.sched.Ready() {
		// Every trigger would be refused: say so before any task is read.
		return "", &sundial.Error{Code: sundial.EUnavailable,
			Message: "this node is stopping or has lost its cluster membership; try again shortly"}
	}
	switch {
	case req.IDs != nil && req.Selector != nil:
		return "", sundial.Errorf(sundial.EInvalid, "selector", "give ids or selector, not both")
	case req.IDs == nil && req.Selector == nil:
		return "", sundial.Errorf(sundial.EInvalid, "ids", "give the tasks by ids (an array of task ids) or by selector (a label selector)")
	case req.Selector != nil && strings.TrimSpace(*req.Selector) == "":
		return "", sundial.Errorf(sundial.EInvalid, "selector",
			"selector is empty, which would select every task; give a label selector, or ids")
	case req.IDs != nil && len(req.IDs) == 0:
		return "", sundial.Errorf(sundial.EInvalid, "ids", "ids is empty")
	case len(req.IDs) > maxBulkTasks:
		return "", sundial.Errorf(sundial.EInvalid, "ids", "ids has %d items; a bulk action takes at most %d tasks",
			len(req.IDs), maxBulkTasks)
	}
	seen := make(map[int64]int, len(req.IDs))
	for i, id := range req.IDs {
		field := fmt.Sprintf("ids[%d]", i)
		if id < 1 {
			return "", &sundial.Error{Code: sundial.EInvalid, Field: field, Token: strconv.FormatInt(id, 10),
				Message: "a task id is a positive integer"}
		}
		if j, dup := seen[id]; dup {
			return "", &sundial.Error{Code: sundial.EInvalid, Field: field, Token: strconv.FormatInt(id, 10),
				Message: fmt.Sprintf("task %d is listed twice, at ids[%d] and here; give each task once", id, j)}
		}
		seen[id] = i
	}
	return action, nil
}

// requireRole refuses r unless its token's role is role at least, when
// authentication is on: for a route whose role depends on its body.
func (s *Server) requireRole(r *http.Request, role sundial.Role) error {
	if s.auth == nil || !s.auth.Required {
		return nil
	}
	p, _ := r.Context().Value(principalKey{}).(*principal)
	if p == nil || !p.role.Allows(role) {
		actor, has := sundial.ActorAnonymous, sundial.RoleNone
		if p != nil {
			actor, has = p.actor, p.role
		}
		return sundial.Errorf(sundial.EForbidden, "", "%s %s with this action needs the role %s; token %q has the role %s",
			r.Method, r.URL.Path, role, actor, has)
	}
	return nil
}

// bulkTasks reads the tasks a bulk request names, as items: by ids, in
// their order, an unknown one with its error; by selector, the live tasks
// it matches, by id. More than maxBulkTasks matched is an error.
func (s *Server) bulkTasks(ctx context.Context, req *bulkRequest, action string) ([]bulkItem, error) {
	if req.Selector == nil {
		items := make([]bulkItem, len(req.IDs))
		for i, id := range req.IDs {
			items[i] = bulkItem{ID: id, field: fmt.Sprintf("ids[%d]", i)}
			t, err := s.store.TaskGet(ctx, id)
			switch {
			case sundial.ErrorCode(err) == sundial.ENotFound:
				items[i].status, items[i].Error = http.StatusNotFound,
					&errorDetail{Code: sundial.ENotFound, Message: fmt.Sprintf("task %d not found", id)}
				continue
			case err != nil:
				return nil, err
			}
			items[i].Name = t.Name
			items[i].status, items[i].Error = checkBulkTask(t, action)
		}
		return items, nil
	}
	sel, err := sundial.ParseSelector("selector", *req.Selector)
	if err != nil {
		return nil, err
	}
	var items []bulkItem
	for after := int64(0); ; {
		page, err := s.store.TaskList(ctx, sundial.TaskListParams{Selector: sel, AfterID: after, Limit: maxBulkTasks})
		if err != nil {
			return nil, err
		}
		for _, t := range page {
			if len(items) == maxBulkTasks {
				return nil, &sundial.Error{Code: sundial.EInvalid, Field: "selector", Token: *req.Selector,
					Message: fmt.Sprintf("the selector matches more than %d tasks, more than a bulk action takes; narrow it", maxBulkTasks)}
			}
			it := bulkItem{ID: t.ID, Name: t.Name, field: "selector"}
			it.status, it.Error = checkBulkTask(t, action)
			items = append(items, it)
		}
		if len(page) < maxBulkTasks {
			return items, nil
		}
		after = page[len(page)-1].ID
	}
}

// checkBulkTask is what the check of a bulk request says of action on the
// live task t: nothing, or, for enable and disable of a one-off task that
// has ended, the conflict the route of one task answers. (A trigger or a
// delete takes any live task.)
func checkBulkTask(t *sundial.Task, action string) (int, *errorDetail) {
	if t.Status.Ended() && (action == "enable" || action == "disable") {
		return http.StatusConflict, &errorDetail{Code: sundial.EConflict, Field: "status",
			Message: fmt.Sprintf("task %d is a one-off task that has ended (%s); PUT it with a new run_at to run it again", t.ID, t.Status)}
	}
	return 0, nil
}

// applyBulk applies action to each task of items, in order, and returns
// the items with what became of each. The changes are audited in one
// write, as the routes of one task audit them, and logged.
func (s *Server) applyBulk(r *http.Request, action string, items []bulkItem) []bulkItem {
	ctx := r.Context()
	var audit []*sundial.AuditEntry
	var waits []int64
	for i := range items {
		it := &items[i]
		var err error
		switch action {
		case "enable", "disable":
			status, msg, act := sundial.TaskEnabled, "task enabled", "task.enable"
			if action == "disable" {
				status, msg, act = sundial.TaskDisabled, "task disabled", "task.disable"
			}
			var t, before *sundial.Task
			t, before, err = s.setTaskStatus(ctx, it.ID, status, nil, actorOf(r))
			if err == nil && before != nil {
				s.logChange(r, msg, slog.Int64("task_id", t.ID), slog.String("name", t.Name), slog.Bool("bulk", true))
				audit = append(audit, s.auditEntry(r, act, taskTarget(t.ID), t.ID, before, t))
			}
		case "trigger":
			var run *sundial.Run
			run, err = s.sched.Trigger(ctx, it.ID, nil)
			if err == nil {
				it.RunID, it.RunStatus = run.ID, run.Status
				s.logChange(r, "task triggered", append(runAttrs(run), slog.Bool("bulk", true))...)
				audit = append(audit, s.auditEntry(r, "task.trigger", taskTarget(it.ID), it.ID, nil, newRunChange(run)))
			}
		case "delete":
			before, _ := s.store.TaskGet(ctx, it.ID) // for the audit log; the delete decides
			if err = s.checkDelete(ctx, it.ID); err == nil {
				err = s.store.TaskDelete(ctx, it.ID, s.now())
			}
			if err == nil {
				waits = append(waits, it.ID)
				s.logChange(r, "task deleted", slog.Int64("task_id", it.ID), slog.Bool("bulk", true))
				audit = append(audit, s.auditEntry(r, "task.delete", taskTarget(it.ID), it.ID, before, nil))
			}
		}
		if err != nil {
			it.status, it.Error = s.itemError(r, err)
			continue
		}
		it.OK = true
	}
	s.auditAll(r, audit)
	if len(waits) > 0 {
		s.sched.Poke()
		for _, id := range waits {
			s.awaitSending(ctx, id)
		}
	}
	return items
}

// itemError is the status and detail of err as writeError would answer
// it; an internal error is logged, and its detail says only so.
func (s *Server) itemError(r *http.Request, err error) (int, *errorDetail) {
	if e, ok := errors.AsType[*sundial.Error](err); ok {
		if status, ok := statusByCode[e.Code]; ok {
			return status, &errorDetail{Code: e.Code, Message: e.Message, Field: e.Field, Token: e.Token}
		}
	}
	s.logger().LogAttrs(r.Context(), slog.LevelError, "bulk action on a task failed",
		slog.String("component", "api"), slog.String("path", r.URL.Path), slog.Any("err", err))
	return http.StatusInternalServerError, &errorDetail{Code: sundial.EInternal, Message: "internal error"}
}

// writeBulkError answers a bulk request that failed: the status and error
// of its first failed item, said with what of the request, and the items.
func (s *Server) writeBulkError(w http.ResponseWriter, action string, items []bulkItem, what string) {
	i := slices.IndexFunc(items, func(it bulkItem) bool { return it.Error != nil })
	first := items[i]
	name := ""
	if first.Name != "" {
		name = " (" + first.Name + ")"
	}
	status := first.status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfter)
	}
	writeJSON(w, status, bulkErrorBody{Error: errorDetail{Code: first.Error.Code, Field: first.field, Token: strconv.FormatInt(first.ID, 10),
		Message: fmt.Sprintf("%s: task %d%s: %s", what, first.ID, name, first.Error.Message)},
		Action: action, Items: items})
}
