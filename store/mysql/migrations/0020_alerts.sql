-- Alerts: SQLite's 0020_alerts.sql, whose comments say why. The indexes
-- are declared with their tables (CREATE TABLE IF NOT EXISTS), so that the
-- migration may run again after one that failed half-way. Text columns
-- with no default: every row is made with a value.
CREATE TABLE IF NOT EXISTS alert_channels (
	id         BIGINT       NOT NULL AUTO_INCREMENT,
	name       VARCHAR(128) NOT NULL,
	kind       VARCHAR(16)  NOT NULL,
	spec_json  MEDIUMTEXT   NOT NULL,
	version    BIGINT       NOT NULL,
	created_at BIGINT       NOT NULL,
	updated_at BIGINT       NOT NULL,
	PRIMARY KEY (id),
	UNIQUE KEY alert_channels_name (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS alert_rules (
	id         BIGINT       NOT NULL AUTO_INCREMENT,
	name       VARCHAR(128) NOT NULL,
	task_id    BIGINT       NOT NULL DEFAULT 0,
	spec_json  MEDIUMTEXT   NOT NULL,
	version    BIGINT       NOT NULL,
	created_at BIGINT       NOT NULL,
	updated_at BIGINT       NOT NULL,
	PRIMARY KEY (id),
	UNIQUE KEY alert_rules_name (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS incidents (
	id             BIGINT       NOT NULL AUTO_INCREMENT,
	rule_id        BIGINT       NOT NULL,
	task_id        BIGINT       NOT NULL,
	open_key       INT          NULL,
	status         VARCHAR(16)  NOT NULL,
	rule_name      VARCHAR(128) NOT NULL,
	task_name      VARCHAR(255) NOT NULL,
	condition_kind VARCHAR(32)  NOT NULL,
	reason         TEXT         NOT NULL,
	opened_at      BIGINT       NOT NULL,
	resolved_at    BIGINT       NULL,
	notified_at    BIGINT       NOT NULL,
	PRIMARY KEY (id),
	UNIQUE KEY incidents_open (rule_id, task_id, open_key),
	KEY incidents_task (task_id, id),
	KEY incidents_status (status, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS notifications (
	id            BIGINT       NOT NULL AUTO_INCREMENT,
	incident_id   BIGINT       NOT NULL,
	channel_id    BIGINT       NOT NULL,
	channel_name  VARCHAR(128) NOT NULL,
	event         VARCHAR(16)  NOT NULL,
	status        VARCHAR(16)  NOT NULL,
	held          INT          NOT NULL DEFAULT 0,
	due_at        BIGINT       NOT NULL,
	created_at    BIGINT       NOT NULL,
	sent_at       BIGINT       NULL,
	tries         INT          NOT NULL DEFAULT 0,
	attempts_json MEDIUMTEXT   NOT NULL,
	claimed_by    VARCHAR(255) NOT NULL DEFAULT '',
	claimed_until BIGINT       NOT NULL DEFAULT 0,
	PRIMARY KEY (id),
	KEY notifications_due (status, due_at),
	KEY notifications_incident (incident_id, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
