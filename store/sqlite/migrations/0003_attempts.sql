-- One row per delivery of a run that ended: its call answered, failed, or
-- cut off by its node's death or stop. Purging a run removes its attempts.
CREATE TABLE run_attempts (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	delivery      INTEGER NOT NULL,
	node_id       TEXT    NOT NULL,
	status        TEXT    NOT NULL,
	http_status   INTEGER NOT NULL DEFAULT 0,
	error         TEXT    NOT NULL DEFAULT '',
	response_body TEXT    NOT NULL DEFAULT '',
	started_at    BIGINT  NULL,
	finished_at   BIGINT  NOT NULL
);
CREATE INDEX run_attempts_run ON run_attempts (run_id, id);
