-- Labels on tasks, and the run a rerun runs again.
--
-- labels_json holds a task's labels (sundial.Task.Labels) as a JSON object,
-- its keys sorted; "{}" for none. A label selector reads a label's value
-- with json_extract (sqlstore.Dialect.Label): no index serves it, so a
-- list of tasks by selector reads the live tasks in id order until its page
-- is full (docs/api.md says so).
--
-- rerun_of is the run that a MANUAL run made by POST /runs/{id}/rerun runs
-- again; NULL for every other run. It is written once, when the run is
-- inserted, never on the path of a fire.
--
-- ADD COLUMN with a constant default rewrites nothing; the tasks that exist
-- have no labels and the runs that exist rerun nothing. (No 0014: the
-- numbers are shared across the dialects.)
ALTER TABLE tasks ADD COLUMN labels_json TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN rerun_of INTEGER NULL;
