-- name: jobs_release
-- A worker that stops (SIGTERM) between chunks gives job $1 back: its lease ends now ($3), so the
-- next claim by any worker resumes it from the checkpoint rather than waiting out the lease.
UPDATE jobs
   SET lease_expires_at = $3::timestamptz - interval '1 millisecond'
 WHERE id = $1 AND lease_owner = $2 AND status = 'processing'
RETURNING id
