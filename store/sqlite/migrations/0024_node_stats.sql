-- What each node did, minute by minute (sundial.StatsMinute): the fires
-- it started (and of them those the planner made), the outcomes it
-- recorded by class, and a histogram of the lags of the scheduled fires
-- it started, whence GET /api/v1/stats and the console's overview.
--
-- A node keeps the counters of the current minute in memory and writes
-- them whole, one row per node and minute (an upsert, replacing the row
-- it wrote before), every scheduler.stats_flush (10 s) and when it stops:
-- never a write per fire. Housekeeping deletes the rows older than
-- sundial.StatsRetention (25 hours).
--
-- minute is the minute's start, in microseconds, as every time here. lag
-- holds the histogram's counts, comma-separated, one per bucket of
-- sundial.StatsLagBounds (1 ms ... 60 s, then over 60 s), trailing zeros
-- left out. lag_max_us is the largest lag, in microseconds. The primary
-- key serves the reads (a range of minutes) and the purge.
CREATE TABLE node_stats (
	minute          INTEGER NOT NULL,
	node_id         TEXT    NOT NULL,
	fires           INTEGER NOT NULL DEFAULT 0,
	scheduled_fires INTEGER NOT NULL DEFAULT 0,
	succeeded       INTEGER NOT NULL DEFAULT 0,
	failed          INTEGER NOT NULL DEFAULT 0,
	skipped         INTEGER NOT NULL DEFAULT 0,
	canceled        INTEGER NOT NULL DEFAULT 0,
	lag             TEXT    NOT NULL DEFAULT '',
	lag_max_us      INTEGER NOT NULL DEFAULT 0,
	updated_at      INTEGER NOT NULL,
	PRIMARY KEY (minute, node_id)
);
