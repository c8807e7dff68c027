-- Task dependencies and their joins: the logical schema of
-- store/sqlite/migrations/0021_dependencies.sql, whose comments say what
-- each column holds. MySQL has no partial index: tasks_children holds
-- every task, and the list of tasks with parents reads its range of
-- join_mode IN ('all', 'any').
--
-- Like 0014, each ALTER TABLE is prepared from what information_schema says
-- is there, so it may run again after a migration that failed half-way.
SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN depends_on_json MEDIUMTEXT NULL',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'depends_on_json');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN join_mode VARCHAR(8) NOT NULL DEFAULT ''''',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'join_mode');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD COLUMN join_deadline_seconds INT NOT NULL DEFAULT 0',
	'DO 0')
	FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND column_name = 'join_deadline_seconds');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = (SELECT IF(COUNT(*) = 0,
	'ALTER TABLE tasks ADD INDEX tasks_children (join_mode, id)',
	'DO 0')
	FROM information_schema.statistics
	WHERE table_schema = DATABASE() AND table_name = 'tasks' AND index_name = 'tasks_children');
PREPARE sundial_ddl FROM @sundial_ddl;
EXECUTE sundial_ddl;
DEALLOCATE PREPARE sundial_ddl;

SET @sundial_ddl = NULL;

CREATE TABLE IF NOT EXISTS dep_joins (
	child_id     BIGINT      NOT NULL,
	logical_at   BIGINT      NOT NULL,
	state        VARCHAR(16) NOT NULL,
	deadline_at  BIGINT      NOT NULL,
	parents_json MEDIUMTEXT  NOT NULL,
	run_id       BIGINT      NULL,
	created_at   BIGINT      NOT NULL,
	updated_at   BIGINT      NOT NULL,
	PRIMARY KEY (child_id, logical_at),
	KEY dep_joins_waiting (state, deadline_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
