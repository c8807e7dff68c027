// Package executor delivers one run of a task as one HTTP request and
// reports the outcome.
//
// It owns four things: the shared HTTP transport that keeps connections
// alive per target, the body template language rendered once per fire
// ([Render], [ValidateTemplate]) with its bound ([BodyBound]), the outbound
// [Guard] asked for every address the transport dials (redirect hops
// included), and the mapping from an HTTP exchange to an [Outcome]
// (SUCCESS, FAILED, TIMEOUT or CANCELED).
//
// # Delivery
//
// [Executor.Deliver] renders the body, builds the request with the task's
// own headers but the reserved ones ([sundial.ReservedHeader]: Host,
// Content-Length, the hop-by-hop headers and Sundial's own, which the API
// refuses at create), then sets the Sundial headers so a task cannot spoof
// them:
//
//	X-Sundial-Run-Id, X-Sundial-Task-Id, X-Sundial-Scheduled-Time,
//	X-Sundial-Attempt, X-Sundial-Delivery, X-Sundial-Trigger, X-Sundial-Node,
//	Idempotency-Key, traceparent, User-Agent
//
// and, when the run has them, X-Sundial-Callback-Url and
// X-Sundial-Callback-Token (an ASYNC run reports its outcome there) and
// X-Sundial-Checkpoint (the compact JSON of the run's last checkpoint).
// A request with a SigningSecret carries a Standard Webhooks signature
// (webhook-id, webhook-timestamp, webhook-signature; see [Sign]), one with a
// Bearer token an Authorization header.
//
// Redirects follow the request's [sundial.RedirectPolicy] (redirect.go):
// never from https to http; from the first hop to another origin on, the
// task's headers, Sundial's tokens and the body are dropped.
//
// The request timeout covers the whole call, reading the response body
// included. It is told apart from the caller's cancellation by the
// context's cause. Only the first 4 KiB of the response body are kept; up to
// 64 KiB more are drained so the connection can be reused.
//
// # Templates
//
// A body template is text with {{name}} tags, spaces allowed inside the
// braces. Any other text, lone braces included, is copied verbatim. The
// variables are:
//
//	run_id, task_id, attempt, delivery    decimal integers
//	task_name, trigger, idempotency_key   the raw string
//	trace_id                              32 lowercase hex characters
//	scheduled_time                        RFC 3339 in UTC: 2026-01-02T03:04:05Z
//	params                                the raw JSON of the params, or null
//	params.<path>                         a value inside the params: a string
//	                                      without its quotes, anything else as
//	                                      JSON (params.items.0.id)
//	callback_url, callback_token          an ASYNC run's callback endpoint and
//	                                      token; empty for a SYNC run
//	checkpoint                            the raw JSON of the run's last
//	                                      checkpoint, or null
//	any key of Vars.Extra                 the raw string
//
// An unknown name, a missing params path, an unclosed "{{" or a tag whose
// name is not made of letters, digits, '_', '.' and '-' is an error.
package executor
