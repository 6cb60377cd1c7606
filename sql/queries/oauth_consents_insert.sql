-- name: oauth_consents_insert
-- A consent page shown: the validated authorization request, waiting for the person's answer.
INSERT INTO oauth_consents (id, client_id, redirect_uri, code_challenge, state, scope, resource, csrf_hash, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
