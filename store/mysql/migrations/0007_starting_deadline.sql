-- A task may say how late one of its fires may still start (Kubernetes
-- CronJob's startingDeadlineSeconds); 0 leaves it to the server's
-- scheduler.misfire_threshold. The logical schema of
-- store/sqlite/migrations/0007_starting_deadline.sql.
--
-- Like 0005, the ALTER TABLE is prepared from what information_schema says
-- is there, so it may run again after a migration that failed half-way.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN starting_deadline_seconds INT NOT NULL DEFAULT 0',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'starting_deadline_seconds');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
