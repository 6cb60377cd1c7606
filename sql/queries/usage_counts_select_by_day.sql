-- name: usage_counts_select_by_day
-- Requests and rate-limit units per UTC day, oldest first.
SELECT to_char(date_trunc('day', minute, 'UTC'), 'YYYY-MM-DD') AS date,
       sum(requests)::integer AS count,
       coalesce(sum(units), 0)::integer AS credits
  FROM usage_counts
 WHERE account_id = $1 AND minute >= date_trunc('minute', $2::timestamptz, 'UTC')
 GROUP BY 1
 ORDER BY 1
