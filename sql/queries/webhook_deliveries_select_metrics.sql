-- name: webhook_deliveries_select_metrics
-- Deliveries by status, and the age in seconds at $1 of the oldest one due and pending.
SELECT status, count(*)::integer AS deliveries,
       extract(epoch FROM ($1::timestamptz - min(next_attempt_at) FILTER (WHERE status = 'pending' AND next_attempt_at <= $1::timestamptz)))::float8 AS oldest_age_seconds
  FROM webhook_deliveries
 GROUP BY status
