-- name: usage_events_select_by_route
-- Requests per route template: one key per route, whatever addresses were in the paths.
SELECT route, count(*)::integer AS count
  FROM usage_events
 WHERE account_id = $1 AND created_at >= $2
 GROUP BY route
 ORDER BY route
