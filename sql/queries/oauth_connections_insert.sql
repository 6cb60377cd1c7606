-- name: oauth_connections_insert
-- A connection: what an approved consent and its exchanged code become.
INSERT INTO oauth_connections (id, account_id, client_id, client_name, key_id, scope, resource, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
