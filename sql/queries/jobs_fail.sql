-- name: jobs_fail
-- Fails a job held by worker $2; nothing is debited. $3 is for operators and never returned.
UPDATE jobs
   SET status = 'failed', failure = $3, completed_at = $4, stage = NULL,
       lease_owner = NULL, lease_expires_at = NULL
 WHERE id = $1 AND lease_owner = $2 AND status = 'processing'
RETURNING id
