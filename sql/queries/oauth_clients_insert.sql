-- name: oauth_clients_insert
-- A dynamically registered client; its generated id never collides with a document URL.
INSERT INTO oauth_clients (client_id, source, client_name, redirect_uris, metadata, created_at)
VALUES ($1, 'registered', $2, $3::text[], $4::jsonb, $5)
