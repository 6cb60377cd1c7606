-- name: jobs_stage
-- Records the stage the next chunk is in and renews the lease, only while worker $2 still holds
-- it: no row back means another worker took the job over. It leaves `processed` alone: it runs
-- beside the previous chunk's write, whose checkpoint moves `processed`, and may land after it.
-- $4 is JSON text: typed jsonb, the drivers would encode the string once more.
UPDATE jobs
   SET stage = $3, stage_stats = $4::text::jsonb,
       lease_expires_at = $5::timestamptz + make_interval(secs => $6::integer)
 WHERE id = $1 AND lease_owner = $2 AND status = 'processing'
RETURNING id
