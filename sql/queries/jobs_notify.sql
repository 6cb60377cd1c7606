-- name: jobs_notify
-- Wakes the workers listening on channel $1 at once instead of at their next poll. Sent inside
-- the submission's transaction, PostgreSQL delivers it only if that commits, and after.
SELECT pg_notify($1, '')
