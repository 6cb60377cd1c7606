-- name: api_keys_insert
-- Inserts a key only while the account has fewer than $7 active keys (the hidden keys of OAuth
-- connections do not count); the caller holds the account row lock, so two concurrent
-- creations cannot both pass the count.
INSERT INTO api_keys (id, account_id, key_hash, prefix, name, created_at)
SELECT $1, $2, $3, $4, $5, $6
 WHERE (SELECT count(*) FROM api_keys WHERE account_id = $2 AND revoked_at IS NULL AND NOT internal) < $7
RETURNING id
