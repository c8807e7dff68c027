-- Claims: runs that no node holds (node_id '') are claimed by any node
-- (RunClaimDue), many times a second on every node.
--
-- runs_claim serves RunClaimDue's candidate read, a range scan over the due
-- SCHEDULED runs of one holder (status, node_id = '', scheduled_at <= ?)
-- whatever the number of finished runs; task_id makes the scan covering, so
-- the join to the task's priority reads the index alone. Its (status,
-- node_id) prefix serves what runs_status_node served (RunsOwned,
-- RunRelease, NodeReap, RunCancelRequested), and ordered by scheduled_at,
-- so runs_status_node goes: one index less to change on every status
-- change of a run.
--
-- Like 0001, every statement may run again after a migration that failed
-- half-way. MySQL 8 has no CREATE INDEX IF NOT EXISTS (MariaDB has), so
-- each change is prepared from what information_schema says is there.

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs ADD INDEX runs_claim (status, node_id, scheduled_at, task_id)',
	'DO 0')
	FROM information_schema.statistics
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND index_name = 'runs_claim');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'DO 0',
	'ALTER TABLE runs DROP INDEX runs_status_node')
	FROM information_schema.statistics
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND index_name = 'runs_status_node');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
