-- Claims: runs that no node holds (an empty node_id: PlanDue stores the node it is given as
-- is) are claimed by any node (RunClaimDue), every ~50 ms on every node.
--
-- runs_unclaimed serves RunClaimDue: a range scan over the due runs no node holds, however
-- many finished or held runs the table keeps. A run leaves it when it is claimed.
--
-- RunFindStuck, the compensator's query (every 10 s or less often), makes do with
-- runs_status_node: one more index on the SCHEDULED runs would cost every claim and every
-- planned run an index entry.
CREATE INDEX runs_unclaimed ON runs (scheduled_at) WHERE status = 'SCHEDULED' AND node_id = '';
