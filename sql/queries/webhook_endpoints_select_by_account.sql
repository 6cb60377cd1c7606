-- name: webhook_endpoints_select_by_account
-- Account $1's endpoints, oldest first, without their secrets.
SELECT id, url, to_jsonb(events) AS events, enabled, disabled_reason, created_at
  FROM webhook_endpoints
 WHERE account_id = $1 AND deleted_at IS NULL
 ORDER BY created_at, id
