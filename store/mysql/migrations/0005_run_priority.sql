-- Runs carry their task's priority, so that claims read the unowned runs
-- most urgent first (due time, then priority among runs due at the same
-- instant) straight from an index: with the priority only on the task,
-- every claim joined every unowned due run to its task and sorted them all,
-- which a burst of 100,000 due runs made cost a sort of 100,000 rows per
-- claim. The logical schema of store/sqlite/migrations/0005_run_priority.sql.
--
-- Like 0004, every statement may run again after a migration that failed
-- half-way: each ALTER TABLE is prepared from what information_schema says
-- is there, and the backfill is idempotent.

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs ADD COLUMN priority INT NOT NULL DEFAULT 0',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND column_name = 'priority');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

-- The runs still to be delivered take their task's priority. Finished runs
-- keep 0: nothing orders them by it. Running this again sets what it set,
-- or the priority TaskUpdate has set since, which is the task's. It runs
-- before runs_claim takes priority, which it then need not maintain row by
-- row.
UPDATE runs AS r JOIN tasks AS t ON t.id = r.task_id
	SET r.priority = t.priority
	WHERE r.status IN ('SCHEDULED', 'QUEUED') AND r.priority <> t.priority;

-- RunClaimDue reads the unowned runs due by a time in the order
-- due_at, priority DESC, id: runs_claim becomes (status, node_id, due_at,
-- priority DESC, id), so that the read is a range of (status, node_id '',
-- due_at <= ?) already in that order, which stops after its LIMIT: no sort,
-- and an idle claim reads no entry. It covers the read (id and due_at and
-- priority are in it), so task_id goes: the claim no longer joins the task.
-- The (status, node_id) prefix still serves RunsOwned, RunRelease, NodeReap,
-- RunCancelRequested, RunFindStuck and RunRedeliver. (MariaDB before 10.8
-- ignores DESC in an index: there the claim is right but sorts the due
-- runs.)
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs DROP INDEX runs_claim, ADD INDEX runs_claim (status, node_id, due_at, priority DESC, id)',
	'DO 0')
	FROM information_schema.statistics
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND index_name = 'runs_claim'
		AND seq_in_index = 4 AND column_name = 'priority');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

-- PlanDue reads the due tasks in the order next_fire_at, id (no longer by
-- priority: the claims order the runs): tasks_due becomes (status, deleted,
-- next_fire_at, id), a range already in that order, which a large backlog
-- of due tasks reads a batch at a time.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks DROP INDEX tasks_due, ADD INDEX tasks_due (status, deleted, next_fire_at, id)',
	'DO 0')
	FROM information_schema.statistics
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND index_name = 'tasks_due'
		AND seq_in_index = 4 AND column_name = 'id');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
