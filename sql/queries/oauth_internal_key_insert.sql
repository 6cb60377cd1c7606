-- name: oauth_internal_key_insert
-- The hidden key of a new connection: its secret was never kept, only this hash. Not subject
-- to the account's key cap (the cap counts keys a person holds).
INSERT INTO api_keys (id, account_id, key_hash, prefix, name, created_at, internal)
VALUES ($1, $2, $3, 'wid_mcp_', $4, $5, true)
