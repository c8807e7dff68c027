-- What each node did, minute by minute: SQLite's 0024_node_stats.sql,
-- whose comments say why. CREATE TABLE IF NOT EXISTS, so that the
-- migration may run again after one that failed half-way. lag has no
-- default (a TEXT column may not on MySQL before 8.0.13): every row is
-- made with a value.
CREATE TABLE IF NOT EXISTS node_stats (
	minute          BIGINT       NOT NULL,
	node_id         VARCHAR(320) NOT NULL,
	fires           BIGINT       NOT NULL DEFAULT 0,
	scheduled_fires BIGINT       NOT NULL DEFAULT 0,
	succeeded       BIGINT       NOT NULL DEFAULT 0,
	failed          BIGINT       NOT NULL DEFAULT 0,
	skipped         BIGINT       NOT NULL DEFAULT 0,
	canceled        BIGINT       NOT NULL DEFAULT 0,
	lag             TEXT         NOT NULL,
	lag_max_us      BIGINT       NOT NULL DEFAULT 0,
	updated_at      BIGINT       NOT NULL,
	PRIMARY KEY (minute, node_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
