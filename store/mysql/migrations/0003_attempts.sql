-- Attempts: one row per delivery of a run that ended (RunAttempts). Times
-- are BIGINT microseconds, as in 0001. RunFinish records the end
-- of a delivery's call (the outcome of a RUNNING run); RunRelease and
-- NodeReap record the deliveries they cut off, as INTERRUPTED. The run's own
-- columns keep only its latest outcome.
--
-- Attempts go with their run: purging a run (RunPurge), or deleting a
-- SCHEDULED one that was delivered before (TaskUpdate, RunRelease, ...),
-- deletes its attempts (ON DELETE CASCADE).
--
-- Like 0001, the statement may run again after a migration that failed
-- half-way (IF NOT EXISTS); CREATE TABLE creates the table with its index and
-- foreign key or not at all.

CREATE TABLE IF NOT EXISTS run_attempts (
	id            BIGINT       NOT NULL AUTO_INCREMENT,
	run_id        BIGINT       NOT NULL,
	delivery      INT          NOT NULL, -- the run's deliveries when it ended: 1 for the first
	node_id       VARCHAR(320) NOT NULL DEFAULT '',
	status        VARCHAR(32)  NOT NULL,
	http_status   INT          NOT NULL DEFAULT 0,
	error         TEXT         NOT NULL,
	response_body BLOB         NOT NULL, -- the target's bytes as received, as in runs
	started_at    BIGINT       NULL,
	finished_at   BIGINT       NOT NULL,
	PRIMARY KEY (id),
	-- A run's attempts oldest first (RunAttempts), and the foreign key's
	-- index: the cascade from runs finds a run's attempts by it.
	KEY run_attempts_run (run_id, id),
	CONSTRAINT run_attempts_run_fk FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
