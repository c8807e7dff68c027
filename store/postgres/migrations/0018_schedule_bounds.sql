-- The bounds of a task's schedule and its fire counter: SQLite's
-- 0018_schedule_bounds.sql, whose comments say what each column holds.
-- ADD COLUMN with a constant default rewrites nothing.
ALTER TABLE tasks ADD COLUMN start_at BIGINT NULL;
ALTER TABLE tasks ADD COLUMN end_at BIGINT NULL;
ALTER TABLE tasks ADD COLUMN max_runs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN jitter_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN fire_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN counted_through BIGINT NULL;
