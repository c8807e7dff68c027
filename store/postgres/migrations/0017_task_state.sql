-- The health of each task: SQLite's 0017_task_state.sql, whose comments
-- say why. A row is updated in place every few minutes and its key never
-- changes: the free room a page keeps (fillfactor) lets each update stay
-- on its page (a HOT update, which writes no index entry).
CREATE TABLE task_state (
	task_id              BIGINT  PRIMARY KEY,
	last_success_at      BIGINT  NULL,
	last_failure_at      BIGINT  NULL,
	consecutive_failures INTEGER NOT NULL DEFAULT 0,
	failing_since        BIGINT  NULL,
	lags                 TEXT    NOT NULL DEFAULT '',
	updated_at           BIGINT  NOT NULL
) WITH (fillfactor = 70);
