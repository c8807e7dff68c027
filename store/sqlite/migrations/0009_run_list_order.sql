-- Run lists (RunList) are ordered by scheduled time, newest first, then by
-- id: the order in which fires happened, whatever order their rows were
-- written in (catch-up runs, fires planned ahead). Each index below holds
-- the runs in that order (the implicit trailing rowid breaks ties by id),
-- so a page is read backwards from its cursor and stops at its limit,
-- with nothing sorted:
--
-- runs_task_scheduled serves a task's runs (GET /tasks/{id}/runs,
-- /runs?task_id=); it replaces runs_task, which held a task's runs by id
-- only, and serves what that served (a task's runs, the foreign key).
-- runs_scheduled serves the runs of every task (GET /runs).
DROP INDEX runs_task;
CREATE INDEX runs_task_scheduled ON runs (task_id, scheduled_at);
CREATE INDEX runs_scheduled ON runs (scheduled_at);
