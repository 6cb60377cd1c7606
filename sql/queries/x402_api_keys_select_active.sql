-- name: x402_api_keys_select_active
-- An active key by its SHA-256, for a top-up: the account to credit and the key's prefix.
SELECT k.id, k.account_id, k.prefix
  FROM api_keys k
 WHERE k.key_hash = $1 AND k.revoked_at IS NULL
