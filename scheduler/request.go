package scheduler

import (
	"context"
	"strconv"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/executor"
)

// runVars are the template variables and Sundial headers of delivery
// number delivery of run r of task t, attempt attempt across its fires,
// made by node under trace id trace; cbURL and cbToken are an ASYNC run's
// callback endpoint and token ("" for a SYNC run).
func runVars(t *sundial.Task, r *sundial.Run, attempt, delivery int, trace, node, cbURL, cbToken string) executor.Vars {
	return executor.Vars{
		RunID:          r.ID,
		TaskID:         t.ID,
		TaskName:       t.Name,
		ScheduledTime:  r.ScheduledTime,
		Attempt:        attempt,
		Delivery:       delivery,
		Trigger:        string(r.Trigger),
		IdempotencyKey: r.IdempotencyKey,
		TraceID:        trace,
		NodeID:         node,
		Params:         r.ParamsFor(t),
		CallbackURL:    cbURL,
		CallbackToken:  cbToken,
		Checkpoint:     r.Checkpoint,
	}
}

// preparer builds a delivery's request without sending it: the
// *executor.Executor a node delivers with.
type preparer interface {
	Prepare(req executor.Request) (executor.Prepared, error)
}

// Request is the HTTP request run r of task t sends, as a user may see it:
// its last delivery's (before any, its first's), rendered from the task as
// it is now, with every secret Masked. The task's sensitive headers, the
// userinfo of its target_url, an ASYNC run's callback token, a signature
// and an OIDC token are shown as Masked; the body renders the callback
// token as Masked too, so a template that embeds it shows no secret. The
// signature's timestamp and the traceparent's span id are those of now: a
// delivery makes its own.
func (s *Scheduler) Request(ctx context.Context, t *sundial.Task, r *sundial.Run) (executor.Prepared, error) {
	shown := *t
	sundial.MaskTask(&shown)
	delivery := max(r.Deliveries, 1)
	var cbURL, cbToken string
	if t.ExecType == sundial.ExecAsync {
		cbURL, cbToken = s.callbacks.async.url(r.ID), sundial.Masked
	}
	node := r.NodeID
	if node == "" {
		node = s.cfg.Node.ID
	}
	attempt := max(r.Attempt, 1)
	req := executor.Request{Method: t.HTTPMethod, URL: shown.TargetURL, Headers: shown.Headers, BodyTemplate: t.BodyTemplate,
		Vars: runVars(t, r, attempt, delivery, r.TraceID, node, cbURL, cbToken)}
	var err error
	if req.Vars.Extra, err = s.parentVars(ctx, t, r); err != nil {
		return executor.Prepared{}, err
	}
	prep, ok := s.pool.deliverer.(preparer)
	if !ok {
		prep = executor.New(executor.Options{}) // a test's deliverer: the defaults
	}
	out, err := prep.Prepare(req)
	if err != nil {
		return executor.Prepared{}, err
	}
	if t.SigningSecret != "" {
		out.Header.Set("Webhook-Id", r.IdempotencyKey)
		out.Header.Set("Webhook-Timestamp", strconv.FormatInt(time.Now().Unix(), 10))
		out.Header.Set("Webhook-Signature", "v1,"+sundial.Masked)
	}
	if t.OIDC != nil {
		out.Header.Set("Authorization", "Bearer "+sundial.Masked)
	}
	return out, nil
}
