// Package scheduler turns tasks into fires: the planner materialises each
// task's fires a little ahead of time into runs owned by this node, the
// dispatcher holds them in a timer heap and admits each at its exact instant
// under the task's policies, and hands the admitted ones to the executor.
// It also keeps the node's membership (heartbeats, reaping dead nodes) and
// purges old run history.
//
// The path of one fire:
//
//	planner   every poll interval: PlanDue claims tasks due within the
//	          lookahead, inserts their runs and advances next_fire_at in one
//	          transaction; missed fires follow the task's catch-up mode
//	dispatcher timer heap of owned runs; for tasks without overlap, failure
//	          or concurrency rules the runs are committed RUNNING in one batch
//	          just ahead of their instant; the others go through RunAdmit
//	          (policy.go) at the instant
//	executor  a bounded pool delivers the HTTP call; outcomes are written
//	          back in batches, guarded by the run's fence
package scheduler
