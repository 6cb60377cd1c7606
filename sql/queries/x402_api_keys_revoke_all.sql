-- name: x402_api_keys_revoke_all
-- Revokes every active key of an account (recovery with revoke_others_and_reissue); meter_call
-- reads revoked_at on every call, so the keys stop working with this commit.
UPDATE api_keys SET revoked_at = $2
 WHERE account_id = $1 AND revoked_at IS NULL
RETURNING prefix
