-- name: opt_out_hourly_requests_count
-- Adds one request of client address $2 to the opt-out endpoints' count for the hour starting at
-- $1 and returns the new total. The hourly counts table is the MCP limit's (00007_mcp_limits.sql),
-- under subjects of their own, so it is pruned with it; the upsert takes the row lock, so
-- concurrent requests of any instance each see a distinct total.
INSERT INTO mcp_hourly_requests AS h (subject, hour, count)
VALUES ('opt-out:' || $2::text, $1, 1)
ON CONFLICT (subject, hour) DO UPDATE SET count = h.count + 1
RETURNING h.count
