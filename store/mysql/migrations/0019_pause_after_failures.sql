-- A task's pause_after_failures (sundial.Task.PauseAfterFailures): after
-- that many of its runs in a row failed for good, the task disables itself;
-- 0, the tasks that exist: never. The logical schema of
-- store/sqlite/migrations/0019_pause_after_failures.sql.
--
-- Like 0014, the ALTER TABLE is prepared from what information_schema says
-- is there, so it may run again after a migration that failed half-way.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN pause_after_failures INT NOT NULL DEFAULT 0',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'pause_after_failures');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
