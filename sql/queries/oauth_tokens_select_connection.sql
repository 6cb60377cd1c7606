-- name: oauth_tokens_select_connection
-- The connection of any token (access or refresh, current or rotated out), for revocation.
SELECT c.id AS connection_id, c.client_id
  FROM oauth_tokens t
  JOIN oauth_connections c ON c.id = t.connection_id
 WHERE t.token_hash = $1
