package sqlrow

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sundialhq/sundial"
)

// TaskCols are the columns ScanTask reads, in its order.
const TaskCols = `id, name, description, cron_expr, timezone, exec_type, http_method, target_url,
	headers_json, body_template, timeout_seconds, retry_policy_json, max_concurrency,
	concurrency_policy, max_queue, overlap_action, failure_action, catch_up_mode, catch_up_limit,
	callback_method, callback_timeout_sec, starting_deadline_seconds, priority, follow_redirects,
	signing_secret, oidc_json, status, version,
	created_at, updated_at, next_fire_at, run_at, request_id, request_hash, biz_id, labels_json, params_json,
	disabled_reason, disabled_at, disabled_by, pause_after_failures, start_at, end_at, max_runs, jitter_seconds, fire_count, counted_through,
	depends_on_json, join_mode, join_deadline_seconds, dst, calendars_json`

// TaskWriteCols are the columns TaskCreateMany and TaskUpdate write, in the
// order of TaskArgs.
var TaskWriteCols = []string{"name", "description", "cron_expr", "timezone", "exec_type", "http_method",
	"target_url", "headers_json", "body_template", "timeout_seconds", "retry_policy_json", "max_concurrency",
	"concurrency_policy", "max_queue", "overlap_action", "failure_action", "catch_up_mode", "catch_up_limit",
	"callback_method", "callback_timeout_sec", "starting_deadline_seconds", "priority",
	"follow_redirects", "signing_secret", "oidc_json", "status", "disabled_reason", "disabled_at", "disabled_by", "pause_after_failures", "next_fire_at",
	"run_at", "start_at", "end_at", "max_runs", "jitter_seconds",
	"depends_on_json", "join_mode", "join_deadline_seconds", "request_id", "request_hash", "biz_id", "labels_json", "dst", "calendars_json", "params_json"}

// TaskPlanCols are the columns PlanDue writes of a task it planned
// (sundial.Plan), in the order of TaskPlanArgs: the planner's cursor, the
// fire counters, and the status, version and update time a plan that ends
// the task changes (Plan.End).
var TaskPlanCols = []string{"next_fire_at", "fire_count", "counted_through", "status", "version", "updated_at"}

// TaskPlanArgs are the values of TaskPlanCols for the task t planned with
// p at now: t's counters as the plan left them, and t's status, version and
// update time, or those of its end (sundial.Task.End) when p ends it.
func TaskPlanArgs(t *sundial.Task, p sundial.Plan, now time.Time) []any {
	status, version, updated := t.Status, t.Version, t.UpdatedAt
	if p.End != "" {
		status, version, updated = p.End, version+1, now
	}
	return []any{NullMicros(p.Next), t.FireCount, NullMicros(t.CountedThrough), string(status), version, Micros(updated)}
}

// ScanTask reads a row of TaskCols.
func ScanTask(sc Scanner) (*sundial.Task, error) {
	t := new(sundial.Task)
	// The columns read into other types than the task's: one struct, one
	// allocation (each variable whose address Scan takes would be one).
	var v struct {
		headers, retry          string
		created, updated        int64
		next, runAt, disabledAt sql.NullInt64
		startAt, endAt, through sql.NullInt64
		params, oidc            sql.NullString
		redirects               string
		execType, concPol       string
		overlap, failure, catch string
		status                  string
		labels, calendars       sql.NullString
		deps                    sql.NullString
		join                    string
	}
	err := sc.Scan(&t.ID, &t.Name, &t.Description, &t.CronExpr, &t.Timezone, &v.execType, &t.HTTPMethod,
		&t.TargetURL, &v.headers, &t.BodyTemplate, &t.TimeoutSeconds, &v.retry, &t.MaxConcurrency,
		&v.concPol, &t.MaxQueue, &v.overlap, &v.failure, &v.catch, &t.CatchUpLimit,
		&t.CallbackMethod, &t.CallbackTimeout, &t.StartingDeadline, &t.Priority,
		&v.redirects, &t.SigningSecret, &v.oidc, &v.status, &t.Version, &v.created, &v.updated,
		&v.next, &v.runAt, &t.RequestID, &t.RequestHash, &t.BizID, &v.labels, &v.params,
		&t.DisabledReason, &v.disabledAt, &t.DisabledBy, &t.PauseAfterFailures, &v.startAt, &v.endAt, &t.MaxRuns, &t.JitterSeconds,
		&t.FireCount, &v.through, &v.deps, &v.join, &t.JoinDeadline, &t.DST, &v.calendars)
	if err != nil {
		return nil, err
	}
	t.ExecType = sundial.ExecType(v.execType)
	t.ConcurrencyPolicy = sundial.ConcurrencyPolicy(v.concPol)
	t.OverlapAction = sundial.OverlapAction(v.overlap)
	t.FailureAction = sundial.FailureAction(v.failure)
	t.CatchUpMode = sundial.CatchUpMode(v.catch)
	t.Status = sundial.TaskStatus(v.status)
	t.FollowRedirects = sundial.RedirectPolicy(v.redirects)
	if v.oidc.Valid {
		t.OIDC = &sundial.OIDCOption{}
		if err := json.Unmarshal([]byte(v.oidc.String), t.OIDC); err != nil {
			return nil, fmt.Errorf("decode oidc of task %d: %w", t.ID, err)
		}
	}
	// Most tasks have no headers, labels or calendars: "{}" and "[]" are
	// not decoded (they would leave the same).
	t.Headers = map[string]string{}
	if v.headers != "{}" {
		if err := json.Unmarshal([]byte(v.headers), &t.Headers); err != nil {
			return nil, fmt.Errorf("decode headers of task %d: %w", t.ID, err)
		}
		if t.Headers == nil {
			t.Headers = map[string]string{}
		}
	}
	// NULL on MySQL for the tasks made before labels existed: none.
	t.Labels = map[string]string{}
	if v.labels.Valid && v.labels.String != "" && v.labels.String != "{}" {
		if err := json.Unmarshal([]byte(v.labels.String), &t.Labels); err != nil {
			return nil, fmt.Errorf("decode labels of task %d: %w", t.ID, err)
		}
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
	}
	// NULL on MySQL for the tasks made before calendars existed: none.
	t.Calendars = []string{}
	if v.calendars.Valid && v.calendars.String != "" && v.calendars.String != "[]" {
		if err := json.Unmarshal([]byte(v.calendars.String), &t.Calendars); err != nil {
			return nil, fmt.Errorf("decode calendars of task %d: %w", t.ID, err)
		}
		if t.Calendars == nil {
			t.Calendars = []string{}
		}
	}
	t.RetryPolicy = json.RawMessage(v.retry)
	t.CreatedAt = FromMicros(v.created)
	t.UpdatedAt = FromMicros(v.updated)
	t.NextFireTime = TimePtr(v.next)
	t.RunAt = TimePtr(v.runAt)
	t.DisabledAt = TimePtr(v.disabledAt)
	t.StartAt, t.EndAt, t.CountedThrough = TimePtr(v.startAt), TimePtr(v.endAt), TimePtr(v.through)
	if v.params.Valid {
		t.Params = json.RawMessage(v.params.String)
	}
	t.Join = sundial.JoinMode(v.join)
	if v.deps.Valid && v.deps.String != "" {
		if err := json.Unmarshal([]byte(v.deps.String), &t.DependsOn); err != nil {
			return nil, fmt.Errorf("decode depends_on of task %d: %w", t.ID, err)
		}
	}
	return t, nil
}

// ScanTasks reads the rows of TaskCols that a query returned, and closes
// them. It passes on the query's error.
func ScanTasks(rows *sql.Rows, err error) ([]*sundial.Task, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*sundial.Task
	for rows.Next() {
		t, err := ScanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// TaskArgs are the values of TaskWriteCols for t: headers, labels and
// retry policy as JSON (an empty object for none), the next fire time as
// NullMicros.
func TaskArgs(t *sundial.Task) ([]any, error) {
	hj, err := HeadersJSON(t.Headers)
	if err != nil {
		return nil, err
	}
	lj, err := LabelsJSON(t.Labels)
	if err != nil {
		return nil, err
	}
	retry := string(t.RetryPolicy)
	if retry == "" || retry == "null" {
		retry = "{}"
	}
	var oidc sql.NullString
	if t.OIDC != nil {
		b, err := json.Marshal(t.OIDC)
		if err != nil {
			return nil, fmt.Errorf("encode oidc: %w", err)
		}
		oidc = sql.NullString{String: string(b), Valid: true}
	}
	var deps sql.NullString
	if len(t.DependsOn) > 0 {
		b, err := json.Marshal(t.DependsOn)
		if err != nil {
			return nil, fmt.Errorf("encode depends_on: %w", err)
		}
		deps = sql.NullString{String: string(b), Valid: true}
	}
	redirects := string(t.FollowRedirects)
	if redirects == "" {
		redirects = string(sundial.RedirectSameOrigin)
	}
	dst := t.DST
	if dst == "" {
		dst = sundial.DefaultDST
	}
	cals := []byte("[]")
	if len(t.Calendars) > 0 {
		if cals, err = json.Marshal(t.Calendars); err != nil {
			return nil, fmt.Errorf("encode calendars: %w", err)
		}
	}
	return []any{t.Name, t.Description, t.CronExpr, t.Timezone, string(t.ExecType), t.HTTPMethod,
		t.TargetURL, hj, t.BodyTemplate, t.TimeoutSeconds, retry, t.MaxConcurrency,
		string(t.ConcurrencyPolicy), t.MaxQueue, string(t.OverlapAction), string(t.FailureAction),
		string(t.CatchUpMode), t.CatchUpLimit, t.CallbackMethod, t.CallbackTimeout, t.StartingDeadline, t.Priority,
		redirects, t.SigningSecret, oidc, string(t.Status), t.DisabledReason, NullMicros(t.DisabledAt), t.DisabledBy,
		t.PauseAfterFailures, NullMicros(t.NextFireTime),
		NullMicros(t.RunAt), NullMicros(t.StartAt), NullMicros(t.EndAt), t.MaxRuns, t.JitterSeconds,
		deps, string(t.Join), t.JoinDeadline, t.RequestID, t.RequestHash, t.BizID, lj, dst, string(cals), NullJSON(t.Params)}, nil
}

// LabelsJSON is the labels_json column of labels: a JSON object, its keys
// sorted, "{}" for none. The stores' selectors read a label's value from
// it with the database's JSON functions (sqlstore.Dialect.Label).
func LabelsJSON(labels map[string]string) (string, error) {
	if labels == nil {
		return "{}", nil
	}
	b, err := json.Marshal(labels)
	if err != nil {
		return "", fmt.Errorf("encode labels: %w", err)
	}
	return string(b), nil
}

// HeadersJSON is the headers_json column of headers: a JSON object, its
// keys sorted (encoding/json's), "{}" for none. Every write of the column
// goes through it, so that a task's headers read back and encoded again
// are the text stored (TaskSecretsSwap compares them so).
func HeadersJSON(headers map[string]string) (string, error) {
	if headers == nil {
		headers = map[string]string{}
	}
	hj, err := json.Marshal(headers)
	if err != nil {
		return "", fmt.Errorf("encode headers: %w", err)
	}
	return string(hj), nil
}

// NullJSON is raw JSON as a nullable text column: NULL for none.
func NullJSON(raw json.RawMessage) sql.NullString {
	if len(raw) == 0 {
		return sql.NullString{}
	}
	return sql.NullString{String: string(raw), Valid: true}
}

// JSONOf is a nullable text column read back as raw JSON: nil for NULL.
func JSONOf(v sql.NullString) json.RawMessage {
	if !v.Valid {
		return nil
	}
	return json.RawMessage(v.String)
}
