-- Task dependencies and their joins: SQLite's 0021_dependencies.sql,
-- whose comments say what each column holds. ADD COLUMN with a constant
-- default rewrites nothing.
ALTER TABLE tasks ADD COLUMN depends_on_json TEXT NULL;
ALTER TABLE tasks ADD COLUMN join_mode TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN join_deadline_seconds INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_children ON tasks (join_mode, id) WHERE NOT deleted AND join_mode <> '';

CREATE TABLE dep_joins (
	child_id     BIGINT NOT NULL,
	logical_at   BIGINT NOT NULL,
	state        TEXT   NOT NULL,
	deadline_at  BIGINT NOT NULL,
	parents_json TEXT   NOT NULL,
	run_id       BIGINT NULL,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL,
	PRIMARY KEY (child_id, logical_at)
);
CREATE INDEX dep_joins_waiting ON dep_joins (state, deadline_at);
