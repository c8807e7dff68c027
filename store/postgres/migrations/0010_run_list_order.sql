-- Run lists (RunList) are ordered by scheduled time, newest first, then by id: the order in which
-- fires happened, whatever order their rows were written in (catch-up runs, fires planned ahead).
-- SQLite's 0009_run_list_order.sql. Each index below holds the runs in that order, the id in its
-- key, so a page is a range read backwards from its cursor that stops at its limit, with nothing
-- sorted:
--
-- runs_task_scheduled serves a task's runs (GET /tasks/{id}/runs, /runs?task_id=); it replaces
-- runs_task (task_id, id), which held them by id, and serves what that served. runs_scheduled
-- serves the runs of every task (GET /runs).
--
-- Like every migration, this file runs in one transaction with its ledger row; building the
-- indexes holds off writes to runs meanwhile (CREATE INDEX CONCURRENTLY cannot run in a
-- transaction).
DROP INDEX runs_task;
CREATE INDEX runs_task_scheduled ON runs (task_id, scheduled_at, id);
CREATE INDEX runs_scheduled ON runs (scheduled_at, id);
