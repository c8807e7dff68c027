package api

import (
	"net/http"
	"testing"

	"github.com/sundialhq/sundial"
)

func parents(names ...string) []map[string]any {
	var out []map[string]any
	for _, n := range names {
		out = append(out, map[string]any{"task": n, "on": "success"})
	}
	return out
}

// TestTaskDependencies: a task with parents and no schedule is made, and
// answered with its parents and join; an unknown parent, the task itself
// and a cycle (at create, PUT and PATCH) are 400 naming them; a parent
// with children cannot be deleted nor renamed (409 naming the children);
// GET /tasks/{id}/deps lists parents and children.
func TestTaskDependencies(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	a := b.create(t, task("a", nil))
	b.create(t, task("b", nil))
	c := b.create(t, task("c", map[string]any{"cron_expr": nil, "depends_on": parents("a", "b"), "join_deadline_seconds": 600,
		"body_template": `{"a":"{{parents.a.status}}","r":{{parents.b.result}}}`}))
	if c.CronExpr != "" || len(c.DependsOn) != 2 || c.Join != sundial.JoinAll || c.JoinDeadline != 600 || c.NextFireTime != nil {
		t.Fatalf("child: cron %q depends_on %+v join %q deadline %d next %v", c.CronExpr, c.DependsOn, c.Join, c.JoinDeadline, c.NextFireTime)
	}
	if got := b.get(t, c.ID); len(got.DependsOn) != 2 || got.DependsOn[1].Task != "b" || got.DependsOn[1].On != sundial.DependSuccess {
		t.Fatalf("GET child: %+v", got.DependsOn)
	}

	wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks", task("d", map[string]any{"depends_on": parents("nope")})),
		http.StatusBadRequest, errorDetail{Code: "invalid", Field: "depends_on[0].task", Token: "nope",
			Message: `depends_on: no task is named "nope"`})
	wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks", task("d", map[string]any{"depends_on": parents("d")})),
		http.StatusBadRequest, errorDetail{Code: "invalid", Field: "depends_on[0].task", Token: "d",
			Message: `depends_on: a task cannot depend on itself ("d")`})
	wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks", task("d", map[string]any{"depends_on": parents("a"), "join": "most"})),
		http.StatusBadRequest, errorDetail{Code: "invalid", Field: "join", Token: "most"})
	wantError(t, b.do(t, http.MethodPost, "/api/v1/tasks", task("d", map[string]any{"body_template": "{{parents.a.status}}"})),
		http.StatusBadRequest, errorDetail{Code: "invalid", Field: "body_template", Token: "parents.a.status"})

	// a -> c already: a depending on c is a cycle, by PUT and by PATCH.
	cur := b.get(t, a.ID)
	put := task("a", map[string]any{"depends_on": parents("c"), "version": cur.Version})
	wantError(t, b.do(t, http.MethodPut, taskPath(a.ID), put), http.StatusBadRequest,
		errorDetail{Code: "invalid", Field: "depends_on", Token: "c", Message: "depends_on: cycle a -> c -> a"})
	wantError(t, b.do(t, http.MethodPatch, taskPath(a.ID), map[string]any{"depends_on": parents("c")}), http.StatusBadRequest,
		errorDetail{Code: "invalid", Field: "depends_on", Token: "c", Message: "depends_on: cycle a -> c -> a"})
	// A longer one: e depends on c; then a on e.
	b.create(t, task("e", map[string]any{"depends_on": parents("c")}))
	wantError(t, b.do(t, http.MethodPatch, taskPath(a.ID), map[string]any{"depends_on": parents("e")}), http.StatusBadRequest,
		errorDetail{Code: "invalid", Field: "depends_on", Token: "e", Message: "depends_on: cycle a -> e -> c -> a"})

	// A parent keeps its name and stays while it has children.
	wantError(t, b.do(t, http.MethodDelete, taskPath(a.ID), nil), http.StatusConflict,
		errorDetail{Code: "conflict", Field: "depends_on", Token: "a"})
	wantError(t, b.do(t, http.MethodPatch, taskPath(a.ID), map[string]any{"name": "a2"}), http.StatusConflict,
		errorDetail{Code: "conflict", Field: "name", Token: "a2"})

	var deps depsView
	want(t, b.do(t, http.MethodGet, taskPath(c.ID, "/deps"), nil), http.StatusOK, &deps)
	if deps.Task != "c" || len(deps.Parents) != 2 || len(deps.Children) != 1 || deps.Children[0] != "e" || deps.Deadline != 600 {
		t.Fatalf("deps of c: %+v", deps)
	}

	// Without parents, the child is a plain task again (it needs a
	// schedule then), and a can go.
	var got sundial.Task
	want(t, b.do(t, http.MethodPatch, taskPath(c.ID), map[string]any{"depends_on": nil, "join_deadline_seconds": nil,
		"join": nil, "body_template": "", "cron_expr": "0 * * * * *"}), http.StatusOK, &got)
	if got.HasParents() || got.Join != "" {
		t.Fatalf("child without parents: %+v %q", got.DependsOn, got.Join)
	}
	want(t, b.do(t, http.MethodDelete, taskPath(a.ID), nil), http.StatusNoContent, nil)
}
