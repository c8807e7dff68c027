-- Runs carry their task's priority (SQLite's 0005_run_priority.sql), so that claims read the
-- unclaimed runs most urgent first straight from an index: with the priority on the task only,
-- every claim looked up and sorted every due run no node held, which a burst of 100,000 due runs
-- made an on-disk sort per claim. Like every migration, this file runs in one transaction with its
-- ledger row: it applies whole or not at all, and a node that finds it recorded skips it.
--
-- ADD COLUMN with a constant default rewrites nothing. Only the runs that may still be claimed
-- (SCHEDULED: planned, or waiting for a retry) or admitted (QUEUED) need their task's priority;
-- the others keep 0, as history. RunInsert and PlanDue copy the task's priority onto each new
-- run, and TaskUpdate onto the runs the update leaves waiting.
ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET priority = t.priority
	FROM tasks AS t
	WHERE t.id = runs.task_id AND runs.status IN ('SCHEDULED', 'QUEUED') AND t.priority <> 0;

-- RunClaimDue reads runs_unclaimed in its order, due time first (a range on due_at <= until that
-- stops at the claim's limit, idle or not, whatever the lookahead planned beyond until), then
-- priority among runs due at the same instant (a burst), then ID: no sort, whatever the backlog.
DROP INDEX runs_unclaimed;
CREATE INDEX runs_unclaimed ON runs (due_at, priority DESC, id) WHERE status = 'SCHEDULED' AND node_id = '';

-- PlanDue reads the due tasks by next_fire_at, then ID, and no longer by priority. A B-tree keeps
-- the entries of one key in heap order, not ID order, so the ID goes into the key: a backlog of
-- tasks due at one instant is then read a batch at a time instead of sorted for each batch.
DROP INDEX tasks_due;
CREATE INDEX tasks_due ON tasks (next_fire_at, id) WHERE status = 'ENABLED' AND NOT deleted;
