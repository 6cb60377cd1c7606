-- name: oauth_consent_key_select
-- The account of an API key typed on the consent page: an active key a person holds (the
-- hidden keys of connections have no secret anyone knows, and are excluded anyway).
SELECT account_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL AND NOT internal
