-- What each node did, minute by minute: SQLite's 0024_node_stats.sql,
-- whose comments say why. A row is rewritten in place every few seconds
-- for its minute and its key never changes: the free room a page keeps
-- (fillfactor) lets each update stay on its page (a HOT update).
CREATE TABLE node_stats (
	minute          BIGINT NOT NULL,
	node_id         TEXT   NOT NULL,
	fires           BIGINT NOT NULL DEFAULT 0,
	scheduled_fires BIGINT NOT NULL DEFAULT 0,
	succeeded       BIGINT NOT NULL DEFAULT 0,
	failed          BIGINT NOT NULL DEFAULT 0,
	skipped         BIGINT NOT NULL DEFAULT 0,
	canceled        BIGINT NOT NULL DEFAULT 0,
	lag             TEXT   NOT NULL DEFAULT '',
	lag_max_us      BIGINT NOT NULL DEFAULT 0,
	updated_at      BIGINT NOT NULL,
	PRIMARY KEY (minute, node_id)
) WITH (fillfactor = 70);
