-- Labels on tasks, and the run a rerun runs again. The logical schema of
-- store/sqlite/migrations/0015_labels_rerun.sql, but for labels_json's
-- default: MySQL takes no literal default on a TEXT column, so the column
-- is NULL for the tasks that exist (and for a task a node older than this
-- migration creates), which reads as no labels; every insert of this
-- version writes "{}" or the labels. A label selector reads a label's
-- value with JSON_UNQUOTE(JSON_EXTRACT(labels_json, path)), NULL when the
-- task has no such label (sqlstore.Dialect.Label).
--
-- rerun_of is the run that a MANUAL run made by POST /runs/{id}/rerun runs
-- again; NULL for every other run.
--
-- Like 0006, each ALTER TABLE is prepared from what information_schema says
-- is there, so it may run again after a migration that failed half-way.
-- (MySQL 8.0.12 or later and MariaDB 10.3 or later add a last column in
-- place, without copying the table.)
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN labels_json MEDIUMTEXT NULL',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'labels_json');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs ADD COLUMN rerun_of BIGINT NULL',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND column_name = 'rerun_of');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
