-- name: webhook_endpoints_disable
-- Disables endpoint $1 (its receiver answered 410 Gone) with reason $2, and ends its pending
-- deliveries other than $3 (the one that was answered, finished by its own statement).
WITH disabled AS (
  UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2
   WHERE id = $1 AND enabled
  RETURNING id
)
UPDATE webhook_deliveries d SET status = 'failed', next_attempt_at = NULL, lease_owner = NULL, lease_expires_at = NULL
  FROM disabled
 WHERE d.endpoint_id = disabled.id AND d.status = 'pending' AND d.id <> $3
