-- API tokens and the audit log (docs/security.md, "Who may do what" and
-- "Audit").
--
-- A token is stored by the SHA-256 of its secret (hash), never the secret:
-- each request looks its token up by hash through tokens_hash, so that a
-- token deleted (revoked) on one node is refused by every node at once.
-- The name is unique among the tokens not revoked: a revoked token's row
-- is deleted.
CREATE TABLE tokens (
	id         TEXT    PRIMARY KEY,
	name       TEXT    NOT NULL,
	role       TEXT    NOT NULL,
	hash       TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER,
	created_by TEXT    NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX tokens_hash ON tokens (hash);
CREATE UNIQUE INDEX tokens_name ON tokens (name);

-- Every change made through the API, newest first by id. happened_at
-- serves the purge and the time range; the others a filter each.
CREATE TABLE audit (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	happened_at INTEGER NOT NULL,
	actor       TEXT    NOT NULL,
	action      TEXT    NOT NULL,
	target      TEXT    NOT NULL,
	task_id     INTEGER NOT NULL DEFAULT 0,
	before_json TEXT,
	after_json  TEXT
);
CREATE INDEX audit_happened ON audit (happened_at);
CREATE INDEX audit_actor ON audit (actor, id);
CREATE INDEX audit_action ON audit (action, id);
CREATE INDEX audit_task ON audit (task_id, id);
