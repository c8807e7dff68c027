-- Every change of a run's status rewrites its row with a new entry in each of its indexes (the
-- status is indexed, so the update is never heap-only), and a fire changes it twice: claimed,
-- then ended. Two indexes hold runs that none of their readers ask for, and now hold only the
-- others:
--
-- runs_status_node is read for runs a node holds or may take (RunsOwned, RunRelease, NodeReap,
-- RunFindStuck, RunLongRunning, RunCancelRequested, redelivery): never a final run. It keeps
-- the runs that are not final, so a run's end adds nothing to it.
--
-- runs_created is read by RunPurge, for final runs only. It keeps those, so a run's insert and
-- its claim add nothing to it.
--
-- A fire thus writes 19 index entries instead of 22. Each reader's status condition names a
-- subset of the statuses below, which the planner proves implies the index's condition (the
-- plan tests in postgres_test.go hold each to its index).
--
-- Like every migration, this file runs in one transaction with its ledger row; building the
-- indexes holds off writes to runs meanwhile (CREATE INDEX CONCURRENTLY cannot run in a
-- transaction).
DROP INDEX runs_status_node;
CREATE INDEX runs_status_node ON runs (status, node_id)
	WHERE status IN ('SCHEDULED', 'QUEUED', 'RUNNING', 'WAITING_CALLBACK', 'INTERRUPTED');
DROP INDEX runs_created;
CREATE INDEX runs_created ON runs (created_at, id)
	WHERE status IN ('SUCCESS', 'FAILED', 'TIMEOUT', 'FAILED_TIMEOUT', 'CANCELED', 'SKIPPED');
