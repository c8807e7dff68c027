-- What a delivery may follow and what it carries: a task's redirect policy
-- (none, same_origin, any), its Standard Webhooks signing secret (sealed,
-- "" for none) and its OIDC token option (JSON, NULL for none). SQLite's
-- 0011_delivery_security.sql. ADD COLUMN with a constant default rewrites nothing.
ALTER TABLE tasks ADD COLUMN follow_redirects TEXT NOT NULL DEFAULT 'same_origin';
ALTER TABLE tasks ADD COLUMN signing_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN oidc_json TEXT;
