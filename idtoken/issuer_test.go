package idtoken

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/sundialhq/sundial/seal"
)

// settings is an in-memory settings table.
type settings struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *settings) SettingEnsure(_ context.Context, name, value string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
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

// TestIssuerRotation: with a rotation period each epoch signs with its own
// key; a token minted at the end of an epoch still verifies against the
// keys served after it; the next epoch's key is published ahead.
func TestIssuerRotation(t *testing.T) {
	t.Parallel()
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
	jwks := func(i *Issuer) jose.JSONWebKeySet {
		rec := httptest.NewRecorder()
		i.ServeJWKS(rec, httptest.NewRequest("GET", JWKSPath, nil))
		var keys jose.JSONWebKeySet
		if err := json.Unmarshal(rec.Body.Bytes(), &keys); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	kid := func(raw string) string {
		tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Headers[0].KeyID
	}
	verifies := func(raw string, keys jose.JSONWebKeySet) bool {
		tok, _ := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
		var c jwt.Claims
		return tok.Claims(keys, &c) == nil
	}
	late, _ := a.Mint("aud", "sub") // the last second of an epoch
	before := jwks(b)
	if !verifies(late, before) {
		t.Fatal("a token does not verify against the other node's keys")
	}
	set(now.Add(2 * time.Second)) // the next epoch
	early, _ := b.Mint("aud", "sub")
	if kid(early) == kid(late) {
		t.Error("the key did not change with the epoch")
	}
	if !verifies(early, before) {
		t.Error("the next epoch's key was not published ahead")
	}
	after := jwks(a)
	if !verifies(late, after) || !verifies(early, after) {
		t.Error("after the rotation, the keys served do not verify the tokens still alive")
	}
	if len(after.Keys) != 3 {
		t.Errorf("%d keys served, want 3 (previous, current, next)", len(after.Keys))
	}
}
