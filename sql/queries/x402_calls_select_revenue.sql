-- name: x402_calls_select_revenue
-- Per-call revenue: settled calls, matches and atomic units by route since $1.
SELECT route, count(*)::integer AS calls, coalesce(sum(matches), 0)::integer AS matches, coalesce(sum(amount), 0)::text AS amount
  FROM x402_calls
 WHERE state = 'settled' AND settled_at >= $1
 GROUP BY route
 ORDER BY route
