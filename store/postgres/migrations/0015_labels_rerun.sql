-- Labels on tasks, and the run a rerun runs again. SQLite's
-- 0015_labels_rerun.sql.
--
-- labels_json holds a task's labels as a JSON object, its keys sorted; "{}"
-- for none. TEXT, not JSONB, as params_json: it reads back as written. A
-- label selector reads a label's value with labels_json::jsonb ->> key
-- (sqlstore.Dialect.Label): no index serves it, so a list of tasks by
-- selector reads the live tasks in id order until its page is full.
--
-- rerun_of is the run that a MANUAL run made by POST /runs/{id}/rerun runs
-- again; NULL (no bytes but the null bitmap's bit) for every other run. It
-- is written once, when the run is inserted.
--
-- ADD COLUMN with a constant default, or none, rewrites nothing.
ALTER TABLE tasks ADD COLUMN labels_json TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN rerun_of BIGINT NULL;
