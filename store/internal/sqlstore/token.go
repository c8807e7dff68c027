package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// The statements of the token and audit methods, rendered in a dialect.
type tokenQueries struct {
	TokenCreate, TokenByHash, TokenList, TokenGet, TokenDelete string
	AuditInsert, AuditPurge                                    string
}

const tokenCols = `id, name, role, hash, created_at, expires_at, created_by`

func newTokenQueries(d Dialect) tokenQueries {
	b := d.bind
	return tokenQueries{
		TokenCreate: b(`INSERT INTO tokens (` + tokenCols + `) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		// One read of tokens_hash per request.
		TokenByHash: b(`SELECT ` + tokenCols + ` FROM tokens WHERE hash = ?`),
		TokenList:   `SELECT ` + tokenCols + ` FROM tokens ORDER BY name`,
		TokenGet:    b(`SELECT ` + tokenCols + ` FROM tokens WHERE id = ?`),
		TokenDelete: b(`DELETE FROM tokens WHERE id = ?`),
		// Unbound: AuditInsert adds a row of "?" per entry, then binds.
		AuditInsert: `INSERT INTO audit (happened_at, actor, action, target, task_id, before_json, after_json)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
		// The oldest first, through audit_happened; a subquery picks the
		// ids, since MySQL takes no LIMIT in a DELETE with IN.
		AuditPurge: b(`DELETE FROM audit WHERE id IN (SELECT id FROM (SELECT id FROM audit
			WHERE happened_at < ? ORDER BY happened_at, id LIMIT ?) AS old)`),
	}
}

func scanToken(sc sqlrow.Scanner) (*sundial.Token, error) {
	var (
		t       sundial.Token
		role    string
		created int64
		expires sql.NullInt64
	)
	if err := sc.Scan(&t.ID, &t.Name, &role, &t.Hash, &created, &expires, &t.CreatedBy); err != nil {
		return nil, err
	}
	t.Role, _ = sundial.ParseRole(role)
	t.CreatedAt, t.ExpiresAt = sqlrow.FromMicros(created), sqlrow.TimePtr(expires)
	return &t, nil
}

// TokenCreate inserts t; a name taken is EConflict.
func (p *Plain) TokenCreate(ctx context.Context, t *sundial.Token) (err error) {
	defer p.classify(&err)
	_, err = p.w.Exec(ctx, p.tq.TokenCreate, t.ID, t.Name, t.Role.String(), t.Hash,
		sqlrow.Micros(t.CreatedAt), sqlrow.NullMicros(t.ExpiresAt), t.CreatedBy)
	if err != nil {
		if p.q.d.Duplicate != nil && p.q.d.Duplicate(err) {
			return sundial.Errorf(sundial.EConflict, "name", "a token named %q exists; revoke it first or choose another name", t.Name)
		}
		return p.wrap(err, "create token %s", t.Name)
	}
	t.CreatedAt, t.ExpiresAt = sqlrow.Norm(t.CreatedAt), sqlrow.NormPtr(t.ExpiresAt)
	return nil
}

// TokenByHash returns the token of hash, or ENotFound.
func (p *Plain) TokenByHash(ctx context.Context, hash string) (_ *sundial.Token, err error) {
	defer p.classify(&err)
	t, err := scanToken(p.r.QueryRow(ctx, p.tq.TokenByHash, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("", "no such token")
	}
	if err != nil {
		return nil, p.wrap(err, "read token")
	}
	return t, nil
}

// TokenList returns every token, by name.
func (p *Plain) TokenList(ctx context.Context) (_ []*sundial.Token, err error) {
	defer p.classify(&err)
	rows, err := p.r.Query(ctx, p.tq.TokenList)
	out, err := scanAll(rows, err, scanToken)
	if err != nil {
		return nil, p.wrap(err, "list tokens")
	}
	return out, nil
}

// TokenDelete deletes the token id and returns it as it was.
func (p *Plain) TokenDelete(ctx context.Context, id string) (_ *sundial.Token, err error) {
	defer p.classify(&err)
	t, err := scanToken(p.w.QueryRow(ctx, p.tq.TokenGet, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlrow.NotFound("id", "token %s not found", id)
	}
	if err != nil {
		return nil, p.wrap(err, "read token %s", id)
	}
	n, err := p.w.Exec(ctx, p.tq.TokenDelete, id)
	if err != nil {
		return nil, p.wrap(err, "delete token %s", id)
	}
	if n == 0 { // revoked meanwhile by another request
		return nil, sqlrow.NotFound("id", "token %s not found", id)
	}
	return t, nil
}

// nullText is b as a nullable text column holds it.
func nullText(b []byte) sql.NullString {
	if b == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(b), Valid: true}
}

// auditChunk is the most entries one statement inserts: 7 arguments
// each stay far below every database's limit of arguments.
const auditChunk = 500

// AuditInsert appends es, a statement per auditChunk entries.
func (p *Plain) AuditInsert(ctx context.Context, es []*sundial.AuditEntry) (err error) {
	defer p.classify(&err)
	for len(es) > 0 {
		n := min(len(es), auditChunk)
		args := make([]any, 0, 7*n)
		for _, e := range es[:n] {
			args = append(args, sqlrow.Micros(e.At), e.Actor, e.Action, e.Target, e.TaskID,
				nullText(e.Before), nullText(e.After))
		}
		q := p.tq.AuditInsert + strings.Repeat(", (?, ?, ?, ?, ?, ?, ?)", n-1)
		if _, err := p.w.Exec(ctx, p.q.d.bind(q), args...); err != nil {
			return p.wrap(err, "write audit entries (%s %s)", es[0].Action, es[0].Target)
		}
		es = es[n:]
	}
	return nil
}

// AuditList returns the entries f selects, newest first.
func (p *Plain) AuditList(ctx context.Context, f sundial.AuditListParams) (_ []*sundial.AuditEntry, err error) {
	defer p.classify(&err)
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.Actor != "" {
		add("actor = ?", f.Actor)
	}
	if f.Action != "" {
		add("action = ?", f.Action)
	}
	if f.TaskID != 0 {
		add("task_id = ?", f.TaskID)
	}
	if !f.From.IsZero() {
		add("happened_at >= ?", sqlrow.Micros(f.From))
	}
	if !f.To.IsZero() {
		add("happened_at < ?", sqlrow.Micros(f.To))
	}
	if f.BeforeID > 0 {
		add("id < ?", f.BeforeID)
	}
	q := `SELECT id, happened_at, actor, action, target, task_id, before_json, after_json FROM audit`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q += ` ORDER BY id DESC LIMIT ` + strconv.Itoa(limit)
	rows, err := p.r.Query(ctx, p.q.d.bind(q), args...)
	out, err := scanAll(rows, err, func(sc sqlrow.Scanner) (*sundial.AuditEntry, error) {
		var (
			e             sundial.AuditEntry
			at            int64
			before, after sql.NullString
		)
		if err := sc.Scan(&e.ID, &at, &e.Actor, &e.Action, &e.Target, &e.TaskID, &before, &after); err != nil {
			return nil, err
		}
		e.At = sqlrow.FromMicros(at)
		if before.Valid {
			e.Before = []byte(before.String)
		}
		if after.Valid {
			e.After = []byte(after.String)
		}
		return &e, nil
	})
	if err != nil {
		return nil, p.wrap(err, "list audit entries")
	}
	return out, nil
}

// AuditPurge deletes up to limit entries older than before.
func (p *Plain) AuditPurge(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer p.classify(&err)
	n, err := p.w.Exec(ctx, p.tq.AuditPurge, sqlrow.Micros(before), limit)
	if err != nil {
		return 0, p.wrap(err, "purge audit entries")
	}
	return int(n), nil
}
