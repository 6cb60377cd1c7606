-- name: oauth_consents_select
-- A consent still open (shown after $2), with its client, to answer or to show again; redirect_uris
-- as jsonb, since postgres.js runs without fetched array types (src/db/postgres.ts).
SELECT k.id, k.client_id, k.redirect_uri, k.code_challenge, k.state, k.scope, k.resource, k.csrf_hash,
       c.client_name, c.source, to_jsonb(c.redirect_uris) AS redirect_uris
  FROM oauth_consents k
  JOIN oauth_clients c ON c.client_id = k.client_id
 WHERE k.id = $1 AND k.created_at > $2
