-- Alerts (docs/alerts.md): channels and rules, managed through the API;
-- incidents and their notifications, written only when an outcome opens,
-- repeats or resolves an incident, never on the path of an ordinary fire.
--
-- A channel's and a rule's settings are one JSON document (spec_json), the
-- secrets in it sealed; the name is unique. A rule's task_id (0 for a rule
-- of a label selector) is a column of its own.
--
-- An incident is open while open_key is 1, and NULL once resolved: the
-- unique key (rule_id, task_id, open_key) holds at most one open incident
-- per (rule, task), so of nodes that open one at once, one does (NULLs are
-- distinct in a unique index in all three databases). Its notifications
-- are made in the same transaction.
--
-- notifications is the outbox: a node claims a PENDING row due by now
-- (claimed_by, claimed_until: a lease, taken again when it lapses),
-- delivers it and writes the outcome: SENT, PENDING again after a backoff,
-- or FAILED; attempts_json keeps its latest tries. Times are microseconds.
CREATE TABLE alert_channels (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	name       TEXT    NOT NULL UNIQUE,
	kind       TEXT    NOT NULL,
	spec_json  TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE TABLE alert_rules (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	name       TEXT    NOT NULL UNIQUE,
	task_id    INTEGER NOT NULL DEFAULT 0,
	spec_json  TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE TABLE incidents (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	rule_id        INTEGER NOT NULL,
	task_id        INTEGER NOT NULL,
	open_key       INTEGER,
	status         TEXT    NOT NULL,
	rule_name      TEXT    NOT NULL,
	task_name      TEXT    NOT NULL,
	condition_kind TEXT    NOT NULL,
	reason         TEXT    NOT NULL,
	opened_at      INTEGER NOT NULL,
	resolved_at    INTEGER,
	notified_at    INTEGER NOT NULL
);
CREATE UNIQUE INDEX incidents_open ON incidents (rule_id, task_id, open_key);
CREATE INDEX incidents_task ON incidents (task_id, id);
CREATE INDEX incidents_status ON incidents (status, id);
CREATE TABLE notifications (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	incident_id   INTEGER NOT NULL,
	channel_id    INTEGER NOT NULL,
	channel_name  TEXT    NOT NULL,
	event         TEXT    NOT NULL,
	status        TEXT    NOT NULL,
	held          INTEGER NOT NULL DEFAULT 0,
	due_at        INTEGER NOT NULL,
	created_at    INTEGER NOT NULL,
	sent_at       INTEGER,
	tries         INTEGER NOT NULL DEFAULT 0,
	attempts_json TEXT    NOT NULL,
	claimed_by    TEXT    NOT NULL DEFAULT '',
	claimed_until INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX notifications_due ON notifications (status, due_at);
CREATE INDEX notifications_incident ON notifications (incident_id, id);
