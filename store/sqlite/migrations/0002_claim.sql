-- Runs no node holds yet, by due time: every node claims from here
-- (RunClaimDue) shortly before the runs are due.
CREATE INDEX runs_unclaimed ON runs (scheduled_at) WHERE status = 'SCHEDULED' AND node_id = '';
