-- name: webhook_deliveries_redeliver
-- Sends delivery $1's event (endpoint $2, account $3) again: a new delivery of the same event,
-- due at $4, while the endpoint is enabled. No row back: no such delivery, or a disabled endpoint.
INSERT INTO webhook_deliveries (id, event_id, endpoint_id, next_attempt_at, created_at)
SELECT $5, d.event_id, d.endpoint_id, $4, $4
  FROM webhook_deliveries d
  JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
 WHERE d.id = $1 AND d.endpoint_id = $2 AND ep.account_id = $3 AND ep.deleted_at IS NULL AND ep.enabled
RETURNING id, event_id, status, created_at
