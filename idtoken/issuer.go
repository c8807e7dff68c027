// Package idtoken signs the OIDC ID tokens deliveries carry (as Cloud
// Scheduler does): a JWT signed with ES256 by the cluster's key, with iss
// the configured issuer, aud the task's audience, sub the task's name, and
// a short life (Lifetime). It serves the public keys at
// /.well-known/jwks.json and the discovery document at
// /.well-known/openid-configuration, so that a target verifies a token with
// any OIDC library.
package idtoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/sundialhq/sundial"
)

// Lifetime is how long a token is valid after it is minted.
const Lifetime = 5 * time.Minute

// SettingName is the cluster-wide setting the signing key is kept in,
// sealed with the secrets key; with a rotation period, the key of each
// epoch is in SettingName, "_" and the epoch's number.
const SettingName = "oidc_signing_key"

// Settings is where the cluster's signing key is kept: sundial.Store.
type Settings interface {
	SettingEnsure(ctx context.Context, name, value string) (string, error)
}

// Issuer mints tokens with the cluster's key. It is safe for concurrent
// use.
//
// With a rotation period, time is cut into epochs of that length, and each
// epoch has its own key, made by the first node that needs it and kept in
// the settings table (SettingName and the epoch's number). A token is
// signed with the key of the epoch it is minted in; the key set published
// holds the previous epoch's key (its tokens live on for Lifetime after
// the epoch ends), the current one and the next (so a node whose clock is
// a little ahead signs with a key the others already publish).
//
// The keys of an epoch and its neighbours are read once the epoch has
// begun, in the background: the current key was read an epoch ahead, as
// the next one, so neither a token nor the key set waits for the database.
// A read that fails is tried again after retryAfter.
type Issuer struct {
	issuer   string
	settings Settings
	sealer   sundial.Sealer
	rotation time.Duration // 0: one key for good
	now      func() time.Time

	mu      sync.Mutex
	keys    map[int64]*epochKey // by epoch; the one key is epoch 0
	loaded  int64               // the epoch keys were read for
	loading bool                // a read of the keys runs
	retryAt time.Time           // no read before, after one failed
}

// epochKey is one epoch's signing key.
type epochKey struct {
	public jose.JSONWebKey
	signer jose.Signer
}

// retryAfter is how long after a failed read of the keys the next is
// tried.
const retryAfter = 10 * time.Second

// Load returns the Issuer of the cluster. Its key (or, with a rotation
// period, the keys of the current epoch and its neighbours), kept sealed in
// the settings table, is made by the first node that needs it. issuer is
// the iss of every token; rotation the key's period (0: never rotated, at
// least an hour otherwise); now the clock (nil: time.Now). A sealer that
// does not open the stored key is an error that says every node needs the
// same secrets key.
func Load(ctx context.Context, settings Settings, sealer sundial.Sealer, issuer string, rotation time.Duration,
	now func() time.Time) (*Issuer, error) {
	if now == nil {
		now = time.Now
	}
	i := &Issuer{issuer: strings.TrimRight(issuer, "/"), settings: settings, sealer: sealer,
		rotation: rotation, now: now}
	// The first key is made in any case: it also tells a node without a
	// secrets key that this cluster has one.
	first, err := i.key(ctx, SettingName)
	if err != nil {
		return nil, err
	}
	if rotation <= 0 {
		i.keys = map[int64]*epochKey{0: first}
		return i, nil
	}
	e := i.epochOf(now())
	if i.keys, err = i.read(ctx, e); err != nil {
		return nil, err
	}
	i.loaded = e
	return i, nil
}

// key returns the signing key kept in the setting name, making it first if
// there is none.
func (i *Issuer) key(ctx context.Context, name string) (*epochKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	fresh := jose.JSONWebKey{Key: priv, Algorithm: string(jose.ES256), Use: "sig", KeyID: keyID(&priv.PublicKey)}
	raw, err := fresh.MarshalJSON()
	if err != nil {
		return nil, err
	}
	sealed, err := i.sealer.Seal(string(raw))
	if err != nil {
		return nil, err
	}
	stored, err := i.settings.SettingEnsure(ctx, name, sealed)
	if err != nil {
		return nil, fmt.Errorf("read the OIDC signing key: %w", err)
	}
	plain, err := i.sealer.Open(stored)
	if err != nil {
		return nil, fmt.Errorf("the cluster's OIDC signing key does not open with this node's secrets key: " +
			"every node needs the same secrets.key (after a rotation, the old key in secrets.previous_keys)")
	}
	var key jose.JSONWebKey
	if err := key.UnmarshalJSON([]byte(plain)); err != nil {
		return nil, fmt.Errorf("decode the OIDC signing key: %w", err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, err
	}
	return &epochKey{public: key.Public(), signer: signer}, nil
}

// epochOf is the rotation epoch of t.
func (i *Issuer) epochOf(t time.Time) int64 { return t.Unix() / int64(i.rotation/time.Second) }

// read returns the keys of epoch e and its neighbours, making those that
// are not yet.
func (i *Issuer) read(ctx context.Context, e int64) (map[int64]*epochKey, error) {
	keys := make(map[int64]*epochKey, 3)
	for _, n := range []int64{e - 1, e, e + 1} {
		k, err := i.key(ctx, fmt.Sprintf("%s_%d", SettingName, n))
		if err != nil {
			return nil, err
		}
		keys[n] = k
	}
	return keys, nil
}

// current returns the key of the epoch of now (nil when it has not been
// read) and the public keys published, and starts a read of the keys in
// the background when the epoch has changed since the last.
func (i *Issuer) current(now time.Time) (*epochKey, []jose.JSONWebKey) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.rotation <= 0 {
		return i.keys[0], []jose.JSONWebKey{i.keys[0].public}
	}
	e := i.epochOf(now)
	if e != i.loaded && !i.loading && !now.Before(i.retryAt) {
		i.loading = true
		go i.reload(e)
	}
	var public []jose.JSONWebKey
	for _, n := range []int64{e - 1, e, e + 1} {
		if k := i.keys[n]; k != nil {
			public = append(public, k.public)
		}
	}
	return i.keys[e], public
}

// reload reads the keys of epoch e and its neighbours, in place of those
// held.
func (i *Issuer) reload(e int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, err := i.read(ctx, e)
	i.mu.Lock()
	defer i.mu.Unlock()
	i.loading = false
	if err != nil {
		i.retryAt = i.now().Add(retryAfter)
		return
	}
	i.keys, i.loaded = keys, e
}

// keyID names a key by the SHA-256 of its public point.
func keyID(pub *ecdsa.PublicKey) string {
	b, _ := pub.Bytes()
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// claims are a token's claims.
type claims struct {
	jwt.Claims
}

// Mint returns a token for audience and subject, valid for Lifetime.
func (i *Issuer) Mint(audience, subject string) (string, error) {
	now := i.now()
	c := claims{jwt.Claims{
		Issuer:   i.issuer,
		Subject:  subject,
		Audience: jwt.Audience{audience},
		IssuedAt: jwt.NewNumericDate(now),
		Expiry:   jwt.NewNumericDate(now.Add(Lifetime)),
	}}
	key, _ := i.current(now)
	if key == nil {
		// Not read ahead (the reads failed for an epoch): read it now,
		// rather than sign with a key the other nodes may no longer publish.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		k, err := i.key(ctx, fmt.Sprintf("%s_%d", SettingName, i.epochOf(now)))
		if err != nil {
			return "", fmt.Errorf("the OIDC signing key of this period: %w", err)
		}
		key = k
	}
	return jwt.Signed(key.signer).Claims(c).Serialize()
}

// Issuer is the iss of the tokens.
func (i *Issuer) Issuer() string { return i.issuer }

// JWKSPath and DiscoveryPath are where the keys and the discovery
// document are served.
const (
	JWKSPath      = "/.well-known/jwks.json"
	DiscoveryPath = "/.well-known/openid-configuration"
)

// ServeJWKS answers with the published public keys.
func (i *Issuer) ServeJWKS(w http.ResponseWriter, _ *http.Request) {
	_, public := i.current(i.now())
	writeJSON(w, jose.JSONWebKeySet{Keys: public})
}

// ServeDiscovery answers with the discovery document: the issuer and
// where its keys are.
func (i *Issuer) ServeDiscovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"issuer":                                i.issuer,
		"jwks_uri":                              i.issuer + JWKSPath,
		"id_token_signing_alg_values_supported": []string{string(jose.ES256)},
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_ = json.NewEncoder(w).Encode(v)
}
