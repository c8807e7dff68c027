-- A run that needs no admission (its task's policies can neither hold it
-- back nor skip it) is marked when planned, so that the claim that gives
-- it to a node, shortly before its instant, can also start it: one write
-- of the run between its plan and its outcome instead of two.
ALTER TABLE runs ADD COLUMN start_ahead INTEGER NOT NULL DEFAULT 0;
