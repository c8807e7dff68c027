// Package mysql implements sundial.Store on MySQL 8 (8.0.1 or later) and
// MariaDB (10.6 or later; 10.8 or later for claims that never sort, see
// Claim order) with InnoDB: the database a cluster of Sundial
// nodes shares. It owns the MySQL schema and its migrations
// (migrations/*.sql), the connection set-up, and the SQL behind every Store
// method. It behaves as store/sqlite does; the conformance suite in
// store/storetest holds both to it.
//
// # Connections
//
// Open takes a go-sql-driver DSN (user:pass@tcp(host:3306)/db?params) and
// overrides what the SQL here relies on: parseTime off (times are BIGINT
// microseconds), interpolateParams on (a statement is one round trip),
// clientFoundRows on (RowsAffected counts the rows a WHERE matched, not the
// rows whose values changed), multiStatements off, strict SQL mode, and
// READ COMMITTED isolation on every connection.
//
// READ COMMITTED is what makes the locking below sufficient: every
// statement reads the latest committed rows, so a transaction that waited
// for a lock sees what the holder committed, and a locking read that finds a
// row no longer matching its WHERE releases it at once.
//
// # Rules
//
// The adapter decides nothing of its own: a method locks and reads the
// rows, calls the domain's rule (sundial.Release, sundial.Redeliver,
// sundial.TakeBackOnUpdate, sundial.RunFinishParams.Apply, ...) and writes what
// it returned (a sundial.RunChanges: see apply), in one transaction. The
// status lists of its statements come from the domain's predicates
// (sqlrow.Statuses).
//
// # Concurrency
//
// Several nodes run every method at once. Each point where they could
// interfere is settled by InnoDB row locks, taken in one order: task rows,
// then run rows (NodeReap takes the dead nodes' rows before both), so that
// waits do not form cycles in the usual case. The deadlocks (1213) and lock
// wait timeouts (1205) left roll the transaction back and run it again, a
// few times (see write); PlanDue's plan and RunAdmit's decide may then be
// called again, with what the database holds by then.
//
//   - PlanDue reads the due task IDs earliest first without locking (a
//     covering range scan of tasks_due, in its order), then locks those rows by primary key
//     with FOR UPDATE SKIP LOCKED, re-checking that each is still due. A task
//     another planner holds is skipped, never waited for, and the next
//     candidates are read until limit tasks are held (passing over those
//     held already: a task whose next fire another planner moved on
//     between its read and its lock is read again). A single
//     ORDER BY ... LIMIT ... FOR UPDATE SKIP LOCKED would lock every due row
//     the sort reads, not only the limit it returns, and leave a concurrent
//     planner nothing.
//   - Run rows are inserted only by a transaction that holds their task's
//     row: PlanDue (FOR UPDATE) and RunInsert (LOCK IN SHARE MODE). So
//     PlanDue can read which (task_id, fire_key) exist, insert the others in
//     multi-row INSERTs, and read their IDs back by key.
//   - RunAdmit locks the task row FOR UPDATE before it reads the run's
//     status and the task's other runs, so admissions of one task are
//     serialised across the cluster and max_concurrency is a cluster-wide
//     limit. (RunStart, for runs the scheduler admits without policies,
//     does not take the task's lock.)
//   - RunStart and RunFinish lock the batch's runs by primary key
//     (SELECT ... FOR UPDATE), ask the rule which apply
//     (sundial.RunStartParams.Applies, RunFinishParams.Applies: fence and status) and
//     what they become (RunFinishParams.Apply), and write those in one UPDATE
//     joined to the batch's values, still guarded by the status read. A run
//     is changed only under its row lock, so a late write with an old fence
//     is refused. RunFinish then inserts, in the same transaction, the
//     attempt RunFinishParams.Apply gives of each outcome of a RUNNING run
//     that does not end it for good, in one multi-row INSERT per chunk; an
//     outcome that does leaves it on the run (attempt_on_run), and outcomes
//     of WAITING_CALLBACK runs (callbacks) are none. A batch with outcomes that end their task
//     (CompleteTask) first locks those tasks, in ID order, before the runs;
//     a batch without reads no task.
//   - RunComplete and RunProgress lock their run by primary key (its task
//     first when the completion ends the task) and check fence and status
//     under the lock (sundial.Run.CheckReport). RunCancel locks the run's
//     task, then the run, as the cancel may fail a one-off task.
//   - TaskCreateMany reads the live tasks with the batch's names, then
//     request IDs (live_name, live_request_id), decides in Go, and inserts
//     in multi-row INSERTs. A concurrent creation of one of the names or
//     request IDs makes the INSERT wait on the unique index and fail when
//     the other commits: the transaction then runs again and finds the
//     other's task, so concurrent creations of one request make one task.
//   - TaskUpdate and TaskDelete lock the task row they change, then its
//     runs a change may take back (FOR UPDATE, a range of
//     runs_task_status). RunRelease and NodeReap lock the tasks of the
//     node's SCHEDULED and RUNNING runs, then those runs (a range of
//     runs_claim), and NodeReap locks the node rows it declares dead first,
//     so two reapers do not release one node twice: the runs changed and
//     the INTERRUPTED attempts recorded are exactly those read under the
//     locks.
//   - RunClaimDue, every node's hot path, works as PlanDue does, on runs:
//     it reads the most urgent unowned due runs without locking (a covering
//     range scan of runs_claim (status, node_id, due_at, priority DESC, id)
//     in its order; the first read happens before the transaction, so an
//     idle call is one statement that reads no row),
//     locks them by primary key with FOR UPDATE SKIP LOCKED, re-checking
//     that each is still SCHEDULED, unowned and due, asks the rule which
//     the claim starts (sundial.ClaimStartParams.Starts, on the locked row), gives
//     the others to the node (node_id, fence + 1) in one UPDATE by primary
//     key and the selected ones, started as RunStart would, in one more
//     (joined to their new trace IDs), so that each run is written once,
//     and reads their tasks. Runs another claimer holds are skipped and the next
//     candidates read, at most claimRounds times. It takes no task lock and
//     never waits: concurrent claimers neither wait for each other nor take
//     one run twice.
//   - RunClaim reads which tasks its runs belong to, locks those task rows
//     shared in ID order, then locks the runs by primary key, waiting, and
//     decides in Go which apply (status, holder, fence) before one UPDATE
//     by primary key.
//   - RunRedeliver reads INTERRUPTED candidates oldest first without
//     locking, locks their tasks shared in ID order (a task cannot be
//     deleted while its run becomes SCHEDULED again), then the runs by
//     primary key with SKIP LOCKED, so two redeliverers do not wait for
//     each other.
//   - RunFindStuck, RunCancelRequested and RunAttempts only read. A run's holder is
//     "not ALIVE" when no ALIVE row of nodes has its ID, which includes an
//     ID nodes does not hold.
//   - Migrate holds GET_LOCK on one connection for the whole run (see
//     Migrate).
//
// # Attempts
//
// run_attempts (migrations/0003_attempts.sql) holds one row per ended
// delivery but the last of a run that keeps it itself (runs.attempt_on_run,
// migrations/0013_attempt_on_run.sql: an outcome that ended the run for
// good), so that a fire delivered once has none. RunAttempts reads the rows
// by run_id in ID order (run_attempts_run), then the run's own by its
// primary key.
// Its foreign key to runs is ON DELETE CASCADE: RunPurge takes a run's
// attempts with it. (TaskUpdate, TaskDelete, RunRelease and RunUnplanMissed
// delete only runs whose delivery has not ended: see Due times.) Attempts
// are inserted by multi-row INSERT ... VALUES, whose row count InnoDB knows in
// advance, so that under innodb_autoinc_lock_mode 1 (MariaDB's default)
// they do not hold the table's AUTO-INC lock for the statement, as
// INSERT ... SELECT would.
//
// # Due times
//
// A run's due_at (migrations/0004_async.sql) is when it next needs a node:
// its scheduled time, a retry's time after its backoff, or, while
// WAITING_CALLBACK, its callback deadline. Claims and the compensator read
// the SCHEDULED runs by due_at (runs_claim); the callback sweep reads the
// waiting ones by runs_waiting, an index of the generated column
// waiting_due, which is due_at for a WAITING_CALLBACK run and NULL for any
// other, so that only runs entering or leaving WAITING_CALLBACK change it.
// SCHEDULED runs delivered before (Deliveries > 0, waiting for a retry) are
// no planner's to make again: TaskUpdate keeps them, TaskDelete cancels
// them, and RunRelease and NodeReap hand them back to no node
// instead of deleting them.
//
// # Claim order
//
// A run carries its task's priority (runs.priority, migrations/0005): PlanDue
// and RunInsert copy it from the task, TaskUpdate sets the new one on the
// task's SCHEDULED and QUEUED runs. RunClaimDue takes the earliest due runs,
// and among runs due at the same instant the highest priority, which is the
// order of runs_claim (status, node_id, due_at, priority DESC, id): a claim
// reads its limit of index entries whatever the backlog, and planned runs
// not yet due are outside its range. MySQL 8 and MariaDB 10.8 or later keep
// priority descending in the index; MariaDB before 10.8 ignores DESC there
// and the claim, still right, sorts the unowned due runs. PlanDue reads the
// due tasks by next_fire_at, then ID, the order of tasks_due.
//
// # Clock
//
// "The database's clock" is the server's: node heartbeats and start times,
// the reaper's cutoff, and the creation time of a run inserted without one
// are read from UTC_TIMESTAMP(6).
package mysql
