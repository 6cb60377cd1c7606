-- name: opt_out_challenges_select
-- The challenge of nonce $1 as issued, read before the signature is checked (a check that may ask
-- the chain): whether it is still open is decided again by opt_out_apply's conditional UPDATE.
SELECT wallet, action, message, issued_at, expires_at, used_at
  FROM opt_out_challenges
 WHERE nonce = $1
