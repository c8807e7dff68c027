package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/store/internal/sqlrow"
)

// The statements of the secrets' re-sealing: TaskSecretsList,
// TaskSecretsSwap, SettingList, SettingSwap. Each swap is one UPDATE whose
// WHERE holds the values read, compared exactly (Dialect.Same), so that a
// node's write in between is never overwritten.

// same is the dialect's Same, or col = v.
func (q *Queries) same(col, v string, arg func(any) string) string {
	if q.d.Same != nil {
		return q.d.Same(col, v, arg)
	}
	return col + ` = ` + arg(v)
}

// args returns a function that binds a value as the dialect marks
// arguments, and the values it bound.
func (q *Queries) args() (arg func(any) string, args *[]any) {
	args = new([]any)
	return func(v any) string {
		*args = append(*args, v)
		return q.d.Placeholder(len(*args))
	}, args
}

// TaskSecretsSwap returns TaskSecretsSwap's statement and its arguments:
// the columns set to next's only where they hold old's.
func (q *Queries) TaskSecretsSwap(old, next *sundial.TaskSecrets) (string, []any, error) {
	oldHeaders, err := sqlrow.HeadersJSON(old.Headers)
	if err != nil {
		return "", nil, err
	}
	nextHeaders, err := sqlrow.HeadersJSON(next.Headers)
	if err != nil {
		return "", nil, err
	}
	arg, args := q.args()
	s := `UPDATE tasks SET target_url = ` + arg(next.TargetURL) + `, headers_json = ` + arg(nextHeaders) +
		`, signing_secret = ` + arg(next.SigningSecret) + ` WHERE id = ` + arg(old.TaskID) +
		` AND ` + q.same("target_url", old.TargetURL, arg) +
		` AND ` + q.same("headers_json", oldHeaders, arg) +
		` AND ` + q.same("signing_secret", old.SigningSecret, arg)
	return s, *args, nil
}

// SettingSwap returns SettingSwap's statement and its arguments.
func (q *Queries) SettingSwap(name, old, next string) (string, []any) {
	arg, args := q.args()
	s := `UPDATE settings SET value = ` + arg(next) + ` WHERE name = ` + arg(name) + ` AND ` + q.same("value", old, arg)
	return s, *args
}

// SettingList returns SettingList's statement and its arguments.
func (q *Queries) SettingList(prefix string) (string, []any) {
	arg, args := q.args()
	s := `SELECT name, value FROM settings`
	if prefix != "" {
		s += ` WHERE ` + q.d.HasPrefix("name", prefix, arg)
	}
	return s, *args
}

// TaskSecretsList returns the secret columns of up to limit
// (sqlrow.ClampLimit) tasks, live or deleted, whose ID is greater than
// afterID, by ID.
func (p *Plain) TaskSecretsList(ctx context.Context, afterID int64, limit int) (_ []*sundial.TaskSecrets, err error) {
	defer p.classify(&err)
	rows, err := p.r.Query(ctx, p.q.TaskSecretsList, afterID, sqlrow.ClampLimit(limit))
	out, err := scanAll(rows, err, func(sc sqlrow.Scanner) (*sundial.TaskSecrets, error) {
		var (
			ts      sundial.TaskSecrets
			headers string
		)
		if err := sc.Scan(&ts.TaskID, &ts.TargetURL, &headers, &ts.SigningSecret); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(headers), &ts.Headers); err != nil {
			return nil, fmt.Errorf("decode headers of task %d: %w", ts.TaskID, err)
		}
		if ts.Headers == nil {
			ts.Headers = map[string]string{}
		}
		return &ts, nil
	})
	if err != nil {
		return nil, p.wrap(err, "list the secrets of tasks after %d", afterID)
	}
	return out, nil
}

// TaskSecretsSwap replaces the secret columns of a task, live or deleted,
// only where they hold old's, and reports whether it did.
func (p *Plain) TaskSecretsSwap(ctx context.Context, old, next *sundial.TaskSecrets) (_ bool, err error) {
	defer p.classify(&err)
	if next.TaskID != old.TaskID {
		return false, fmt.Errorf("swap the secrets of task %d with those of task %d", old.TaskID, next.TaskID)
	}
	q, args, err := p.q.TaskSecretsSwap(old, next)
	if err != nil {
		return false, fmt.Errorf("swap the secrets of task %d: %w", old.TaskID, err)
	}
	n, err := p.w.Exec(ctx, q, args...)
	if err != nil {
		return false, p.wrap(err, "swap the secrets of task %d", old.TaskID)
	}
	return n == 1, nil
}

// SettingList returns the settings whose name starts with prefix, by name
// (byte for byte).
func (p *Plain) SettingList(ctx context.Context, prefix string) (_ []sundial.Setting, err error) {
	defer p.classify(&err)
	q, args := p.q.SettingList(prefix)
	rows, err := p.r.Query(ctx, q, args...)
	out, err := scanAll(rows, err, func(sc sqlrow.Scanner) (s sundial.Setting, err error) {
		return s, sc.Scan(&s.Name, &s.Value)
	})
	if err != nil {
		return nil, p.wrap(err, "list settings")
	}
	// Sorted here, byte for byte: a database's ORDER BY follows its
	// collation, which need not.
	slices.SortFunc(out, func(a, b sundial.Setting) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// SettingSwap sets a setting's value to next only where it holds old, and
// reports whether it did.
func (p *Plain) SettingSwap(ctx context.Context, name, old, next string) (_ bool, err error) {
	defer p.classify(&err)
	q, args := p.q.SettingSwap(name, old, next)
	n, err := p.w.Exec(ctx, q, args...)
	if err != nil {
		return false, p.wrap(err, "swap setting %s", name)
	}
	return n == 1, nil
}
