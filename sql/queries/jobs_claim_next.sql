-- name: jobs_claim_next
-- Claims the oldest pending job, or a processing one whose lease ran out (its worker died), for
-- worker $1 until $2 + $3 seconds. SKIP LOCKED lets several workers claim at once without
-- waiting on each other, and the row lock re-checks the status on the newest row version, so
-- two workers never hold the same job. stalled_attempts counts this claim and those before it
-- since the checkpoint last moved: an attempt that made progress starts the count again.
UPDATE jobs j
   SET status = 'processing',
       lease_owner = $1,
       lease_expires_at = $2::timestamptz + make_interval(secs => $3::integer),
       started_at = coalesce(j.started_at, $2::timestamptz),
       attempts = j.attempts + 1,
       stalled_attempts = CASE WHEN j.processed > j.claimed_at_processed THEN 1 ELSE j.stalled_attempts + 1 END,
       claimed_at_processed = j.processed
 WHERE j.id = (SELECT c.id
                 FROM jobs c
                WHERE c.status = 'pending' OR (c.status = 'processing' AND c.lease_expires_at < $2::timestamptz)
                ORDER BY c.created_at, c.id
                LIMIT 1
                  FOR UPDATE SKIP LOCKED)
RETURNING j.id, j.account_id, j.total, j.processed, j.stage_stats, j.attempts, j.stalled_attempts
