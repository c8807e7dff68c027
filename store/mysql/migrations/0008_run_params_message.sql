-- params_json holds the params a manual trigger gave its run (any JSON the
-- body template renders as {{params}}, in place of the task's; NULL: the
-- task's), so that every delivery of the run, retries and redeliveries on
-- another node included, renders them. message is what an ASYNC run's
-- callback said about its outcome, SUCCESS or FAILED alike. The logical
-- schema of store/sqlite/migrations/0008_run_params_message.sql.
--
-- Like 0005, the ALTER TABLE is prepared from what information_schema says
-- is there, so it may run again after a migration that failed half-way;
-- its two columns are added together or not at all. message, like error,
-- is a TEXT without a default (which MySQL 8 allows a TEXT only as an
-- expression): the runs that exist get the empty string, and every insert
-- names it.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE runs
		ADD COLUMN params_json MEDIUMTEXT NULL,
		ADD COLUMN message     TEXT       NOT NULL',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'runs' AND column_name = 'params_json');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
