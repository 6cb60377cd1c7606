-- name: oauth_tokens_verify_access
-- An access token that is unexpired at $2, for resource $3, of a connection and hidden key
-- both alive: the account and the key hash tool calls meter against. Marks the connection
-- used, at most once a minute, so verification rarely writes.
WITH hit AS (
  SELECT c.id AS connection_id, c.account_id, k.key_hash
    FROM oauth_tokens t
    JOIN oauth_connections c ON c.id = t.connection_id
    JOIN api_keys k ON k.id = c.key_id
   WHERE t.token_hash = $1 AND t.kind = 'access' AND t.expires_at > $2 AND c.resource = $3
     AND c.revoked_at IS NULL AND k.revoked_at IS NULL
), touched AS (
  UPDATE oauth_connections c SET last_used_at = $2
    FROM hit
   WHERE c.id = hit.connection_id AND (c.last_used_at IS NULL OR c.last_used_at < $2::timestamptz - interval '1 minute')
)
SELECT connection_id, account_id, key_hash FROM hit
