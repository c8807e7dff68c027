-- Incidents: the run that opened one, and its acknowledgement; SQLite's
-- 0023_incident_ack.sql, whose comments say why.
ALTER TABLE incidents ADD COLUMN run_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE incidents ADD COLUMN acked_at BIGINT NULL;
ALTER TABLE incidents ADD COLUMN acked_by TEXT NOT NULL DEFAULT '';
ALTER TABLE incidents ADD COLUMN ack_note TEXT NOT NULL DEFAULT '';
