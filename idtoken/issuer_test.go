package idtoken

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/sundialhq/sundial/seal"
)

// settings is an in-memory settings table; while down is set, every call
// fails, and counts.
type settings struct {
	mu    sync.Mutex
	m     map[string]string
	down  bool
	calls int
}

func (s *settings) SettingEnsure(_ context.Context, name, value string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.down {
		return "", errors.New("database down")
	}
	if v, ok := s.m[name]; ok {
		return v, nil
	}
	s.m[name] = value
	return value, nil
}

// TestIssuer: the first node makes the key, sealed; another node with the
// same secrets key signs with it; a token verifies against the served
// JWKS and carries the claims; a node with another key refuses.
func TestIssuer(t *testing.T) {
	t.Parallel()
	key, _ := seal.ParseKey(seal.NewKey())
	box, _ := seal.New(key)
	st := &settings{m: map[string]string{}}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	a, err := Load(t.Context(), st, box, "https://sundial.example.com/", 0, clock)
	if err != nil {
		t.Fatal(err)
	}
	if v := st.m[SettingName]; len(v) < 10 || v[:10] != "sealed:v1:" {
		t.Fatalf("the signing key is stored as %.20q..., want it sealed", v)
	}
	b, err := Load(t.Context(), st, box, "https://sundial.example.com", 0, clock)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Mint("https://api.example.com", "nightly")
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	a.ServeJWKS(rec, httptest.NewRequest("GET", JWKSPath, nil))
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal(rec.Body.Bytes(), &keys); err != nil || len(keys.Keys) != 1 || !keys.Keys[0].IsPublic() {
		t.Fatalf("JWKS = %s, %v; want one public key", rec.Body, err)
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	var c jwt.Claims
	if err := tok.Claims(keys, &c); err != nil {
		t.Fatalf("the token of node b does not verify with node a's keys: %v", err)
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: "https://sundial.example.com", AnyAudience: jwt.Audience{"https://api.example.com"},
		Subject: "nightly", Time: now.Add(Lifetime - time.Second)}, 0); err != nil {
		t.Errorf("claims: %v", err)
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Time: now.Add(Lifetime + time.Second)}, 0); err == nil {
		t.Error("the token is valid after its lifetime")
	}
	if tok.Headers[0].KeyID != keys.Keys[0].KeyID || tok.Headers[0].KeyID == "" {
		t.Errorf("kid %q, JWKS kid %q", tok.Headers[0].KeyID, keys.Keys[0].KeyID)
	}

	otherKey, _ := seal.ParseKey(seal.NewKey())
	other, _ := seal.New(otherKey)
	if _, err := Load(t.Context(), st, other, "https://x", 0, clock); err == nil {
		t.Error("a node with another secrets key loads the signing key")
	}
	rotated, _ := seal.New(otherKey, key)
	if _, err := Load(t.Context(), st, rotated, "https://x", 0, clock); err != nil {
		t.Errorf("a node with the old key among its previous keys: %v", err)
	}
}

// TestIssuerRotation: with a rotation period, each epoch signs with its own
// key; a token minted at the end of an epoch still verifies against the
// keys served after it; the next epoch's key is published ahead, and the
// one after it is read in the background once the epoch has begun, so
// neither a token nor the key set waits for the database.
func TestIssuerRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key, _ := seal.ParseKey(seal.NewKey())
		box, _ := seal.New(key)
		st := &settings{m: map[string]string{}}
		var mu sync.Mutex
		now := time.Date(2030, 1, 2, 3, 59, 59, 0, time.UTC)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		set := func(t time.Time) { mu.Lock(); defer mu.Unlock(); now = t }
		a, err := Load(t.Context(), st, box, "https://s", time.Hour, clock)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Load(t.Context(), st, box, "https://s", time.Hour, clock)
		if err != nil {
			t.Fatal(err)
		}
		late, _ := a.Mint("aud", "sub") // the last second of an epoch
		before := jwks(t, b)
		if !verifies(late, before) {
			t.Fatal("a token does not verify against the other node's keys")
		}
		set(now.Add(2 * time.Second)) // the next epoch
		early, _ := b.Mint("aud", "sub")
		if kid(t, early) == kid(t, late) {
			t.Error("the key did not change with the epoch")
		}
		if !verifies(early, before) {
			t.Error("the next epoch's key was not published ahead")
		}
		after := jwks(t, a)
		if !verifies(late, after) || !verifies(early, after) {
			t.Error("after the rotation, the keys served do not verify the tokens still alive")
		}
		synctest.Wait() // the background read of the new epoch's neighbours
		if after := jwks(t, a); len(after.Keys) != 3 {
			t.Errorf("%d keys served, want 3 (previous, current, next)", len(after.Keys))
		}
	})
}

// TestIssuerDatabaseDown: when the settings cannot be read at an epoch's
// start, tokens are still signed with the key read ahead and the key set
// is served, without waiting; the read is tried again after retryAfter,
// not at every call, and succeeds once the database is back.
func TestIssuerDatabaseDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key, _ := seal.ParseKey(seal.NewKey())
		box, _ := seal.New(key)
		st := &settings{m: map[string]string{}}
		now := time.Date(2030, 1, 2, 3, 59, 59, 0, time.UTC)
		clock := func() time.Time { return time.Now().Add(now.Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))) }
		i, err := Load(t.Context(), st, box, "https://s", time.Hour, clock)
		if err != nil {
			t.Fatal(err)
		}
		st.mu.Lock()
		st.down, st.calls = true, 0
		st.mu.Unlock()
		time.Sleep(2 * time.Second) // into the next epoch
		for range 50 {
			if tok, err := i.Mint("aud", "sub"); err != nil || !verifies(tok, jwks(t, i)) {
				t.Fatalf("with the database down: Mint %v, or its token does not verify against the served keys", err)
			}
		}
		synctest.Wait()
		st.mu.Lock()
		calls := st.calls
		st.mu.Unlock()
		if calls != 1 {
			t.Errorf("%d reads of the settings for 100 calls, want 1 until retryAfter", calls)
		}
		st.mu.Lock()
		st.down = false
		st.mu.Unlock()
		time.Sleep(retryAfter)
		jwks(t, i)
		synctest.Wait()
		if keys := jwks(t, i); len(keys.Keys) != 3 {
			t.Errorf("%d keys served once the database is back, want 3", len(keys.Keys))
		}
	})
}

func jwks(t *testing.T, i *Issuer) jose.JSONWebKeySet {
	t.Helper()
	rec := httptest.NewRecorder()
	i.ServeJWKS(rec, httptest.NewRequest("GET", JWKSPath, nil))
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal(rec.Body.Bytes(), &keys); err != nil {
		t.Fatal(err)
	}
	return keys
}

func kid(t *testing.T, raw string) string {
	t.Helper()
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Headers[0].KeyID
}

func verifies(raw string, keys jose.JSONWebKeySet) bool {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return false
	}
	var c jwt.Claims
	return tok.Claims(keys, &c) == nil
}
