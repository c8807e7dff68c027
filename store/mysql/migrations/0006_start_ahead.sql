-- A run that needs no admission (its task's policies can neither hold it
-- back nor skip it) is marked when planned, so that the claim that gives
-- it to a node, shortly before its instant, can also start it: one write
-- of the run between its plan and its outcome instead of two. The logical
-- schema of store/sqlite/migrations/0006_start_ahead.sql.
--
-- Like 0005, the ALTER TABLE is prepared from what information_schema says
-- is there, so it may run again after a migration that failed half-way.
-- Existing runs are not marked: their claims start none of them but
-- retries, as before. (MySQL 8.0.12 or later and MariaDB 10.3 or later add
-- a last column with a constant default in place, without copying runs.)
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs ADD COLUMN start_ahead TINYINT NOT NULL DEFAULT 0',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND column_name = 'start_ahead');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
