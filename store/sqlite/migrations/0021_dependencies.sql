-- Task dependencies (sundial.Task's DependsOn, Join, JoinDeadline; see
-- dependency.go). depends_on_json is the task's parents as JSON, NULL for
-- none; join_mode is 'all' or 'any' for a task with parents, '' for one
-- without; join_deadline_seconds 0 is the default deadline. The tasks that
-- exist have no parents. tasks_children lists the live tasks with parents
-- (each node reads them to know which tasks have children), from an index
-- as small as they are few.
ALTER TABLE tasks ADD COLUMN depends_on_json TEXT;
ALTER TABLE tasks ADD COLUMN join_mode TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN join_deadline_seconds INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_children ON tasks (join_mode, id) WHERE deleted = 0 AND join_mode <> '';

-- One row per join (sundial.DepJoin): a child's wait for its parents'
-- runs of one logical time (microseconds). Written only when a parent's
-- run ends, never on the path of an ordinary fire. The row is the lock
-- that serialises the parents' outcomes of one join (Store.DepRecord):
-- the child's run is made once, under it, with the fire key d:<unix>.
-- state is WAITING, FIRED or SKIPPED; deadline_at (microseconds) is when a
-- join still WAITING is skipped (dep_joins_waiting serves that pass);
-- parents_json the parents' outcomes recorded, in order; run_id the
-- child's run once made.
CREATE TABLE dep_joins (
	child_id     INTEGER NOT NULL,
	logical_at   INTEGER NOT NULL,
	state        TEXT    NOT NULL,
	deadline_at  INTEGER NOT NULL,
	parents_json TEXT    NOT NULL,
	run_id       INTEGER,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	PRIMARY KEY (child_id, logical_at)
);
CREATE INDEX dep_joins_waiting ON dep_joins (state, deadline_at);
