-- Live events (docs/design.md, "Live events"): MySQL has no NOTIFY, so each
-- node polls, a few times a second, the runs written since its last poll
-- (and a second before, for the commits that came late and the nodes whose
-- clocks lag), to see the changes the other nodes make. Every write of a run
-- sets its updated_at, so this index serves that poll; no row is written
-- for an event. (The audit log's changes of tasks are read through its
-- audit_happened index.)
--
-- Like 0006, the statement is prepared from what information_schema says is
-- there, so it may run again after a migration that failed half-way. MySQL
-- and MariaDB build a secondary index in place, without copying runs.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs ADD INDEX runs_updated (updated_at)',
	'DO 0')
	FROM information_schema.statistics
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND index_name = 'runs_updated');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
