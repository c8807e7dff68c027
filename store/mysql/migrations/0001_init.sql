-- Sundial's first MySQL/MariaDB schema: the logical schema of
-- store/sqlite/migrations/0001_init.sql. Times are BIGINT microseconds since
-- the Unix epoch (UTC); NULL where the Go field is a pointer. Text compares
-- byte for byte (utf8mb4_bin), as it does in SQLite.
--
-- MySQL commits DDL implicitly, so a migration cannot be rolled back: every
-- statement here may run again after a migration that failed half-way
-- (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS tasks (
	id                   BIGINT       NOT NULL AUTO_INCREMENT,
	name                 VARCHAR(128) NOT NULL,
	description          VARCHAR(512) NOT NULL DEFAULT '',
	cron_expr            TEXT         NOT NULL,
	timezone             VARCHAR(255) NOT NULL,
	exec_type            VARCHAR(32)  NOT NULL,
	http_method          VARCHAR(32)  NOT NULL,
	target_url           TEXT         NOT NULL,
	headers_json         MEDIUMTEXT   NOT NULL,
	body_template        MEDIUMTEXT   NOT NULL,
	timeout_seconds      INT          NOT NULL,
	retry_policy_json    MEDIUMTEXT   NOT NULL,
	max_concurrency      INT          NOT NULL DEFAULT 0,
	concurrency_policy   VARCHAR(32)  NOT NULL,
	max_queue            INT          NOT NULL,
	overlap_action       VARCHAR(32)  NOT NULL,
	failure_action       VARCHAR(32)  NOT NULL,
	catch_up_mode        VARCHAR(32)  NOT NULL,
	catch_up_limit       INT          NOT NULL,
	callback_method      VARCHAR(32)  NOT NULL,
	callback_timeout_sec INT          NOT NULL DEFAULT 0,
	priority             INT          NOT NULL DEFAULT 0,
	status               VARCHAR(32)  NOT NULL,
	version              BIGINT       NOT NULL,
	created_at           BIGINT       NOT NULL,
	updated_at           BIGINT       NOT NULL,
	deleted              TINYINT      NOT NULL DEFAULT 0,
	deleted_at           BIGINT       NULL,
	next_fire_at         BIGINT       NULL,
	-- A name is unique among live tasks; a deleted task frees its name. MySQL
	-- has no partial index: a deleted task's live_name is NULL, and a UNIQUE
	-- index holds any number of NULLs.
	live_name            VARCHAR(128) GENERATED ALWAYS AS (IF(deleted = 0, name, NULL)) STORED,
	PRIMARY KEY (id),
	UNIQUE KEY tasks_live_name (live_name),
	-- PlanDue: a range scan over the due tasks only, however many tasks
	-- exist; priority makes the scan covering, so the sort by urgency reads
	-- the index alone.
	KEY tasks_due (status, deleted, next_fire_at, priority)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS runs (
	id               BIGINT       NOT NULL AUTO_INCREMENT,
	task_id          BIGINT       NOT NULL,
	fire_key         VARCHAR(255) NOT NULL,
	trigger_type     VARCHAR(32)  NOT NULL, -- Run.Trigger ("trigger" is reserved in SQL)
	scheduled_at     BIGINT       NOT NULL,
	status           VARCHAR(32)  NOT NULL,
	skip_reason      VARCHAR(32)  NOT NULL DEFAULT '',
	missed_count     INT          NOT NULL DEFAULT 0,
	attempt          INT          NOT NULL DEFAULT 0,
	deliveries       INT          NOT NULL DEFAULT 0,
	node_id          VARCHAR(320) NOT NULL DEFAULT '',
	fence            BIGINT       NOT NULL DEFAULT 1,
	started_at       BIGINT       NULL,
	finished_at      BIGINT       NULL,
	http_status      INT          NOT NULL DEFAULT 0,
	response_body    BLOB         NOT NULL, -- the target's bytes as received
	error            TEXT         NOT NULL,
	trace_id         VARCHAR(255) NOT NULL DEFAULT '',
	idempotency_key  TEXT         NOT NULL,
	cancel_requested TINYINT      NOT NULL DEFAULT 0,
	created_at       BIGINT       NOT NULL,
	updated_at       BIGINT       NOT NULL,
	PRIMARY KEY (id),
	UNIQUE KEY runs_fire (task_id, fire_key),
	-- A task's runs in a status by scheduled time (admission, the queue,
	-- TaskUpdate's delete); InnoDB's implicit trailing id breaks ties.
	KEY runs_task_status (task_id, status, scheduled_at),
	-- A task's runs by id (RunList with a task).
	KEY runs_task (task_id),
	-- Runs in a status, by node (RunsOwned, RunRelease, NodeReap).
	KEY runs_status_node (status, node_id),
	-- RunPurge.
	KEY runs_created (created_at),
	CONSTRAINT runs_task_fk FOREIGN KEY (task_id) REFERENCES tasks (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS nodes (
	id           VARCHAR(320) NOT NULL,
	host         VARCHAR(255) NOT NULL DEFAULT '',
	pid          INT          NOT NULL DEFAULT 0,
	address      VARCHAR(255) NOT NULL DEFAULT '',
	state        VARCHAR(16)  NOT NULL,
	started_at   BIGINT       NOT NULL,
	heartbeat_at BIGINT       NOT NULL,
	PRIMARY KEY (id),
	KEY nodes_state_heartbeat (state, heartbeat_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
