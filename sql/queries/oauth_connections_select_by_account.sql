-- name: oauth_connections_select_by_account
-- The live connections of an account, oldest first: the connection and its hidden key both
-- unrevoked (a key revocation that swept every key of the account ended its connections too).
SELECT c.id, c.client_id, c.client_name, c.created_at, c.last_used_at
  FROM oauth_connections c
  JOIN api_keys k ON k.id = c.key_id
 WHERE c.account_id = $1 AND c.revoked_at IS NULL AND k.revoked_at IS NULL
 ORDER BY c.created_at, c.id
