-- One-off tasks, idempotent creation, retries, ASYNC callbacks and
-- checkpoints: the logical schema of store/sqlite/migrations/0004_async.sql.
--
-- Like 0002, every statement may run again after a migration that failed
-- half-way: MySQL 8 has no ADD COLUMN IF NOT EXISTS nor CREATE INDEX IF NOT
-- EXISTS (MariaDB has), so each ALTER TABLE is prepared from what
-- information_schema says is there. One ALTER TABLE is one atomic change:
-- its columns and indexes are added together or not at all, so one check
-- per ALTER suffices.

-- tasks: a one-off task has no cron_expr and fires once at run_at.
-- request_id is the client's idempotency key, unique among live tasks that
-- have one; request_hash identifies the request that created the task, so a
-- repeat with a different body is told apart. biz_id is the client's
-- business key; params_json any JSON the body template can use (NULL:
-- none).
--
-- MySQL has no partial index: as live_name does for names, live_request_id
-- is request_id for a live task that has one and NULL otherwise, and the
-- UNIQUE index on it holds any number of NULLs. tasks_biz serves TaskList's
-- biz_id filter: equality on (biz_id, deleted = 0), then the IDs in order.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks
		ADD COLUMN run_at          BIGINT       NULL,
		ADD COLUMN request_id      VARCHAR(128) NOT NULL DEFAULT '''',
		ADD COLUMN request_hash    VARCHAR(255) NOT NULL DEFAULT '''',
		ADD COLUMN biz_id          VARCHAR(128) NOT NULL DEFAULT '''',
		ADD COLUMN params_json     MEDIUMTEXT   NULL,
		ADD COLUMN live_request_id VARCHAR(128)
			GENERATED ALWAYS AS (IF(deleted = 0 AND request_id <> '''', request_id, NULL)) STORED,
		ADD UNIQUE KEY tasks_request_live (live_request_id),
		ADD KEY tasks_biz (biz_id, deleted, id)',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'run_at');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

-- runs: due_at is when the run next needs a node: its first delivery
-- (scheduled_at), a retry after its backoff, or its callback deadline
-- (WAITING_CALLBACK). result_json is an ASYNC run's callback result;
-- progress_json and checkpoint_json what a long job last reported.
--
-- The callback sweep (RunCallbackExpired) reads the WAITING_CALLBACK runs
-- by due_at: waiting_due is due_at for those and NULL for every other run,
-- and runs_waiting indexes it. Only a run entering or leaving
-- WAITING_CALLBACK changes its entry, where an index on (status, due_at)
-- would change on every status change of every run.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs
		ADD COLUMN due_at          BIGINT     NOT NULL DEFAULT 0,
		ADD COLUMN result_json     MEDIUMTEXT NULL,
		ADD COLUMN progress_json   MEDIUMTEXT NULL,
		ADD COLUMN checkpoint_json MEDIUMTEXT NULL,
		ADD COLUMN waiting_due     BIGINT
			GENERATED ALWAYS AS (IF(status = ''WAITING_CALLBACK'', due_at, NULL)) STORED,
		ADD KEY runs_waiting (waiting_due)',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND column_name = 'due_at');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

-- Existing runs are due at their scheduled time; a run written since has a
-- due_at of its own (no run is due at the epoch), so running this again
-- changes nothing. It runs before runs_claim takes due_at, which it then
-- need not maintain row by row.
UPDATE runs SET due_at = scheduled_at WHERE due_at = 0;

-- Claims read the unowned SCHEDULED runs by due_at (RunClaimDue,
-- RunFindStuck): runs_claim becomes (status, node_id, due_at, task_id),
-- still covering for the claim, and its (status, node_id) prefix still
-- serves RunsOwned, RunRelease, NodeReap and RunCancelRequested.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs DROP INDEX runs_claim, ADD INDEX runs_claim (status, node_id, due_at, task_id)',
	'DO 0')
	FROM information_schema.statistics
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND index_name = 'runs_claim'
		AND seq_in_index = 3 AND column_name = 'due_at');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;

-- Cluster-wide settings, such as the secret callback tokens are signed
-- with: the first node to start writes them (SettingEnsure).
CREATE TABLE IF NOT EXISTS settings (
	name  VARCHAR(255) NOT NULL,
	value MEDIUMTEXT   NOT NULL,
	PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
