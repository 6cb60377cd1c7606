-- name: usage_counts_select_summary
-- Totals of an account's usage from the minute holding $2 on. error_rate is a percentage (0.24
-- means 0.24%); the latency average is the sum of latencies over the number of requests.
SELECT coalesce(sum(requests), 0)::integer AS total_requests,
       coalesce(sum(units), 0)::integer AS total_credits,
       coalesce(sum(wallets), 0)::integer AS total_wallets,
       coalesce(round((sum(latency_ms_sum) / nullif(sum(requests), 0))::numeric, 2), 0)::float8 AS avg_latency_ms,
       coalesce(round(100.0 * coalesce(sum(requests) FILTER (WHERE status >= 400), 0) / nullif(sum(requests), 0), 2), 0)::float8 AS error_rate
  FROM usage_counts
 WHERE account_id = $1 AND minute >= date_trunc('minute', $2::timestamptz, 'UTC')
