-- name: oauth_clients_select
-- A client by id: registered, or a metadata document cached with the time it was fetched.
SELECT client_id, source, client_name, redirect_uris, metadata, fetched_at
  FROM oauth_clients
 WHERE client_id = $1
