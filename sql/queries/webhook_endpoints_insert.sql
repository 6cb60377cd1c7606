-- name: webhook_endpoints_insert
-- Registers endpoint $1 of account $2 unless the account has $7 already (run after account_lock).
-- No row back: the limit was reached.
INSERT INTO webhook_endpoints (id, account_id, url, events, secret_enc, created_at)
SELECT $1, $2, $3, $4::text[], $5, $6
 WHERE (SELECT count(*) FROM webhook_endpoints WHERE account_id = $2 AND deleted_at IS NULL) < $7
RETURNING id, url, to_jsonb(events) AS events, enabled, created_at
