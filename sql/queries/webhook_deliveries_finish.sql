-- name: webhook_deliveries_finish
-- The outcomes of the attempts process $2 made, one element each: delivery $1 at $3, status $4
-- ('delivered', 'pending' again at $6, or 'failed'), the receiver's status code $5 (null: no
-- answer). Only while the claim is this process's: a claim taken over after its lease ran out is
-- not touched. The delivery loop writes every outcome that finished while the last write ran in one.
UPDATE webhook_deliveries d
   SET status = o.status, last_status_code = o.code, next_attempt_at = o.next_at,
       delivered_at = CASE WHEN o.status = 'delivered' THEN o.at END,
       lease_owner = NULL, lease_expires_at = NULL
  FROM unnest($1::uuid[], $3::timestamptz[], $4::text[], $5::integer[], $6::timestamptz[]) AS o (id, at, status, code, next_at)
 WHERE d.id = o.id AND d.lease_owner = $2 AND d.status = 'pending'
