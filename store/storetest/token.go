package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

func newToken(name string, role sundial.Role, expires *time.Time) (*sundial.Token, string) {
	id, secret := sundial.NewToken()
	return &sundial.Token{ID: id, Name: name, Role: role, Hash: sundial.HashToken(secret),
		CreatedAt: time.Now(), ExpiresAt: expires, CreatedBy: "bootstrap"}, secret
}

func testToken(t *testing.T, open Opener) {
	t.Run("CreateLookupListDelete", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		exp := time.Now().Add(time.Hour)
		a, secretA := newToken("ci", sundial.RoleEditor, &exp)
		b, _ := newToken("alerts", sundial.RoleViewer, nil)
		for _, tk := range []*sundial.Token{a, b} {
			if err := f.s.TokenCreate(f.ctx, tk); err != nil {
				t.Fatalf("TokenCreate(%s): %v", tk.Name, err)
			}
		}
		got, err := f.s.TokenByHash(f.ctx, sundial.HashToken(secretA))
		if err != nil {
			t.Fatalf("TokenByHash: %v", err)
		}
		if got.ID != a.ID || got.Name != "ci" || got.Role != sundial.RoleEditor || got.CreatedBy != "bootstrap" ||
			got.ExpiresAt == nil || !got.ExpiresAt.Equal(*a.ExpiresAt) || !got.CreatedAt.Equal(a.CreatedAt) {
			t.Fatalf("TokenByHash = %+v, want %+v", got, a)
		}
		if _, err := f.s.TokenByHash(f.ctx, sundial.HashToken("sdl_wrong")); sundial.ErrorCode(err) != sundial.ENotFound {
			t.Fatalf("TokenByHash(unknown) = %v, want not_found", err)
		}
		list, err := f.s.TokenList(f.ctx)
		if err != nil || len(list) != 2 || list[0].Name != "alerts" || list[1].Name != "ci" || list[0].ExpiresAt != nil {
			t.Fatalf("TokenList = %+v, %v; want alerts, ci", list, err)
		}
		del, err := f.s.TokenDelete(f.ctx, a.ID)
		if err != nil || del.Name != "ci" {
			t.Fatalf("TokenDelete = %+v, %v", del, err)
		}
		if _, err := f.s.TokenByHash(f.ctx, a.Hash); sundial.ErrorCode(err) != sundial.ENotFound {
			t.Fatalf("TokenByHash after delete = %v, want not_found", err)
		}
		if _, err := f.s.TokenDelete(f.ctx, a.ID); sundial.ErrorCode(err) != sundial.ENotFound {
			t.Fatalf("TokenDelete twice = %v, want not_found", err)
		}
		// The name of a revoked token is free again.
		again, _ := newToken("ci", sundial.RoleViewer, nil)
		if err := f.s.TokenCreate(f.ctx, again); err != nil {
			t.Fatalf("TokenCreate after revoke: %v", err)
		}
	})
	t.Run("NameConflict", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		a, _ := newToken("deploy", sundial.RoleAdmin, nil)
		if err := f.s.TokenCreate(f.ctx, a); err != nil {
			t.Fatal(err)
		}
		b, _ := newToken("deploy", sundial.RoleViewer, nil)
		err := f.s.TokenCreate(f.ctx, b)
		if e, ok := errors.AsType[*sundial.Error](err); !ok || e.Code != sundial.EConflict || e.Field != "name" {
			t.Fatalf("TokenCreate(same name) = %v, want conflict on name", err)
		}
		if list, _ := f.s.TokenList(f.ctx); len(list) != 1 {
			t.Fatalf("TokenList = %d tokens after a refused create, want 1", len(list))
		}
	})
}

// testClusterTokenDelete: a token revoked through one node's store is
// refused by another's at once.
func testClusterTokenDelete(t *testing.T, b Backend) {
	c := setupCluster(t, b, 2)
	tk, secret := newToken("ops", sundial.RoleOperator, nil)
	if err := c.node(0).TokenCreate(c.ctx, tk); err != nil {
		t.Fatal(err)
	}
	if _, err := c.node(1).TokenByHash(c.ctx, sundial.HashToken(secret)); err != nil {
		t.Fatalf("node 1 TokenByHash: %v", err)
	}
	if _, err := c.node(0).TokenDelete(c.ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.node(1).TokenByHash(c.ctx, sundial.HashToken(secret)); sundial.ErrorCode(err) != sundial.ENotFound {
		t.Fatalf("node 1 TokenByHash after revocation on node 0 = %v, want not_found", err)
	}
}

func testAudit(t *testing.T, open Opener) {
	t.Run("InsertListFilterPage", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		entries := []sundial.AuditEntry{
			{At: base, Actor: "ci", Action: "task.create", Target: "task/1", TaskID: 1, After: []byte(`{"name":"a"}`)},
			{At: base.Add(time.Minute), Actor: "ci", Action: "task.update", Target: "task/1", TaskID: 1,
				Before: []byte(`{"name":"a"}`), After: []byte(`{"name":"b"}`)},
			{At: base.Add(2 * time.Minute), Actor: "ops", Action: "run.cancel", Target: "run/7", TaskID: 2},
			{At: base.Add(3 * time.Minute), Actor: "bootstrap", Action: "token.create", Target: "token/x"},
		}
		if err := f.s.AuditInsert(f.ctx, []*sundial.AuditEntry{&entries[0]}); err != nil {
			t.Fatalf("AuditInsert: %v", err)
		}
		if err := f.s.AuditInsert(f.ctx, []*sundial.AuditEntry{&entries[1], &entries[2], &entries[3]}); err != nil {
			t.Fatalf("AuditInsert of 3: %v", err)
		}
		all, err := f.s.AuditList(f.ctx, sundial.AuditListParams{Limit: 10})
		if err != nil || len(all) != 4 {
			t.Fatalf("AuditList = %d entries, %v", len(all), err)
		}
		if all[0].Action != "token.create" || all[3].Action != "task.create" || all[0].ID <= all[1].ID {
			t.Fatalf("AuditList order: %s .. %s, want newest first", all[0].Action, all[3].Action)
		}
		up := all[2]
		if string(up.Before) != `{"name":"a"}` || string(up.After) != `{"name":"b"}` || !up.At.Equal(base.Add(time.Minute)) ||
			up.Actor != "ci" || up.Target != "task/1" || up.TaskID != 1 {
			t.Fatalf("entry = %+v", up)
		}
		if all[1].Before != nil || all[1].After != nil {
			t.Fatalf("entry without fields = %q, %q; want nil", all[1].Before, all[1].After)
		}
		count := func(p sundial.AuditListParams) int {
			t.Helper()
			p.Limit = 10
			got, err := f.s.AuditList(f.ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			return len(got)
		}
		for name, c := range map[string]struct {
			p    sundial.AuditListParams
			want int
		}{
			"actor":    {sundial.AuditListParams{Actor: "ci"}, 2},
			"action":   {sundial.AuditListParams{Action: "run.cancel"}, 1},
			"task":     {sundial.AuditListParams{TaskID: 1}, 2},
			"from":     {sundial.AuditListParams{From: base.Add(time.Minute)}, 3},
			"to":       {sundial.AuditListParams{To: base.Add(time.Minute)}, 1},
			"before":   {sundial.AuditListParams{BeforeID: all[1].ID}, 2},
			"combined": {sundial.AuditListParams{Actor: "ci", From: base.Add(30 * time.Second)}, 1},
		} {
			if got := count(c.p); got != c.want {
				t.Errorf("%s: %d entries, want %d", name, got, c.want)
			}
		}
		page, _ := f.s.AuditList(f.ctx, sundial.AuditListParams{Limit: 2})
		next, _ := f.s.AuditList(f.ctx, sundial.AuditListParams{Limit: 2, BeforeID: page[1].ID})
		if len(page) != 2 || len(next) != 2 || next[0].ID != all[2].ID {
			t.Fatalf("pages of 2: %d then %d entries", len(page), len(next))
		}
	})
	t.Run("Purge", func(t *testing.T) {
		t.Parallel()
		f := setup(t, open)
		base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		var es []*sundial.AuditEntry
		for i := range 5 {
			es = append(es, &sundial.AuditEntry{At: base.Add(time.Duration(i) * time.Hour), Actor: "a", Action: "task.delete", Target: "task/1"})
		}
		if err := f.s.AuditInsert(f.ctx, es); err != nil {
			t.Fatal(err)
		}
		n, err := f.s.AuditPurge(f.ctx, base.Add(3*time.Hour), 2)
		if err != nil || n != 2 {
			t.Fatalf("AuditPurge(limit 2) = %d, %v; want 2", n, err)
		}
		n, err = f.s.AuditPurge(f.ctx, base.Add(3*time.Hour), 10)
		if err != nil || n != 1 {
			t.Fatalf("AuditPurge again = %d, %v; want 1", n, err)
		}
		left, _ := f.s.AuditList(f.ctx, sundial.AuditListParams{Limit: 10})
		if len(left) != 2 || !left[1].At.Equal(base.Add(3*time.Hour)) {
			t.Fatalf("left %d entries, want the 2 from 03:00 on", len(left))
		}
	})
}
