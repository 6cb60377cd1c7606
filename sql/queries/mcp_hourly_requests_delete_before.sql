-- name: mcp_hourly_requests_delete_before
-- Past hours are never read again: the limiter drops them once an hour.
DELETE FROM mcp_hourly_requests WHERE hour < $1
