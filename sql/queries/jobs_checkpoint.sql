-- name: jobs_checkpoint
-- Records progress and renews the lease, only while worker $2 still holds it: no row back
-- means another worker took the job over and this one must stop without writing more.
-- $5 is JSON text: typed jsonb, the drivers would encode the string once more.
UPDATE jobs
   SET processed = $3, stage = $4, stage_stats = $5::text::jsonb,
       lease_expires_at = $6::timestamptz + make_interval(secs => $7::integer)
 WHERE id = $1 AND lease_owner = $2 AND status = 'processing'
RETURNING id
