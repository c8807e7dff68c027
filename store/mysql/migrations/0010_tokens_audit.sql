-- API tokens and the audit log: SQLite's 0010_tokens_audit.sql, whose
-- comments say why. The indexes are declared with their tables, so that
-- the migration may run again after one that failed half-way (CREATE
-- TABLE IF NOT EXISTS).
CREATE TABLE IF NOT EXISTS tokens (
	id         VARCHAR(32)  NOT NULL,
	name       VARCHAR(128) NOT NULL,
	role       VARCHAR(16)  NOT NULL,
	hash       CHAR(64)     NOT NULL,
	created_at BIGINT       NOT NULL,
	expires_at BIGINT       NULL,
	created_by VARCHAR(255) NOT NULL DEFAULT '',
	PRIMARY KEY (id),
	UNIQUE KEY tokens_hash (hash),
	UNIQUE KEY tokens_name (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS audit (
	id          BIGINT       NOT NULL AUTO_INCREMENT,
	happened_at BIGINT       NOT NULL,
	actor       VARCHAR(255) NOT NULL,
	action      VARCHAR(64)  NOT NULL,
	target      VARCHAR(255) NOT NULL,
	task_id     BIGINT       NOT NULL DEFAULT 0,
	before_json MEDIUMTEXT   NULL,
	after_json  MEDIUMTEXT   NULL,
	PRIMARY KEY (id),
	KEY audit_happened (happened_at),
	KEY audit_actor (actor, id),
	KEY audit_action (action, id),
	KEY audit_task (task_id, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
