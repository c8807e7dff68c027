-- A fire delivered once writes no attempt row. When the outcome of a
-- delivery ends its run for good (sundial.RunFinishParams.AttemptOnRun: a
-- final status, no retry), the run records that delivery's attempt itself
-- and attempt_on_run says so: RunAttempts reads it from the run, after the
-- run's rows of run_attempts (deliveries that came before: retries,
-- interruptions, WAITING_CALLBACK calls). SQLite's and MySQL's
-- 0013_attempt_on_run.sql. ADD COLUMN with a constant default rewrites
-- nothing; the runs that exist keep false, and their rows.
--
-- To run a binary older than this migration on this database again, write
-- those attempts back first: see "Upgrades and downgrades" in docs/design.md.
ALTER TABLE runs ADD COLUMN attempt_on_run BOOLEAN NOT NULL DEFAULT false;

-- Only a run that a delivery's outcome ended for good has it, and such a
-- run never changes again (its status is final), so the attempt read from
-- it stays as the outcome left it; every write that starts a delivery
-- clears it besides. NOT VALID: every row that exists has the default, so
-- there is nothing to check, and the table is not read under the lock of
-- this migration; every row written from now on is checked.
ALTER TABLE runs ADD CONSTRAINT runs_attempt_on_run_final
	CHECK (NOT attempt_on_run OR status IN ('SUCCESS', 'FAILED', 'TIMEOUT', 'CANCELED')) NOT VALID;
