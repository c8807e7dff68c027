-- One-off tasks, idempotent creation, retries, ASYNC callbacks and checkpoints: SQLite's
-- 0004_async.sql in PostgreSQL's types, as in 0001. Times are BIGINT microseconds (NULL where the
-- Go field is a pointer); the partial indexes test deleted as the BOOLEAN it is here.
--
-- tasks: a one-off task has no cron_expr and fires once at run_at. request_id is the client's
-- idempotency key, unique among live tasks that have one; request_hash identifies the request
-- that created the task, so a repeat with a different body is told apart. biz_id is the client's
-- business key; params_json any JSON the body template can use (NULL: none).
--
-- The JSON columns are TEXT, not JSONB: JSONB keeps neither the client's key order nor its
-- spelling of numbers, and a task or run must read back as it was written. Nothing queries into
-- them.
ALTER TABLE tasks ADD COLUMN run_at       BIGINT NULL;
ALTER TABLE tasks ADD COLUMN request_id   TEXT   NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN request_hash TEXT   NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN biz_id       TEXT   NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN params_json  TEXT   NULL;

-- A request_id names at most one live task: concurrent creations of one request meet here, and
-- the loser finds the winner's task (TaskCreateMany). Tasks without one (most) stay out of the
-- index, as do deleted ones, which free their request_id as they free their name.
CREATE UNIQUE INDEX tasks_request_live ON tasks (request_id) WHERE NOT deleted AND request_id <> '';
-- TaskList by biz_id, in ID order; tasks without one stay out of the index.
CREATE INDEX tasks_biz ON tasks (biz_id, id) WHERE NOT deleted AND biz_id <> '';

-- runs: due_at is when the run next needs a node: its first delivery (scheduled_at), a retry
-- after its backoff, or its callback deadline (WAITING_CALLBACK). Claims read the unclaimed runs
-- by due_at, the callback sweep the waiting ones. result_json is an ASYNC run's callback result;
-- progress_json and checkpoint_json what a long job last reported.
--
-- ADD COLUMN with a constant default rewrites nothing; the UPDATE then gives every existing run
-- its first delivery's time, which is what it was claimed by until now.
ALTER TABLE runs ADD COLUMN due_at          BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN result_json     TEXT   NULL;
ALTER TABLE runs ADD COLUMN progress_json   TEXT   NULL;
ALTER TABLE runs ADD COLUMN checkpoint_json TEXT   NULL;
UPDATE runs SET due_at = scheduled_at;

-- RunClaimDue's range scan (0002) moves from scheduled_at to due_at: a run waiting for a retry is
-- due after its backoff, not at its fire time. RunFindStuck reads the SCHEDULED runs by due_at too,
-- still through runs_status_node. runs_waiting serves the callback sweep (RunCallbackExpired):
-- the expired deadlines of the WAITING_CALLBACK runs only, however many runs have ended.
DROP INDEX runs_unclaimed;
CREATE INDEX runs_unclaimed ON runs (due_at) WHERE status = 'SCHEDULED' AND node_id = '';
CREATE INDEX runs_waiting ON runs (due_at) WHERE status = 'WAITING_CALLBACK';

-- Cluster-wide settings, such as the secret callback tokens are signed with: the first node to
-- start writes them (SettingEnsure).
CREATE TABLE settings (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
