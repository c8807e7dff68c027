-- params_json holds the params a manual trigger gave its run (any JSON the
-- body template renders as {{params}}, in place of the task's; NULL: the
-- task's), so that every delivery of the run, retries and redeliveries on
-- another node included, renders them. message is what an ASYNC run's
-- callback said about its outcome, SUCCESS or FAILED alike.
ALTER TABLE runs ADD COLUMN params_json TEXT NULL;
ALTER TABLE runs ADD COLUMN message TEXT NOT NULL DEFAULT '';
