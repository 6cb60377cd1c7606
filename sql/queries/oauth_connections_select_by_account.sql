-- name: oauth_connections_select_by_account
-- The live connections of an account, oldest first.
SELECT id, client_id, client_name, created_at, last_used_at
  FROM oauth_connections
 WHERE account_id = $1 AND revoked_at IS NULL
 ORDER BY created_at, id
