-- Calendars and the tasks' daylight-saving policy and calendar
-- references: SQLite's 0022_calendars.sql, whose comments say what each
-- column holds. ADD COLUMN with a constant default rewrites nothing.
CREATE TABLE calendars (
	name         TEXT   PRIMARY KEY,
	description  TEXT   NOT NULL DEFAULT '',
	timezone     TEXT   NOT NULL DEFAULT '',
	entries_json TEXT   NOT NULL DEFAULT '[]',
	version      BIGINT NOT NULL DEFAULT 1,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL
);
ALTER TABLE tasks ADD COLUMN dst TEXT NOT NULL DEFAULT 'vixie';
ALTER TABLE tasks ADD COLUMN calendars_json TEXT NOT NULL DEFAULT '[]';
