-- Alerts: SQLite's 0020_alerts.sql, whose comments say why.
CREATE TABLE alert_channels (
	id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	name       TEXT   NOT NULL UNIQUE,
	kind       TEXT   NOT NULL,
	spec_json  TEXT   NOT NULL,
	version    BIGINT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);
CREATE TABLE alert_rules (
	id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	name       TEXT   NOT NULL UNIQUE,
	task_id    BIGINT NOT NULL DEFAULT 0,
	spec_json  TEXT   NOT NULL,
	version    BIGINT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);
CREATE TABLE incidents (
	id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	rule_id        BIGINT NOT NULL,
	task_id        BIGINT NOT NULL,
	open_key       INTEGER NULL,
	status         TEXT   NOT NULL,
	rule_name      TEXT   NOT NULL,
	task_name      TEXT   NOT NULL,
	condition_kind TEXT   NOT NULL,
	reason         TEXT   NOT NULL,
	opened_at      BIGINT NOT NULL,
	resolved_at    BIGINT NULL,
	notified_at    BIGINT NOT NULL
);
CREATE UNIQUE INDEX incidents_open ON incidents (rule_id, task_id, open_key);
CREATE INDEX incidents_task ON incidents (task_id, id);
CREATE INDEX incidents_status ON incidents (status, id);
CREATE TABLE notifications (
	id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	incident_id   BIGINT  NOT NULL,
	channel_id    BIGINT  NOT NULL,
	channel_name  TEXT    NOT NULL,
	event         TEXT    NOT NULL,
	status        TEXT    NOT NULL,
	held          INTEGER NOT NULL DEFAULT 0,
	due_at        BIGINT  NOT NULL,
	created_at    BIGINT  NOT NULL,
	sent_at       BIGINT  NULL,
	tries         INTEGER NOT NULL DEFAULT 0,
	attempts_json TEXT    NOT NULL,
	claimed_by    TEXT    NOT NULL DEFAULT '',
	claimed_until BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX notifications_due ON notifications (status, due_at);
CREATE INDEX notifications_incident ON notifications (incident_id, id);
