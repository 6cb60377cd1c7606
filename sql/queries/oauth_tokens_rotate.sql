-- name: oauth_tokens_rotate
-- Claims a refresh token for rotation. Of concurrent claims exactly one updates a row: the
-- others wait on the row lock, re-check rotated_at and find it set.
UPDATE oauth_tokens SET rotated_at = $2
 WHERE token_hash = $1 AND kind = 'refresh' AND rotated_at IS NULL
RETURNING token_hash
