-- What a delivery may follow and what it carries: a task's redirect policy
-- (none, same_origin, any), its Standard Webhooks signing secret (sealed,
-- "" for none) and its OIDC token option (JSON, NULL for none). The logical
-- schema of store/sqlite/migrations/0011_delivery_security.sql.
--
-- Like 0005, each ALTER TABLE is prepared from what information_schema says
-- is there, so it may run again after a migration that failed half-way.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN follow_redirects VARCHAR(16) NOT NULL DEFAULT ''same_origin''',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'follow_redirects');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN signing_secret VARCHAR(512) NOT NULL DEFAULT ''''',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'signing_secret');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN oidc_json TEXT NULL',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'oidc_json');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;
