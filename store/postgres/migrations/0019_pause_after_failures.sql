-- A task's pause_after_failures (sundial.Task.PauseAfterFailures): after
-- that many of its runs in a row failed for good, the task disables itself;
-- 0, the tasks that exist: never.
ALTER TABLE tasks ADD COLUMN pause_after_failures INTEGER NOT NULL DEFAULT 0;
