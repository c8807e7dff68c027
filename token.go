package sundial

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"time"
)

// Role is what an API token may do. Each role includes the ones before it:
// a viewer reads tasks, runs, nodes and metrics; an operator also
// triggers, enables, disables, cancels and reruns; an editor also creates,
// updates and deletes tasks; an admin also manages tokens, reads the audit
// log and changes settings.
type Role int

// Roles, weakest first. RoleNone is no role at all: the open routes
// (health, readiness, the per-run callback endpoints) need it.
const (
	RoleNone Role = iota
	RoleViewer
	RoleOperator
	RoleEditor
	RoleAdmin
)

// roleNames are the roles as the API writes them.
var roleNames = [...]string{RoleNone: "", RoleViewer: "viewer", RoleOperator: "operator", RoleEditor: "editor", RoleAdmin: "admin"}

// String is the role's name: viewer, operator, editor or admin.
func (r Role) String() string {
	if r < 0 || int(r) >= len(roleNames) {
		return ""
	}
	return roleNames[r]
}

// ParseRole reads a role's name; ok is false for any other text.
func ParseRole(s string) (Role, bool) {
	for r, name := range roleNames {
		if name != "" && name == s {
			return Role(r), true
		}
	}
	return RoleNone, false
}

// Allows reports whether a holder of r may do what needs need.
func (r Role) Allows(need Role) bool { return r >= need }

// MaxTokenNameLen is the longest name of a token, in bytes.
const MaxTokenNameLen = 128

// TokenPrefix starts every secret Sundial makes, so that a leaked one is
// easy to recognise (secret scanners, logs).
const TokenPrefix = "sdl_"

// Token is an API token as stored: never its secret, only the secret's
// hash (HashToken).
type Token struct {
	// ID names the token in the API (DELETE /api/v1/tokens/{id}); it is
	// not secret.
	ID   string `json:"id"`
	Name string `json:"name"`
	Role Role   `json:"-"`
	// Hash is HashToken of the secret.
	Hash      string     `json:"-"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	// CreatedBy is the actor that created it (see AuditEntry.Actor).
	CreatedBy string `json:"created_by"`
}

// Expired reports whether the token has expired at now.
func (t *Token) Expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

// NewToken returns a fresh token's ID and secret: the ID 16 hex digits, the
// secret TokenPrefix and 32 random bytes in base64url.
func NewToken() (id, secret string) {
	b := make([]byte, 8+32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:8]), TokenPrefix + base64.RawURLEncoding.EncodeToString(b[8:])
}

// HashToken is the hash a token's secret is stored and looked up by: the
// hex of its SHA-256. A fast, unsalted hash is enough here, unlike for a
// password: a secret Sundial makes holds 256 random bits, so neither a
// dictionary nor a brute-force search of the hash can find it, and an
// unsalted hash can be looked up through an index in one read.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Actors of audit entries that are not a token's name.
const (
	ActorBootstrap = "bootstrap" // the auth.bootstrap_token
	ActorAnonymous = "anonymous" // authentication is off
)

// AuditEntry records one change made through the API.
type AuditEntry struct {
	ID    int64     `json:"id"`
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
	// Action is what was done: task.create, task.update, task.delete,
	// task.enable, task.disable, task.trigger, run.cancel, run.rerun,
	// token.create, token.delete, compensation.trigger.
	Action string `json:"action"`
	// Target names what it was done to: task/12, run/345, token/ID.
	Target string `json:"target"`
	// TaskID is the task concerned (that of a run too), 0 for none.
	TaskID int64 `json:"task_id,omitempty"`
	// Before and After are the target's fields as JSON, secrets masked;
	// nil where there is none (before a create, after a delete).
	Before []byte `json:"-"`
	After  []byte `json:"-"`
}

// AuditListParams filter AuditList. Entries are listed newest first.
type AuditListParams struct {
	Actor    string
	Action   string
	TaskID   int64     // 0: any
	From, To time.Time // At in [From, To); zero: unbounded
	BeforeID int64     // entries with a smaller ID (the cursor); 0: from the newest
	Limit    int
}
