-- API tokens and the audit log: SQLite's 0010_tokens_audit.sql, whose comments say why.
CREATE TABLE tokens (
	id         TEXT   PRIMARY KEY,
	name       TEXT   NOT NULL,
	role       TEXT   NOT NULL,
	hash       TEXT   NOT NULL,
	created_at BIGINT NOT NULL,
	expires_at BIGINT,
	created_by TEXT   NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX tokens_hash ON tokens (hash);
CREATE UNIQUE INDEX tokens_name ON tokens (name);

CREATE TABLE audit (
	id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	happened_at BIGINT NOT NULL,
	actor       TEXT   NOT NULL,
	action      TEXT   NOT NULL,
	target      TEXT   NOT NULL,
	task_id     BIGINT NOT NULL DEFAULT 0,
	before_json TEXT,
	after_json  TEXT
);
CREATE INDEX audit_happened ON audit (happened_at);
CREATE INDEX audit_actor ON audit (actor, id);
CREATE INDEX audit_action ON audit (action, id);
CREATE INDEX audit_task ON audit (task_id, id);
