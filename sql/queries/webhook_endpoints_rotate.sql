-- name: webhook_endpoints_rotate
-- Replaces endpoint $1's (account $2) secret with $3; the one it replaces keeps signing until $4.
UPDATE webhook_endpoints
   SET previous_secret_enc = secret_enc, previous_until = $4, secret_enc = $3
 WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL
RETURNING id
