-- A task may say how late one of its fires may still start (Kubernetes
-- CronJob's startingDeadlineSeconds); 0 leaves it to the server's
-- scheduler.misfire_threshold.
ALTER TABLE tasks ADD COLUMN starting_deadline_seconds INTEGER NOT NULL DEFAULT 0;
