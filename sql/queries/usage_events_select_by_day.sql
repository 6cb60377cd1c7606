-- name: usage_events_select_by_day
-- Requests and rate-limit units per UTC day, oldest first.
SELECT to_char(date_trunc('day', created_at, 'UTC'), 'YYYY-MM-DD') AS date,
       count(*)::integer AS count,
       coalesce(sum(units), 0)::integer AS credits
  FROM usage_events
 WHERE account_id = $1 AND created_at >= $2
 GROUP BY 1
 ORDER BY 1
