-- Incidents: the run that opened one, and its acknowledgement; SQLite's
-- 0023_incident_ack.sql, whose comments say why. Like every MySQL
-- migration, each statement may run again after one that failed half-way:
-- a column is added only when information_schema does not have it.

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE incidents ADD COLUMN run_id BIGINT NOT NULL DEFAULT 0',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'incidents' AND column_name = 'run_id');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE incidents ADD COLUMN acked_at BIGINT NULL',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'incidents' AND column_name = 'acked_at');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE incidents ADD COLUMN acked_by VARCHAR(255) NOT NULL DEFAULT ''''',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'incidents' AND column_name = 'acked_by');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE incidents ADD COLUMN ack_note VARCHAR(1000) NOT NULL DEFAULT ''''',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'incidents' AND column_name = 'ack_note');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
