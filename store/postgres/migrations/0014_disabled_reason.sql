-- Why, when and by whom a DISABLED task was disabled (sundial.Task's
-- DisabledReason, DisabledAt, DisabledBy): the reason given to POST
-- /tasks/{id}/disable or a write of the task, at most 1,024 characters ("" for
-- none), the time in microseconds (NULL for none) and the actor of the
-- request. Enabling the task clears them. The tasks that exist, disabled or
-- not, have none. SQLite's and MySQL's 0014_disabled_reason.sql. ADD COLUMN
-- with a constant default rewrites nothing.
ALTER TABLE tasks ADD COLUMN disabled_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN disabled_at BIGINT NULL;
ALTER TABLE tasks ADD COLUMN disabled_by TEXT NOT NULL DEFAULT '';
