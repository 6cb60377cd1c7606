-- name: webhook_deliveries_select_page
-- A page of endpoint $1's deliveries (account $2), newest first, after ($3, $4) when given, $5 rows.
SELECT d.id, d.event_id, e.type, d.status, d.attempts, d.last_status_code, d.created_at, d.next_attempt_at, d.delivered_at
  FROM webhook_deliveries d
  JOIN webhook_events e ON e.id = d.event_id
 WHERE d.endpoint_id = $1 AND e.account_id = $2
   AND ($3::timestamptz IS NULL OR (d.created_at, d.id) < ($3::timestamptz, $4::uuid))
 ORDER BY d.created_at DESC, d.id DESC
 LIMIT $5
