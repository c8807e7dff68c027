-- Why, when and by whom a DISABLED task was disabled (sundial.Task's
-- DisabledReason, DisabledAt, DisabledBy): the reason given to POST
-- /tasks/{id}/disable or a write of the task, at most 1,024 characters ("" for
-- none), the time in microseconds (NULL for none) and the actor of the
-- request. Enabling the task clears them. The tasks that exist, disabled or
-- not, have none. The logical schema of
-- store/sqlite/migrations/0014_disabled_reason.sql.
--
-- Like 0012, each ALTER TABLE is prepared from what information_schema says
-- is there, so it may run again after a migration that failed half-way.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN disabled_reason VARCHAR(1024) NOT NULL DEFAULT ''''',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'disabled_reason');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN disabled_at BIGINT NULL',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'disabled_at');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN disabled_by VARCHAR(255) NOT NULL DEFAULT ''''',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'disabled_by');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
