-- Run lists (RunList) are ordered by scheduled time, newest first, then by
-- id: the order in which fires happened, whatever order their rows were
-- written in (catch-up runs, fires planned ahead). The logical schema of
-- store/sqlite/migrations/0009_run_list_order.sql. Each index below holds
-- the runs in that order (InnoDB's implicit trailing id, here written out,
-- breaks ties), so a page is a range read backwards from its cursor that
-- stops at its limit, with nothing sorted:
--
-- runs_task_scheduled serves a task's runs (GET /tasks/{id}/runs,
-- /runs?task_id=); it replaces runs_task (task_id), which held them by id,
-- and serves what that served, the foreign key runs_task_fk included.
-- runs_scheduled serves the runs of every task (GET /runs).
--
-- Like 0006, the ALTER TABLE is prepared from what information_schema says
-- is there, so it may run again after a migration that failed half-way;
-- one ALTER TABLE adds and drops its indexes together or not at all.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs
		ADD INDEX runs_task_scheduled (task_id, scheduled_at, id),
		ADD INDEX runs_scheduled (scheduled_at, id),
		DROP INDEX runs_task',
	'DO 0')
	FROM information_schema.statistics
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND index_name = 'runs_scheduled');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
