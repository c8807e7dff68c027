-- Calendars (sundial.Calendar) and the tasks' daylight-saving policy and
-- calendar references (sundial.Task.DST, Task.Calendars).
--
-- A calendar is a named list of entries (dates, ranges, cron expressions),
-- held as a JSON array of strings in entries_json; version grows by one
-- with every change, so that the planner, which caches the calendars
-- compiled, reads only the names and versions on each pass and reloads a
-- calendar when its version changed.
CREATE TABLE calendars (
	name         TEXT    PRIMARY KEY,
	description  TEXT    NOT NULL DEFAULT '',
	timezone     TEXT    NOT NULL DEFAULT '',
	entries_json TEXT    NOT NULL DEFAULT '[]',
	version      INTEGER NOT NULL DEFAULT 1,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
);

-- dst is vixie, skip_gap or repeat; the tasks that exist keep the Vixie
-- rule. calendars_json is a JSON array of calendar names, "[]" for none.
ALTER TABLE tasks ADD COLUMN dst TEXT NOT NULL DEFAULT 'vixie';
ALTER TABLE tasks ADD COLUMN calendars_json TEXT NOT NULL DEFAULT '[]';
