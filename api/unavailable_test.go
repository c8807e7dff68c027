package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

// TestDatabaseUnavailable: when the database cannot be reached, every
// backend answers 503 with Retry-After and the unavailable code, and the
// cause goes to the log, not to the client.
func TestDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			st, cut := be.open(t)
			b := setupOn(t, st)
			tk := b.create(t, task("before", nil))
			cut()
			for _, c := range []struct {
				method, path string
				body         any
			}{
				{http.MethodGet, "/api/v1/tasks", nil},
				{http.MethodGet, taskPath(tk.ID), nil},
				{http.MethodPost, "/api/v1/tasks", task("during", nil)},
				{http.MethodPost, "/api/v1/tasks:batch", map[string]any{"tasks": []any{task("in-a-batch", nil)}}},
				{http.MethodPut, taskPath(tk.ID), task("before", map[string]any{"version": 1})},
				{http.MethodPost, taskPath(tk.ID, "/disable"), nil},
				{http.MethodDelete, taskPath(tk.ID), nil},
				{http.MethodGet, "/api/v1/runs", nil},
				{http.MethodGet, "/api/v1/nodes", nil},
			} {
				rec := b.do(t, c.method, c.path, c.body)
				if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "5" {
					t.Errorf("%s %s: %d, Retry-After %q; want 503, 5; body %s", c.method, c.path, rec.Code,
						rec.Header().Get("Retry-After"), rec.Body)
					continue
				}
				e := errorOf(t, rec)
				if e.Code != sundial.EUnavailable || e.Message != "the database is unavailable; try again shortly" {
					t.Errorf("%s %s: error %+v", c.method, c.path, e)
				}
			}
			if log := b.log.String(); !strings.Contains(log, "database unavailable") || !strings.Contains(log, "component=api") {
				t.Errorf("the outage was not logged: %s", log)
			}
		})
	}
}
