-- name: oauth_codes_mark_used
-- The code was exchanged for connection $3.
UPDATE oauth_codes SET used_at = $2, connection_id = $3 WHERE code_hash = $1
