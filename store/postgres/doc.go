// Package postgres implements sundial.Store on PostgreSQL: the database a
// cluster of Sundial nodes shares. It owns the PostgreSQL schema and its
// migrations (migrations/*.sql), the connection pool, and the SQL behind
// every Store method. Its behaviour is the SQLite adapter's (store/sqlite),
// checked by the same conformance suite (store/storetest); what differs is
// how it stays correct while several nodes write at once.
//
// # Driver
//
// The Store talks to the server through a pgx v5 pool (pgxpool), not through
// database/sql, because the hot paths are batches: pgx.Batch sends several
// statements in one round trip (and, without BEGIN, in one implicit
// transaction), Batch.BeginTx saves the round trip of BEGIN, Go slices bind
// straight to PostgreSQL arrays for unnest, and the pool caches each
// connection's prepared statements. database/sql appears only where the
// shared migration runner (store/migrate) needs a *sql.DB: Migrate wraps the
// same pool with stdlib.OpenDBFromPool.
//
// # Schema
//
// The schema is SQLite's: times are BIGINT microseconds since the Unix epoch
// (UTC), live task names and request IDs are unique through partial
// indexes, due tasks are found through a partial index on (next_fire_at,
// id), the SCHEDULED runs no node holds (an empty node_id) through one on
// (due_at, priority DESC, id) (due_at: when a run next needs a node: its
// fire, a retry's backoff, or a callback deadline; priority: its task's,
// copied onto the run), the WAITING_CALLBACK runs through another, and
// (task_id, fire_key) is UNIQUE. JSON (params, a callback's result, progress,
// checkpoints) is TEXT, read back as written. Flags are BOOLEAN, and runs.response_body is BYTEA
// so that any bytes a target answers with are kept as received; so is
// run_attempts.response_body. run_attempts holds one row per delivery that
// ended but the last of a run that keeps it itself (runs.attempt_on_run,
// migration 0013: an outcome that ended the run for good), so that a fire
// delivered once has none; RunAttempts reads the rows by run_id, id, then
// the run's own. The rows follow their run (migration 0007's trigger, in
// place of a foreign key ON DELETE CASCADE): RunPurge, deleting a run,
// deletes its attempts (the other deletes take only runs whose delivery
// has not ended).
//
// # Rules
//
// The adapter decides nothing of its own: a method locks and reads the
// rows, calls the domain's rule (sundial.Release, sundial.Redeliver,
// sundial.TakeBackOnUpdate, sundial.Cancel, ...) and writes what it
// returned (a sundial.RunChanges: queueChanges, one statement per kind of
// write from unnest(arrays)). Only the hot paths (PlanDue, RunClaimDue,
// RunStart, RunFinish, RunCheckSend) keep a rule in their SQL, one
// statement each, and name the rule it expresses; the conformance suite
// holds that SQL to the rule. The status lists of every statement come from
// the domain's predicates (sqlrow.Statuses).
//
// # Concurrency
//
// Transactions run at READ COMMITTED, so each statement sees what committed
// before it began; where a decision depends on rows another node may be
// changing, the statement that takes a lock comes first and the reads that
// depend on it follow as separate statements.
//
//   - Migrate takes pg_advisory_xact_lock with a fixed key (migrateLockKey)
//     at the start of each migration's transaction, so nodes starting
//     together apply each migration once; the others wait and then find it
//     recorded. No session state outlives a transaction, here or anywhere
//     in the store (set_config is transaction-local), so the store works
//     through PgBouncer in transaction mode; only the event relay's LISTEN
//     needs a session (Options.ListenDSN).
//   - PlanDue claims due tasks with SELECT ... FOR UPDATE SKIP LOCKED,
//     earliest first, in the order of tasks_due: planners on different
//     nodes take disjoint tasks and never wait for each other. The runs
//     are inserted in one statement from unnest(arrays) with ON CONFLICT
//     (task_id, fire_key) DO NOTHING, and next_fire_at is advanced in one
//     UPDATE ... FROM unnest.
//   - RunAdmit locks the task row (SELECT ... FOR UPDATE) before it reads
//     the run and the task's other runs, so admissions of one task are
//     serialised across the cluster and max_concurrency is a cluster-wide
//     limit. Its writes are guarded by the run's fence and status as well,
//     because RunStart, RunCancel and RunFinish do not take the task lock.
//   - RunStart and RunFinish are one statement each around an UPDATE ...
//     FROM unnest(arrays), guarded by id, fence and the allowed
//     from-statuses, in one round trip and one implicit transaction. An ID
//     listed twice goes into a second statement of the same batch, so the
//     batch applies as if its items ran one after another. They are planned
//     for each batch (plan_cache_mode force_custom_plan for the
//     transaction): a generic plan, made for an array of unknown length, can
//     be quadratic in a batch of thousands.
//   - RunFinish's statement also records attempts. A CTE first locks the
//     runs it may change (SELECT ... ORDER BY id FOR NO KEY UPDATE), reading
//     the status each had, read again under the lock if a concurrent
//     outcome changed it; the UPDATE applies the outcomes, setting
//     attempt_on_run on those that end a RUNNING run for good, and an
//     INSERT into run_attempts records the other ends of a RUNNING run's
//     delivery (a retry, WAITING_CALLBACK, INTERRUPTED).
//     Reading the old status through a plain self-join would see it as of
//     the statement's start: a callback's outcome that waited for its call's
//     WAITING_CALLBACK would record the delivery a second time. Each row
//     costs an insert (and its index entries); an attempt kept on its run
//     costs nothing more than the run's update. An outcome with Retry is
//     recorded so, then sends its
//     run back to SCHEDULED in the same UPDATE. Retries, callback deadlines
//     and task ends are bound as NULL arrays when a batch has none, so the
//     common batch costs what it did without them; a batch that ends tasks
//     (CompleteTask) first locks those tasks, in ID order, and its
//     statement updates them with the runs.
//   - RunComplete locks the run (SELECT ... FOR UPDATE; its task first
//     when it ends the task) and decides from what it holds, so of two
//     callbacks, or a callback and its call's RunFinish, the second finds
//     the run changed. RunProgress locks and reads the run the same way.
//     RunCancel locks the run's task first (the cancel may end a one-off
//     task FAILED), then the run.
//   - TaskCreateMany reads the live tasks with its request IDs and names,
//     then inserts from unnest(arrays) in one statement; a concurrent
//     creation of the same request (or name) that wins the unique index
//     makes it run the transaction again, which then finds that task.
//     SettingEnsure inserts with ON CONFLICT DO NOTHING, then reads.
//   - RunInsert takes FOR SHARE on its task, so it and TaskDelete (which
//     deletes the task's SCHEDULED runs) cannot interleave.
//   - RunRelease and NodeReap lock the tasks whose runs they release, then
//     the runs (SCHEDULED and RUNNING, in ID order), and write what
//     sundial.Release makes of exactly those runs, the INTERRUPTED attempts
//     included; NodeReap claims dead nodes with FOR UPDATE SKIP LOCKED, so
//     two reapers never release one node twice. RunPurge deletes with SKIP
//     LOCKED too. TaskUpdate and TaskDelete lock the task (their UPDATE),
//     then the task's runs a change may take back.
//   - RunClaimDue, every node's hot path, is one statement in one round
//     trip: it picks the due runs no node holds (empty node_id) through the
//     partial index runs_unclaimed, most urgent first (due time, then
//     priority, then ID: the index's order, so a claim reads its limit of
//     index entries and sorts nothing), with SELECT ... FOR UPDATE SKIP
//     LOCKED, and updates them by primary key, starting in the same UPDATE
//     those that sundial.ClaimStartParams selects. Claimers on
//     different nodes take disjoint runs and never wait for each other (nor
//     for anything else): a run another transaction holds is passed over,
//     and one claimed and committed since the statement began is rechecked
//     by the lock and passed over too. It takes no task lock; a TaskUpdate
//     or TaskDelete that wants the claimed runs waits for the claim, then
//     deletes those still SCHEDULED (the claimer's RunStart then finds
//     nothing) and takes back those the claim started as it does runs
//     committed by RunStart (sundial.SendMargin): the claimer's check
//     before sending finds them gone.
//   - RunClaim locks the runs' tasks FOR SHARE (claims of one task need not
//     wait for each other; admissions, updates and deletes of the task do),
//     then the runs in ID order, and writes those sundial.RunRef.Claimable
//     takes.
//   - RunRedeliver picks INTERRUPTED runs without a lock, then in one
//     transaction locks their tasks FOR SHARE, so that none is deleted
//     while its run is scheduled again, and the runs FOR UPDATE SKIP
//     LOCKED, so two redeliverers never take one run and do not wait for
//     each other, and writes what sundial.Redeliver decides under the
//     locks.
//   - RunFindStuck and RunCancelRequested only read: what they return is
//     acted on through fenced writes (RunClaim, RunFinish). RunAttempts
//     only reads too.
//   - Node heartbeats, start times and the dead-node cutoff all come from the
//     server's clock_timestamp(), so a node whose own clock is off cannot
//     make a healthy node look dead.
//
// Locks are taken in one order: a node row, then task rows, then run rows.
// Where one statement locks several rows of a kind it takes them in ID
// order (ORDER BY id FOR UPDATE), except RunStart, whose order follows the
// plan (its input is sorted by ID). RunClaim, RunUnplan, RunUnplanMissed
// and RunRedeliver lock the runs' tasks before the runs, as RunRelease
// does, and so do RunFinish, RunComplete and RunCancel where they may end a
// task. (RunRedeliver holds its tasks FOR SHARE and takes the exclusive
// lock of a one-off task it fails under it.) PlanDue cannot deadlock: it
// never waits for a task lock, and it inserts runs only for the tasks it
// holds; RunClaimDue cannot either, as it waits for no lock. The methods
// that take no callback, or only a pure one (RunStart, RunFinish,
// RunRelease, NodeReap, RunPurge, RunClaim, RunUnplan, RunUnplanMissed,
// RunRedeliver) are retried a few times if PostgreSQL reports a deadlock
// or serialisation failure; RunAdmit is not, because that would call
// decide again, so the rare deadlock between a CANCEL_PREV admission and a
// RunFinish of the runs it cancels reaches its caller as an internal error.
package postgres
