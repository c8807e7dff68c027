package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// withParents reads the live tasks that have parents.
func (s *Server) withParents(ctx context.Context) ([]*sundial.Task, error) {
	var out []*sundial.Task
	var after int64
	for {
		page, err := s.store.TaskList(ctx, sundial.TaskListParams{HasParents: true, AfterID: after, Limit: 1000})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].ID
	}
}

// checkDeps checks the parents of t, a task about to be created (cur
// nil) or to replace cur, with the tasks of its batch (batch, t among
// them; nil for one task): every parent is a live task or a task of the
// batch, and no cycle goes through t (sundial.CheckDependencies). A task
// that has children keeps its name: renaming it is EConflict, naming them.
func (s *Server) checkDeps(ctx context.Context, t, cur *sundial.Task, batch []*sundial.Task) error {
	renamed := cur != nil && cur.Name != t.Name
	if !t.HasParents() && !renamed {
		return nil
	}
	stored, err := s.withParents(ctx)
	if err != nil {
		return err
	}
	others := make([]*sundial.Task, 0, len(stored)+len(batch))
	for _, o := range stored {
		if cur == nil || o.ID != cur.ID {
			others = append(others, o)
		}
	}
	for _, o := range batch {
		if o != t {
			others = append(others, o)
		}
	}
	if renamed {
		if children := sundial.ChildrenOf(cur.Name, others); len(children) > 0 {
			return &sundial.Error{Code: sundial.EConflict, Field: "name", Token: t.Name,
				Message: fmt.Sprintf("task %q is a parent of %s (depends_on names it): it cannot be renamed", cur.Name, strings.Join(children, ", "))}
		}
	}
	if !t.HasParents() {
		return nil
	}
	var lookErr error
	exists := func(name string) bool {
		for _, o := range batch {
			if o.Name == name {
				return true
			}
		}
		found, err := s.store.TaskList(ctx, sundial.TaskListParams{Name: name, Limit: 1})
		if err != nil {
			lookErr = err
		}
		return len(found) > 0
	}
	err = sundial.CheckDependencies(t, others, exists)
	if lookErr != nil {
		return lookErr
	}
	return err
}

// checkDelete refuses to delete the task id while live tasks depend on it
// (EConflict, naming them): delete or change the children first.
func (s *Server) checkDelete(ctx context.Context, id int64) error {
	t, err := s.store.TaskGet(ctx, id)
	if err != nil {
		return nil // the delete answers for a missing task
	}
	stored, err := s.withParents(ctx)
	if err != nil {
		return err
	}
	if children := sundial.ChildrenOf(t.Name, stored); len(children) > 0 {
		return &sundial.Error{Code: sundial.EConflict, Field: "depends_on", Token: t.Name,
			Message: fmt.Sprintf("task %q is a parent of %s (depends_on names it): remove it from their depends_on, or delete them, first",
				t.Name, strings.Join(children, ", "))}
	}
	return nil
}

// depsView is GET /api/v1/tasks/{id}/deps: the task's parents and
// children, and its latest joins.
type depsView struct {
	Task     string               `json:"task"`
	Join     sundial.JoinMode     `json:"join,omitempty"`
	Deadline int                  `json:"join_deadline_seconds,omitempty"`
	Parents  []sundial.Dependency `json:"parents"`
	Children []string             `json:"children"`
}

// handleTaskDeps serves GET /api/v1/tasks/{id}/deps.
func (s *Server) handleTaskDeps(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.store.TaskGet(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	stored, err := s.withParents(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v := depsView{Task: t.Name, Join: t.Join, Parents: t.DependsOn, Children: sundial.ChildrenOf(t.Name, stored)}
	if t.HasParents() {
		v.Deadline = int(t.JoinDeadlineOf() / time.Second)
	}
	if v.Parents == nil {
		v.Parents = []sundial.Dependency{}
	}
	if v.Children == nil {
		v.Children = []string{}
	}
	writeJSON(w, http.StatusOK, v)
}
