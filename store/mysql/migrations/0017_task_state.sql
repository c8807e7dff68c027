-- The health of each task: SQLite's 0017_task_state.sql, whose comments
-- say why. CREATE TABLE IF NOT EXISTS, so that the migration may run
-- again after one that failed half-way. lags has no default (a TEXT
-- column may not on MySQL before 8.0.13): every row is made with ''.
CREATE TABLE IF NOT EXISTS task_state (
	task_id              BIGINT NOT NULL,
	last_success_at      BIGINT NULL,
	last_failure_at      BIGINT NULL,
	consecutive_failures INT    NOT NULL DEFAULT 0,
	failing_since        BIGINT NULL,
	lags                 TEXT   NOT NULL,
	updated_at           BIGINT NOT NULL,
	PRIMARY KEY (task_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
