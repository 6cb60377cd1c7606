-- name: mcp_hourly_requests_count
-- Adds $4 requests to a caller's count for the hour starting at $3 and returns the new total, in
-- one round trip with the key lookup: the account of a verified OAuth token ($2), else the
-- account of the active API key whose digest is $1, else the IP address $5. The upsert takes the
-- row lock, so concurrent requests (of any instance) each see a distinct total.
INSERT INTO mcp_hourly_requests AS h (subject, hour, count)
SELECT CASE WHEN a.account_id IS NULL THEN 'ip:' || $5::text ELSE 'account:' || a.account_id END, $3, $4
  FROM (SELECT COALESCE($2::uuid, (SELECT account_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL)) AS account_id) a
ON CONFLICT (subject, hour) DO UPDATE SET count = h.count + EXCLUDED.count
RETURNING h.subject, h.count
