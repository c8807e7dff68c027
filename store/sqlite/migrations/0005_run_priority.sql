-- Runs carry their task's priority, so that claims read the unclaimed runs
-- most urgent first (due time, then priority among runs due at the same
-- instant) straight from an index: with the priority only on the task,
-- every claim joined and sorted every waiting run, which a burst of 100,000
-- due runs made cost tens of milliseconds per claim.
ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET priority = (SELECT t.priority FROM tasks t WHERE t.id = runs.task_id)
	WHERE status IN ('SCHEDULED', 'QUEUED');

DROP INDEX runs_unclaimed;
CREATE INDEX runs_unclaimed ON runs (due_at, priority DESC, id) WHERE status = 'SCHEDULED' AND node_id = '';
