-- A fire delivered once writes no attempt row. When the outcome of a
-- delivery ends its run for good (sundial.RunFinishParams.AttemptOnRun: a
-- final status, no retry), the run records that delivery's attempt itself
-- and attempt_on_run says so: RunAttempts reads it from the run, after the
-- run's rows of run_attempts (deliveries that came before: retries,
-- interruptions, WAITING_CALLBACK calls). The runs that exist keep 0, and
-- their rows. (No 0012: the number is the other dialects'.)
--
-- Only a run that a delivery's outcome ended for good has it, and such a
-- run never changes again (its status is final), so the attempt read from
-- it stays as the outcome left it; every write that starts a delivery
-- clears it besides. SQLite checks the constraint against the rows that
-- exist, all 0, without rewriting them.
--
-- To run a binary older than this migration on this database again, write
-- those attempts back first: see "Upgrades and downgrades" in docs/design.md.
ALTER TABLE runs ADD COLUMN attempt_on_run INTEGER NOT NULL DEFAULT 0
	CHECK (attempt_on_run = 0 OR status IN ('SUCCESS', 'FAILED', 'TIMEOUT', 'CANCELED'));
