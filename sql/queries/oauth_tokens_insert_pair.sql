-- name: oauth_tokens_insert_pair
-- An access token ($1, expiring at $4) and a refresh token ($2) of connection $3.
INSERT INTO oauth_tokens (token_hash, kind, connection_id, created_at, expires_at)
VALUES ($1, 'access', $3, $5, $4), ($2, 'refresh', $3, $5, NULL)
