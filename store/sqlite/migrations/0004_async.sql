-- One-off tasks, idempotent creation, retries, ASYNC callbacks and
-- checkpoints.
--
-- tasks: a one-off task has no cron_expr and fires once at run_at.
-- request_id is the client's idempotency key, unique among live tasks that
-- have one; request_hash identifies the request that created the task, so a
-- repeat with a different body is told apart. biz_id is the client's
-- business key; params_json any JSON the body template can use (NULL: none).
ALTER TABLE tasks ADD COLUMN run_at       BIGINT NULL;
ALTER TABLE tasks ADD COLUMN request_id   TEXT   NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN request_hash TEXT   NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN biz_id       TEXT   NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN params_json  TEXT   NULL;

CREATE UNIQUE INDEX tasks_request_live ON tasks (request_id) WHERE deleted = 0 AND request_id <> '';
CREATE INDEX tasks_biz ON tasks (biz_id, id) WHERE deleted = 0 AND biz_id <> '';

-- runs: due_at is when the run next needs a node: its first delivery
-- (scheduled_at), a retry after its backoff, or its callback deadline
-- (WAITING_CALLBACK). Claims read the unclaimed runs by due_at, the callback
-- sweep the waiting ones. result_json is an ASYNC run's callback result;
-- progress_json and checkpoint_json what a long job last reported.
ALTER TABLE runs ADD COLUMN due_at          BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN result_json     TEXT   NULL;
ALTER TABLE runs ADD COLUMN progress_json   TEXT   NULL;
ALTER TABLE runs ADD COLUMN checkpoint_json TEXT   NULL;
UPDATE runs SET due_at = scheduled_at;

DROP INDEX runs_unclaimed;
CREATE INDEX runs_unclaimed ON runs (due_at) WHERE status = 'SCHEDULED' AND node_id = '';
CREATE INDEX runs_waiting ON runs (due_at) WHERE status = 'WAITING_CALLBACK';

-- Cluster-wide settings, such as the secret callback tokens are signed
-- with: the first node to start writes them.
CREATE TABLE settings (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
