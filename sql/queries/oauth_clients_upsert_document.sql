-- name: oauth_clients_upsert_document
-- Caches a metadata document that passed every check (failures are never stored), replacing
-- the copy of an earlier fetch.
INSERT INTO oauth_clients (client_id, source, client_name, redirect_uris, metadata, created_at, fetched_at)
VALUES ($1, 'document', $2, $3::text[], $4::jsonb, $5, $5)
    ON CONFLICT (client_id) DO UPDATE
   SET client_name = excluded.client_name,
       redirect_uris = excluded.redirect_uris,
       metadata = excluded.metadata,
       fetched_at = excluded.fetched_at
 WHERE oauth_clients.source = 'document'
