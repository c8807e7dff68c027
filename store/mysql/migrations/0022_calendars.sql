-- Calendars and the tasks' daylight-saving policy and calendar
-- references: the logical schema of store/sqlite/migrations/0022_calendars.sql,
-- whose comments say what each column holds. calendars_json is NULL (read
-- as none) for the tasks that exist: MySQL gives a TEXT column no default.
--
-- Like 0014, the table is created if missing and each ALTER TABLE is
-- prepared from what information_schema says is there, so the migration
-- may run again after one that failed half-way.
CREATE TABLE IF NOT EXISTS calendars (
	name         VARCHAR(64)  NOT NULL,
	description  VARCHAR(512) NOT NULL DEFAULT '',
	timezone     VARCHAR(64)  NOT NULL DEFAULT '',
	entries_json MEDIUMTEXT   NOT NULL,
	version      BIGINT       NOT NULL DEFAULT 1,
	created_at   BIGINT       NOT NULL,
	updated_at   BIGINT       NOT NULL,
	PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN dst VARCHAR(16) NOT NULL DEFAULT ''vixie''',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'dst');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN calendars_json TEXT NULL',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'calendars_json');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
