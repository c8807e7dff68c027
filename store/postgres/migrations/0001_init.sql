-- Sundial's first PostgreSQL schema: the SQLite schema (store/sqlite/migrations/0001_init.sql)
-- in PostgreSQL's types. Times are BIGINT microseconds since the Unix epoch (UTC); NULL where the
-- Go field is a pointer. Flags are BOOLEAN where SQLite has 0/1 INTEGERs, and a run's response
-- body is BYTEA: a target may answer with bytes that a TEXT column refuses (NUL, invalid UTF-8).

CREATE TABLE tasks (
	id                   BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	name                 TEXT    NOT NULL,
	description          TEXT    NOT NULL DEFAULT '',
	cron_expr            TEXT    NOT NULL,
	timezone             TEXT    NOT NULL,
	exec_type            TEXT    NOT NULL,
	http_method          TEXT    NOT NULL,
	target_url           TEXT    NOT NULL,
	headers_json         TEXT    NOT NULL DEFAULT '{}',
	body_template        TEXT    NOT NULL DEFAULT '',
	timeout_seconds      INTEGER NOT NULL,
	retry_policy_json    TEXT    NOT NULL DEFAULT '{}',
	max_concurrency      INTEGER NOT NULL DEFAULT 0,
	concurrency_policy   TEXT    NOT NULL,
	max_queue            INTEGER NOT NULL,
	overlap_action       TEXT    NOT NULL,
	failure_action       TEXT    NOT NULL,
	catch_up_mode        TEXT    NOT NULL,
	catch_up_limit       INTEGER NOT NULL,
	callback_method      TEXT    NOT NULL,
	callback_timeout_sec INTEGER NOT NULL DEFAULT 0,
	priority             INTEGER NOT NULL DEFAULT 0,
	status               TEXT    NOT NULL,
	version              BIGINT  NOT NULL,
	created_at           BIGINT  NOT NULL,
	updated_at           BIGINT  NOT NULL,
	deleted              BOOLEAN NOT NULL DEFAULT false,
	deleted_at           BIGINT  NULL,
	next_fire_at         BIGINT  NULL
);

-- A name is unique among live tasks; a deleted task frees its name.
CREATE UNIQUE INDEX tasks_name_live ON tasks (name) WHERE NOT deleted;

-- PlanDue: a range scan over the due tasks only, however many tasks exist.
CREATE INDEX tasks_due ON tasks (next_fire_at) WHERE status = 'ENABLED' AND NOT deleted;

CREATE TABLE runs (
	id               BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	task_id          BIGINT  NOT NULL REFERENCES tasks (id),
	fire_key         TEXT    NOT NULL,
	trigger_type     TEXT    NOT NULL, -- Run.Trigger ("trigger" is reserved in SQL)
	scheduled_at     BIGINT  NOT NULL,
	status           TEXT    NOT NULL,
	skip_reason      TEXT    NOT NULL DEFAULT '',
	missed_count     INTEGER NOT NULL DEFAULT 0,
	attempt          INTEGER NOT NULL DEFAULT 0,
	deliveries       INTEGER NOT NULL DEFAULT 0,
	node_id          TEXT    NOT NULL DEFAULT '',
	fence            BIGINT  NOT NULL DEFAULT 1,
	started_at       BIGINT  NULL,
	finished_at      BIGINT  NULL,
	http_status      INTEGER NOT NULL DEFAULT 0,
	response_body    BYTEA   NOT NULL DEFAULT '',
	error            TEXT    NOT NULL DEFAULT '',
	trace_id         TEXT    NOT NULL DEFAULT '',
	idempotency_key  TEXT    NOT NULL,
	cancel_requested BOOLEAN NOT NULL DEFAULT false,
	created_at       BIGINT  NOT NULL,
	updated_at       BIGINT  NOT NULL,
	UNIQUE (task_id, fire_key)
);

-- A task's runs in a status by scheduled time (admission, the queue,
-- TaskUpdate's delete); id breaks ties, as SQLite's implicit rowid does.
CREATE INDEX runs_task_status ON runs (task_id, status, scheduled_at, id);
-- A task's runs by id (RunList with a task).
CREATE INDEX runs_task ON runs (task_id, id);
-- Runs in a status, by node (RunsOwned, RunRelease, NodeReap).
CREATE INDEX runs_status_node ON runs (status, node_id);
-- RunPurge, oldest first.
CREATE INDEX runs_created ON runs (created_at, id);

CREATE TABLE nodes (
	id           TEXT    PRIMARY KEY,
	host         TEXT    NOT NULL DEFAULT '',
	pid          INTEGER NOT NULL DEFAULT 0,
	address      TEXT    NOT NULL DEFAULT '',
	state        TEXT    NOT NULL,
	started_at   BIGINT  NOT NULL,
	heartbeat_at BIGINT  NOT NULL
);

CREATE INDEX nodes_state_heartbeat ON nodes (state, heartbeat_at);
