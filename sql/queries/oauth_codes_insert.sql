-- name: oauth_codes_insert
-- An authorization code (hash only), bound to client, account, redirect, PKCE challenge and resource.
INSERT INTO oauth_codes (code_hash, client_id, account_id, redirect_uri, code_challenge, scope, resource, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
