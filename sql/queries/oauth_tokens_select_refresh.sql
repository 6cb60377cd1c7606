-- name: oauth_tokens_select_refresh
-- A refresh token with its connection (alive or not) and when it was rotated out, if it was.
SELECT t.token_hash, t.rotated_at, c.id AS connection_id, c.client_id, c.account_id, c.scope, c.resource, c.revoked_at
  FROM oauth_tokens t
  JOIN oauth_connections c ON c.id = t.connection_id
 WHERE t.token_hash = $1 AND t.kind = 'refresh'
