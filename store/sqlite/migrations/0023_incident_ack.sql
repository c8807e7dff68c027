-- Incidents: the run that opened one, and its acknowledgement.
--
-- run_id is the run whose outcome (or, for long_run, whose call still
-- running past the threshold) opened the incident, 0 when none did (an
-- auto-pause of a task is judged on its last failure, which is a run).
-- A long_run rule opens at most one incident per run: the alerter looks
-- for one of the rule, the task and the run before it opens another.
--
-- acked_at, acked_by and ack_note are set once, by POST
-- /incidents/{id}/ack, on an open incident: an acknowledged incident
-- sends no repeat notification (IncidentRepeat leaves it alone) until it
-- resolves.
ALTER TABLE incidents ADD COLUMN run_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE incidents ADD COLUMN acked_at INTEGER NULL;
ALTER TABLE incidents ADD COLUMN acked_by TEXT NOT NULL DEFAULT '';
ALTER TABLE incidents ADD COLUMN ack_note TEXT NOT NULL DEFAULT '';
