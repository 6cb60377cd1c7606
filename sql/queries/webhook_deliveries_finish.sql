-- name: webhook_deliveries_finish
-- The outcome of the attempt process $2 made of delivery $1 at $3: status $4 ('delivered',
-- 'pending' again at $6, or 'failed'), the receiver's status code $5 (null: no answer). Only
-- while the claim is this process's: a claim taken over after its lease ran out is not touched.
UPDATE webhook_deliveries
   SET status = $4, last_status_code = $5, next_attempt_at = $6,
       delivered_at = CASE WHEN $4 = 'delivered' THEN $3::timestamptz END,
       lease_owner = NULL, lease_expires_at = NULL
 WHERE id = $1 AND lease_owner = $2 AND status = 'pending'
RETURNING id
