-- A task may say how late one of its fires may still start (Kubernetes CronJob's
-- startingDeadlineSeconds; SQLite's 0007_starting_deadline.sql); 0 leaves it to the server's
-- scheduler.misfire_threshold. ADD COLUMN with a constant default rewrites nothing.
ALTER TABLE tasks ADD COLUMN starting_deadline_seconds INTEGER NOT NULL DEFAULT 0;
