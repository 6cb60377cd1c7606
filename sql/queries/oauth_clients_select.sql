-- name: oauth_clients_select
-- A client by id: registered, or a metadata document cached with the time it was fetched.
-- redirect_uris comes back as jsonb: postgres.js runs without fetched array types (src/db/postgres.ts),
-- so a text[] would arrive as its literal.
SELECT client_id, source, client_name, to_jsonb(redirect_uris) AS redirect_uris, metadata, fetched_at
  FROM oauth_clients
 WHERE client_id = $1
