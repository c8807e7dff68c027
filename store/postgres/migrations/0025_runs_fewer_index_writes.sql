-- Every change of a run's status rewrites its row with a new entry in each of its indexes (the
-- status is indexed, so the update is never heap-only), and a fire changes it twice: claimed,
-- then ended. runs_created is read by RunPurge alone, for final runs only (its condition lists
-- them, as the index's below does: the planner proves the one implies the other, and
-- TestQueryPlans holds RunPurge to the index). It now keeps only those, so a run's insert and its
-- claim add nothing to it: a fire writes 20 index entries instead of 22.
--
-- (runs_status_node stays whole: a list of runs by statuses given as parameters, such as the
-- dead letters of every task, may read it for final statuses, and a partial index serves no
-- plan made for any parameter.)
--
-- Like every migration, this file runs in one transaction with its ledger row. The new index is
-- built first, under another name, which holds off writes to runs meanwhile but not reads
-- (CREATE INDEX CONCURRENTLY cannot run in a transaction); dropping the old one then locks runs
-- against reads too, from there to the commit only.
CREATE INDEX runs_created_final ON runs (created_at, id)
	WHERE status IN ('SUCCESS', 'FAILED', 'TIMEOUT', 'FAILED_TIMEOUT', 'CANCELED', 'SKIPPED');
DROP INDEX runs_created;
ALTER INDEX runs_created_final RENAME TO runs_created;
