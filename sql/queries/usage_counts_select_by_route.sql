-- name: usage_counts_select_by_route
-- Requests per route template: one key per route, whatever addresses were in the paths.
SELECT route, sum(requests)::integer AS count
  FROM usage_counts
 WHERE account_id = $1 AND minute >= date_trunc('minute', $2::timestamptz, 'UTC')
 GROUP BY route
 ORDER BY route
