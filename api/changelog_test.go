package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

// recordHandler is a slog.Handler that keeps every record.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

// take returns the records written since the last take, as message and
// attributes (values as text).
func (h *recordHandler) take() []logLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logLine
	for _, r := range h.records {
		l := logLine{msg: r.Message, level: r.Level, attrs: map[string]string{}}
		r.Attrs(func(a slog.Attr) bool {
			l.attrs[a.Key] = a.Value.String()
			return true
		})
		out = append(out, l)
	}
	h.records = nil
	return out
}

type logLine struct {
	msg   string
	level slog.Level
	attrs map[string]string
}

// TestChangesAreLogged: every change made through the API writes one info
// line saying what changed, with the component and the client's address;
// a request that changes nothing writes none.
func TestChangesAreLogged(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	h := &recordHandler{}
	b.srv.Logger = slog.New(h)
	const remote = "192.0.2.1:1234" // httptest.NewRequest's

	wantLines := func(what string, want ...logLine) {
		t.Helper()
		got := h.take()
		if len(got) != len(want) {
			t.Fatalf("%s: %d lines %+v, want %d", what, len(got), got, len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.msg != w.msg || g.level != slog.LevelInfo {
				t.Errorf("%s: line %q at %v, want %q at INFO", what, g.msg, g.level, w.msg)
			}
			w.attrs["component"], w.attrs["remote_addr"] = "api", remote
			for k, v := range w.attrs {
				if g.attrs[k] != v {
					t.Errorf("%s: %s = %q, want %q (line %+v)", what, k, g.attrs[k], v, g.attrs)
				}
			}
		}
	}
	line := func(msg string, kv ...string) logLine {
		l := logLine{msg: msg, attrs: map[string]string{}}
		for i := 0; i < len(kv); i += 2 {
			l.attrs[kv[i]] = kv[i+1]
		}
		return l
	}

	tk := b.create(t, task("logged", nil))
	id := fmt.Sprint(tk.ID)
	wantLines("create", line("task created", "task_id", id, "name", "logged"))

	// The same request_id again changes nothing.
	body := task("idem", map[string]any{"request_id": "r-1"})
	b.create(t, body)
	h.take()
	want(t, b.do(t, http.MethodPost, "/api/v1/tasks", body), http.StatusOK, nil)
	wantLines("repeated create")

	want(t, b.do(t, http.MethodPut, taskPath(tk.ID), task("logged", map[string]any{
		"version": 1, "description": "now described", "timezone": "Asia/Tokyo"})), http.StatusOK, nil)
	wantLines("update", line("task updated", "task_id", id, "name", "logged", "changed", "[description timezone]"))

	// The task sent back as GET returned it changes nothing: no write (the
	// version stays), no line.
	var cur map[string]any
	want(t, b.do(t, http.MethodGet, taskPath(tk.ID), nil), http.StatusOK, &cur)
	var same sundial.Task
	want(t, b.do(t, http.MethodPut, taskPath(tk.ID), cur), http.StatusOK, &same)
	if same.Version != 2 || same.Description != "now described" {
		t.Errorf("unchanged PUT answered version %d %q, want version 2 as it was", same.Version, same.Description)
	}
	wantLines("unchanged update")

	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/disable"), nil), http.StatusOK, nil)
	wantLines("disable", line("task disabled", "task_id", id, "name", "logged"))
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/disable"), nil), http.StatusOK, nil)
	wantLines("disable again")
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/enable"), nil), http.StatusOK, nil)
	wantLines("enable", line("task enabled", "task_id", id, "name", "logged"))

	var run sundial.Run
	want(t, b.do(t, http.MethodPost, taskPath(tk.ID, "/trigger"), nil), http.StatusAccepted, &run)
	wantLines("trigger", line("task triggered", "task_id", id, "run_id", fmt.Sprint(run.ID), "status", string(run.Status)))

	want(t, b.do(t, http.MethodPost, fmt.Sprintf("/api/v1/runs/%d/cancel", run.ID), nil), http.StatusOK, nil)
	wantLines("cancel", line("run canceled", "task_id", id, "run_id", fmt.Sprint(run.ID), "status", "CANCELED",
		"cancel_requested", "false"))

	want(t, b.do(t, http.MethodPost, "/api/v1/tasks:batch", map[string]any{"tasks": []any{
		task("batch-a", nil), task("batch-b", nil)}}), http.StatusOK, nil)
	got := h.take()
	if len(got) != 2 || got[0].msg != "task created" || got[0].attrs["name"] != "batch-a" ||
		got[1].attrs["name"] != "batch-b" || got[1].attrs["batch_item"] != "1" {
		t.Errorf("batch: %+v", got)
	}

	want(t, b.do(t, http.MethodDelete, taskPath(tk.ID), nil), http.StatusNoContent, nil)
	wantLines("delete", line("task deleted", "task_id", id))

	// Refused requests change nothing and write no change line.
	b.do(t, http.MethodDelete, taskPath(tk.ID), nil)
	b.do(t, http.MethodPost, "/api/v1/tasks", task("", nil))
	if lines := h.take(); slices.ContainsFunc(lines, func(l logLine) bool { return l.level == slog.LevelInfo }) {
		t.Errorf("refused requests logged %+v", lines)
	}
}

func TestChangedFields(t *testing.T) {
	t.Parallel()
	base := func() *sundial.Task {
		tk := &sundial.Task{Name: "a", CronExpr: "0 * * * * *", TargetURL: "https://example.com/hook",
			Headers: map[string]string{"A": "1"}}
		if err := tk.Normalize(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	a, c := base(), base()
	c.ID, c.Version, c.NextFireTime = 9, 7, nil // server-set: not changes
	c.RetryPolicy = []byte(`{}`)                // the same policy, written otherwise
	if got := changedFields(a, c); len(got) != 0 {
		t.Errorf("changedFields of equal tasks = %v", got)
	}
	c.Headers = map[string]string{"A": "2"}
	c.Params = []byte(`{"x": 1}`)
	c.Status = sundial.TaskDisabled
	if got := fmt.Sprint(changedFields(a, c)); got != "[headers params status]" {
		t.Errorf("changedFields = %s, want [headers params status]", got)
	}
}
