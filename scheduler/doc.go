// Package scheduler turns tasks into fires and fires into deliveries,
// together with the other nodes on the same database. Scheduler (in
// scheduler.go) holds the Config and its defaults, composes the components
// below and serves the API's requests (Trigger, Cancel, Complete,
// Progress). Each component is a file, gets what it uses as a small store
// interface and function fields (never the whole Scheduler), and has the
// same lifecycle: Run(ctx) works until ctx is done, finishes what it must,
// and returns. Every line a component logs carries component=<its name>;
// Go errors are logged under err.
//
// planner (planner.go, with the pure planning rule planTask in plan.go):
// every poll interval, or when poked after a change of a task, PlanDue
// claims the tasks due within the lookahead, inserts their runs, held by
// no node, up to the lookahead (a frequent task's up to its refill
// boundary, refillAt), and advances their next fire, in one transaction. Fires later
// than their deadline follow the task's catch-up mode; the planned fires
// that also came too late are unplanned first (unplanMissed), so that an
// outage is counted once.
//
// claimer (claimer.go): every claim interval each node claims its share of
// the runs coming due (RunClaimDue, which also commits RUNNING the
// unconstrained ones) and puts them in the dispatcher's heap; a first
// delivery found past its deadline is left to the planner. It also claims
// the runs other components hand it: runs held through a membership loss,
// and the compensator's stuck runs.
//
// dispatcher (dispatcher.go, with the pure admission rule Admit in
// policy.go): the claimed runs in a timer heap, each at a stage. An
// unconstrained run is committed RUNNING StartAhead before its instant
// (stageCommit, unless its claim did), checked 20 ms before it
// (stageCheck: a change of its task may have taken it back) and handed to
// the pool at it (stageSend); any other is admitted at its instant
// (stageAdmit: RunAdmit under the task's lock, in an admission lane per
// task so that a task's runs are decided in order). A freed slot starts
// the task's oldest QUEUED run. On stop it sends the runs it has
// committed. No channel is sent on while a lock is held.
//
// pool (pool.go, with the per-host start spacing in ratelimit.go): a
// bounded number of workers make the HTTP calls and hand each outcome,
// with its retry decided, to the writer; the calls in flight can be
// cancelled. On stop it drains: no new call, the calls in flight get the
// drain timeout (or until EndDrain), the rest are cut off INTERRUPTED.
//
// writer (writer.go): records the outcomes of deliveries in batches, each
// row guarded by the run's fence, and starts a queued run when a slot
// frees. Its record is the one function that logs and counts every
// outcome, whichever component recorded it; a run's own error is logged
// under run_error.
//
// health (health.go): keeps each task's saved health (sundial.TaskState,
// the state block of a task answer) from the outcomes record hands it,
// in batches from its own loop: a failure, and the first success after
// one, within half a second; a healthy task's lags and last success once
// every StateFlush (five minutes), so that a task firing every second
// writes a row every 300 fires; every outcome of a task that fires less
// often; and everything it holds on stop.
//
// stats (stats.go): counts, per minute and in memory, the fires this node
// starts (the pool tells it), the outcomes record hands it by class and
// the lags of its scheduled fires (a histogram), and writes them as one
// node_stats row per minute, replaced every StatsFlush (10 s) and on
// stop: GET /api/v1/stats sums them. Never a write per fire.
//
// membership (membership.go): registers the node, renews its heartbeat,
// declares dead the nodes that stopped renewing theirs (their runs are
// released), delivers again the runs whose delivery was cut off, takes
// back what it holds after a membership loss, and on stop hands its runs
// back and leaves. A node that cannot renew its heartbeat for DeadAfter
// stops firing until it can.
//
// callbacks (callbacks.go): the end of ASYNC runs (callback, progress,
// cancel, the sweep of expired deadlines), retries under the task's retry
// policy (retryAt, applyRetry) and the end of one-off and bounded tasks (sundial.TaskEndOf).
//
// housekeeping (housekeeping.go): purges run history older than the
// retention, the audit log and the nodes' per-minute counts older than
// theirs, prunes departed nodes, and stops the calls of this node whose
// cancellation was asked on another node.
//
// compensator (compensator.go): seed 000's adaptive safety net for runs
// stuck before start, and for this node's RUNNING runs it lost track of.
//
// Scheduler.Run stops them in this order: planner, claimer, dispatcher
// (after sending what it committed) and the other loops; then the pool
// (drain); then the writer (flush); then health and stats (their last
// saves); then
// membership hands the node's runs back and leaves the cluster.
package scheduler
