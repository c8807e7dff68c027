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
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/sundialhq/sundial"
)

// Lifetime is how long a token is valid after it is minted.
const Lifetime = 5 * time.Minute

// SettingName is the cluster-wide setting the signing key is kept in,
// sealed with the secrets key.
const SettingName = "oidc_signing_key"

// Settings is where the cluster's signing key is kept: sundial.Store.
type Settings interface {
	SettingEnsure(ctx context.Context, name, value string) (string, error)
}

// Issuer mints tokens with the cluster's key. It is safe for concurrent
// use.
type Issuer struct {
	issuer string
	key    jose.JSONWebKey // private
	signer jose.Signer
	public []jose.JSONWebKey // published: the signing key's public half
	now    func() time.Time
}

// Load returns the Issuer of the cluster: its key, kept sealed in the
// settings table, is made by the first node that needs it. issuer is the
// iss of every token; now the clock (nil: time.Now).
func Load(ctx context.Context, settings Settings, sealer sundial.Sealer, issuer string, now func() time.Time) (*Issuer, error) {
	if now == nil {
		now = time.Now
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	fresh := jose.JSONWebKey{Key: priv, Algorithm: string(jose.ES256), Use: "sig"}
	fresh.KeyID = keyID(&priv.PublicKey)
	raw, err := fresh.MarshalJSON()
	if err != nil {
		return nil, err
	}
	sealed, err := sealer.Seal(string(raw))
	if err != nil {
		return nil, err
	}
	stored, err := settings.SettingEnsure(ctx, SettingName, sealed)
	if err != nil {
		return nil, fmt.Errorf("read the OIDC signing key: %w", err)
	}
	plain, err := sealer.Open(stored)
	if err != nil {
		return nil, fmt.Errorf("the cluster's OIDC signing key does not open with this node's secrets key: " +
			"every node needs the same secrets.key (after a rotation, the old key in secrets.previous_keys)")
	}
	var key jose.JSONWebKey
	if err := key.UnmarshalJSON([]byte(plain)); err != nil {
		return nil, fmt.Errorf("decode the OIDC signing key: %w", err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, err
	}
	return &Issuer{issuer: strings.TrimRight(issuer, "/"), key: key, signer: signer,
		public: []jose.JSONWebKey{key.Public()}, now: now}, nil
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
	return jwt.Signed(i.signer).Claims(c).Serialize()
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
	writeJSON(w, jose.JSONWebKeySet{Keys: i.public})
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
