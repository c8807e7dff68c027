-- A fire delivered once writes no attempt row. When the outcome of a
-- delivery ends its run for good (sundial.RunFinishParams.AttemptOnRun: a
-- final status, no retry), the run records that delivery's attempt itself
-- and attempt_on_run says so: RunAttempts reads it from the run, after the
-- run's rows of run_attempts (deliveries that came before: retries,
-- interruptions, WAITING_CALLBACK calls). The logical schema of
-- store/sqlite/migrations/0013_attempt_on_run.sql, but for its CHECK: only
-- a final run has the flag, which SQLite and PostgreSQL check, and which
-- here the writes alone keep (a final run never changes again, and every
-- write that starts a delivery clears the flag): adding a CHECK copies the
-- whole table on MySQL and MariaDB (ALGORITHM=COPY), and MySQL refuses a
-- column's CHECK that reads another column.
--
-- Like 0006, the ALTER TABLE is prepared from what information_schema says
-- is there, so it may run again after a migration that failed half-way.
-- The runs that exist keep 0, and their rows. (MySQL 8.0.12 or later and
-- MariaDB 10.3 or later add a last column with a constant default in place,
-- without copying runs.)
--
-- To run a binary older than this migration on this database again, write
-- those attempts back first: see "Upgrades and downgrades" in docs/design.md.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs ADD COLUMN attempt_on_run TINYINT NOT NULL DEFAULT 0',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND column_name = 'attempt_on_run');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
