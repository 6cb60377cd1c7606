-- name: x402_api_keys_revoke_all
-- Revokes every active key of an account (recovery with revoke_others_and_reissue); meter_call
-- reads revoked_at on every call, so the keys stop working with this commit. The hidden keys of
-- OAuth connections go too (whoever held a revoked key may have connected a host with it), so
-- those connections end; only the prefixes of keys a person holds are reported.
WITH revoked AS (
  UPDATE api_keys SET revoked_at = $2
   WHERE account_id = $1 AND revoked_at IS NULL
  RETURNING prefix, internal
)
SELECT prefix FROM revoked WHERE NOT internal
