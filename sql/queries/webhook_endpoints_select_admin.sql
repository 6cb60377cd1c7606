-- name: webhook_endpoints_select_admin
-- Account $1's endpoints for operators: no secrets, with their deliveries counted by status.
SELECT e.id, e.url, to_jsonb(e.events) AS events, e.enabled, e.disabled_reason, e.created_at,
       count(d.id) FILTER (WHERE d.status = 'pending')::integer AS pending,
       count(d.id) FILTER (WHERE d.status = 'delivered')::integer AS delivered,
       count(d.id) FILTER (WHERE d.status = 'failed')::integer AS failed
  FROM webhook_endpoints e
  LEFT JOIN webhook_deliveries d ON d.endpoint_id = e.id
 WHERE e.account_id = $1 AND e.deleted_at IS NULL
 GROUP BY e.id
 ORDER BY e.created_at, e.id
