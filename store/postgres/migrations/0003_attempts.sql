-- Attempts: one row per delivery of a run that ended (RunAttempts), in PostgreSQL's types as in
-- 0001: times are BIGINT microseconds, started_at NULL where the run had none, and the response
-- body BYTEA, as runs.response_body. RunFinish records the end of a delivery's call (an outcome
-- of a RUNNING run, WAITING_CALLBACK included); RunRelease and NodeReap record the deliveries they
-- cut off, as INTERRUPTED. The run's own columns keep only its latest outcome.
--
-- Attempts go with their run: purging a run (RunPurge), or deleting a SCHEDULED one that was
-- delivered before (TaskUpdate, RunRelease, RunUnplan), deletes its attempts.

CREATE TABLE run_attempts (
	id            BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	run_id        BIGINT  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	delivery      INTEGER NOT NULL, -- the run's deliveries when it ended: 1 for the first
	node_id       TEXT    NOT NULL DEFAULT '',
	status        TEXT    NOT NULL,
	http_status   INTEGER NOT NULL DEFAULT 0,
	error         TEXT    NOT NULL DEFAULT '',
	response_body BYTEA   NOT NULL DEFAULT '',
	started_at    BIGINT  NULL,
	finished_at   BIGINT  NOT NULL
);

-- A run's attempts oldest first (RunAttempts), and the foreign key's index: the cascade from
-- runs finds a run's attempts by it.
CREATE INDEX run_attempts_run ON run_attempts (run_id, id);
