-- name: webhook_endpoints_delete
-- Deletes endpoint $1 of account $2 at $3 (the row stays for its delivery log's history; the
-- secrets are erased) and ends its pending deliveries as failed.
WITH ended AS (
  UPDATE webhook_endpoints
     SET deleted_at = $3, enabled = false, secret_enc = '', previous_secret_enc = NULL, previous_until = NULL
   WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL
  RETURNING id
), dropped AS (
  UPDATE webhook_deliveries d SET status = 'failed', next_attempt_at = NULL, lease_owner = NULL, lease_expires_at = NULL
    FROM ended WHERE d.endpoint_id = ended.id AND d.status = 'pending'
)
SELECT id FROM ended
