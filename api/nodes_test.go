package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

func TestNodeList(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	var resp struct {
		Items []*sundial.Node `json:"items"`
	}
	want(t, b.do(t, http.MethodGet, "/api/v1/nodes", nil), http.StatusOK, &resp)
	if resp.Items == nil || len(resp.Items) != 0 {
		t.Fatalf("items = %v, want []", resp.Items)
	}

	ctx := context.Background()
	for _, id := range []string{"host-1-a", "host-2-b"} {
		if err := b.store.NodeRegister(ctx, &sundial.Node{ID: id, Host: "host", PID: 1, Address: "127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.store.NodeLeave(ctx, "host-1-a"); err != nil {
		t.Fatal(err)
	}
	want(t, b.do(t, http.MethodGet, "/api/v1/nodes", nil), http.StatusOK, &resp)
	states := map[string]string{}
	for _, n := range resp.Items {
		states[n.ID] = n.State
		if n.StartedAt.IsZero() || n.StartedAt.Location() != time.UTC || n.HeartbeatAt.Location() != time.UTC {
			t.Errorf("node %+v", n)
		}
	}
	if len(states) != 2 || states["host-1-a"] != sundial.NodeLeft || states["host-2-b"] != sundial.NodeAlive {
		t.Errorf("nodes = %v", states)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	rec := b.do(t, http.MethodGet, "/healthz", nil)
	if rec.Code != http.StatusOK || rec.Body.String() != "{\"status\":\"ok\"}\n" {
		t.Errorf("healthz = %d %s", rec.Code, rec.Body)
	}

	var ready healthResponse
	want(t, b.do(t, http.MethodGet, "/readyz", nil), http.StatusOK, &ready)
	if ready.Status != "ok" || ready.Checks["store"] != "ok" || ready.Checks["scheduler"] != "ok" {
		t.Errorf("readyz = %+v", ready)
	}

	b.sched.ready.Store(false)
	want(t, b.do(t, http.MethodGet, "/readyz", nil), http.StatusServiceUnavailable, &ready)
	if ready.Status != "unavailable" || ready.Checks["store"] != "ok" || ready.Checks["scheduler"] == "ok" {
		t.Errorf("readyz, scheduler not ready = %+v", ready)
	}

	b.sched.ready.Store(true)
	if err := b.store.Close(); err != nil {
		t.Fatal(err)
	}
	want(t, b.do(t, http.MethodGet, "/readyz", nil), http.StatusServiceUnavailable, &ready)
	if ready.Status != "unavailable" || ready.Checks["store"] == "ok" || ready.Checks["scheduler"] != "ok" {
		t.Errorf("readyz, store closed = %+v", ready)
	}
	if b.log.Len() == 0 {
		t.Error("the failed ping was not logged")
	} else if log := b.log.String(); !strings.Contains(log, " err=") || !strings.Contains(log, "component=api") {
		t.Errorf("the failed ping's line does not give its error under err (the key of every Go error) and its component: %s", log)
	}
	// healthz does not depend on the store.
	if rec := b.do(t, http.MethodGet, "/healthz", nil); rec.Code != http.StatusOK {
		t.Errorf("healthz with the store closed = %d", rec.Code)
	}
}

func TestNoStoreRoutes(t *testing.T) {
	t.Parallel()
	srv := NewServer(Config{})
	for path, status := range map[string]int{
		"/healthz":          http.StatusOK,
		"/readyz":           http.StatusNotFound,
		"/api/v1/tasks":     http.StatusNotFound,
		"/api/v1/runs/1":    http.StatusNotFound,
		"/api/v1/nodes":     http.StatusNotFound,
		"/api/v1/cron/next": http.StatusBadRequest, // no expr
	} {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != status {
			t.Errorf("GET %s = %d, want %d", path, rec.Code, status)
		}
	}
}

func TestNewServerNeedsScheduler(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	defer func() {
		if recover() == nil {
			t.Error("NewServer with a Store and no Scheduler did not panic")
		}
	}()
	NewServer(Config{Store: b.store})
}

func TestCompensationEndpoints(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	rec := b.do(t, http.MethodGet, "/api/v1/admin/compensation", nil)
	var st sundial.CompensationStatus
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &st) != nil || st.IntervalMS != 10000 || st.Rounds != 0 {
		t.Fatalf("GET compensation = %d %s", rec.Code, rec.Body)
	}
	rec = b.do(t, http.MethodPost, "/api/v1/admin/compensation/trigger", nil)
	if rec.Code != http.StatusAccepted || json.Unmarshal(rec.Body.Bytes(), &st) != nil || st.Rounds != 1 {
		t.Fatalf("POST trigger = %d %s, want 202 with the round counted", rec.Code, rec.Body)
	}
}
