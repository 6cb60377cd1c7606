-- name: oauth_connections_touch
-- A refresh is a use of the connection.
UPDATE oauth_connections SET last_used_at = $2 WHERE id = $1
