-- name: oauth_connections_revoke
-- Ends connection $1 (of account $3, when $3 is not null) and its hidden key in one statement:
-- every token of the connection stops at once. Returns the connection when this call ended it.
WITH ended AS (
  UPDATE oauth_connections SET revoked_at = $2
   WHERE id = $1 AND revoked_at IS NULL AND ($3::uuid IS NULL OR account_id = $3::uuid)
  RETURNING id, key_id
), key_revoked AS (
  UPDATE api_keys k SET revoked_at = $2 FROM ended WHERE k.id = ended.key_id AND k.revoked_at IS NULL
)
SELECT id FROM ended
