-- params_json holds the params a manual trigger gave its run (any JSON the body template renders
-- as {{params}}, in place of the task's; NULL: the task's), so that every delivery of the run,
-- retries and redeliveries on another node included, renders them. TEXT, not JSONB, as in 0004:
-- the params read back as they were written. message is what an ASYNC run's callback said about
-- its outcome, SUCCESS or FAILED alike.
--
-- ADD COLUMN with a constant default, or none, rewrites nothing.
ALTER TABLE runs ADD COLUMN params_json TEXT NULL;
ALTER TABLE runs ADD COLUMN message     TEXT NOT NULL DEFAULT '';
