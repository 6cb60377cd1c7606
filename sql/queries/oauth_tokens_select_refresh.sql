-- name: oauth_tokens_select_refresh
-- A refresh token with its connection (alive or not) and when it was rotated out, if it was. A
-- connection whose hidden key was revoked (a recovery that revoked every key) counts as ended.
SELECT t.token_hash, t.rotated_at, c.id AS connection_id, c.client_id, c.account_id, c.scope, c.resource,
       coalesce(c.revoked_at, k.revoked_at) AS revoked_at
  FROM oauth_tokens t
  JOIN oauth_connections c ON c.id = t.connection_id
  JOIN api_keys k ON k.id = c.key_id
 WHERE t.token_hash = $1 AND t.kind = 'refresh'
