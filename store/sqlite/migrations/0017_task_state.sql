-- The health of each task (sundial.TaskState, the state block of a task
-- answer): its last success and failure, its failures in a row and when
-- the first of them ended, and the lags of its newest 100 fires
-- (sqlrow.EncodeLags: about 10 bytes a fire). A node saves a task's row
-- after a failure, and a healthy task's at most every scheduler.state_flush
-- (5 minutes), never on the path of a fire (docs/design.md, "Task
-- health"). Times are microseconds, NULL for none.
--
-- A row is made by the first save of its task and read by task_id alone.
-- There is no foreign key: a save makes rows only for the live tasks it
-- reads from tasks, and a key would hold a share lock on the task's row,
-- which the planner and admissions lock for update. Tasks are never
-- deleted, only marked so, and a deleted task's row is no longer saved.
CREATE TABLE task_state (
	task_id              INTEGER PRIMARY KEY,
	last_success_at      INTEGER,
	last_failure_at      INTEGER,
	consecutive_failures INTEGER NOT NULL DEFAULT 0,
	failing_since        INTEGER,
	lags                 TEXT    NOT NULL DEFAULT '',
	updated_at           INTEGER NOT NULL
);
