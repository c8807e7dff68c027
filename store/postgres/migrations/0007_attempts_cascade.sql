-- An attempt's run is always there when the attempt is written: every statement that records
-- attempts (RunFinish, RunRelease, NodeReap) takes them from the run rows it has just updated.
-- The foreign key from run_attempts to runs checked that again for each inserted row, through
-- a lookup and a row lock per attempt, and that was a third of the database's work of recording
-- a batch of outcomes. It goes; what it did on delete stays: a statement that deletes runs
-- (RunPurge, or a SCHEDULED run delivered before and taken back) deletes their attempts in the
-- same statement, once for all the runs it deleted, through run_attempts_run.
--
-- The function resolves run_attempts in the schema this migration runs in, whatever the
-- search_path of the session that deletes.

ALTER TABLE run_attempts DROP CONSTRAINT run_attempts_run_id_fkey;

CREATE FUNCTION run_attempts_follow_runs() RETURNS trigger LANGUAGE plpgsql
	SET search_path FROM CURRENT AS $$
BEGIN
	DELETE FROM run_attempts WHERE run_id IN (SELECT id FROM gone);
	RETURN NULL;
END
$$;

CREATE TRIGGER runs_delete_attempts AFTER DELETE ON runs REFERENCING OLD TABLE AS gone
	FOR EACH STATEMENT EXECUTE FUNCTION run_attempts_follow_runs();
