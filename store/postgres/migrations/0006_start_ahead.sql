-- A run that needs no admission (its task's policies can neither hold it back nor skip it) is
-- marked when planned (SQLite's 0006_start_ahead.sql), so that the claim that gives it to a node,
-- shortly before its instant, can also start it: one write of the run between its plan and its
-- outcome instead of two. Like every migration, this file runs in one transaction with its ledger
-- row: it applies whole or not at all, and a node that finds it recorded skips it.
--
-- ADD COLUMN with a constant default rewrites nothing. The runs that exist keep false: a claim
-- starts none of them but their retries (delivered before), and the planner marks the new ones.
ALTER TABLE runs ADD COLUMN start_ahead BOOLEAN NOT NULL DEFAULT false;
