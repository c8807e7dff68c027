-- The bounds of a task's schedule (sundial.Task's StartAt, EndAt,
-- MaxRuns, JitterSeconds) and its fire counter (FireCount,
-- CountedThrough). start_at and end_at are microseconds, NULL for no
-- bound; max_runs 0 is no limit; jitter_seconds 0 is no jitter. fire_count
-- counts the fires the planner planned, each scheduled time once:
-- counted_through is the latest one counted (NULL for none). The planner
-- writes both with the task's next_fire_at, in the same statement, so a
-- fire writes no row more. The tasks that exist have no bound and have
-- counted nothing.
ALTER TABLE tasks ADD COLUMN start_at INTEGER;
ALTER TABLE tasks ADD COLUMN end_at INTEGER;
ALTER TABLE tasks ADD COLUMN max_runs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN jitter_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN fire_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN counted_through INTEGER;
