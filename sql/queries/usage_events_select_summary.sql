-- name: usage_events_select_summary
-- Totals of an account's usage since $2. error_rate is a percentage (0.24 means 0.24%).
SELECT count(*)::integer AS total_requests,
       coalesce(sum(units), 0)::integer AS total_credits,
       coalesce(sum(wallets), 0)::integer AS total_wallets,
       coalesce(round(avg(latency_ms)::numeric, 2), 0)::float8 AS avg_latency_ms,
       coalesce(round(100.0 * count(*) FILTER (WHERE status >= 400) / nullif(count(*), 0), 2), 0)::float8 AS error_rate
  FROM usage_events
 WHERE account_id = $1 AND created_at >= $2
