-- name: oauth_codes_select_for_update
-- A code by hash, locked for the exchange: two exchanges of one code run one after the other,
-- and the second sees the first one's used_at.
SELECT code_hash, client_id, account_id, redirect_uri, code_challenge, scope, resource, expires_at, used_at, connection_id
  FROM oauth_codes
 WHERE code_hash = $1
   FOR UPDATE
